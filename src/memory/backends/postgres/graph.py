"""The PostgreSQL graph store: the shared :class:`~memory.backends.graph_sql.SQLGraphStore`.

Runs on its backend's pool, one transaction per write, with the row locks and
transaction locks of the PostgreSQL dialect. Deletes of items cascade through
composite foreign keys and triggers (see :mod:`.schema_graph`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory.backends.graph_sql import SQLGraphStore

if TYPE_CHECKING:
    from memory.backends.postgres.backend import PostgresBackend

__all__ = ["PostgresGraph"]


class PostgresGraph(SQLGraphStore):
    """Graph store over a :class:`PostgresBackend`'s pool."""

    def __init__(self, backend: PostgresBackend) -> None:
        """Bind to ``backend``'s dialect (its pool and transactions)."""
        super().__init__(backend.dialect)
