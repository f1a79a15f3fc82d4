"""The SQLite :class:`~memory.backends.dialect.Dialect`: ``?`` placeholders, JSON as text, epoch seconds.

Writes run in ``BEGIN IMMEDIATE`` transactions, which already serialise
writers across processes, so the dialect needs no extra lock.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from memory.backends.dialect import Dialect
from memory.backends.sqlite.sql import ROLE_SQL, SPEAKER_SQL

__all__ = ["sqlite_dialect"]


def sqlite_dialect(
    read: Callable[[], AbstractContextManager[Any]], write: Callable[[], AbstractContextManager[Any]]
) -> Dialect:
    """The dialect of a SQLite connection whose reads and immediate write transactions ``read``/``write`` open."""
    return Dialect(name="sqlite", read=read, write=write, role_sql=ROLE_SQL, speaker_sql=SPEAKER_SQL, not_indexed="+")


# --- items store ---
# The SQLite dialect's defaults already are the items store's answers (lists as JSON read with
# json_each, claims serialised by BEGIN IMMEDIATE).
