"""`PostgresEpisodicStore`: conversations, blocks and job state in the backend's PostgreSQL schema.

Tables are described in :mod:`.schema_episodic`. Every write is one
transaction on the backend's pool. Turns come from ``message_threads`` rows
(locked in sorted order, so concurrent batches cannot deadlock), and
``UNIQUE (namespace, thread, turn)`` backs that up. Sync claims use
``FOR UPDATE SKIP LOCKED``: any number of worker processes (on any number of
hosts) share the pending messages and never get the same one while a lease
holds. Lexical search is the items' BM25 statement over ``messages``;
vector search is exact up to the backend's ``exact_limit`` vectors per
namespace, HNSW above it.
"""

from __future__ import annotations

import builtins
import math
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from memory.backends.base import ChannelHit, Vector
from memory.backends.episodic import MESSAGE_STATUSES
from memory.backends.postgres.codec import doc_len, parse_vector, vector_text
from memory.backends.postgres.queries import LEXICAL_COUNTING_DF
from memory.backends.postgres.schema_episodic import create_message_space_table, message_space_table
from memory.backends.postgres.sql import HNSW_MAX_DIM, check_claim, storable, text_list
from memory.episodic.types import Block, BlockChange, JobState, MediaRef, Message, MessageQuery, ThreadInfo
from memory.errors import InvalidInputError, InvalidVectorError
from memory.types import SENSITIVITY_LEVELS

if TYPE_CHECKING:
    from memory.backends.postgres.backend import PostgresBackend

__all__ = ["PostgresEpisodicStore", "compile_message_query"]

_COLUMNS = (
    "id", "namespace", "thread", "turn", "role", "speaker", "user", "agent", "content", "content_type",
    "media", "tags", "metadata", "sensitivity", "created_at", "expires_at", "embedding_status",
    "embedding_model", "embedding_error",
)  # fmt: skip
_JSON = frozenset({"media", "tags", "metadata"})


def _quoted(column: str) -> str:
    return f'"{column}"' if column == "user" else column


_SELECT = ", ".join(f"m.{_quoted(c)}" for c in _COLUMNS)
_RETURNING = ", ".join(_quoted(c) for c in _COLUMNS)
_INSERT = (
    f"INSERT INTO messages ({', '.join(_quoted(c) for c in _COLUMNS)}, doc_len) "
    f"VALUES ({', '.join('%s' for _ in range(len(_COLUMNS) + 1))})"
)
_FALSE = "false"
#: BM25 with counted document frequencies (hybrid_search_v1's lexical statement as it was
#: before items got exact ones in ``lexical_terms``) over the messages tables.
_LEXICAL = (
    LEXICAL_COUNTING_DF.replace("FROM items d", "FROM messages d")
    .replace("FROM items i", "FROM messages i")
    .replace("FROM lexical_stats", "FROM message_lexical_stats")
)
assert "items" not in _LEXICAL and "lexical_stats" not in _LEXICAL.replace("message_lexical_stats", ""), (
    "hybrid_search_v1's lexical SQL changed shape; update the table names here"
)
_SIZE_TTL = 5.0
_SPACE_LOCK = 7_361_120_101  # the backend's vector-space lock: one creator of space tables at a time


def _values(message: Message) -> tuple[Any, ...]:
    from psycopg.types.json import Jsonb

    out: list[Any] = []
    for column in _COLUMNS:
        value = getattr(message, column)
        if column == "media":
            value = None if value is None else Jsonb(value.model_dump(mode="json"))
        elif column == "tags":
            value = Jsonb(list(value))
        elif column == "metadata":
            value = Jsonb(value)
        out.append(value)
    out.append(doc_len(message.content))
    return tuple(out)


def _row(row: Sequence[Any]) -> Message:
    data = dict(zip(_COLUMNS, row[: len(_COLUMNS)], strict=True))
    data["media"] = None if data["media"] is None else MediaRef.model_validate(data["media"])
    data["tags"] = tuple(data["tags"])
    return Message(**data)


def _key(value: str | None) -> str:
    return value or ""


