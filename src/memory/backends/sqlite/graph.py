"""The SQLite graph store: the shared :class:`~memory.backends.graph_sql.SQLGraphStore`.

Runs on its backend's connection, lock and immediate transactions, which
serialise writers, so it takes no row locks. Deletes of items cascade through
foreign keys and triggers (migration ``0008_graph``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory.backends.graph_sql import SQLGraphStore
from memory.backends.sqlite.dialect import sqlite_dialect

if TYPE_CHECKING:
    from memory.backends.sqlite.backend import SQLiteBackend

__all__ = ["SQLiteGraph"]


class SQLiteGraph(SQLGraphStore):
    """Graph store over a :class:`SQLiteBackend`'s connection."""

    def __init__(self, backend: SQLiteBackend) -> None:
        """Bind to ``backend``'s reads and write transactions."""
        super().__init__(sqlite_dialect(backend._read, backend._write))
