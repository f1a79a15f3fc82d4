"""Import from other memory systems: mem0 (``get_all`` JSON) and Letta (agent files, ``.af``).

``memory import --from mem0 FILE`` reads what mem0's open-source
``Memory.get_all(filters=...)`` returns — ``{"results": [{"id", "memory",
"hash", "created_at", "updated_at", "user_id", "agent_id", "run_id",
"actor_id", "role", "expiration_date", "metadata"}]}`` — or a bare list of
such records; a record may carry its ``history`` (what ``Memory.history(id)``
returns: ``{"event", "old_memory", "new_memory", "created_at", …}``) under
the key ``history``. Each record becomes one memory: user/agent/thread from
user_id/agent_id/run_id, the mem0 id, hash, actor, role, update time and
history kept in ``metadata["mem0"]``, ``created_at`` kept, expiration_date as
``expires_at``. A record whose last history event is DELETE is skipped.

``memory import --from letta FILE`` reads a Letta agent file (Letta's
``AgentFileSchema``: ``agents``, ``blocks``, ``files``, …). For each agent
(scope ``agent`` = its name): its core memory blocks become working-memory
blocks (``human`` → ``user_info``, ``persona`` → ``agent_info``, other labels
kept), its messages become the thread ``letta-<agent id>`` (assistant replies
sent through ``send_message`` as their text; other tool calls as
``name(arguments)``; the system prompt message is not a turn and is skipped),
and archival passages (a ``passages`` list, when a file carries one; Letta's
current schema exports none) become memories of kind ``knowledge``. Files with
content become memories of kind ``document``.

Nothing is dropped silently: the :class:`ForeignImportReport` counts what was
written and lists every record skipped with its reason.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import IO, Any

from memory.errors import Error, InvalidInputError
from memory.memory import Memory

__all__ = ["SOURCES", "ForeignImportReport", "Skipped", "import_foreign", "import_mem0", "import_letta"]

SOURCES = ("mem0", "letta")
_BLOCK_LABELS = {"human": "user_info", "persona": "agent_info"}


@dataclass(frozen=True, slots=True)
class Skipped:
    """One record not imported: what it was, its id in the file, and why."""

    kind: str
    ref: str
    reason: str


@dataclass
class ForeignImportReport:
    """What an import from another system wrote (by kind) and what it skipped (with reasons)."""

    source: str
    imported: Counter[str] = field(default_factory=Counter)
    skipped: list[Skipped] = field(default_factory=list)

    def skip(self, kind: str, ref: object, reason: str) -> None:
        """Record a skipped record."""
        self.skipped.append(Skipped(kind, str(ref), reason))

    def skipped_by_reason(self) -> dict[str, int]:
        """How many records were skipped for each reason."""
        return dict(Counter(s.reason for s in self.skipped))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "source": self.source,
            "imported": dict(self.imported),
            "skipped": len(self.skipped),
            "skipped_by_reason": self.skipped_by_reason(),
            "skipped_records": [{"kind": s.kind, "ref": s.ref, "reason": s.reason} for s in self.skipped],
        }


def _load(stream: IO[str]) -> Any:
    try:
        return json.load(stream)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"the file is not JSON: {exc}") from None


def _when(value: object) -> datetime | None:
    """A datetime from an ISO string (a bare date means its midnight UTC); None when absent."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        raise InvalidInputError(f"not a time: {value!r}")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        try:
            parsed = datetime.combine(date.fromisoformat(value), time())
        except ValueError:
            raise InvalidInputError(f"not an ISO 8601 time: {value!r}") from None
    if parsed.tzinfo is None:
        from datetime import UTC

        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def _name(value: object) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _is_from(mem: Memory, memory_id: str, namespace: str | None, source: str, ref: object) -> bool:
    """Whether the stored memory is the record just imported (not an earlier one with the same text and scope)."""
    return mem.get(memory_id, namespace=namespace, clearance="secret").metadata.get(f"{source}_id") == ref


def _already(mem: Memory, namespace: str | None, source: str, ref: object) -> bool:
    """Whether a memory imported from this record (same source id) is already stored."""
    if not isinstance(ref, str) or not ref:
        return False
    found = mem.list(limit=1, namespace=namespace, metadata={f"{source}_id": ref}, clearance="secret",
                     include_expired=True, include_invalid=True)  # fmt: skip
    return bool(found.items)


# -- mem0 -------------------------------------------------------------------------


