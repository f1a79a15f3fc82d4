"""Audit entries of the sync job in the ledger: what was embedded, by which model, when (seed 004).

Each message or memory the sync job embeds gets one ledger entry with
``op="embed"`` under its own id, so ``history(id)`` (library, CLI, MCP, REST)
shows when it was embedded and by which model. The entry's ``after`` holds
the audit record — never the text:

``{"job": "semantic_sync", "source": "message"|"memory", "embedding_model": …,
"dim": …, "chars": …, "chunks": …, "batch": …, "worker": …, "sensitivity": …, "thread": …}``

The entries are written through the backend's ``write_ledger`` right after the
batch's vectors are stored (not in the same transaction: a crash between the
two leaves a vector without its audit line, never an audit line without a
vector). An audit entry records no state of the item, so
:func:`memory.policy.latest_sensitivity` reads past it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from memory.backends.base import LedgerTransfer
from memory.embedders.base import CHUNK_CHARS
from memory.ids import new_id
from memory.types import LedgerEntry

__all__ = ["AUDIT_OP", "Embedded", "audit_entries", "write_audit"]

log = logging.getLogger(__name__)

#: The ledger op of an audit entry.
AUDIT_OP = "embed"


class Embedded:
    """One row the job embedded: its id, namespace, source kind, text length, sensitivity and thread."""

    __slots__ = ("id", "namespace", "source", "chars", "sensitivity", "thread")

    def __init__(
        self,
        id: str,  # noqa: A002 - the row's id
        namespace: str,
        source: Literal["message", "memory"],
        chars: int,
        sensitivity: str,
        thread: str | None,
    ) -> None:
        """Describe one embedded row."""
        self.id = id
        self.namespace = namespace
        self.source = source
        self.chars = chars
        self.sensitivity = sensitivity
        self.thread = thread


def audit_entries(
    rows: Sequence[Embedded], *, job: str, model: str, dim: int, batch: str, worker: str, at: datetime
) -> list[LedgerEntry]:
    """One ``embed`` ledger entry per row (pure)."""
    entries = []
    for row in rows:
        record: dict[str, Any] = {
            "job": job, "source": row.source, "embedding_model": model, "dim": dim, "chars": row.chars,
            "chunks": max(1, -(-row.chars // CHUNK_CHARS)), "batch": batch, "worker": worker,
            "sensitivity": row.sensitivity, "thread": row.thread,
        }  # fmt: skip
        entries.append(
            LedgerEntry(
                id=new_id(),
                namespace=row.namespace,
                item_id=row.id,
                op=AUDIT_OP,
                at=at,
                before=None,
                after=record,
                reason=f"{job}: embedded by {model}",
            )  # fmt: skip
        )
    return entries


def write_audit(backend: object, entries: Sequence[LedgerEntry]) -> int:
    """Append ``entries`` through the backend's ``write_ledger``; returns how many were written.

    A backend without the :class:`~memory.backends.base.LedgerTransfer`
    capability (a third-party one) is logged once per call and skipped: the
    audit never fails a sync.
    """
    if not entries:
        return 0
    if not isinstance(backend, LedgerTransfer):
        log.warning("backend %s has no write_ledger: %d sync audit entries not recorded", backend, len(entries))
        return 0
    backend.write_ledger(entries)
    return len(entries)
