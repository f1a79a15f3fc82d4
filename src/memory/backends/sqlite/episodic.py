"""`SQLiteEpisodicStore`: conversations, blocks and job state in the backend's SQLite file.

Messages live in ``messages`` (FTS5 index ``messages_fts``; vectors in
``msg_vectors_<space>`` through :mod:`.vectors`, the same code items use);
archived ones move to ``message_archive`` as JSON. Turn numbers come from
``message_threads`` inside the appending ``BEGIN IMMEDIATE`` transaction, and
``UNIQUE (namespace, thread, turn)`` backs that up, so concurrent processes
never share a turn. Every write goes through the backend's ``_write``.
"""

from __future__ import annotations

import builtins
import json
import math
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from memory.backends.base import ChannelHit, Vector
from memory.backends.episodic import MESSAGE_STATUSES
from memory.backends.sqlite import vectors
from memory.backends.sqlite.blocks import BlocksAndJobsMixin
from memory.backends.sqlite.sql import json_list, storable
from memory.episodic.types import MediaRef, Message, MessageQuery, ThreadInfo
from memory.errors import InvalidInputError, InvalidVectorError
from memory.ids import from_epoch, to_epoch
from memory.types import SENSITIVITY_LEVELS

if TYPE_CHECKING:
    from memory.backends.sqlite.backend import SQLiteBackend

__all__ = ["SQLiteEpisodicStore", "compile_message_query"]

_COLUMNS = (
    "id", "namespace", "thread", "turn", "role", "speaker", "user", "agent", "content", "content_type",
    "media", "tags", "metadata", "sensitivity", "created_at", "expires_at", "embedding_status",
    "embedding_model", "embedding_error",
)  # fmt: skip
_SELECT = ", ".join(f"m.{c}" for c in _COLUMNS)
_INSERT = f"INSERT INTO messages ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' for _ in _COLUMNS)})"
_IDS = "(SELECT value FROM json_each(?))"
_FALSE = "0"


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _epoch(value: datetime | None) -> float | None:
    return None if value is None else to_epoch(value)


def _values(message: Message) -> tuple[Any, ...]:
    return (
        message.id, message.namespace, message.thread, message.turn, message.role, message.speaker,
        message.user, message.agent, message.content, message.content_type,
        None if message.media is None else message.media.model_dump_json(), _dump(list(message.tags)),
        _dump(message.metadata), message.sensitivity, to_epoch(message.created_at), _epoch(message.expires_at),
        message.embedding_status, message.embedding_model, message.embedding_error,
    )  # fmt: skip


def _row(row: Sequence[Any]) -> Message:
    data = dict(zip(_COLUMNS, row[: len(_COLUMNS)], strict=True))
    data["media"] = None if data["media"] is None else MediaRef.model_validate_json(data["media"])
    data["tags"] = tuple(json.loads(data["tags"]))
    data["metadata"] = json.loads(data["metadata"])
    data["created_at"] = from_epoch(data["created_at"])
    data["expires_at"] = None if data["expires_at"] is None else from_epoch(data["expires_at"])
    return Message(**data)


def compile_message_query(query: MessageQuery, alias: str = "m") -> tuple[str, list[Any]]:
    """``(predicate, params)`` selecting the rows of ``messages`` (as ``alias``) that ``query`` matches."""
    a = alias
    if not storable(query.namespace):
        return _FALSE, []
    parts = [f"{a}.namespace = ?"]
    params: list[Any] = [query.namespace]
    for name in ("thread", "user", "agent"):
        wanted = getattr(query, name)
        if wanted is not None:
            if not storable(wanted):
                return _FALSE, []
            parts.append(f"{a}.{name} = ?")
            params.append(wanted)
    if query.roles is not None:
        parts.append(f"{a}.role IN {_IDS}")
        params.append(json_list(query.roles))
    if query.after_turn is not None:
        parts.append(f"{a}.turn > ?")
        params.append(query.after_turn)
    if query.before_turn is not None:
        parts.append(f"{a}.turn < ?")
        params.append(query.before_turn)
    if query.created_after is not None:
        parts.append(f"{a}.created_at >= ?")
        params.append(to_epoch(query.created_after))
    if query.created_before is not None:
        parts.append(f"{a}.created_at < ?")
        params.append(to_epoch(query.created_before))
    level = SENSITIVITY_LEVELS[query.clearance]
    allowed = [name for name, rank in SENSITIVITY_LEVELS.items() if rank <= level]
    if len(allowed) < len(SENSITIVITY_LEVELS):
        parts.append(f"{a}.sensitivity IN ({', '.join('?' for _ in allowed)})")
        params.extend(allowed)
    if not query.include_expired:
        parts.append(f"({a}.expires_at IS NULL OR {a}.expires_at > ?)")
        params.append(to_epoch(query.now))
    return " AND ".join(parts), params