def _mem0_records(doc: Any) -> list[Any]:
    if isinstance(doc, dict) and isinstance(doc.get("results"), list):
        return list(doc["results"])
    if isinstance(doc, dict) and isinstance(doc.get("memories"), list):
        return list(doc["memories"])
    if isinstance(doc, list):
        return doc
    raise InvalidInputError('a mem0 file is the JSON of Memory.get_all(): {"results": [...]}, or a list of its records')


def import_mem0(mem: Memory, stream: IO[str], *, namespace: str | None = None) -> ForeignImportReport:
    """Import a mem0 ``get_all`` JSON into ``mem``. Raises InvalidInputError (nothing written) for a bad file."""
    report = ForeignImportReport("mem0")
    records = _mem0_records(_load(stream))
    now = mem.now()
    for index, record in enumerate(records):
        ref = record.get("id", f"#{index}") if isinstance(record, dict) else f"#{index}"
        if not isinstance(record, dict):
            report.skip("memory", ref, "not a JSON object")
            continue
        text = record.get("memory")
        if not isinstance(text, str) or not text.strip():
            report.skip("memory", ref, "no memory text")
            continue
        history = record.get("history") if isinstance(record.get("history"), list) else []
        if history and str(history[-1].get("event", "")).upper() == "DELETE":
            report.skip("memory", ref, "deleted in mem0 (last history event is DELETE)")
            continue
        if _already(mem, namespace, "mem0", record.get("id")):
            report.skip("memory", ref, "already imported (a memory with this mem0 id exists)")
            continue
        try:
            expires_at = _when(record.get("expiration_date"))
            if expires_at is not None and expires_at <= now:
                report.skip("memory", ref, "expired in mem0")
                continue
            given = record.get("metadata")
            extra: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
            origin: dict[str, Any] = {"id": record.get("id"), "hash": record.get("hash")}
            for key in ("actor_id", "role", "updated_at", "attributed_to"):
                if record.get(key) is not None:
                    origin[key] = record[key]
            if history:
                origin["history"] = [
                    {k: h.get(k) for k in ("event", "old_memory", "new_memory", "created_at") if h.get(k) is not None}
                    for h in history
                    if isinstance(h, dict)
                ]
            memory_id = mem.remember(
                text, namespace=namespace, user=_name(record.get("user_id")), agent=_name(record.get("agent_id")),
                thread=_name(record.get("run_id")), metadata={**extra, "mem0_id": record.get("id"), "mem0": origin},
                created_at=_when(record.get("created_at")), expires_at=expires_at,
            )  # fmt: skip
        except Error as exc:
            report.skip("memory", ref, f"rejected: {exc}")
            continue
        if not _is_from(mem, memory_id, namespace, "mem0", record.get("id")):
            report.skip("memory", ref, f"duplicate of {memory_id} (same text and scope)")
            continue
        report.imported["memories"] += 1
    return report


# -- Letta ------------------------------------------------------------------------------


def _letta_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return ""


def _letta_message(message: dict[str, Any]) -> tuple[str, str] | str:
    """(role, text) of a Letta message, or the reason it is skipped."""
    role = str(message.get("role") or "")
    if role == "system":
        return "system prompt (not a conversation turn)"
    text = _letta_text(message.get("content")).strip()
    calls = message.get("tool_calls") or []
    said = []
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        name, arguments = function.get("name"), function.get("arguments") or ""
        if name == "send_message":
            try:
                said.append(str(json.loads(arguments).get("message", "")))
            except (ValueError, AttributeError):
                said.append(str(arguments))
        elif name:
            said.append(f"{name}({arguments})")
    if said:
        text = "\n".join([t for t in [text, *said] if t])
    if not text:
        return "no text"
    return (role if role in ("user", "assistant", "tool") else role or "user"), text


