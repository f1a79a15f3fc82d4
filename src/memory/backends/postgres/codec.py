"""Pure conversion of model objects to PostgreSQL rows (timestamptz, jsonb, pgvector text).

Rows are read back by the shared store (:class:`memory.backends.items.SQLItemStore`).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import numpy.typing as npt

from memory.backends.columns import ITEM_COLUMNS, JSON_COLUMNS
from memory.types import MemoryItem

__all__ = [
    "ITEM_COLUMNS",
    "ROW_COLUMNS",
    "item_values",
    "doc_len",
    "vector_text",
    "parse_vector",
]


#: The columns of an item's row, in :func:`item_values` order (the item fields plus ``doc_len``).
ROW_COLUMNS: tuple[str, ...] = (*ITEM_COLUMNS, "doc_len")


_WORD = re.compile(r"\w+", re.UNICODE)


def doc_len(content: str) -> int:
    """Number of words in ``content`` (the document length BM25 normalises by)."""
    return len(_WORD.findall(content))


def item_values(item: MemoryItem) -> tuple[Any, ...]:
    """The values of ``item`` for :data:`ROW_COLUMNS`, ready to bind (jsonb wrapped)."""
    from psycopg.types.json import Jsonb

    out: list[Any] = []
    for column in ITEM_COLUMNS:
        value = getattr(item, column)
        if column in JSON_COLUMNS:
            value = Jsonb(list(value) if isinstance(value, tuple) else value)
        out.append(value)
    out.append(doc_len(item.content))
    return tuple(out)


def vector_text(vector: npt.NDArray[np.float32]) -> str:
    """pgvector's text form of a float32 vector; exact (each float32 prints and parses back unchanged)."""
    return "[" + ",".join(map(repr, vector.astype(np.float32).tolist())) + "]"


def parse_vector(text: str) -> npt.NDArray[np.float32]:
    """A float32 array from pgvector's text form ``[1,2,3]``."""
    body = text.strip()[1:-1]
    if not body:
        return np.zeros(0, dtype=np.float32)
    return np.array(body.split(","), dtype=np.float32)