class SQLiteEpisodicStore(BlocksAndJobsMixin):
    """The :class:`~memory.backends.episodic.EpisodicStore` of one :class:`SQLiteBackend`."""

    def __init__(self, backend: SQLiteBackend) -> None:
        """Share ``backend``'s connection, lock and transactions."""
        self._b = backend
        self._ready_spaces: set[int] = set()

    # -- vector spaces -----------------------------------------------------
    def _space(self, conn: Any, model: str, *, create: bool) -> vectors.Space | None:
        base = self._b._space(conn, model)
        if base is None:
            return None
        space = base.for_messages()
        if space.space_id not in self._ready_spaces:
            exists = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (space.vectors_table,)
            ).fetchone()
            if not exists:
                if not create:
                    return None
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {space.vectors_table} ("
                    "rid INTEGER PRIMARY KEY REFERENCES messages (rid) ON DELETE CASCADE, embedding BLOB NOT NULL)"
                )
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {space.codes_table} (namespace TEXT NOT NULL, seq INTEGER NOT NULL, "
                    "rid INTEGER NOT NULL, code BLOB NOT NULL, PRIMARY KEY (namespace, seq)) WITHOUT ROWID"
                )
                conn.execute(f"CREATE INDEX IF NOT EXISTS {space.codes_table}_rid ON {space.codes_table} (rid)")
            self._ready_spaces.add(space.space_id)
        return space

    def _all_spaces(self, conn: Any) -> list[vectors.Space]:
        found = []
        for base in self._b._all_spaces(conn):
            space = base.for_messages()
            if conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (space.vectors_table,)
            ).fetchone():
                found.append(space)
        return found

    def _delete_rids(self, conn: Any, namespace: str, rids: list[int]) -> int:
        if not rids:
            return 0
        for space in self._all_spaces(conn):
            vectors.delete_vectors(conn, space, namespace, rids)
        return int(conn.execute(f"DELETE FROM messages WHERE rid IN {_IDS}", (json_list(rids),)).rowcount)

    # -- messages ----------------------------------------------------------
    def append_messages(self, messages: Sequence[Message]) -> builtins.list[Message]:
        """Store messages with the next turns of their threads, in one transaction."""
        if not messages:
            return []
        out: builtins.list[Message] = []
        with self._b._write() as conn:
            for message in messages:
                if (
                    conn.execute("SELECT 1 FROM messages WHERE id = ?", (message.id,)).fetchone()
                    or conn.execute("SELECT 1 FROM message_archive WHERE id = ?", (message.id,)).fetchone()
                ):
                    raise InvalidInputError(f"message id {message.id} already exists")
                turn = conn.execute(
                    "INSERT INTO message_threads (namespace, thread, last_turn) VALUES (?, ?, 1) "
                    "ON CONFLICT (namespace, thread) DO UPDATE SET last_turn = last_turn + 1 RETURNING last_turn",
                    (message.namespace, message.thread),
                ).fetchone()[0]
                stored = message.model_copy(update={"turn": int(turn)})
                conn.execute(_INSERT, _values(stored))
                out.append(stored)
        return out

    def _bump_turn(self, conn: Any, namespace: str, thread: str, turn: int) -> None:
        conn.execute(
            "INSERT INTO message_threads (namespace, thread, last_turn) VALUES (?, ?, ?) "
            "ON CONFLICT (namespace, thread) DO UPDATE SET last_turn = max(last_turn, excluded.last_turn)",
            (namespace, thread, turn),
        )

    def import_messages(
        self, entries: Sequence[tuple[Message, str | None, Vector | None]], *, archived: bool = False
    ) -> int:
        """Store exported messages as they are (hot or archived); skip known ids or taken turns."""
        written = 0
        with self._b._write() as conn:
            for message, model, vector in entries:
                known = conn.execute(
                    "SELECT 1 FROM messages WHERE id = ? OR (namespace = ? AND thread = ? AND turn = ?) "
                    "UNION ALL SELECT 1 FROM message_archive WHERE id = ?",
                    (message.id, message.namespace, message.thread, message.turn, message.id),
                ).fetchone()
                if known:
                    continue
                self._bump_turn(conn, message.namespace, message.thread, message.turn)
                if archived:
                    conn.execute(
                        "INSERT INTO message_archive (id, namespace, thread, turn, expires_at, archived_at, data) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (message.id, message.namespace, message.thread, message.turn, _epoch(message.expires_at),
                         to_epoch(message.created_at), message.model_dump_json()),
                    )  # fmt: skip
                else:
                    rid = int(conn.execute(_INSERT, _values(message)).lastrowid)
                    if model is not None and vector is not None:
                        space = self._space(conn, model, create=True)
                        if space is None:
                            raise InvalidInputError(f"no vector space registered for model {model!r}")
                        checked = self._b._checked_vector(space, vector)
                        vectors.write_vector(conn, space, message.namespace, rid, checked)
                written += 1
        return written

    def get_messages(
        self, namespace: str, ids: Sequence[str], *, include_archived: bool = False
    ) -> builtins.list[Message]:
        """Messages by id, in the order asked."""
        if not ids:
            return []
        with self._b._read() as conn:
            rows = conn.execute(
                f"SELECT {_SELECT} FROM json_each(?) AS j CROSS JOIN messages m ON m.id = j.value "
                "WHERE m.namespace = ?",
                (json_list(ids), namespace),
            ).fetchall()
            found = {m.id: m for m in map(_row, rows)}
            if include_archived:
                for (data,) in conn.execute(
                    f"SELECT data FROM message_archive WHERE namespace = ? AND id IN {_IDS}",
                    (namespace, json_list(ids)),
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
                f"ORDER BY m.thread {direction}, m.turn {direction} LIMIT ?",
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
        """Threads with their counts, most recent first."""
        having: list[str] = []
        params: list[Any] = [namespace, namespace, namespace]
        if user is not None:
            having.append("sum(m.user IS ?) > 0")
        if agent is not None:
            having.append("sum(m.agent IS ?) > 0")
        sql = (
            "SELECT t.thread, t.last_turn, count(m.rid), min(m.created_at), max(m.created_at), "
            "(SELECT count(*) FROM message_archive a WHERE a.namespace = ? AND a.thread = t.thread) "
            "FROM message_threads t LEFT JOIN messages m ON m.namespace = t.namespace AND m.thread = t.thread "
            "WHERE t.namespace = ? GROUP BY t.thread"
        )
        params = [namespace, namespace]
        if having:
            sql += " HAVING " + " AND ".join(having)
            params += [v for v in (user, agent) if v is not None]
        sql += " ORDER BY max(m.created_at) DESC NULLS LAST, t.thread DESC LIMIT ?"
        params.append(int(limit))
        with self._b._read() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [
            ThreadInfo(
                namespace=namespace,
                thread=str(r[0]),
                last_turn=int(r[1]),
                messages=int(r[2]),
                first_at=None if r[3] is None else from_epoch(r[3]),
                last_at=None if r[4] is None else from_epoch(r[4]),
                archived=int(r[5]),
            )  # fmt: skip
            for r in rows
            if int(r[2]) or int(r[5])
        ]

    def search_messages_lexical(self, query: MessageQuery, terms: Sequence[str], k: int) -> builtins.list[ChannelHit]:
        """FTS5 BM25 over matching hot messages (terms quoted, no query syntax), best first."""
        phrases = ['"' + t.replace('"', '""') + '"' for t in terms if t.strip() and storable(t)]
        if not phrases or k <= 0:
            return []
        where, params = compile_message_query(query)
        with self._b._read() as conn:
            rows = conn.execute(
                "SELECT m.id, bm25(messages_fts) AS rank FROM messages_fts "
                "CROSS JOIN messages m ON m.rid = messages_fts.rowid "
                f"WHERE messages_fts MATCH ? AND {where} ORDER BY rank, m.id LIMIT ?",
                [" OR ".join(phrases), *params, int(k)],
            ).fetchall()
        return [ChannelHit(str(r[0]), -float(r[1])) for r in rows]

    def search_messages_vector(
        self, query: MessageQuery, model: str, vector: Vector, k: int
    ) -> builtins.list[ChannelHit]:
        """Cosine search over matching hot messages via :func:`.vectors.search`."""
        with self._b._read() as conn:
            space = self._space(conn, model, create=False)
            if space is None or k <= 0:
                return []
            checked = self._b._checked_vector(space, vector)
            if not math.isfinite(norm := float(np.linalg.norm(checked))) or norm == 0.0:
                raise InvalidVectorError("query vector is all zeros; it has no direction to compare")
            predicate = compile_message_query(query, "i")  # vectors.search names the owner table ``i``
            scope = compile_message_query(
                query.model_copy(update={"clearance": "secret", "include_expired": True, "created_after": None,
                                         "created_before": None}), "i",
            )  # fmt: skip
            return vectors.search(
                conn, self._b._codes, space, query.namespace, predicate, predicate, scope, checked, int(k),
                exact_limit=self._b._exact_limit,
            )  # fmt: skip

    def get_message_vectors(self, namespace: str, model: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors by id."""
        if not ids:
            return {}
        with self._b._read() as conn:
            space = self._space(conn, model, create=False)
            if space is None:
                return {}
            rows = conn.execute(
                f"SELECT m.id, v.embedding FROM json_each(?) AS j CROSS JOIN messages m ON m.id = j.value "
                f"CROSS JOIN {space.vectors_table} v ON v.rid = m.rid WHERE m.namespace = ?",
                (json_list(ids), namespace),
            ).fetchall()
        return {str(r[0]): np.frombuffer(r[1], dtype=np.float32).copy() for r in rows}

    # -- the sync job ------------------------------------------------------
    def claim_pending_messages(
        self, namespace: str | None, limit: int, worker: str, lease_seconds: float, now: datetime
    ) -> builtins.list[Message]:
        """Lease up to ``limit`` unleased pending/failed messages, oldest first, in one immediate transaction."""
        stamp = to_epoch(now)
        sql = (
            f"SELECT {_SELECT}, m.rid FROM messages m WHERE m.embedding_status IN ('pending', 'failed') "
            "AND (m.claimed_until IS NULL OR m.claimed_until <= ?)"
        )
        params: list[Any] = [stamp]
        if namespace is not None:
            sql += " AND m.namespace = ?"
            params.append(namespace)
        sql += " ORDER BY m.embedding_status = 'failed', m.created_at, m.id LIMIT ?"
        params.append(max(int(limit), 0))
        with self._b._write() as conn:
            rows = conn.execute(sql, params).fetchall()
            conn.execute(
                f"UPDATE messages SET claimed_by = ?, claimed_until = ? WHERE rid IN {_IDS}",
                (worker, stamp + float(lease_seconds), json_list([r[-1] for r in rows])),
            )
        return [_row(r) for r in rows]

    def set_message_vectors(self, namespace: str, model: str, updates: Sequence[tuple[str, Vector]]) -> int:
        """Store vectors, mark done, clear claims — one transaction; vectors checked first."""
        if not updates:
            return 0
        count = 0
        with self._b._write() as conn:
            space = self._space(conn, model, create=True)
            if space is None:
                raise InvalidInputError(f"no vector space registered for model {model!r}; call ensure_vector_space")
            checked = [(i, self._b._checked_vector(space, v)) for i, v in updates]
            others = [s for s in self._all_spaces(conn) if s.space_id != space.space_id]
            for message_id, vector in checked:
                row = conn.execute(
                    "SELECT rid FROM messages WHERE id = ? AND namespace = ?", (message_id, namespace)
                ).fetchone()
                if row is None:
                    continue
                rid = int(row[0])
                for other in others:
                    vectors.delete_vectors(conn, other, namespace, [rid])
                vectors.write_vector(conn, space, namespace, rid, vector)
                conn.execute(
                    "UPDATE messages SET embedding_status = 'done', embedding_model = ?, embedding_error = NULL, "
                    "claimed_by = NULL, claimed_until = NULL WHERE rid = ?",
                    (model, rid),
                )
                count += 1
        return count

    def mark_messages(self, namespace: str, ids: Sequence[str], status: str | None, error: str | None) -> int:
        """Set status (None keeps it) and error, clear claims."""
        if status is not None and status not in MESSAGE_STATUSES:
            raise InvalidInputError(f"embedding status must be one of {', '.join(MESSAGE_STATUSES)}; got {status!r}")
        if not ids:
            return 0
        with self._b._write() as conn:
            cursor = conn.execute(
                "UPDATE messages SET embedding_status = coalesce(?, embedding_status), embedding_error = ?, "
                f"claimed_by = NULL, claimed_until = NULL WHERE namespace = ? AND id IN {_IDS}",
                (status, error, namespace, json_list(ids)),
            )
            return max(int(cursor.rowcount), 0)

    def message_claims(self, namespace: str | None) -> dict[str, int]:
        """Claimed messages by worker."""
        sql = "SELECT claimed_by, count(*) FROM messages WHERE claimed_by IS NOT NULL"
        params: list[Any] = []
        if namespace is not None:
            sql += " AND namespace = ?"
            params.append(namespace)
        with self._b._read() as conn:
            return {str(w): int(n) for w, n in conn.execute(sql + " GROUP BY claimed_by", params)}

    def release_claims(self, workers: Sequence[str]) -> int:
        """Clear the claims of ``workers``."""
        if not workers:
            return 0
        with self._b._write() as conn:
            cursor = conn.execute(
                f"UPDATE messages SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by IN {_IDS}",
                (json_list(workers),),
            )
            return max(int(cursor.rowcount), 0)

    def message_status_counts(self, namespace: str | None) -> dict[str, int]:
        """Hot messages by embedding status."""
        sql = "SELECT embedding_status, count(*) FROM messages"
        params: list[Any] = []
        if namespace is not None:
            sql += " WHERE namespace = ?"
            params.append(namespace)
        with self._b._read() as conn:
            return {str(s): int(n) for s, n in conn.execute(sql + " GROUP BY embedding_status", params)}

    def pending_message_volume(self, namespace: str | None, now: datetime) -> tuple[int, int]:
        """Count and characters of what a sync would embed now."""
        sql = (
            "SELECT count(*), coalesce(sum(length(content)), 0) FROM messages "
            "WHERE embedding_status IN ('pending', 'failed') AND sensitivity != 'secret' "
            "AND (expires_at IS NULL OR expires_at > ?)"
        )
        params: list[Any] = [to_epoch(now)]
        if namespace is not None:
            sql += " AND namespace = ?"
            params.append(namespace)
        with self._b._read() as conn:
            count, chars = conn.execute(sql, params).fetchone()
        return int(count), int(chars)

    # -- retention ---------------------------------------------------------
    @staticmethod
    def _selection(before_turn: int | None, older_than: datetime | None, alias: str = "m") -> tuple[str, list[Any]]:
        parts: list[str] = []
        params: list[Any] = []
        if before_turn is not None:
            parts.append(f"{alias}.turn < ?")
            params.append(int(before_turn))
        if older_than is not None:
            parts.append(f"{alias}.created_at < ?")
            params.append(to_epoch(older_than))
        return ("(" + " OR ".join(parts) + ")") if parts else _FALSE, params

    def archive_messages(
        self, namespace: str, thread: str, *, before_turn: int | None, older_than: datetime | None, at: datetime
    ) -> int:
        """Move selected hot messages (with their vectors dropped) to ``message_archive``."""
        chosen, params = self._selection(before_turn, older_than)
        with self._b._write() as conn:
            rows = conn.execute(
                f"SELECT {_SELECT}, m.rid FROM messages m WHERE m.namespace = ? AND m.thread = ? AND {chosen}",
                [namespace, thread, *params],
            ).fetchall()
            conn.executemany(
                "INSERT OR IGNORE INTO message_archive (id, namespace, thread, turn, expires_at, archived_at, data) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (m.id, m.namespace, m.thread, m.turn, _epoch(m.expires_at), to_epoch(at), m.model_dump_json())
                    for m in map(_row, rows)
                ],
            )
            return self._delete_rids(conn, namespace, [int(r[-1]) for r in rows])

    def delete_messages(
        self, namespace: str, thread: str, *, before_turn: int | None, older_than: datetime | None
    ) -> int:
        """Delete selected hot and archived messages."""
        hot, params = self._selection(before_turn, older_than)
        with self._b._write() as conn:
            rids = [
                int(r[0])
                for r in conn.execute(
                    f"SELECT m.rid FROM messages m WHERE m.namespace = ? AND m.thread = ? AND {hot}",
                    [namespace, thread, *params],
                )
            ]
            count = self._delete_rids(conn, namespace, rids)
            archived = conn.execute(
                "SELECT a.id, a.turn, a.data FROM message_archive a WHERE a.namespace = ? AND a.thread = ?",
                (namespace, thread),
            ).fetchall()
            doomed = []
            for archived_id, turn, data in archived:
                created = Message.model_validate_json(data).created_at
                if (before_turn is not None and turn < before_turn) or (
                    older_than is not None and created < older_than
                ):
                    doomed.append(archived_id)
            if doomed:
                count += int(
                    conn.execute(f"DELETE FROM message_archive WHERE id IN {_IDS}", (json_list(doomed),)).rowcount
                )
            return count

    def delete_message(self, namespace: str, message_id: str) -> bool:
        """Delete one message (hot or archived) by id."""
        with self._b._write() as conn:
            rids = [
                int(r[0])
                for r in conn.execute(
                    "SELECT rid FROM messages WHERE namespace = ? AND id = ?", (namespace, message_id)
                ).fetchall()
            ]
            count = self._delete_rids(conn, namespace, rids)
            count += int(
                conn.execute(
                    "DELETE FROM message_archive WHERE namespace = ? AND id = ?", (namespace, message_id)
                ).rowcount
            )
            return count > 0

    def iter_archived(self, namespace: str, thread: str | None = None) -> Iterator[Message]:
        """Archived messages by (thread, turn), read in batches."""
        after: tuple[str, int] = ("", -1)
        while True:
            sql = "SELECT thread, turn, data FROM message_archive WHERE namespace = ? AND (thread, turn) > (?, ?)"
            params: list[Any] = [namespace, *after]
            if thread is not None:
                sql += " AND thread = ?"
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
        stamp = to_epoch(now)
        scope = "" if namespace is None else " AND namespace = ?"
        params: list[Any] = [stamp] + ([] if namespace is None else [namespace])
        with self._b._write() as conn:
            rows = conn.execute(f"SELECT rid, namespace FROM messages WHERE expires_at <= ?{scope}", params).fetchall()
            by_ns: dict[str, list[int]] = {}
            for rid, ns in rows:
                by_ns.setdefault(str(ns), []).append(int(rid))
            count = sum(self._delete_rids(conn, ns, rids) for ns, rids in by_ns.items())
            count += int(conn.execute(f"DELETE FROM message_archive WHERE expires_at <= ?{scope}", params).rowcount)
        return count

    def media_in_use(self, hashes: Sequence[str]) -> set[str]:
        """Referenced media hashes among ``hashes`` (hot and archived messages)."""
        if not hashes:
            return set()
        with self._b._read() as conn:
            rows = conn.execute(
                "SELECT h.value FROM json_each(?) AS h WHERE EXISTS (SELECT 1 FROM messages m "
                "WHERE m.media IS NOT NULL AND json_extract(m.media, '$.sha256') = h.value) "
                "OR EXISTS (SELECT 1 FROM message_archive a WHERE json_extract(a.data, '$.media.sha256') = h.value)",
                (json_list(hashes),),
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
