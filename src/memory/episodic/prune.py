"""TTL pruning: expired messages (hot and archived) and expired memories are deleted.

Expired memories get a ledger entry with op ``expire`` (the state before), so
``memory history`` still tells what happened to them. A prune of every
namespace also deletes media files no message references any more (older than
a grace period, so a file written by an append still in flight is kept).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from memory.records import ledger_entry

if TYPE_CHECKING:
    from memory.episodic.messages import Messages
    from memory.services import Core

__all__ = ["PruneReport", "prune"]

_BATCH = 500


@dataclass
class PruneReport:
    """How many expired messages and memories were deleted."""

    messages: int = 0
    memories: int = 0
    media_files: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


#: Media files younger than this are never collected (an append may still be writing its row).
MEDIA_GRACE_SECONDS = 3600.0


def _collect_media(messages: Messages, grace_seconds: float) -> int:
    """Delete files in the media directory that no message references; returns how many."""
    store = messages.store
    root = messages.media_store.root
    if not root.is_dir():
        return 0
    cutoff = time.time() - grace_seconds
    candidates = {}
    for path in root.glob("??/*"):
        if path.is_file() and len(path.name) == 64 and not path.name.startswith("."):
            try:
                if path.stat().st_mtime <= cutoff:
                    candidates[path.name] = path
            except FileNotFoundError:
                continue
    removed = 0
    names = sorted(candidates)
    for start in range(0, len(names), _BATCH):
        batch = names[start : start + _BATCH]
        for name in set(batch) - store.media_in_use(batch):
            try:
                candidates[name].unlink()
                removed += 1
            except FileNotFoundError:
                pass
    return removed


def prune(
    core: Core,
    messages: Messages,
    *,
    namespace: str | None = None,
    media_grace_seconds: float = MEDIA_GRACE_SECONDS,
) -> PruneReport:
    """Delete what has expired by the store's clock, in ``namespace`` or everywhere (None).

    Everywhere also collects unreferenced media files older than ``media_grace_seconds``.
    """
    now = core.now()
    report = PruneReport()
    store = core.backend.episodic
    ns = None if namespace is None else core.ns(namespace)
    if store is not None:
        report.messages = store.purge_expired_messages(ns, now)
        if ns is None:
            report.media_files = _collect_media(messages, media_grace_seconds)
    backend = core.backend
    for name in [ns] if ns is not None else backend.namespaces():
        flt = core.filter(name, clearance="secret", include_expired=True, include_invalid=True)
        expired = [i for i in backend.iter_items(flt) if i.expires_at is not None and i.expires_at <= now]
        for start in range(0, len(expired), _BATCH):
            batch = expired[start : start + _BATCH]
            ledger = [ledger_entry("expire", i.id, i.namespace, now, before=i, reason="ttl") for i in batch]
            report.memories += backend.delete(name, [i.id for i in batch], ledger)
    return report
