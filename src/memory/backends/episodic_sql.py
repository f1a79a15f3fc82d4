"""One SQL implementation of :class:`~memory.backends.episodic.EpisodicStore` for SQLite and PostgreSQL.

Tables (SQLite migration ``0006_episodic`` + ``0014_archive_created_at``,
PostgreSQL ``0004_episodic``): hot ``messages``; ``message_threads``, the last
turn handed out per (namespace, thread); ``message_archive`` (messages as
JSON, kept with their turn for export); blocks and job state
(:mod:`.blocks_sql`). The SQL is written once with ``?``; the engine's
:class:`~memory.backends.dialect.Dialect` supplies the rest.

The rules live here once:

* **Turns**: an append takes the next turns of each thread from its
  ``message_threads`` row, written in sorted (namespace, thread) order inside
  the appending transaction (SQLite: an immediate transaction; PostgreSQL:
  the row lock), so two writers never share a turn and batches cannot
  deadlock; ``UNIQUE (namespace, thread, turn)`` backs it up. Turns are never
  reused: the counter only grows (imports move it past imported turns).
* **Leases**: a claim picks pending before failed messages, oldest first,
  whose lease is over, and sets ``claimed_by``/``claimed_until`` in the same
  transaction; PostgreSQL picks them ``FOR UPDATE SKIP LOCKED`` so concurrent
  workers skip each other's rows. Storing vectors or marking a message
  clears its claim.

What the engines do differently is left to the subclass: extra columns of a
message row and what follows inserting and deleting hot messages (vectors,
PostgreSQL's BM25 statistics), lexical and vector search, and vectors.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from memory.backends.blocks_sql import SQLBlocksAndJobs
from memory.backends.dialect import Dialect
from memory.backends.episodic import MESSAGE_STATUSES
from memory.backends.values import Vector
from memory.episodic.types import MediaRef, Message, MessageQuery, ThreadInfo
from memory.errors import InvalidInputError, InvalidVectorError
from memory.types import SENSITIVITY_LEVELS

__all__ = ["SQLEpisodicStore", "COLUMNS", "SELECT", "check_claim"]

#: The columns of a message row every engine has, in :class:`Message` field order.
COLUMNS = (
    "id", "namespace", "thread", "turn", "role", "speaker", "user", "agent", "content", "content_type",
    "media", "tags", "metadata", "sensitivity", "created_at", "expires_at", "embedding_status",
    "embedding_model", "embedding_error",
)  # fmt: skip
_QUOTED = tuple(f'"{c}"' if c == "user" else c for c in COLUMNS)
#: The message columns of ``messages m`` for :meth:`SQLEpisodicStore._message`.
SELECT = ", ".join(f"m.{c}" for c in _QUOTED)
_FALSE = "1 = 0"
_ARCHIVE = (
    "INSERT INTO message_archive (namespace, id, thread, turn, created_at, expires_at, archived_at, data) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)


def check_claim(limit: object, worker: object, lease_seconds: object) -> None:
    """InvalidInputError for a negative or non-integer limit, an empty worker, a lease not positive and finite."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise InvalidInputError(f"limit must be a non-negative integer, got {limit!r}")
    if not isinstance(worker, str) or not worker.strip():
        raise InvalidInputError("worker must be a non-empty string")
    if not isinstance(lease_seconds, (int, float)) or not math.isfinite(lease_seconds) or lease_seconds <= 0:
        raise InvalidInputError(f"lease_seconds must be a positive number, got {lease_seconds!r}")


