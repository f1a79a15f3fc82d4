"""In-process copies of a namespace's graph vectors, for the graph store's exact similarity searches.

``search_entities`` and ``search_relations`` rank every vector of a namespace
(and model) by cosine with the query. Read from the table for each search,
that grows with the graph: on SQLite, 2,000 relations cost 11 ms a search and
20,000 cost 168 ms (the graph channel of every default recall runs one).
:class:`GraphVectorCache` keeps each namespace's vectors as one float32
matrix with their lengths, and a version (table ``graph_vector_versions``,
bumped by triggers on every insert, delete or change of an entity's or a
relation's vector, or of a relation's validity, in the writer's transaction
and from any process) tells whether the copy still holds: the search reads
one row instead of every vector. Scores are the same cosines of the stored
vectors; ties are broken by id, as before.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from memory.backends.values import Vector

__all__ = ["DEFAULT_GRAPH_VECTOR_BYTES", "GraphVectorCache", "VectorRows"]

#: Bytes of graph vectors one store keeps in process, over every namespace, kind and model (least
#: recently searched first out). A namespace's vectors beyond it are read for each search, as before.
DEFAULT_GRAPH_VECTOR_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class VectorRows:
    """Ids with their vectors (one float32 matrix), the vectors' lengths, and which rows are live."""

    ids: list[str]
    matrix: npt.NDArray[np.float32]
    norms: npt.NDArray[np.float32]
    #: Relations: False where the relation was invalidated; None: every row is live.
    live: npt.NDArray[np.bool_] | None = None

    @classmethod
    def read(cls, rows: Sequence[Sequence[Any]], *, with_live: bool = False) -> VectorRows:
        """Rows of ``(id, stored vector[, live])`` as a store reads them (float32 bytes or floats; NULL skipped)."""
        kept = [row for row in rows if row[1] is not None]
        ids = [str(row[0]) for row in kept]
        raws = [bytes(row[1]) if isinstance(row[1], (bytearray, memoryview)) else row[1] for row in kept]
        if not raws:
            matrix = np.zeros((0, 0), dtype=np.float32)
        elif all(isinstance(raw, bytes) for raw in raws) and len({len(raw) for raw in raws}) == 1:
            matrix = np.frombuffer(b"".join(raws), dtype=np.float32).reshape(len(raws), -1)
        else:
            matrix = np.vstack([_floats(raw) for raw in raws])
        norms: npt.NDArray[np.float32] = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
        live = np.array([bool(row[2]) for row in kept], dtype=np.bool_) if with_live else None
        return cls(ids, matrix, norms, live)

    @property
    def nbytes(self) -> int:
        """Bytes the copy holds (matrix and lengths)."""
        return int(self.matrix.nbytes + self.norms.nbytes)

    def best(self, query: Vector, k: int, *, live_only: bool = False) -> list[tuple[str, float]]:
        """The ``k`` rows most cosine-similar to ``query`` as ``(id, cosine)``, best first (ties by id).

        One product on this thread (einsum: OpenBLAS's threads would spin on
        the other core after a product this size); only the best are sorted.
        """
        if not self.ids or k <= 0:
            return []
        q = np.asarray(query, dtype=np.float32)
        lengths = self.norms * np.float32(float(np.linalg.norm(q)) or 1.0)
        scores = np.einsum("ij,j->i", self.matrix, q) / np.where(lengths == 0, np.float32(1.0), lengths)
        rows = np.flatnonzero(self.live) if live_only and self.live is not None else np.arange(len(self.ids))
        if k < rows.shape[0]:  # every row at least as good as the k-th best: ties at the cut are broken by id
            kth = np.partition(-scores[rows], k - 1)[k - 1]
            rows = rows[-scores[rows] <= kth]
        order = sorted(rows.tolist(), key=lambda i: (-float(scores[i]), self.ids[i]))[:k]
        return [(self.ids[i], float(scores[i])) for i in order]


def _floats(raw: Any) -> npt.NDArray[np.float32]:
    return np.frombuffer(raw, dtype=np.float32) if isinstance(raw, bytes) else np.asarray(raw, dtype=np.float32)


class GraphVectorCache:
    """The copies of one store's graph vectors, by ``(kind, namespace, model)``, each valid for one version."""

    def __init__(self, budget: int = DEFAULT_GRAPH_VECTOR_BYTES) -> None:
        """Keep at most ``budget`` bytes of copies (0: none)."""
        self.budget = budget
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, str, str], tuple[int, VectorRows]] = OrderedDict()
        self._bytes = 0

    @property
    def nbytes(self) -> int:
        """Bytes held now."""
        return self._bytes

    def get(self, key: tuple[str, str, str], version: int) -> VectorRows | None:
        """The copy of ``key`` if it was read at ``version``; None otherwise."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] != version:
                return None
            self._entries.move_to_end(key)
            return entry[1]

    def put(self, key: tuple[str, str, str], version: int, rows: VectorRows) -> None:
        """Keep ``rows`` as ``key``'s copy at ``version`` (the least recently used go while over budget)."""
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1].nbytes
            if rows.nbytes > self.budget:
                return
            self._entries[key] = (version, rows)
            self._bytes += rows.nbytes
            while self._bytes > self.budget:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped.nbytes
