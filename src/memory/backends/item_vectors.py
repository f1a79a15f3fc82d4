"""Vector spaces of the items store, written once for every SQL engine.

:class:`SQLVectorStore` registers spaces (one per embedding model), checks
vectors against them, stores vectors of existing items and checks the
arguments of vector search; the engine stores and ranks vectors itself
(SQLite sign bits with exact rescoring, pgvector) through a few hooks.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from memory.backends.dialect import Dialect
from memory.backends.values import ChannelHit, Vector, VectorSpace
from memory.errors import EmbeddingMismatchError, InvalidInputError, InvalidVectorError
from memory.filters import Filter

__all__ = ["S", "SQLVectorStore", "SpaceRow"]


class SpaceRow(Protocol):
    """What the shared code reads of an engine's vector space object."""

    @property
    def space_id(self) -> int: ...
    @property
    def model(self) -> str: ...
    @property
    def dim(self) -> int: ...


S = TypeVar("S", bound=SpaceRow)


class SQLVectorStore(Generic[S]):
    """Vector-space registration, vector checks, ``set_vectors`` and vector search arguments (a base class).

    The engine sets :attr:`dialect`, ``_spaces`` (a cache) and ``_lock`` and
    implements the hooks below. ``S`` is the engine's vector space object.
    """

    #: The engine's answers (placeholders, transactions, JSON, times, lists, claims).
    dialect: Dialect
    #: The column by which the engine's vector tables name an item (``rid`` or ``id``).
    row_key: str = "id"
    #: The largest vector dimension the engine stores (None: no limit of its own).
    max_vector_dim: int | None = None
    #: The ``vector_spaces`` columns :meth:`_space_of` reads (``space_id, model, dim`` first).
    space_columns: str = "space_id, model, dim"
    _spaces: dict[str, S]
    _lock: Any

    def _new_space(self, space_id: int, model: str, dim: int) -> S:
        """The engine's object for a registered vector space."""
        raise NotImplementedError

    def _space_of(self, row: Sequence[Any]) -> S:
        """The engine's object for a ``vector_spaces`` row read with :attr:`space_columns`."""
        return self._new_space(int(row[0]), str(row[1]), int(row[2]))

    def _create_space(self, conn: Any, space_id: int, dim: int) -> None:
        """Create a new space's tables and indexes (DDL, inside the caller's transaction)."""
        raise NotImplementedError

    def _write_vector(self, conn: Any, space: S, namespace: str, key: Any, vector: Vector) -> None:
        """Store ``vector`` for the item whose :attr:`row_key` is ``key``, replacing its old one."""
        raise NotImplementedError

    def _nearest(self, conn: Any, space: S, flt: Filter, query: Vector, k: int) -> builtins.list[ChannelHit]:
        """The engine's nearest-neighbour search (sign bits and exact rescoring, or pgvector)."""
        raise NotImplementedError

    def _stored_vectors(self, conn: Any, space: S, namespace: str, ids: Sequence[str]) -> dict[str, Vector]:
        """The engine's stored vectors of ``ids`` in ``space`` (missing ones omitted)."""
        raise NotImplementedError

    def _as_stored(self, space: S, vectors: builtins.list[Vector]) -> builtins.list[Vector]:
        """``vectors`` (checked, float32) as the engine reads them back from ``space`` (default: unchanged)."""
        return vectors

    def _lock_spaces(self, conn: Any) -> None:
        """Serialise the creators of space tables until the transaction ends (default: the write already does)."""

    # -- vector spaces -------------------------------------------------------
    def _space(self, conn: Any, model: str | None) -> S | None:
        """The space of ``model`` (cached once seen), or None."""
        if model is None:
            return None
        space = self._spaces.get(model)
        if space is None:
            rows = self.dialect.rows(conn, f"SELECT {self.space_columns} FROM vector_spaces WHERE model = ?", (model,))
            if rows:
                space = self._space_of(rows[0])
                with self._lock:
                    self._spaces[model] = space
        return space

    def _all_spaces(self, conn: Any) -> builtins.list[S]:
        rows = self.dialect.rows(conn, f"SELECT {self.space_columns} FROM vector_spaces ORDER BY space_id")
        return [self._space_of(r) for r in rows]

    def _require_space(self, conn: Any, model: str | None) -> S:
        space = self._space(conn, model)
        if space is None:
            raise InvalidInputError(f"no vector space registered for model {model!r}; call ensure_vector_space first")
        return space

    def _checked_vector(self, space: S, vector: Vector) -> Vector:
        """``vector`` as float32 when it fits ``space``; InvalidVectorError otherwise."""
        try:
            array = np.asarray(vector, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise InvalidVectorError(f"vector for {space.model!r} is not numeric: {exc}") from exc
        if array.shape != (space.dim,):
            raise InvalidVectorError(f"vector shape {array.shape} does not fit {space.model!r} (dimension {space.dim})")
        if not np.isfinite(array).all():
            raise InvalidVectorError("vector contains NaN or infinite values")
        return array

    def as_stored(self, model: str, vectors: Sequence[Vector]) -> builtins.list[Vector]:
        """``vectors`` as the store would read them back from ``model``'s space (float32 values).

        What a vector written now and read with :meth:`get_vectors` gives:
        values computed from vectors in hand then equal those computed later
        from the store (the SQLite engine rounds a new space's vectors to
        float16). InvalidInputError for a model without a space,
        InvalidVectorError for a vector that does not fit it.
        """
        with self.dialect.read() as conn:
            space = self._require_space(conn, model)
        return self._as_stored(space, [self._checked_vector(space, vector) for vector in vectors])

    def vector_spaces(self) -> builtins.list[VectorSpace]:
        """The embedding models this store holds vectors for, by model name."""
        with self.dialect.read() as conn:
            rows = self.dialect.rows(conn, "SELECT model, dim FROM vector_spaces ORDER BY model")
        return [VectorSpace(str(model), int(dim)) for model, dim in rows]

    def has_vector_space(self, model: str) -> bool:
        """True when the store holds ``model``'s space; read once it exists (no statement per recall)."""
        if model in self._spaces:
            return True
        with self.dialect.read() as conn:
            return self._space(conn, model) is not None

    def ensure_vector_space(self, model: str, dim: int) -> VectorSpace:
        """Register ``model`` with ``dim`` (creating its tables and indexes) or check it.

        Raises EmbeddingMismatchError when the store holds ``model`` with
        another dimension, InvalidInputError for an empty model or bad dim.
        """
        d = self.dialect
        if not isinstance(model, str) or not model.strip() or not d.storable(model):
            raise InvalidInputError("vector space model name must be a non-empty string")
        top = self.max_vector_dim
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1 or (top is not None and dim > top):
            wanted = "a positive integer" if top is None else f"an integer from 1 to {top}"
            raise InvalidInputError(f"vector dimension must be {wanted}, got {dim!r}")
        with d.read() as conn:
            space = self._space(conn, model)
        if space is None:
            with d.write() as conn:
                self._lock_spaces(conn)
                select = f"SELECT {self.space_columns} FROM vector_spaces WHERE model = ?"
                rows = d.rows(conn, select, (model,))
                if not rows:
                    space_id = int(d.rows(
                        conn,
                        "INSERT INTO vector_spaces (model, dim, table_name, created_at) VALUES (?, ?, '', ?) "
                        "RETURNING space_id",
                        (model, dim, d.time_param(datetime.now(UTC))),
                    )[0][0])  # fmt: skip
                    conn.execute(
                        d.sql("UPDATE vector_spaces SET table_name = ? WHERE space_id = ?"),
                        (f"vectors_{space_id}", space_id),
                    )
                    self._create_space(conn, space_id, dim)
                    rows = d.rows(conn, select, (model,))  # as registered, with what _create_space recorded
            space = self._space_of(rows[0])
            with self._lock:
                self._spaces[model] = space
        if space.dim != dim:
            raise EmbeddingMismatchError(
                f"store holds {model!r} vectors of dimension {space.dim}, embedder gives {dim}"
            )
        return VectorSpace(model, dim)

    def set_vectors(self, namespace: str, model: str, updates: Sequence[tuple[str, Vector]]) -> int:
        """Store vectors for existing items of ``namespace``, mark them embedded and clear their claim.

        Every vector is checked before anything is written (InvalidInputError).
        Returns the number of rows updated.
        """
        d = self.dialect
        if not updates:
            return 0
        with d.write() as conn:
            space = self._require_space(conn, model)
            checked = [(item_id, self._checked_vector(space, vector)) for item_id, vector in updates]
            count = 0
            for item_id, vector in checked:
                if not d.storable(namespace, item_id):
                    continue
                rows = d.rows(
                    conn,
                    "UPDATE items SET embedding_status = 'done', embedding_model = ?, embedding_error = NULL, "
                    f"claimed_by = NULL, claimed_until = NULL WHERE namespace = ? AND id = ? RETURNING {self.row_key}",
                    (model, namespace, item_id),
                )
                if rows:
                    self._write_vector(conn, space, namespace, rows[0][0], vector)
                    count += 1
            return count

    def search_vector(self, flt: Filter, model: str, vector: Vector, k: int) -> builtins.list[ChannelHit]:
        """Items matching ``flt`` nearest to ``vector`` in ``model``'s space; score = cosine, best first.

        Raises InvalidVectorError for a vector of the wrong shape, non-finite
        or all zeros.
        """
        with self.dialect.read() as conn:
            space = self._space(conn, model)
            if space is None or k <= 0:
                return []
            query = self._checked_vector(space, vector)
            if not math.isfinite(norm := float(np.linalg.norm(query))) or norm == 0.0:
                raise InvalidVectorError("query vector is all zeros; it has no direction to compare")
            if not self.dialect.storable(flt.namespace):
                return []
            return self._nearest(conn, space, flt, query, int(k))

    def get_vectors(self, namespace: str, model: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors of ``ids`` in ``model``'s space (missing ones omitted)."""
        if not ids or not self.dialect.storable(namespace):
            return {}
        with self.dialect.read() as conn:
            space = self._space(conn, model)
            if space is None:
                return {}
            found = self._stored_vectors(conn, space, namespace, ids)
        return {i: found[i] for i in ids if i in found}