class SQLEpisodicStore(SQLBlocksAndJobs):
    """Conversations, blocks and job state over a dialect; engines add search, vectors and the hooks below."""

    #: Engine columns of a message row beyond :data:`COLUMNS` (filled by :meth:`_extra_values`).
    extra_columns: tuple[str, ...] = ()

    def __init__(self, dialect: Dialect) -> None:
        """Run on ``dialect``'s connections and transactions."""
        self._d = dialect
        names = (*_QUOTED, *self.extra_columns)
        self._insert = f"INSERT INTO messages ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})"

    # -- what engines add ----------------------------------------------------
    def _extra_values(self, message: Message) -> tuple[Any, ...]:
        """Values of :attr:`extra_columns` for ``message``."""
        return ()

    def _inserted(self, conn: Any, messages: Sequence[Message]) -> None:
        """Called after hot ``messages`` were inserted, in the same transaction."""

    def _delete_hot(self, conn: Any, namespace: str, ids: Sequence[str]) -> int:
        """Delete hot messages of ``namespace`` by id (and what hangs on them); returns how many."""
        raise NotImplementedError

    def _store_vector(self, conn: Any, message: Message, model: str, vector: Vector) -> None:
        """Store an imported message's vector (the message row exists)."""
        raise NotImplementedError

    def _space(self, conn: Any, model: str, *, create: bool) -> Any:
        """The message vector space of ``model`` (its tables made when ``create``), None if there is none."""
        raise NotImplementedError

    def _checked(self, space: Any, vector: Vector) -> Vector:
        """``vector`` as the space's float32 vector; InvalidVectorError when it does not fit."""
        raise NotImplementedError

    # -- vector spaces (through the hooks) -------------------------------------
    def _writable_space(self, conn: Any, model: str) -> Any:
        space = self._space(conn, model, create=True)
        if space is None:
            raise InvalidInputError(f"no vector space registered for model {model!r}; call ensure_vector_space")
        return space

    def _query_space(self, conn: Any, model: str, vector: Vector, k: int) -> tuple[Any, Vector] | None:
        """The space and checked query vector of a vector search (None: nothing to search)."""
        space = self._space(conn, model, create=False)
        if space is None or k <= 0:
            return None
        checked = self._checked(space, vector)
        if not math.isfinite(norm := float(np.linalg.norm(checked))) or norm == 0.0:
            raise InvalidVectorError("query vector is all zeros; it has no direction to compare")
        return space, checked

    # -- rows ----------------------------------------------------------------
    def _values(self, m: Message) -> tuple[Any, ...]:
        d = self._d
        return (
            m.id, m.namespace, m.thread, m.turn, m.role, m.speaker, m.user, m.agent, m.content, m.content_type,
            None if m.media is None else d.json_param(m.media.model_dump(mode="json")), d.json_param(list(m.tags)),
            d.json_param(m.metadata), m.sensitivity, d.time_param(m.created_at), d.time_param(m.expires_at),
            m.embedding_status, m.embedding_model, m.embedding_error, *self._extra_values(m),
        )  # fmt: skip

    def _message(self, row: Sequence[Any]) -> Message:
        d = self._d
        data = dict(zip(COLUMNS, row[: len(COLUMNS)], strict=True))
        data["media"] = None if data["media"] is None else MediaRef.model_validate(d.json_value(data["media"]))
        data["tags"] = tuple(d.json_value(data["tags"]))
        data["metadata"] = d.json_value(data["metadata"])
        data["created_at"] = d.time_value(data["created_at"])
        data["expires_at"] = d.time_value(data["expires_at"])
        return Message(**data)

    def _archive_row(self, m: Message, at: datetime) -> tuple[Any, ...]:
        t = self._d.time_param
        return (m.namespace, m.id, m.thread, m.turn, t(m.created_at), t(m.expires_at), t(at), m.model_dump_json())

    def where(self, query: MessageQuery, alias: str = "m") -> tuple[str, list[Any]]:
        """``(predicate, params)`` (``?`` marks) selecting the rows of ``messages`` (as ``alias``) ``query`` matches."""
        d, a = self._d, alias
        if not d.storable(query.namespace, query.thread, query.user, query.agent):
            return _FALSE, []
        parts = [f"{a}.namespace = ?"]
        params: list[Any] = [query.namespace]
        for name in ("thread", "user", "agent"):
            if (wanted := getattr(query, name)) is not None:
                parts.append(f'{a}."{name}" = ?')
                params.append(wanted)
        if query.roles is not None:
            roles, role_params = d.any_of(f"{a}.role", query.roles)
            parts.append(roles)
            params += role_params
        for condition, value in ((f"{a}.turn > ?", query.after_turn), (f"{a}.turn < ?", query.before_turn)):
            if value is not None:
                parts.append(condition)
                params.append(value)
        for condition, when in (
            (f"{a}.created_at >= ?", query.created_after),
            (f"{a}.created_at < ?", query.created_before),
        ):
            if when is not None:
                parts.append(condition)
                params.append(d.time_param(when))
        level = SENSITIVITY_LEVELS[query.clearance]
        allowed = [name for name, rank in SENSITIVITY_LEVELS.items() if rank <= level]
        if len(allowed) < len(SENSITIVITY_LEVELS):
            levels, level_params = d.in_list(f"{a}.sensitivity", allowed)  # at most four: bound one by one
            parts.append(levels)
            params += level_params
        if not query.include_expired:
            parts.append(f"({a}.expires_at IS NULL OR {a}.expires_at > ?)")
            params.append(d.time_param(query.now))
        return " AND ".join(parts), params

    # -- messages ----------------------------------------------------------
    def _check_new_ids(self, conn: Any, messages: Sequence[Message]) -> None:
        d = self._d
        by_ns: dict[str, list[str]] = {}
        for message in messages:
            by_ns.setdefault(message.namespace, []).append(message.id)
        for namespace, ids in by_ns.items():
            if len(set(ids)) < len(ids):
                raise InvalidInputError("message ids repeat within the batch")
            hot, hot_params = d.any_of("id", ids)
            cold, cold_params = d.any_of("id", ids)
            taken = d.rows(
                conn,
                f"SELECT id FROM messages WHERE namespace = ? AND {hot} UNION ALL "
                f"SELECT id FROM message_archive WHERE namespace = ? AND {cold} LIMIT 1",
                [namespace, *hot_params, namespace, *cold_params],
            )
            if taken:
                raise InvalidInputError(f"message id {taken[0][0]} already exists")

    def append_messages(self, messages: Sequence[Message]) -> builtins.list[Message]:
        """Store messages with the next turns of their threads, in one transaction."""
        if not messages:
            return []
        d = self._d
        counts: dict[tuple[str, str], int] = {}
        for message in messages:
            counts[(message.namespace, message.thread)] = counts.get((message.namespace, message.thread), 0) + 1
        with d.write() as conn:
            self._check_new_ids(conn, messages)
            next_turn: dict[tuple[str, str], int] = {}
            for key in sorted(counts):  # one order for every writer: no deadlock between batches
                ((last,),) = d.rows(
                    conn,
                    "INSERT INTO message_threads (namespace, thread, last_turn) VALUES (?, ?, ?) "
                    "ON CONFLICT (namespace, thread) DO UPDATE SET last_turn = message_threads.last_turn + "
                    "excluded.last_turn RETURNING last_turn",
                    (*key, counts[key]),
                )
                next_turn[key] = int(last) - counts[key] + 1
            out: builtins.list[Message] = []
            for message in messages:
                key = (message.namespace, message.thread)
                out.append(message.model_copy(update={"turn": next_turn[key]}))
                next_turn[key] += 1
            d.many(conn, self._insert, [self._values(m) for m in out])
            self._inserted(conn, out)
        return out

    def import_messages(
        self, entries: Sequence[tuple[Message, str | None, Vector | None]], *, archived: bool = False
    ) -> int:
        """Store exported messages as they are (hot or archived); skip known ids or taken turns."""
        d = self._d
        written: builtins.list[Message] = []
        with d.write() as conn:
            for message, model, vector in entries:
                if d.rows(
                    conn,
                    "SELECT 1 FROM messages WHERE namespace = ? AND (id = ? OR (thread = ? AND turn = ?)) "
                    "UNION ALL SELECT 1 FROM message_archive WHERE namespace = ? AND id = ? LIMIT 1",
                    (message.namespace, message.id, message.thread, message.turn, message.namespace, message.id),
                ):
                    continue
                d.run(
                    conn,
                    "INSERT INTO message_threads (namespace, thread, last_turn) VALUES (?, ?, ?) "
                    "ON CONFLICT (namespace, thread) DO UPDATE SET last_turn = "
                    "CASE WHEN excluded.last_turn > message_threads.last_turn THEN excluded.last_turn "
                    "ELSE message_threads.last_turn END",
                    (message.namespace, message.thread, message.turn),
                )
                if archived:
                    d.run(conn, _ARCHIVE, self._archive_row(message, message.created_at))
                else:
                    d.run(conn, self._insert, self._values(message))
                    if model is not None and vector is not None:
                        self._store_vector(conn, message, model, vector)
                written.append(message)
            if not archived:
                self._inserted(conn, written)
        return len(written)

    def get_messages(
        self, namespace: str, ids: Sequence[str], *, include_archived: bool = False
    ) -> builtins.list[Message]:
        """Messages by id, in the order asked."""
        d = self._d
        if not ids or not d.storable(namespace):
            return []
        within, params = d.any_of("m.id", ids)
        with d.read() as conn:
            rows = d.rows(conn, f"SELECT {SELECT} FROM messages m WHERE m.namespace = ? AND {within}",
                          [namespace, *params])  # fmt: skip
            found = {m.id: m for m in map(self._message, rows)}
            if include_archived:
                within, params = d.any_of("id", ids)
                for (data,) in d.rows(conn, f"SELECT data FROM message_archive WHERE namespace = ? AND {within}",
                                      [namespace, *params]):  # fmt: skip
                    message = Message.model_validate_json(data)
                    found.setdefault(message.id, message)
        return [found[i] for i in ids if i in found]

    def list_messages(self, query: MessageQuery, limit: int, *, newest_first: bool = False) -> builtins.list[Message]:
        """Matching hot messages by (thread, turn)."""
        where, params = self.where(query)
        direction = "DESC" if newest_first else "ASC"
        with self._d.read() as conn:
            rows = self._d.rows(
                conn,
                f"SELECT {SELECT} FROM messages m WHERE {where} ORDER BY m.thread {direction}, m.turn {direction} "
                "LIMIT ?",
                [*params, max(int(limit), 0)],
            )
        return [self._message(r) for r in rows]

    def count_messages(self, query: MessageQuery) -> int:
        """Number of matching hot messages."""
        where, params = self.where(query)
        with self._d.read() as conn:
            return int(self._d.rows(conn, f"SELECT count(*) FROM messages m WHERE {where}", params)[0][0])

    def threads(
        self, namespace: str, *, user: str | None = None, agent: str | None = None, limit: int = 100
    ) -> builtins.list[ThreadInfo]:
        """Threads with hot or archived messages, most recent first."""
        d = self._d
        if not d.storable(namespace, user, agent):
            return []
        hot = "FROM messages m WHERE m.namespace = t.namespace AND m.thread = t.thread"
        cold = "FROM message_archive a WHERE a.namespace = t.namespace AND a.thread = t.thread"
        sql = (
            f"SELECT t.thread, t.last_turn, (SELECT count(*) {hot}), (SELECT min(m.created_at) {hot}), "
            f"(SELECT max(m.created_at) {hot}), (SELECT count(*) {cold}) FROM message_threads t "
            f"WHERE t.namespace = ? AND (EXISTS (SELECT 1 {hot}) OR EXISTS (SELECT 1 {cold}))"
        )
        params: list[Any] = [namespace]
        for column, wanted in (('"user"', user), ("agent", agent)):
            if wanted is not None:
                sql += f" AND EXISTS (SELECT 1 {hot} AND m.{column} = ?)"
                params.append(wanted)
        sql += " ORDER BY 5 DESC NULLS LAST, t.thread DESC LIMIT ?"
        with d.read() as conn:
            rows = d.rows(conn, sql, [*params, max(int(limit), 0)])
        return [
            ThreadInfo(namespace=namespace, thread=str(r[0]), last_turn=int(r[1]), messages=int(r[2]),
                       first_at=d.time_value(r[3]), last_at=d.time_value(r[4]), archived=int(r[5]))
            for r in rows
        ]  # fmt: skip

    # -- the sync job ------------------------------------------------------
    def claim_pending_messages(
        self, namespace: str | None, limit: int, worker: str, lease_seconds: float, now: datetime
    ) -> builtins.list[Message]:
        """Lease up to ``limit`` unleased pending/failed messages (pending first, oldest first), in one transaction."""
        check_claim(limit, worker, lease_seconds)
        d = self._d
        if not d.storable(worker):
            raise InvalidInputError("worker must be a non-empty string")
        if limit == 0 or not d.storable(namespace):
            return []
        sql = (
            f"SELECT {SELECT} FROM messages m WHERE m.embedding_status IN ('pending', 'failed') "
            "AND (m.claimed_until IS NULL OR m.claimed_until <= ?)"
        )
        params: list[Any] = [d.time_param(now)]
        if namespace is not None:
            sql += " AND m.namespace = ?"
            params.append(namespace)
        sql += f" ORDER BY m.embedding_status = 'failed', m.created_at, m.id LIMIT ?{d.skip_locked}"
        until = d.time_param(now + timedelta(seconds=float(lease_seconds)))
        with d.write() as conn:
            claimed = [self._message(r) for r in d.rows(conn, sql, [*params, limit])]
            by_ns: dict[str, list[str]] = {}
            for message in claimed:
                by_ns.setdefault(message.namespace, []).append(message.id)
            for ns, ids in by_ns.items():
                within, id_params = d.any_of("id", ids)
                d.run(conn, f"UPDATE messages SET claimed_by = ?, claimed_until = ? WHERE namespace = ? AND {within}",
                      [worker, until, ns, *id_params])  # fmt: skip
        return claimed

    def mark_messages(self, namespace: str, ids: Sequence[str], status: str | None, error: str | None) -> int:
        """Set status (None keeps it) and error, clear claims."""
        if status is not None and status not in MESSAGE_STATUSES:
            raise InvalidInputError(f"embedding status must be one of {', '.join(MESSAGE_STATUSES)}; got {status!r}")
        d = self._d
        if not ids or not d.storable(namespace):
            return 0
        within, params = d.any_of("id", ids)
        with d.write() as conn:
            cursor = d.run(
                conn,
                "UPDATE messages SET embedding_status = coalesce(?, embedding_status), embedding_error = ?, "
                f"claimed_by = NULL, claimed_until = NULL WHERE namespace = ? AND {within}",
                [status, error, namespace, *params],
            )
            return max(int(cursor.rowcount), 0)

    def _by_namespace(self, sql: str, namespace: str | None, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of ``sql`` ({scope}: the namespace condition, or none) in any namespace when None."""
        d = self._d
        with d.read() as conn:
            if namespace is None:
                return d.rows(conn, sql.replace("{scope}", "1 = 1"), params)
            return d.rows(conn, sql.replace("{scope}", "namespace = ?"), [*params, namespace])

    def message_claims(self, namespace: str | None) -> dict[str, int]:
        """Claimed messages by worker."""
        if not self._d.storable(namespace):
            return {}
        rows = self._by_namespace(
            "SELECT claimed_by, count(*) FROM messages WHERE claimed_by IS NOT NULL AND {scope} GROUP BY claimed_by",
            namespace,
        )
        return {str(w): int(n) for w, n in rows}

    def release_claims(self, workers: Sequence[str]) -> int:
        """Clear the claims of ``workers``."""
        d = self._d
        if not workers:
            return 0
        within, params = d.any_of("claimed_by", workers)
        with d.write() as conn:
            cursor = d.run(conn, f"UPDATE messages SET claimed_by = NULL, claimed_until = NULL WHERE {within}", params)
            return max(int(cursor.rowcount), 0)

    def message_status_counts(self, namespace: str | None) -> dict[str, int]:
        """Hot messages by embedding status."""
        if not self._d.storable(namespace):
            return {}
        rows = self._by_namespace(
            "SELECT embedding_status, count(*) FROM messages WHERE {scope} GROUP BY embedding_status", namespace
        )
        return {str(s): int(n) for s, n in rows}

    def pending_message_volume(self, namespace: str | None, now: datetime) -> tuple[int, int]:
        """Count and characters of what a sync would embed now."""
        if not self._d.storable(namespace):
            return 0, 0
        ((count, chars),) = self._by_namespace(
            "SELECT count(*), coalesce(sum(length(content)), 0) FROM messages "
            "WHERE embedding_status IN ('pending', 'failed') AND sensitivity <> 'secret' "
            "AND (expires_at IS NULL OR expires_at > ?) AND {scope}",
            namespace,
            [self._d.time_param(now)],
        )
        return int(count), int(chars)

    # -- retention ---------------------------------------------------------
    def _selection(self, before_turn: int | None, older_than: datetime | None, alias: str) -> tuple[str, list[Any]]:
        parts: list[str] = []
        params: list[Any] = []
        if before_turn is not None:
            parts.append(f"{alias}.turn < ?")
            params.append(int(before_turn))
        if older_than is not None:
            parts.append(f"{alias}.created_at < ?")
            params.append(self._d.time_param(older_than))
        return ("(" + " OR ".join(parts) + ")") if parts else _FALSE, params

    def archive_messages(
        self, namespace: str, thread: str, *, before_turn: int | None, older_than: datetime | None, at: datetime
    ) -> int:
        """Move selected hot messages to ``message_archive`` (their vectors are dropped)."""
        d = self._d
        if not d.storable(namespace, thread):
            return 0
        chosen, params = self._selection(before_turn, older_than, "m")
        with d.write() as conn:
            rows = d.rows(
                conn,
                f"SELECT {SELECT} FROM messages m WHERE m.namespace = ? AND m.thread = ? AND {chosen}{d.for_update}",
                [namespace, thread, *params],
            )
            moved = [self._message(r) for r in rows]
            d.many(conn, _ARCHIVE, [self._archive_row(m, at) for m in moved])
            return self._delete_hot(conn, namespace, [m.id for m in moved])

    def delete_messages(
        self, namespace: str, thread: str, *, before_turn: int | None, older_than: datetime | None
    ) -> int:
        """Delete selected hot and archived messages."""
        d = self._d
        if not d.storable(namespace, thread):
            return 0
        hot, params = self._selection(before_turn, older_than, "m")
        cold, cold_params = self._selection(before_turn, older_than, "a")
        with d.write() as conn:
            ids = [str(r[0]) for r in d.rows(conn, f"SELECT m.id FROM messages m WHERE m.namespace = ? "
                                             f"AND m.thread = ? AND {hot}", [namespace, thread, *params])]  # fmt: skip
            count = self._delete_hot(conn, namespace, ids)
            cursor = d.run(conn, f"DELETE FROM message_archive AS a WHERE a.namespace = ? AND a.thread = ? AND {cold}",
                           [namespace, thread, *cold_params])  # fmt: skip
            return count + max(int(cursor.rowcount), 0)

    def delete_message(self, namespace: str, message_id: str) -> bool:
        """Delete one message (hot or archived) by id."""
        d = self._d
        if not d.storable(namespace, message_id):
            return False
        with d.write() as conn:
            count = self._delete_hot(conn, namespace, [message_id])
            cursor = d.run(conn, "DELETE FROM message_archive WHERE namespace = ? AND id = ?", (namespace, message_id))
            return count + max(int(cursor.rowcount), 0) > 0

    def iter_archived(self, namespace: str, thread: str | None = None) -> Iterator[Message]:
        """Archived messages by (thread, turn), read in keyset batches."""
        d = self._d
        if not d.storable(namespace, thread):
            return
        after: tuple[str, int] = ("", -1)
        while True:
            sql = "SELECT thread, turn, data FROM message_archive WHERE namespace = ? AND (thread, turn) > (?, ?)"
            params: list[Any] = [namespace, *after]
            if thread is not None:
                sql += " AND thread = ?"
                params.append(thread)
            with d.read() as conn:
                rows = d.rows(conn, sql + " ORDER BY thread, turn LIMIT 500", params)
            for row in rows:
                yield Message.model_validate_json(row[2])
            if len(rows) < 500:
                return
            after = (str(rows[-1][0]), int(rows[-1][1]))

    def purge_expired_messages(self, namespace: str | None, now: datetime) -> int:
        """Delete expired hot and archived messages."""
        d = self._d
        if not d.storable(namespace):
            return 0
        scope = "" if namespace is None else " AND namespace = ?"
        params: list[Any] = [d.time_param(now)] + ([] if namespace is None else [namespace])
        with d.write() as conn:
            by_ns: dict[str, list[str]] = {}
            for ns, message_id in d.rows(conn, f"SELECT namespace, id FROM messages WHERE expires_at <= ?{scope}",
                                         params):  # fmt: skip
                by_ns.setdefault(str(ns), []).append(str(message_id))
            count = sum(self._delete_hot(conn, ns, ids) for ns, ids in sorted(by_ns.items()))
            cursor = d.run(conn, f"DELETE FROM message_archive WHERE expires_at <= ?{scope}", params)
            return count + max(int(cursor.rowcount), 0)

    def message_namespaces(self) -> builtins.list[str]:
        """Namespaces with messages (hot or archived) or blocks."""
        with self._d.read() as conn:
            rows = self._d.rows(
                conn,
                "SELECT namespace FROM messages UNION SELECT namespace FROM message_archive "
                "UNION SELECT namespace FROM blocks ORDER BY 1",
            )
        return [str(r[0]) for r in rows]
