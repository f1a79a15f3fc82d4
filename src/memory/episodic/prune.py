"""TTL pruning: expired messages (hot and archived) and expired memories are deleted.

Expired memories get a ledger entry with op ``expire`` (the state before), so
``memory history`` still tells what happened to them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from memory.records import ledger_entry

if TYPE_CHECKING:
    from memory.memory import Memory

__all__ = ["PruneReport", "prune"]

_BATCH = 500


@dataclass
class PruneReport:
    """How many expired messages and memories were deleted."""

    messages: int = 0
    memories: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def prune(mem: Memory, *, namespace: str | None = None) -> PruneReport:
    """Delete what has expired by ``mem``'s clock, in ``namespace`` or everywhere (None)."""
    now = mem.now()
    report = PruneReport()
    store = getattr(mem.backend, "episodic", None)
    ns = None if namespace is None else mem._ns(namespace)
    if store is not None:
        report.messages = store.purge_expired_messages(ns, now)
    backend = mem.backend
    for name in [ns] if ns is not None else backend.namespaces():
        flt = mem.filter(name, clearance="secret", include_expired=True, include_invalid=True)
        expired = [i for i in backend.iter_items(flt) if i.expires_at is not None and i.expires_at <= now]
        for start in range(0, len(expired), _BATCH):
            batch = expired[start : start + _BATCH]
            ledger = [ledger_entry("expire", i.id, i.namespace, now, before=i, reason="ttl") for i in batch]
            report.memories += backend.delete(name, [i.id for i in batch], ledger)
    return report
