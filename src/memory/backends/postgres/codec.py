"""Pure conversion between model objects and PostgreSQL rows (timestamptz, jsonb, pgvector text)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from memory.backends.columns import ITEM_COLUMNS, JSON_COLUMNS, TIME_COLUMNS
from memory.types import LedgerEntry, MemoryItem

__all__ = [
    "ITEM_COLUMNS",
    "ITEM_SELECT",
    "INSERT_COLUMNS",
    "item_values",
    "row_to_item",
    "LEDGER_COLUMNS",
    "LEDGER_SELECT",
    "ledger_values",
    "row_to_ledger",
    "doc_len",
    "vector_text",
    "parse_vector",
]


def _quoted(column: str) -> str:
    return f'"{column}"' if column == "user" else column


#: ``SELECT`` list for items aliased ``i``.
ITEM_SELECT = ", ".join(f"i.{_quoted(c)}" for c in ITEM_COLUMNS)
#: Column list of an ``INSERT INTO items`` (the item fields plus ``doc_len``).
INSERT_COLUMNS = ", ".join([*(_quoted(c) for c in ITEM_COLUMNS), "doc_len"])

LEDGER_COLUMNS: tuple[str, ...] = ("id", "namespace", "item_id", "op", "at", "before", "after", "reason")
LEDGER_SELECT = 'id, namespace, item_id, op, at, "before", "after", reason'

_WORD = re.compile(r"\w+", re.UNICODE)


def doc_len(content: str) -> int:
    """Number of words in ``content`` (the document length BM25 normalises by)."""
    return len(_WORD.findall(content))


def item_values(item: MemoryItem) -> tuple[Any, ...]:
    """The values of ``item`` for :data:`INSERT_COLUMNS`, ready to bind (jsonb wrapped)."""
    from psycopg.types.json import Jsonb

    out: list[Any] = []
    for column in ITEM_COLUMNS:
        value = getattr(item, column)
        if column in JSON_COLUMNS:
            value = Jsonb(list(value) if isinstance(value, tuple) else value)
        out.append(value)
    out.append(doc_len(item.content))
    return tuple(out)


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC)


def row_to_item(row: Sequence[Any]) -> MemoryItem:
    """Build a MemoryItem from a row selected with :data:`ITEM_SELECT` (extra trailing columns ignored)."""
    data: dict[str, Any] = {}
    for column, value in zip(ITEM_COLUMNS, row[: len(ITEM_COLUMNS)], strict=True):
        if column in TIME_COLUMNS:
            value = _utc(value)
        elif column in JSON_COLUMNS and isinstance(value, list):
            value = tuple(value)
        data[column] = value
    return MemoryItem(**data)


def ledger_values(entry: LedgerEntry) -> tuple[Any, ...]:
    """The values of ``entry`` for :data:`LEDGER_COLUMNS`, ready to bind."""
    from psycopg.types.json import Jsonb

    return (
        entry.id,
        entry.namespace,
        entry.item_id,
        entry.op,
        entry.at,
        None if entry.before is None else Jsonb(entry.before),
        None if entry.after is None else Jsonb(entry.after),
        entry.reason,
    )


def row_to_ledger(row: Sequence[Any]) -> LedgerEntry:
    """Build a LedgerEntry from a row selected with :data:`LEDGER_SELECT`."""
    entry_id, namespace, item_id, op, at, before, after, reason = row
    return LedgerEntry(
        id=entry_id,
        namespace=namespace,
        item_id=item_id,
        op=op,
        at=at.astimezone(UTC),
        before=before,
        after=after,
        reason=reason,
    )


def vector_text(vector: npt.NDArray[np.float32]) -> str:
    """pgvector's text form of a float32 vector; exact (each float32 prints and parses back unchanged)."""
    return "[" + ",".join(map(repr, vector.astype(np.float32).tolist())) + "]"


def parse_vector(text: str) -> npt.NDArray[np.float32]:
    """A float32 array from pgvector's text form ``[1,2,3]``."""
    body = text.strip()[1:-1]
    if not body:
        return np.zeros(0, dtype=np.float32)
    return np.array(body.split(","), dtype=np.float32)