def compile_message_query(query: MessageQuery, alias: str = "m") -> tuple[str, list[Any]]:
    """``(predicate, params)`` selecting the rows of ``messages`` (as ``alias``) that ``query`` matches."""
    a = alias
    if not storable(query.namespace):
        return _FALSE, []
    parts = [f"{a}.namespace = %s"]
    params: list[Any] = [query.namespace]
    for name in ("thread", "user", "agent"):
        wanted = getattr(query, name)
        if wanted is not None:
            if not storable(wanted):
                return _FALSE, []
            parts.append(f"{a}.{_quoted(name)} = %s")
            params.append(wanted)
    if query.roles is not None:
        parts.append(f"{a}.role = ANY(%s::text[])")
        params.append(text_list(query.roles))
    if query.after_turn is not None:
        parts.append(f"{a}.turn > %s")
        params.append(query.after_turn)
    if query.before_turn is not None:
        parts.append(f"{a}.turn < %s")
        params.append(query.before_turn)
    if query.created_after is not None:
        parts.append(f"{a}.created_at >= %s")
        params.append(query.created_after)
    if query.created_before is not None:
        parts.append(f"{a}.created_at < %s")
        params.append(query.created_before)
    level = SENSITIVITY_LEVELS[query.clearance]
    allowed = [name for name, rank in SENSITIVITY_LEVELS.items() if rank <= level]
    if len(allowed) < len(SENSITIVITY_LEVELS):
        parts.append(f"{a}.sensitivity = ANY(%s::text[])")
        params.append(allowed)
    if not query.include_expired:
        parts.append(f"({a}.expires_at IS NULL OR {a}.expires_at > %s)")
        params.append(query.now)
    return " AND ".join(parts), params


class _MessageSpace:
    __slots__ = ("space_id", "model", "dim", "table")

    def __init__(self, space_id: int, model: str, dim: int) -> None:
        self.space_id, self.model, self.dim = space_id, model, dim
        self.table = message_space_table(space_id)


