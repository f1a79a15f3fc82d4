"""Pure conversion of model objects to SQLite rows (times as epoch seconds, lists as compact JSON).

Rows are read back by the shared store (:class:`memory.backends.items.SQLItemStore`).
"""

from __future__ import annotations

from typing import Any

from memory.backends.columns import ITEM_COLUMNS, JSON_COLUMNS, TIME_COLUMNS
from memory.backends.dialect import COMPACT_JSON
from memory.ids import to_epoch
from memory.types import MemoryItem

__all__ = ["ITEM_COLUMNS", "item_values"]


def item_values(item: MemoryItem) -> tuple[Any, ...]:
    """The values of ``item`` for :data:`ITEM_COLUMNS`, ready to bind."""
    out: list[Any] = []
    for column in ITEM_COLUMNS:
        value = getattr(item, column)
        if column in JSON_COLUMNS:
            if not value:  # most rows' tags, keywords, entities, metadata and sources: no encoder needed
                value = "{}" if isinstance(value, dict) else "[]"
            else:
                value = COMPACT_JSON.encode(list(value) if isinstance(value, tuple) else value)
        elif column in TIME_COLUMNS and value is not None:
            value = to_epoch(value)
        out.append(value)
    return tuple(out)
