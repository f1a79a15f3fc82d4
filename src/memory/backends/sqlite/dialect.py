"""The SQLite :class:`~memory.backends.dialect.Dialect`: ``?`` placeholders, JSON as text, epoch seconds.

Writes run in ``BEGIN IMMEDIATE`` transactions, which already serialise
writers across processes, so the dialect needs no extra lock.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from memory.backends.dialect import Dialect
from memory.backends.sqlite.sql import ROLE_SQL

__all__ = ["sqlite_dialect"]


def sqlite_dialect(
    read: Callable[[], AbstractContextManager[Any]],
    write: Callable[[], AbstractContextManager[Any]],
    search: Callable[[], AbstractContextManager[Any]] | None = None,
) -> Dialect:
    """The dialect of a SQLite connection whose reads and immediate write transactions ``read``/``write`` open.

    ``search`` opens a read connection for long searches (the backend's readers), when there are any.
    """
    return Dialect(name="sqlite", read=read, write=write, search=search, role_sql=ROLE_SQL)


# --- items store ---
# The SQLite dialect's defaults already are the items store's answers (lists as JSON read with
# json_each, claims serialised by BEGIN IMMEDIATE).