def import_letta(mem: Memory, stream: IO[str], *, namespace: str | None = None) -> ForeignImportReport:
    """Import a Letta agent file into ``mem``. Raises InvalidInputError (nothing written) for a bad file."""
    doc = _load(stream)
    if not isinstance(doc, dict) or not isinstance(doc.get("agents"), list):
        raise InvalidInputError("a Letta agent file is a JSON object with an 'agents' list (Letta's AgentFileSchema)")
    report = ForeignImportReport("letta")
    blocks = {b.get("id"): b for b in doc.get("blocks") or [] if isinstance(b, dict)}
    for agent_doc in doc["agents"]:
        if not isinstance(agent_doc, dict):
            report.skip("agent", "?", "not a JSON object")
            continue
        agent = _name(agent_doc.get("name")) or _name(agent_doc.get("id")) or "letta-agent"
        for block_id in agent_doc.get("block_ids") or []:
            block = blocks.get(block_id)
            if block is None:
                report.skip("block", block_id, "block id not in the file's blocks")
                continue
            label = str(block.get("label") or "")
            value = block.get("value")
            if not label or not isinstance(value, str) or not value.strip():
                report.skip("block", block_id, "empty block")
                continue
            try:
                mem.blocks.replace(_BLOCK_LABELS.get(label, label), value, agent=agent, namespace=namespace,
                                   reason=f"imported from Letta block {label!r}")  # fmt: skip
            except Error as exc:
                report.skip("block", block_id, f"rejected: {exc}")
                continue
            report.imported["blocks"] += 1
        thread = f"letta-{agent_doc.get('id') or agent}"
        messages = [m for m in agent_doc.get("messages") or [] if isinstance(m, dict)]
        messages.sort(key=lambda m: str(m.get("created_at") or ""))
        seen = _imported_message_ids(mem, thread, namespace)
        for message in messages:
            if message.get("id") in seen:
                report.skip("message", message.get("id"), "already imported (in the thread with this Letta id)")
                continue
            parsed = _letta_message(message)
            if isinstance(parsed, str):
                report.skip("message", message.get("id", "?"), parsed)
                continue
            role, text = parsed
            try:
                mem.messages.append(thread, text, role=role, agent=agent, namespace=namespace,
                                    created_at=_when(message.get("created_at")),
                                    metadata={"letta": {"id": message.get("id")}})  # fmt: skip
            except Error as exc:
                report.skip("message", message.get("id", "?"), f"rejected: {exc}")
                continue
            report.imported["messages"] += 1
        passages = [*(agent_doc.get("passages") or []), *(agent_doc.get("archival_memory") or [])]
        _import_texts(mem, report, passages, "passage", "knowledge", agent, namespace)
    files = [f for f in doc.get("files") or [] if isinstance(f, dict)]
    _import_texts(mem, report, files, "file", "document", None, namespace)
    top_passages = [p for p in doc.get("passages") or [] if isinstance(p, dict)]
    _import_texts(mem, report, top_passages, "passage", "knowledge", None, namespace)
    return report


def _imported_message_ids(mem: Memory, thread: str, namespace: str | None) -> set[object]:
    seen: set[object] = set()
    after: int | None = None
    while True:
        page = mem.messages.get_thread(thread, namespace=namespace, after_turn=after, limit=1000, clearance="secret")
        for message in page:
            origin = message.metadata.get("letta")
            if isinstance(origin, dict):
                seen.add(origin.get("id"))
        if len(page) < 1000:
            return seen
        after = page[-1].turn


def _import_texts(
    mem: Memory, report: ForeignImportReport, records: list[Any], kind: str, memory_kind: str,
    agent: str | None, namespace: str | None,
) -> None:  # fmt: skip
    for record in records:
        ref = record.get("id", "?") if isinstance(record, dict) else "?"
        text = (record.get("text") or record.get("content")) if isinstance(record, dict) else None
        if not isinstance(text, str) or not text.strip():
            report.skip(kind, ref, "no text")
            continue
        assert isinstance(record, dict)
        name = record.get("file_name")
        if _already(mem, namespace, "letta", record.get("id")):
            report.skip(kind, ref, "already imported (a memory with this Letta id exists)")
            continue
        try:
            memory_id = mem.remember(
                text, kind=memory_kind, agent=agent, namespace=namespace, created_at=_when(record.get("created_at")),
                context=f"Letta file {name}" if name else None, metadata={"letta_id": record.get("id")},
            )  # fmt: skip
        except Error as exc:
            report.skip(kind, ref, f"rejected: {exc}")
            continue
        if not _is_from(mem, memory_id, namespace, "letta", record.get("id")):
            report.skip(kind, ref, f"duplicate of {memory_id} (same text and scope)")
            continue
        report.imported["memories"] += 1


def import_foreign(mem: Memory, source: str, stream: IO[str], *, namespace: str | None = None) -> ForeignImportReport:
    """Import a file written by another memory system (``source`` in :data:`SOURCES`)."""
    if source == "mem0":
        return import_mem0(mem, stream, namespace=namespace)
    if source == "letta":
        return import_letta(mem, stream, namespace=namespace)
    raise InvalidInputError(f"unknown source {source!r}: use one of {', '.join(SOURCES)}")
