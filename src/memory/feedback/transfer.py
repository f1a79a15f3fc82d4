"""Feedback in the JSONL export: ``{"type": "feedback", "kind": "record" | "prompt", "record": {...}}`` lines.

Export follows the export's scope: a thread filter keeps that thread's
conversation record, a user or agent filter that user's or agent's records;
prompt versions go only with an unscoped export (they belong to the
namespace). Time and memory-only filters export no feedback. Import
validates every line first (with the rest of the file) and skips records and
versions that exist (same thread; same name and version number); versions
keep their numbers, and an imported ``active`` version becomes ``retired``
when the name already has an active one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from pydantic import ValidationError

from memory.backends.feedback import check_prompt_text, check_record
from memory.errors import InvalidInputError
from memory.feedback.types import ConversationRecord, PromptVersion
from memory.records import check_name
from memory.services import Core, feedback_store

if TYPE_CHECKING:
    from memory.filters import Filter

__all__ = ["FEEDBACK_TYPE", "FeedbackLine", "export_feedback", "parse_feedback_line", "import_feedback"]

FEEDBACK_TYPE = "feedback"
_PAGE = 1000


@dataclass(frozen=True, slots=True)
class FeedbackLine:
    """One validated feedback line: a conversation record or a prompt version."""

    line: int
    record: ConversationRecord | PromptVersion


def _line(kind: str, record: ConversationRecord | PromptVersion) -> str:
    return json.dumps({"type": FEEDBACK_TYPE, "kind": kind, "record": record.model_dump(mode="json")},
                      ensure_ascii=True, separators=(",", ":"), allow_nan=False) + "\n"  # fmt: skip


def export_feedback(core: Core, stream: IO[str], flt: Filter, *, memory_only_filters: bool) -> int:
    """Write the namespace's conversation records (and, unscoped, its prompt versions); returns how many lines."""
    store = core.backend.feedback
    if store is None or memory_only_filters or flt.created_after is not None or flt.created_before is not None:
        return 0
    ns = flt.namespace
    written = 0
    if flt.thread is not None:
        found = store.get_record(ns, flt.thread)
        records: Iterable[ConversationRecord] = [found] if found is not None else []
    else:
        records = store.iter_records(ns)
    for record in records:
        if (flt.user is None or record.user == flt.user) and (flt.agent is None or record.agent == flt.agent):
            stream.write(_line("record", record))
            written += 1
    if flt.user is None and flt.agent is None and flt.thread is None:
        for name in store.prompt_names(ns):
            for version in store.prompt_versions(ns, name):
                stream.write(_line("prompt", version))
                written += 1
    return written


def parse_feedback_line(obj: dict[str, Any], line: int) -> FeedbackLine:
    """Validate one feedback line; raises InvalidInputError naming the line."""
    extra = set(obj) - {"type", "kind", "record"}
    if extra:
        raise InvalidInputError(f"line {line}: unknown key(s) {sorted(extra)}")
    kind, data = obj.get("kind"), obj.get("record")
    try:
        if not isinstance(data, dict):
            raise InvalidInputError("a feedback line needs a record object")
        if kind == "record":
            record = ConversationRecord.model_validate(data)
            check_record(record)
            return FeedbackLine(line, record)
        if kind == "prompt":
            version = PromptVersion.model_validate(data)
            check_name(version.namespace, "namespace", optional=False)
            check_name(version.name, "prompt name", optional=False)
            check_prompt_text(version.text)
            return FeedbackLine(line, version)
        raise InvalidInputError(f"unknown feedback kind {kind!r}; known: record, prompt")
    except (ValidationError, InvalidInputError) as exc:
        detail = (
            str(exc)
            if isinstance(exc, InvalidInputError)
            else "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3])
        )
        raise InvalidInputError(f"line {line}: invalid feedback line in this memory export: {detail}") from exc


def import_feedback(core: Core, lines: Iterable[FeedbackLine]) -> int:
    """Write validated feedback lines, skipping records and versions that exist; returns how many were written."""
    entries = list(lines)
    if not entries:
        return 0
    store = feedback_store(core.backend)  # raises StoreUnavailableError when the backend has none
    written = 0
    for entry in sorted(entries, key=lambda e: (isinstance(e.record, ConversationRecord), e.line)):
        record = entry.record
        if isinstance(record, PromptVersion):
            written += store.put_prompt(record)
        elif store.get_record(record.namespace, record.thread) is None:
            store.put_record(record)
            written += 1
    return written