class PostgresEpisodicStore:
    """The :class:`~memory.backends.episodic.EpisodicStore` of one :class:`PostgresBackend`."""

    def __init__(self, backend: PostgresBackend) -> None:
        """Share ``backend``'s pool and vector spaces."""
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

    @staticmethod
    def _removed(rows: Sequence[Sequence[Any]]) -> dict[str, list[int]]:
        """Stats deltas of deleted ``(namespace, doc_len)`` rows."""
        deltas: dict[str, list[int]] = {}
        for namespace, length in rows:
            stat = deltas.setdefault(str(namespace), [0, 0])
            stat[0] -= 1
            stat[1] -= int(length)
        return deltas

    # -- messages ----------------------------------------------------------
    def append_messages(self, messages: Sequence[Message]) -> builtins.list[Message]:
        """Store messages with the next turns of their threads, in one transaction."""
        if not messages:
            return []
        counts: dict[tuple[str, str], int] = {}
        for message in messages:
            counts[(message.namespace, message.thread)] = counts.get((message.namespace, message.thread), 0) + 1
        with self._b._tx() as conn:
            by_ns: dict[str, list[str]] = {}
            for message in messages:
                by_ns.setdefault(message.namespace, []).append(message.id)
            for namespace, ids in by_ns.items():
                if len(set(ids)) < len(ids):
                    raise InvalidInputError("message ids repeat within the batch")
                taken = conn.execute(
                    "SELECT id FROM messages WHERE namespace = %s AND id = ANY(%s::text[]) UNION ALL "
                    "SELECT id FROM message_archive WHERE namespace = %s AND id = ANY(%s::text[]) LIMIT 1",
                    (namespace, text_list(ids), namespace, text_list(ids)),
                ).fetchone()
                if taken is not None:
                    raise InvalidInputError(f"message id {taken[0]} already exists")
            next_turn: dict[tuple[str, str], int] = {}
            for key in sorted(counts):
                last = conn.execute(
                    "INSERT INTO message_threads (namespace, thread, last_turn) VALUES (%s, %s, %s) "
                    "ON CONFLICT (namespace, thread) DO UPDATE SET last_turn = message_threads.last_turn + "
                    "EXCLUDED.last_turn RETURNING last_turn",
                    (*key, counts[key]),
                ).fetchone()[0]
                next_turn[key] = int(last) - counts[key] + 1
            out: builtins.list[Message] = []
            deltas: dict[str, list[int]] = {}
            for message in messages:
                key = (message.namespace, message.thread)
                stored = message.model_copy(update={"turn": next_turn[key]})
                next_turn[key] += 1
                out.append(stored)
                stat = deltas.setdefault(message.namespace, [0, 0])
                stat[0] += 1
                stat[1] += doc_len(message.content)
            with conn.cursor() as cur:
                cur.executemany(_INSERT, [_values(m) for m in out])
            self._bump_stats(conn, deltas)
        return out

    @staticmethod
    def _bump_turn(conn: Any, namespace: str, thread: str, turn: int) -> None:
        conn.execute(
            "INSERT INTO message_threads (namespace, thread, last_turn) VALUES (%s, %s, %s) "
            "ON CONFLICT (namespace, thread) DO UPDATE SET "
            "last_turn = greatest(message_threads.last_turn, EXCLUDED.last_turn)",
            (namespace, thread, turn),
        )

    @staticmethod
    def _archive_row(message: Message, at: datetime) -> tuple[Any, ...]:
        return (message.namespace, message.id, message.thread, message.turn, message.created_at,
                message.expires_at, at, message.model_dump_json())  # fmt: skip

    _INSERT_ARCHIVE = (
        "INSERT INTO message_archive (namespace, id, thread, turn, created_at, expires_at, archived_at, data) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING"
    )

    def import_messages(
        self, entries: Sequence[tuple[Message, str | None, Vector | None]], *, archived: bool = False
    ) -> int:
        """Store exported messages as they are (hot or archived); skip known ids or taken turns."""
        written = 0
        with self._b._tx() as conn:
            deltas: dict[str, list[int]] = {}
            for message, model, vector in entries:
                known = conn.execute(
                    "SELECT 1 FROM messages WHERE namespace = %s AND (id = %s OR (thread = %s AND turn = %s)) "
                    "UNION ALL SELECT 1 FROM message_archive WHERE namespace = %s AND id = %s LIMIT 1",
                    (message.namespace, message.id, message.thread, message.turn, message.namespace, message.id),
                ).fetchone()
                if known:
                    continue
                self._bump_turn(conn, message.namespace, message.thread, message.turn)
                if archived:
                    conn.execute(self._INSERT_ARCHIVE, self._archive_row(message, message.created_at))
                else:
                    conn.execute(_INSERT, _values(message))
                    stat = deltas.setdefault(message.namespace, [0, 0])
                    stat[0] += 1
                    stat[1] += doc_len(message.content)
                    if model is not None and vector is not None:
                        space = self._space(conn, model, create=True)
                        if space is None:
                            raise InvalidInputError(f"no vector space registered for model {model!r}")
                        checked = self._b._checked_vector(space, vector)  # type: ignore[arg-type]
                        conn.execute(
                            f"INSERT INTO {space.table} (namespace, id, embedding) VALUES (%s, %s, %s::vector)",
                            (message.namespace, message.id, vector_text(checked)),
                        )
                written += 1
            self._bump_stats(conn, deltas)
        return written

    def get_messages(
        self, namespace: str, ids: Sequence[str], *, include_archived: bool = False
    ) -> builtins.list[Message]:
        """Messages by id, in the order asked."""
        if not ids or not storable(namespace):
            return []
        with self._b._read() as conn:
            rows = conn.execute(
                f"SELECT {_SELECT} FROM messages m WHERE m.namespace = %s AND m.id = ANY(%s::text[])",
                (namespace, text_list(ids)),
            ).fetchall()
            found = {m.id: m for m in map(_row, rows)}
            if include_archived:
                for (data,) in conn.execute(
                    "SELECT data FROM message_archive WHERE namespace = %s AND id = ANY(%s::text[])",
                    (namespace, text_list(ids)),
                ):
                    message = Message.model_validate_json(data)
                    found.setdefault(message.id, message)
        return [found[i] for i in ids if i in found]

    def list_messages(self, query: MessageQuery, limit: int, *, newest_first: bool = False) -> builtins.list[Message]:
        """Matching hot messages by (thread, turn)."""
        where, params = compile_message_query(query)
        direction = "DESC" if newest_first else "ASC"
        with self._b._read() as conn:
            rows = conn.execute(
                f"SELECT {_SELECT} FROM messages m WHERE {where} "
                f"ORDER BY m.thread {direction}, m.turn {direction} LIMIT %s",
                [*params, max(int(limit), 0)],
            ).fetchall()
        return [_row(r) for r in rows]

    def count_messages(self, query: MessageQuery) -> int:
        """Number of matching hot messages."""
        where, params = compile_message_query(query)
        with self._b._read() as conn:
            return int(conn.execute(f"SELECT count(*) FROM messages m WHERE {where}", params).fetchone()[0])

    def threads(
        self, namespace: str, *, user: str | None = None, agent: str | None = None, limit: int = 100
    ) -> builtins.list[ThreadInfo]:
        """Threads with hot or archived messages, most recent first."""
        if not storable(namespace):
            return []
        having = ["(count(m.id) > 0 OR max(a.n) > 0)"]
        params: list[Any] = [namespace]
        for column, wanted in (('"user"', user), ("agent", agent)):
            if wanted is not None:
                having.append(f"coalesce(bool_or(m.{column} = %s), false)")
                params.append(wanted if storable(wanted) else "")
        sql = (
            "SELECT t.thread, t.last_turn, count(m.id), min(m.created_at), max(m.created_at), max(a.n) "
            "FROM message_threads t LEFT JOIN messages m ON m.namespace = t.namespace AND m.thread = t.thread "
            "CROSS JOIN LATERAL (SELECT count(*) AS n FROM message_archive x "
            "WHERE x.namespace = t.namespace AND x.thread = t.thread) AS a "
            "WHERE t.namespace = %s GROUP BY t.thread, t.last_turn HAVING "
            + " AND ".join(having)
            + " ORDER BY max(m.created_at) DESC NULLS LAST, t.thread DESC LIMIT %s"
        )
        params.append(max(int(limit), 0))
        with self._b._read() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [
            ThreadInfo(
                namespace=namespace,
                thread=str(r[0]),
                last_turn=int(r[1]),
                messages=int(r[2]),
                first_at=r[3],
                last_at=r[4],
                archived=int(r[5]),
            )  # fmt: skip
            for r in rows
        ]

    def search_messages_lexical(self, query: MessageQuery, terms: Sequence[str], k: int) -> builtins.list[ChannelHit]:
        """BM25 (the items' hybrid_search_v1 lexical statement) over matching hot messages, best first."""
        words = [t for t in terms if isinstance(t, str) and t.strip() and storable(t)]
        if not words or k <= 0 or not storable(query.namespace):
            return []
        where, params = compile_message_query(query, "i")
        sql = _LEXICAL.replace("{where}", where)
        with self._b._read() as conn:
            rows = conn.execute(sql, [words, query.namespace, query.namespace, *params, int(k)]).fetchall()
        return [ChannelHit(str(r[0]), float(r[1])) for r in rows]

    def search_messages_vector(
        self, query: MessageQuery, model: str, vector: Vector, k: int
    ) -> builtins.list[ChannelHit]:
        """Cosine search over matching hot messages: exact up to ``exact_limit`` vectors, else HNSW."""
        with self._b._read() as conn:
            space = self._space(conn, model, create=False)
            if space is None or k <= 0:
                return []
            checked = self._b._checked_vector(space, vector)  # type: ignore[arg-type]
            if not math.isfinite(norm := float(np.linalg.norm(checked))) or norm == 0.0:
                raise InvalidVectorError("query vector is all zeros; it has no direction to compare")
            if not storable(query.namespace):
                return []
            where, params = compile_message_query(query)
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

    # -- the sync job ------------------------------------------------------
    def claim_pending_messages(
        self, namespace: str | None, limit: int, worker: str, lease_seconds: float, now: datetime
    ) -> builtins.list[Message]:
        """Lease up to ``limit`` unleased pending/failed messages (pending first, oldest first).

        One statement: the rows are picked ``FOR UPDATE SKIP LOCKED`` and their
        lease set, so concurrent workers never get the same message.
        """
        check_claim(limit, worker, lease_seconds)
        if limit == 0 or (namespace is not None and not storable(namespace)):
            return []
        scope = "" if namespace is None else "AND namespace = %s "
        params: list[Any] = [now] + ([] if namespace is None else [namespace]) + [limit]
        sql = (
            "WITH c AS (SELECT namespace, id FROM messages WHERE embedding_status IN ('pending', 'failed') "
            f"AND (claimed_until IS NULL OR claimed_until <= %s) {scope}"
            "ORDER BY embedding_status = 'failed', created_at, id LIMIT %s FOR UPDATE SKIP LOCKED) "
            "UPDATE messages m SET claimed_by = %s, claimed_until = %s FROM c "
            f"WHERE m.namespace = c.namespace AND m.id = c.id RETURNING {_SELECT}"
        )
        with self._b._tx() as conn:
            rows = conn.execute(sql, [*params, worker, now + timedelta(seconds=float(lease_seconds))]).fetchall()
        claimed = [_row(r) for r in rows]
        return sorted(claimed, key=lambda m: (m.embedding_status == "failed", m.created_at, m.id))

    def set_message_vectors(self, namespace: str, model: str, updates: Sequence[tuple[str, Vector]]) -> int:
        """Store vectors, mark done, clear claims — one transaction; vectors checked first."""
        if not updates:
            return 0
        with self._b._tx() as conn:
            space = self._space(conn, model, create=True)
            if space is None:
                raise InvalidInputError(f"no vector space registered for model {model!r}; call ensure_vector_space")
            checked = {i: self._b._checked_vector(space, v) for i, v in updates}  # type: ignore[arg-type]
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

    def mark_messages(self, namespace: str, ids: Sequence[str], status: str | None, error: str | None) -> int:
        """Set status (None keeps it) and error, clear claims."""
        if status is not None and status not in MESSAGE_STATUSES:
            raise InvalidInputError(f"embedding status must be one of {', '.join(MESSAGE_STATUSES)}; got {status!r}")
        if not ids or not storable(namespace):
            return 0
        with self._b._tx() as conn:
            cur = conn.execute(
                "UPDATE messages SET embedding_status = coalesce(%s, embedding_status), embedding_error = %s, "
                "claimed_by = NULL, claimed_until = NULL WHERE namespace = %s AND id = ANY(%s::text[])",
                (status, error, namespace, text_list(ids)),
            )
            return max(int(cur.rowcount), 0)

    def message_claims(self, namespace: str | None) -> dict[str, int]:
        """Claimed messages by worker."""
        sql = "SELECT claimed_by, count(*) FROM messages WHERE claimed_by IS NOT NULL"
        params: list[Any] = []
        if namespace is not None:
            if not storable(namespace):
                return {}
            sql += " AND namespace = %s"
            params.append(namespace)
        with self._b._read() as conn:
            return {str(w): int(n) for w, n in conn.execute(sql + " GROUP BY claimed_by", params)}

    def release_claims(self, workers: Sequence[str]) -> int:
        """Clear the claims of ``workers``."""
        names = text_list(workers)
        if not names:
            return 0
        with self._b._tx() as conn:
            cur = conn.execute(
                "UPDATE messages SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by = ANY(%s::text[])",
                (names,),
            )
            return max(int(cur.rowcount), 0)

    def message_status_counts(self, namespace: str | None) -> dict[str, int]:
        """Hot messages by embedding status."""
        sql = "SELECT embedding_status, count(*) FROM messages"
        params: list[Any] = []
        if namespace is not None:
            if not storable(namespace):
                return {}
            sql += " WHERE namespace = %s"
            params.append(namespace)
        with self._b._read() as conn:
            return {str(s): int(n) for s, n in conn.execute(sql + " GROUP BY embedding_status", params)}

    def pending_message_volume(self, namespace: str | None, now: datetime) -> tuple[int, int]:
        """Count and characters of what a sync would embed now."""
        sql = (
            "SELECT count(*), coalesce(sum(length(content)), 0) FROM messages "
            "WHERE embedding_status IN ('pending', 'failed') AND sensitivity <> 'secret' "
            "AND (expires_at IS NULL OR expires_at > %s)"
        )
        params: list[Any] = [now]
        if namespace is not None:
            if not storable(namespace):
                return 0, 0
            sql += " AND namespace = %s"
            params.append(namespace)
        with self._b._read() as conn:
            count, chars = conn.execute(sql, params).fetchone()
        return int(count), int(chars)

    # -- retention ---------------------------------------------------------
    @staticmethod
    def _selection(before_turn: int | None, older_than: datetime | None, alias: str) -> tuple[str, list[Any]]:
        parts: list[str] = []
        params: list[Any] = []
        if before_turn is not None:
            parts.append(f"{alias}.turn < %s")
            params.append(int(before_turn))
        if older_than is not None:
            parts.append(f"{alias}.created_at < %s")
            params.append(older_than)
        return ("(" + " OR ".join(parts) + ")") if parts else _FALSE, params

    def archive_messages(
        self, namespace: str, thread: str, *, before_turn: int | None, older_than: datetime | None, at: datetime
    ) -> int:
        """Move selected hot messages to ``message_archive`` (their vectors go with the row: cascade)."""
        if not storable(namespace) or not storable(thread):
            return 0
        chosen, params = self._selection(before_turn, older_than, "m")
        with self._b._tx() as conn:
            rows = conn.execute(
                f"DELETE FROM messages m WHERE m.namespace = %s AND m.thread = %s AND {chosen} "
                f"RETURNING {_SELECT}, m.doc_len",
                [namespace, thread, *params],
            ).fetchall()
            if rows:
                with conn.cursor() as cur:
                    cur.executemany(self._INSERT_ARCHIVE, [self._archive_row(_row(r), at) for r in rows])
                self._bump_stats(conn, self._removed([(namespace, r[-1]) for r in rows]))
            return len(rows)

    def delete_messages(
        self, namespace: str, thread: str, *, before_turn: int | None, older_than: datetime | None
    ) -> int:
        """Delete selected hot and archived messages."""
        if not storable(namespace) or not storable(thread):
            return 0
        hot, params = self._selection(before_turn, older_than, "m")
        cold, cold_params = self._selection(before_turn, older_than, "a")
        with self._b._tx() as conn:
            rows = conn.execute(
                f"DELETE FROM messages m WHERE m.namespace = %s AND m.thread = %s AND {hot} "
                "RETURNING m.namespace, m.doc_len",
                [namespace, thread, *params],
            ).fetchall()
            self._bump_stats(conn, self._removed(rows))
            cur = conn.execute(
                f"DELETE FROM message_archive a WHERE a.namespace = %s AND a.thread = %s AND {cold}",
                [namespace, thread, *cold_params],
            )
            return len(rows) + max(int(cur.rowcount), 0)

    def delete_message(self, namespace: str, message_id: str) -> bool:
        """Delete one message (hot or archived) by id."""
        if not storable(namespace) or not storable(message_id):
            return False
        with self._b._tx() as conn:
            rows = conn.execute(
                "DELETE FROM messages m WHERE m.namespace = %s AND m.id = %s RETURNING m.namespace, m.doc_len",
                (namespace, message_id),
            ).fetchall()
            self._bump_stats(conn, self._removed(rows))
            cur = conn.execute("DELETE FROM message_archive WHERE namespace = %s AND id = %s", (namespace, message_id))
            return bool(rows) or int(cur.rowcount) > 0

    def iter_archived(self, namespace: str, thread: str | None = None) -> Iterator[Message]:
        """Archived messages by (thread, turn), read in keyset batches."""
        if not storable(namespace) or (thread is not None and not storable(thread)):
            return
        after: tuple[str, int] = ("", -1)
        while True:
            sql = "SELECT thread, turn, data FROM message_archive WHERE namespace = %s AND (thread, turn) > (%s, %s)"
            params: list[Any] = [namespace, *after]
            if thread is not None:
                sql += " AND thread = %s"
                params.append(thread)
            with self._b._read() as conn:
                rows = conn.execute(sql + " ORDER BY thread, turn LIMIT 500", params).fetchall()
            for row in rows:
                yield Message.model_validate_json(row[2])
            if len(rows) < 500:
                return
            after = (str(rows[-1][0]), int(rows[-1][1]))

    def purge_expired_messages(self, namespace: str | None, now: datetime) -> int:
        """Delete expired hot and archived messages."""
        if namespace is not None and not storable(namespace):
            return 0
        scope = "" if namespace is None else " AND namespace = %s"
        params: list[Any] = [now] + ([] if namespace is None else [namespace])
        with self._b._tx() as conn:
            rows = conn.execute(
                f"DELETE FROM messages WHERE expires_at <= %s{scope} RETURNING namespace, doc_len", params
            ).fetchall()
            self._bump_stats(conn, self._removed(rows))
            cur = conn.execute(f"DELETE FROM message_archive WHERE expires_at <= %s{scope}", params)
            return len(rows) + max(int(cur.rowcount), 0)

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

    def message_namespaces(self) -> builtins.list[str]:
        """Namespaces with messages (hot or archived) or blocks."""
        with self._b._read() as conn:
            rows = conn.execute(
                "SELECT namespace FROM messages UNION SELECT namespace FROM message_archive "
                "UNION SELECT namespace FROM blocks ORDER BY 1"
            ).fetchall()
        return [str(r[0]) for r in rows]

    # -- blocks ------------------------------------------------------------
    def get_block(self, namespace: str, user: str | None, agent: str | None, label: str) -> Block | None:
        """The block, or None."""
        if not all(storable(v) for v in (namespace, _key(user), _key(agent), label)):
            return None
        with self._b._read() as conn:
            row = conn.execute(
                "SELECT data FROM blocks WHERE namespace = %s AND user_key = %s AND agent_key = %s AND label = %s",
                (namespace, _key(user), _key(agent), label),
            ).fetchone()
        return None if row is None else Block.model_validate_json(row[0])

    def list_blocks(self, namespace: str, user: str | None, agent: str | None) -> builtins.list[Block]:
        """Blocks of exactly this scope, by label."""
        if not all(storable(v) for v in (namespace, _key(user), _key(agent))):
            return []
        with self._b._read() as conn:
            rows = conn.execute(
                "SELECT data FROM blocks WHERE namespace = %s AND user_key = %s AND agent_key = %s ORDER BY label",
                (namespace, _key(user), _key(agent)),
            ).fetchall()
        return [Block.model_validate_json(r[0]) for r in rows]

    def iter_blocks(self, namespace: str) -> builtins.list[Block]:
        """Every block of the namespace."""
        if not storable(namespace):
            return []
        with self._b._read() as conn:
            rows = conn.execute(
                "SELECT data FROM blocks WHERE namespace = %s ORDER BY user_key, agent_key, label", (namespace,)
            ).fetchall()
        return [Block.model_validate_json(r[0]) for r in rows]

    def write_block(self, block: Block, expected_version: int, change: BlockChange) -> bool:
        """Compare-and-set on the version, and a history row, in one transaction."""
        key = (block.namespace, _key(block.user), _key(block.agent), block.label)
        with self._b._tx() as conn:
            if expected_version == 0:
                written = conn.execute(
                    "INSERT INTO blocks (namespace, user_key, agent_key, label, data, version) "
                    "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING 1",
                    (*key, block.model_dump_json(), block.version),
                ).fetchone()
            else:
                written = conn.execute(
                    "UPDATE blocks SET data = %s, version = %s WHERE namespace = %s AND user_key = %s "
                    "AND agent_key = %s AND label = %s AND version = %s RETURNING 1",
                    (block.model_dump_json(), block.version, *key, expected_version),
                ).fetchone()
            if written is None:
                return False
            conn.execute(
                "INSERT INTO block_history (namespace, user_key, agent_key, label, data) VALUES (%s, %s, %s, %s, %s)",
                (*key, change.model_dump_json()),
            )
            return True

    def block_history(
        self, namespace: str, user: str | None, agent: str | None, label: str
    ) -> builtins.list[BlockChange]:
        """Changes of a block, oldest first."""
        if not all(storable(v) for v in (namespace, _key(user), _key(agent), label)):
            return []
        with self._b._read() as conn:
            rows = conn.execute(
                "SELECT data FROM block_history WHERE namespace = %s AND user_key = %s AND agent_key = %s "
                "AND label = %s ORDER BY seq",
                (namespace, _key(user), _key(agent), label),
            ).fetchall()
        return [BlockChange.model_validate_json(r[0]) for r in rows]

    # -- job state ---------------------------------------------------------
    def get_job_state(self, name: str) -> JobState | None:
        """The job's state, or None."""
        if not storable(name):
            return None
        with self._b._read() as conn:
            row = conn.execute("SELECT data FROM job_state WHERE name = %s", (name,)).fetchone()
        return None if row is None or not row[0] else JobState.model_validate_json(row[0])

    def update_job_state(self, name: str, change: Callable[[JobState | None], JobState]) -> JobState:
        """Apply ``change`` to the job's state in one transaction holding its row (``FOR UPDATE``)."""
        with self._b._tx() as conn:
            conn.execute(  # make sure the row exists, so FOR UPDATE has something to hold
                "INSERT INTO job_state (name, data) VALUES (%s, '') ON CONFLICT (name) DO NOTHING", (name,)
            )
            (data,) = conn.execute("SELECT data FROM job_state WHERE name = %s FOR UPDATE", (name,)).fetchone()
            state = change(JobState.model_validate_json(data) if data else None)
            conn.execute("UPDATE job_state SET data = %s WHERE name = %s", (state.model_dump_json(), name))
            return state

    def put_job_state(self, state: JobState) -> None:
        """Replace the job's state."""
        with self._b._tx() as conn:
            conn.execute(
                "INSERT INTO job_state (name, data) VALUES (%s, %s) "
                "ON CONFLICT (name) DO UPDATE SET data = EXCLUDED.data",
                (state.name, state.model_dump_json()),
            )
