"""libSQL's own vector index (DiskANN) as the candidate source of vector search, for stores that opt in.

The SQLite engine finds vector candidates with an in-process copy of each
namespace's sign bits (:mod:`memory.backends.sqlite.vectors`), loaded on a
process's first search. With ``vector_index=True`` a libSQL store keeps, for
every vector space of its memories, a table ``lvec_<id>`` whose ``F32_BLOB``
column carries a ``libsql_vector_idx`` index, kept equal to ``vectors_<id>`` by
triggers; candidates then come from ``vector_top_k`` and are rescored exactly
as before, so scores stay exact. The index holds float32 in every space: a
float16 space's raw blobs are tagged as float16 for libSQL (its type byte, 5,
appended) and converted by ``vector32`` in the triggers. The index costs writes (each insert updates
its graph; see the README for the measured rates) and saves the first search
the load of the in-process copy and the process that copy's memory: it serves
stores that are read far more than written, such as embedded replicas.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memory.backends.sqlite import vectors
from memory.backends.values import Vector

__all__ = ["create_native_index", "NativeCandidates", "NativeIndexCache", "native_table"]


def native_table(space: vectors.Space) -> str:
    """The indexed copy of ``space``'s vectors table (items only)."""
    return f"lvec_{space.space_id}"


#: libSQL's type byte of a float16 vector blob (a raw blob without one reads as float32).
_LIBSQL_FLOAT16 = "05"


def _as_float32(space: vectors.Space, column: str) -> str:
    """SQL giving the float32 vector of the stored blob ``column`` of ``space``."""
    if space.dtype == vectors.FLOAT32:
        return column
    return f"vector32(unhex(hex({column}) || '{_LIBSQL_FLOAT16}'))"


def create_native_index(conn: Any, space: vectors.Space) -> None:
    """Create (if missing) the indexed table, its triggers, and fill it from the vectors table."""
    table, source = native_table(space), space.vectors_table
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    if exists:
        return
    conn.execute(f"CREATE TABLE {table} (rid INTEGER PRIMARY KEY, embedding F32_BLOB({int(space.dim)}))")
    conn.execute(f"CREATE INDEX {table}_idx ON {table} (libsql_vector_idx(embedding, 'metric=cosine'))")
    conn.execute(
        f"CREATE TRIGGER {table}_ins AFTER INSERT ON {source} BEGIN "
        f"INSERT OR REPLACE INTO {table} (rid, embedding) VALUES (new.rid, {_as_float32(space, 'new.embedding')}); END"
    )
    conn.execute(
        f"CREATE TRIGGER {table}_upd AFTER UPDATE OF embedding ON {source} BEGIN "
        f"INSERT OR REPLACE INTO {table} (rid, embedding) VALUES (new.rid, {_as_float32(space, 'new.embedding')}); END"
    )
    conn.execute(
        f"CREATE TRIGGER {table}_del AFTER DELETE ON {source} BEGIN DELETE FROM {table} WHERE rid = old.rid; END"
    )
    conn.execute(f"INSERT INTO {table} (rid, embedding) SELECT rid, {_as_float32(space, 'embedding')} FROM {source}")


class NativeCandidates:
    """Candidates of one namespace from ``vector_top_k`` (the index spans every namespace of the space)."""

    exact = False
    live = False  # no scored entries to name

    def __init__(self, conn: Any, space: vectors.Space, namespace: str) -> None:
        """Read the namespace's vector count from the space's counters."""
        self._conn, self._space, self._namespace = conn, space, namespace
        row = conn.execute(
            f"SELECT last_seq, deletions FROM {space.counters_table} WHERE space_id = ? AND namespace = ?",
            (space.space_id, namespace),
        ).fetchone()
        self.size = 0 if row is None else max(int(row[0]) - int(row[1]), 0)

    def nearest(self, vector: Vector, n: int) -> list[int]:
        """Row ids of about the ``n`` nearest entries (of any namespace: the caller's filter drops the rest)."""
        query = np.ascontiguousarray(vector, dtype=np.float32).tobytes()
        rows = self._conn.execute(
            f"SELECT id FROM vector_top_k('{native_table(self._space)}_idx', ?, ?)", (query, int(n))
        ).fetchall()
        return [int(r[0]) for r in rows]

    def wanted(self, k: int, oversample: int, min_candidates: int) -> int:
        """``k * oversample``, at least ``min_candidates``: its candidates are rescored in SQL, unranked."""
        return max(k * oversample, min_candidates)

    def scored(self, vector: Vector, n: int) -> None:
        """None: ``vector_top_k`` gives no scores, so the candidates are rescored in SQL."""
        return None

    def cosines_at(self, seqs: Sequence[int], vector: Vector) -> None:
        """None: no vectors are held in memory, so a filter's rows are scored in SQL."""
        return None

    def all_rids(self) -> list[int]:
        """Every row id of the namespace that has a vector in the space."""
        rows = self._conn.execute(
            f"SELECT DISTINCT rid FROM {self._space.codes_table} WHERE namespace = ?", (self._namespace,)
        ).fetchall()
        return [int(r[0]) for r in rows]


class NativeIndexCache:
    """The :class:`~memory.backends.sqlite.vectors.CandidateCache` of a store with the native index."""

    def refresh(
        self, conn: Any, space: vectors.Space, namespace: str, counters: tuple[int, int] | None = None
    ) -> NativeCandidates:
        """The namespace's candidates (nothing is held in process; ``counters`` are not needed)."""
        return NativeCandidates(conn, space, namespace)

    def holds_vectors(self, space: vectors.Space, namespace: str, count: int, share: float = 1.0) -> bool:
        """False: the native index holds no vectors in process."""
        return False
