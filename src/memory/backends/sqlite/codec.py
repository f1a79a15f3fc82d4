"""Pure conversion between model objects and SQLite rows (times as epoch seconds, lists as JSON)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memory.backends.columns import ITEM_COLUMNS, JSON_COLUMNS, TIME_COLUMNS
from memory.ids import from_epoch, to_epoch
from memory.types import LedgerEntry, MemoryItem

__all__ = [
    "ITEM_COLUMNS",
    "ITEM_SELECT",
    "item_values",
    "row_to_item",
    "LEDGER_COLUMNS",
    "ledger_values",
    "row_to_ledger",
]


#: ``SELECT`` list for items aliased ``i``.
ITEM_SELECT = ", ".join(f"i.{c}" for c in ITEM_COLUMNS)

LEDGER_COLUMNS: tuple[str, ...] = ("id", "namespace", "item_id", "op", "at", "before", "after", "reason")


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _epoch(value: datetime | None) -> float | None:
    return None if value is None else to_epoch(value)


def item_values(item: MemoryItem) -> tuple[Any, ...]:
    """The values of ``item`` for :data:`ITEM_COLUMNS`, ready to bind."""
    out: list[Any] = []
    for column in ITEM_COLUMNS:
        value = getattr(item, column)
        if column in JSON_COLUMNS:
            value = _dump(list(value) if isinstance(value, tuple) else value)
        elif column in TIME_COLUMNS:
            value = _epoch(value)
        out.append(value)
    return tuple(out)


def row_to_item(row: Sequence[Any]) -> MemoryItem:
    """Build a MemoryItem from a row selected with :data:`ITEM_SELECT` (extra trailing columns ignored)."""
    data: dict[str, Any] = {}
    for column, value in zip(ITEM_COLUMNS, row[: len(ITEM_COLUMNS)], strict=True):
        if column in JSON_COLUMNS:
            value = json.loads(value)
        elif column in TIME_COLUMNS and value is not None:
            value = from_epoch(value)
        data[column] = value
    return MemoryItem(**data)


def ledger_values(entry: LedgerEntry) -> tuple[Any, ...]:
    """The values of ``entry`` for :data:`LEDGER_COLUMNS`, ready to bind."""
    return (
        entry.id,
        entry.namespace,
        entry.item_id,
        entry.op,
        to_epoch(entry.at),
        None if entry.before is None else _dump(entry.before),
        None if entry.after is None else _dump(entry.after),
        entry.reason,
    )


def row_to_ledger(row: Sequence[Any]) -> LedgerEntry:
    """Build a LedgerEntry from a row selected in :data:`LEDGER_COLUMNS` order."""
    entry_id, namespace, item_id, op, at, before, after, reason = row
    return LedgerEntry(
        id=entry_id,
        namespace=namespace,
        item_id=item_id,
        op=op,
        at=from_epoch(at),
        before=None if before is None else json.loads(before),
        after=None if after is None else json.loads(after),
        reason=reason,
    )
