"""Tier records in the JSONL export: ``{"type": "tier", "kind": ..., "record": {...}}`` lines.

Kinds: ``page`` (STM), ``segment`` (MTM, with its pages), ``object`` and
``agent`` (personas), ``system`` (system memory), ``config`` (``{"key":
..., "values": {...}}``). Export follows the export's scope: a user filter
keeps that user's pages, segments and user persona; an agent filter that
agent's records; system memory and configuration go only with an unscoped
export. Pages above the export's clearance are left out (and dropped from
their segments). Thread, time and memory-only filters export no tiers.
Import validates every line first (with the rest of the file) and skips
records that already exist (same id, persona or config key).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from pydantic import ValidationError

from memory.backends.tiers import TierChanges
from memory.errors import InvalidInputError
from memory.records import check_name
from memory.services import Core, tier_store
from memory.tiers.types import AgentPersona, DialoguePage, ObjectPersona, Segment, SystemEntry
from memory.types import SENSITIVITY_LEVELS

if TYPE_CHECKING:
    from memory.filters import Filter

__all__ = ["TIER_TYPE", "TierLine", "export_tiers", "parse_tier_line", "import_tiers"]

TIER_TYPE = "tier"
_MODELS: dict[str, type[DialoguePage | Segment | ObjectPersona | AgentPersona | SystemEntry]] = {
    "page": DialoguePage, "segment": Segment, "object": ObjectPersona, "agent": AgentPersona, "system": SystemEntry,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class TierLine:
    """One validated tier line: its kind and record (a config line holds ``(key, values)``)."""

    line: int
    kind: str
    record: Any
    namespace: str


def _line(kind: str, record: Any) -> str:
    data = record if isinstance(record, dict) else record.model_dump(mode="json")
    return json.dumps({"type": TIER_TYPE, "kind": kind, "record": data}, ensure_ascii=True,
                      separators=(",", ":"), allow_nan=False) + "\n"  # fmt: skip


def export_tiers(core: Core, stream: IO[str], flt: Filter, *, memory_only_filters: bool) -> int:
    """Write the namespace's tier records within ``flt``'s scope; returns how many lines."""
    store = core.backend.tiers
    if store is None or memory_only_filters or flt.thread is not None:
        return 0
    if flt.created_after is not None or flt.created_before is not None:
        return 0
    ns, allowed = flt.namespace, SENSITIVITY_LEVELS[flt.clearance]
    written = 0
    for agent, user in store.owners(ns):
        if (flt.user is not None and user != flt.user) or (flt.agent is not None and agent != flt.agent):
            continue
        for page in store.stm(ns, agent, user):
            if SENSITIVITY_LEVELS[page.sensitivity] <= allowed:
                stream.write(_line("page", page))
                written += 1
        for seg in store.segments(ns, agent, user):
            pages = tuple(p for p in seg.pages if SENSITIVITY_LEVELS[p.sensitivity] <= allowed)
            if pages:
                stream.write(_line("segment", seg.model_copy(update={"pages": pages})))
                written += 1
    agents = {a for a, _ in store.owners(ns)} | {
        key.split(":", 1)[1] for key in store.configs(ns) if key.startswith("agent:")
    }
    for agent in sorted(agents):
        if flt.agent is not None and agent != flt.agent:
            continue
        for persona in store.object_personas(ns, agent):
            if flt.user is None or (persona.type == "user" and persona.identifier == flt.user):
                stream.write(_line("object", persona))
                written += 1
        found = store.agent_persona(ns, agent)
        if found is not None and flt.user is None:
            stream.write(_line("agent", found))
            written += 1
    if flt.user is None and flt.agent is None:
        for entry in store.system_entries(ns):
            stream.write(_line("system", entry))
            written += 1
        for key, values in store.configs(ns).items():
            stream.write(_line("config", {"namespace": ns, "key": key, "values": values}))
            written += 1
    return written


def parse_tier_line(obj: dict[str, Any], line: int) -> TierLine:
    """Validate one tier line; raises InvalidInputError naming the line."""
    extra = set(obj) - {"type", "kind", "record"}
    if extra:
        raise InvalidInputError(f"line {line}: unknown key(s) {sorted(extra)}")
    kind, record = obj.get("kind"), obj.get("record")
    if not isinstance(record, dict):
        raise InvalidInputError(f"line {line}: a tier line needs a record object")
    try:
        if kind == "config":
            if set(record) != {"namespace", "key", "values"} or not isinstance(record["values"], dict):
                raise InvalidInputError('a config record is {"namespace", "key", "values"}')
            check_name(record["namespace"], "namespace", optional=False)
            if not isinstance(record["key"], str) or not record["key"].startswith(("agent:", "type:")):
                raise InvalidInputError("a config key starts with 'agent:' or 'type:'")
            from memory.tiers.config import _validated

            _validated({k: v for k, v in record["values"].items() if k != "agent_type"})
            return TierLine(line, "config", (record["key"], record["values"]), record["namespace"])
        if kind not in _MODELS:
            raise InvalidInputError(f"unknown tier kind {kind!r}; known: {', '.join([*_MODELS, 'config'])}")
        parsed = _MODELS[kind].model_validate(record)
        namespace = check_name(parsed.namespace, "namespace", optional=False)
        assert namespace is not None
        return TierLine(line, kind, parsed, namespace)
    except (ValidationError, InvalidInputError) as exc:
        detail = (
            str(exc)
            if isinstance(exc, InvalidInputError)
            else "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3])
        )
        raise InvalidInputError(f"line {line}: invalid tier line in this memory export: {detail}") from exc


def import_tiers(core: Core, lines: Iterable[TierLine]) -> int:
    """Write validated tier lines, skipping records that exist; returns how many were written."""
    entries = list(lines)
    if not entries:
        return 0
    store = tier_store(core.backend)  # raises StoreUnavailableError when the backend has none
    written = 0
    for ns in sorted({e.namespace for e in entries}):
        changes = TierChanges()
        mine = [e for e in entries if e.namespace == ns]
        owners = {(r.agent, r.user) for e in mine if e.kind in ("page", "segment") for r in [e.record]}
        page_ids = {p.id for a, u in owners for p in store.stm(ns, a, u)}
        segment_ids = {s.id for a, u in owners for s in store.segments(ns, a, u)}
        system_ids = {s.id for s in store.system_entries(ns)}
        configs = store.configs(ns)
        for e in mine:
            r = e.record
            if e.kind == "page" and r.id not in page_ids:
                changes.pages.append(r)
            elif e.kind == "segment" and r.id not in segment_ids:
                changes.segments.append(r)
            elif e.kind == "object" and store.object_persona(ns, r.agent, r.type, r.identifier) is None:
                changes.objects.append(r)
            elif e.kind == "agent" and store.agent_persona(ns, r.agent) is None:
                changes.agents.append(r)
            elif e.kind == "system" and r.id not in system_ids:
                changes.system.append(r)
            elif e.kind == "config" and r[0] not in configs:
                store.set_config(ns, r[0], r[1])
                written += 1
        written += sum(len(getattr(changes, f)) for f in ("pages", "segments", "objects", "agents", "system"))
        if changes:
            store.write(ns, changes)
    return written
