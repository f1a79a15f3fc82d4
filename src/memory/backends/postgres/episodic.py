"""`PostgresEpisodicStore`: the shared :class:`~memory.backends.episodic_sql.SQLEpisodicStore` in PostgreSQL.

Tables are described in :mod:`.schema_episodic`; every write is one
transaction on the backend's pool, with the row locks of the PostgreSQL
dialect (thread counters, ``FOR UPDATE SKIP LOCKED`` claims). What is
PostgreSQL's own: ``doc_len`` and the per-namespace ``message_lexical_stats``
kept in the writing transaction for BM25 (lexical search is the items'
hybrid_search_v1 statement over ``messages``), and vectors in
``msg_vectors_<space>`` (pgvector), searched exactly up to the backend's
``exact_limit`` vectors per namespace and through HNSW above it.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from memory.backends.dialect import Dialect
from memory.backends.episodic_sql import SQLEpisodicStore
from memory.backends.item_vectors import SpaceRow
from memory.backends.postgres.codec import doc_len, parse_vector, vector_text
from memory.backends.postgres.queries import LEXICAL_EXACT_DOCS, MESSAGES_LEXICAL
from memory.backends.postgres.schema_episodic import create_message_space_table, message_space_table
from memory.backends.postgres.sql import HNSW_MAX_DIM, storable, text_list
from memory.backends.values import ChannelHit, Vector
from memory.episodic.types import Message, MessageQuery


class PostgresVectorHost(Protocol):
    """What the message store shares of its PostgreSQL backend: pool, transactions, vector spaces, search knobs."""

    _exact_limit: int
    _ef_search: int
    dialect: Dialect

    def _read(self) -> AbstractContextManager[Any]: ...
    def _tx(self) -> AbstractContextManager[Any]: ...
    def _space(self, conn: Any, model: str | None) -> SpaceRow | None: ...
    def _checked_vector(self, space: Any, vector: Vector) -> Vector: ...


__all__ = ["PostgresEpisodicStore"]

_SIZE_TTL = 5.0
_SPACE_LOCK = 7_361_120_101  # the backend's vector-space lock: one creator of space tables at a time


class _MessageSpace:
    __slots__ = ("space_id", "model", "dim", "table")

    def __init__(self, space_id: int, model: str, dim: int) -> None:
        self.space_id, self.model, self.dim = space_id, model, dim
        self.table = message_space_table(space_id)


class PostgresEpisodicStore(SQLEpisodicStore):
    """The :class:`~memory.backends.episodic.EpisodicStore` of one :class:`PostgresBackend`."""

    extra_columns = ("doc_len",)

    def __init__(self, backend: PostgresVectorHost) -> None:
        """Share ``backend``'s pool, dialect and vector spaces."""
        super().__init__(backend.dialect)
        self._b = backend
        self._ready: set[int] = set()
        self._sizes: dict[tuple[int, str], tuple[bool, float]] = {}

    # -- vector spaces -----------------------------------------------------
    def _space(self, conn: Any, model: str, *, create: bool) -> _MessageSpace | None:
        base = self._b._space(conn, model)
        if base is None:
            return None
        space = _MessageSpace(base.space_id, base.model, base.dim)
        if space.space_id in self._ready:
            return space
        exists = conn.execute("SELECT to_regclass(format('%%I.%%I', current_schema(), %s::text)) IS NOT NULL",
                              (space.table,)).fetchone()[0]  # fmt: skip
        if not exists:
            if not create:
                return None
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SPACE_LOCK,))
                create_message_space_table(conn, space.space_id, space.dim)
        self._ready.add(space.space_id)
        return space

    def _all_spaces(self, conn: Any) -> list[_MessageSpace]:
        rows = conn.execute(
            "SELECT s.space_id, s.model, s.dim FROM vector_spaces s WHERE to_regclass(format('%%I.%%I', "
            "current_schema(), 'msg_vectors_' || s.space_id)) IS NOT NULL ORDER BY s.space_id"
        ).fetchall()
        return [_MessageSpace(int(r[0]), str(r[1]), int(r[2])) for r in rows]

    @staticmethod
    def _bump_stats(conn: Any, deltas: dict[str, list[int]]) -> None:
        for namespace in sorted(deltas):
            docs, words = deltas[namespace]
            if docs or words:
                conn.execute(
                    "INSERT INTO message_lexical_stats (namespace, docs, words) VALUES (%s, %s, %s) "
                    "ON CONFLICT (namespace) DO UPDATE SET docs = message_lexical_stats.docs + EXCLUDED.docs, "
                    "words = message_lexical_stats.words + EXCLUDED.words",
                    (namespace, docs, words),
                )

    # -- hooks of the shared store -------------------------------------------
    def _extra_values(self, message: Message) -> tuple[Any, ...]:
        return (doc_len(message.content),)

    def _inserted(self, conn: Any, messages: Sequence[Message]) -> None:
        deltas: dict[str, list[int]] = {}
        for message in messages:
            stat = deltas.setdefault(message.namespace, [0, 0])
            stat[0] += 1
            stat[1] += doc_len(message.content)
        self._bump_stats(conn, deltas)

    def _delete_hot(self, conn: Any, namespace: str, ids: Sequence[str]) -> int:
        """Delete hot messages (their vectors go with the row: cascade) and update the BM25 statistics."""
        if not ids:
            return 0
        rows = conn.execute(
            "DELETE FROM messages WHERE namespace = %s AND id = ANY(%s::text[]) RETURNING doc_len",
            (namespace, text_list(ids)),
        ).fetchall()
        self._bump_stats(conn, {namespace: [-len(rows), -sum(int(r[0]) for r in rows)]})
        return len(rows)

    def _checked(self, space: Any, vector: Vector) -> Vector:
        return self._b._checked_vector(space, vector)

    def _store_vector(self, conn: Any, message: Message, model: str, vector: Vector) -> None:
        space = self._writable_space(conn, model)
        checked = self._checked(space, vector)
        conn.execute(
            f"INSERT INTO {space.table} (namespace, id, embedding) VALUES (%s, %s, %s::vector)",
            (message.namespace, message.id, vector_text(checked)),
        )

    # -- search ------------------------------------------------------------
    def search_messages_lexical(
        self, query: MessageQuery, terms: Sequence[str], k: int, *, exact_only: bool = False
    ) -> builtins.list[ChannelHit]:
        """BM25 (the items' hybrid_search_v1 lexical statement) over matching hot messages, best first.

        ``exact_only``: nothing in a namespace of more than ``LEXICAL_EXACT_DOCS`` messages.
        """
        words = [t for t in terms if isinstance(t, str) and t.strip() and storable(t)]
        if not words or k <= 0 or not storable(query.namespace):
            return []
        where, params = self.where(query, "i")
        sql = MESSAGES_LEXICAL.replace("{where}", self._d.sql(where))
        with self._b._read() as conn:
            if exact_only:
                row = conn.execute(
                    "SELECT docs FROM message_lexical_stats WHERE namespace = %s", (query.namespace,)
                ).fetchone()
                if row is not None and int(row[0]) > LEXICAL_EXACT_DOCS:
                    return []
            rows = conn.execute(sql, [words, query.namespace, query.namespace, *params, int(k)]).fetchall()
        return [ChannelHit(str(r[0]), float(r[1])) for r in rows]

    def search_messages_vector(
        self, query: MessageQuery, model: str, vector: Vector, k: int
    ) -> builtins.list[ChannelHit]:
        """Cosine search over matching hot messages: exact up to ``exact_limit`` vectors, else HNSW."""
        with self._b._read() as conn:
            if (found := self._query_space(conn, model, vector, k)) is None:
                return []
            space, checked = found
            if not storable(query.namespace):
                return []
            where, params = self.where(query)
            where = self._d.sql(where)
            text = vector_text(checked)
            args = [text, query.namespace, *params, text, int(k)]
            exact = space.dim > HNSW_MAX_DIM or not self._large(conn, space, query.namespace)
            rows: list[Any] = []
            if not exact:
                with conn.transaction():
                    conn.execute("SELECT set_config('hnsw.ef_search', %s, true)",
                                 (str(max(int(k), self._b._ef_search)),))  # fmt: skip
                    rows = conn.execute(self._vector_sql(space, where, exact=False), args).fetchall()
            if exact or len(rows) < k:
                rows = conn.execute(self._vector_sql(space, where, exact=True), args).fetchall()
        return [ChannelHit(str(r[0]), float(r[1])) for r in rows]

    @staticmethod
    def _vector_sql(space: _MessageSpace, where: str, *, exact: bool) -> str:
        order = "(v.embedding <=> %s::vector) + 0" if exact else "v.embedding <=> %s::vector"
        return (
            f"WITH c AS MATERIALIZED (SELECT m.id, v.embedding <=> %s::vector AS d FROM {space.table} v "
            "JOIN messages m ON m.namespace = v.namespace AND m.id = v.id "
            f"WHERE v.namespace = %s AND {where} ORDER BY {order} LIMIT %s) "
            "SELECT id, 1 - d FROM c ORDER BY d, id"
        )

    def _large(self, conn: Any, space: _MessageSpace, namespace: str) -> bool:
        key = (space.space_id, namespace)
        now = time.monotonic()
        cached = self._sizes.get(key)
        if cached is not None and cached[1] > now:
            return cached[0]
        limit = self._b._exact_limit
        row = conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {space.table} WHERE namespace = %s LIMIT %s) AS s",
            (namespace, limit + 1),
        ).fetchone()
        large = int(row[0]) > limit
        if len(self._sizes) > 10_000:
            self._sizes.clear()
        self._sizes[key] = (large, now + _SIZE_TTL)
        return large

    def get_message_vectors(self, namespace: str, model: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors by id."""
        if not ids or not storable(namespace):
            return {}
        with self._b._read() as conn:
            space = self._space(conn, model, create=False)
            if space is None:
                return {}
            rows = conn.execute(
                f"SELECT id, embedding::text FROM {space.table} WHERE namespace = %s AND id = ANY(%s::text[])",
                (namespace, text_list(ids)),
            ).fetchall()
        return {str(r[0]): parse_vector(r[1]) for r in rows}

    # -- vectors -----------------------------------------------------------
    def set_message_vectors(self, namespace: str, model: str, updates: Sequence[tuple[str, Vector]]) -> int:
        """Store vectors, mark done, clear claims — one transaction; vectors checked first."""
        if not updates:
            return 0
        with self._b._tx() as conn:
            space = self._writable_space(conn, model)
            checked = {i: self._checked(space, v) for i, v in updates}
            if not storable(namespace):
                return 0
            done = [
                str(r[0])
                for r in conn.execute(
                    "UPDATE messages SET embedding_status = 'done', embedding_model = %s, embedding_error = NULL, "
                    "claimed_by = NULL, claimed_until = NULL WHERE namespace = %s AND id = ANY(%s::text[]) "
                    "RETURNING id",
                    (model, namespace, text_list(checked)),
                )
            ]
            if not done:
                return 0
            for other in self._all_spaces(conn):
                if other.space_id != space.space_id:
                    conn.execute(f"DELETE FROM {other.table} WHERE namespace = %s AND id = ANY(%s::text[])",
                                 (namespace, done))  # fmt: skip
            with conn.cursor() as cur:
                cur.executemany(
                    f"INSERT INTO {space.table} (namespace, id, embedding) VALUES (%s, %s, %s::vector) "
                    "ON CONFLICT (namespace, id) DO UPDATE SET embedding = EXCLUDED.embedding",
                    [(namespace, i, vector_text(checked[i])) for i in done],
                )
            return len(done)

    def media_in_use(self, hashes: Sequence[str]) -> set[str]:
        """Referenced media hashes among ``hashes`` (hot and archived messages, any namespace)."""
        wanted = text_list(hashes)
        if not wanted:
            return set()
        with self._b._read() as conn:
            rows = conn.execute(
                "SELECT h FROM unnest(%s::text[]) AS h WHERE EXISTS (SELECT 1 FROM messages m "
                "WHERE m.media IS NOT NULL AND m.media ->> 'sha256' = h) OR EXISTS (SELECT 1 FROM message_archive a "
                "WHERE a.data::jsonb -> 'media' ->> 'sha256' = h)",
                (wanted,),
            ).fetchall()
        return {str(r[0]) for r in rows}
