"""`SQLiteEpisodicStore`: the shared :class:`~memory.backends.episodic_sql.SQLEpisodicStore` in a SQLite file.

What is SQLite's own: lexical search is FTS5 BM25 over ``messages_fts`` (kept
by triggers), its work bounded as the items' is (:func:`.lexical.search`);
vectors live in ``msg_vectors_<space>`` and sign-bit tables through
:mod:`.vectors`, the same code items use, keyed by the message's
``rid`` (so deleting hot messages deletes their vectors first) and stored as
their item space's vectors are (float16, or float32 in a space made before).
Writes run in the backend's ``BEGIN IMMEDIATE`` transactions, which
serialise writers across processes: turn numbering and claims need no row
locks.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from memory.backends.episodic_sql import SQLEpisodicStore
from memory.backends.sqlite import lexical, vectors
from memory.backends.sqlite.dialect import sqlite_dialect
from memory.backends.values import ChannelHit, Vector
from memory.episodic.types import Message, MessageQuery


class SQLiteVectorHost(Protocol):
    """What the message store shares of its SQLite backend: connection, transactions, vector spaces, code cache."""

    _exact_limit: int
    _codes: vectors.CodeCache
    _lexical_bounds: lexical.LexicalBounds

    def _read(self) -> AbstractContextManager[Any]: ...
    def _write(self) -> AbstractContextManager[Any]: ...
    def _space(self, conn: Any, model: str | None) -> vectors.Space | None: ...
    def _all_spaces(self, conn: Any) -> builtins.list[vectors.Space]: ...
    def _checked_vector(self, space: vectors.Space, vector: Vector) -> Vector: ...


__all__ = ["SQLiteEpisodicStore"]


class SQLiteEpisodicStore(SQLEpisodicStore):
    """The :class:`~memory.backends.episodic.EpisodicStore` of one :class:`SQLiteBackend`."""

    def __init__(self, backend: SQLiteVectorHost) -> None:
        """Share ``backend``'s connection, lock and transactions."""
        super().__init__(sqlite_dialect(backend._read, backend._write))
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

    @staticmethod
    def _rids(conn: Any, namespace: str, ids: Sequence[str]) -> dict[str, int]:
        rows = conn.execute(
            "SELECT m.id, m.rid FROM json_each(?) AS j CROSS JOIN messages m ON m.id = j.value WHERE m.namespace = ?",
            (json.dumps(list(ids)), namespace),
        ).fetchall()
        return {str(r[0]): int(r[1]) for r in rows}

    # -- hooks of the shared store -------------------------------------------
    def _delete_hot(self, conn: Any, namespace: str, ids: Sequence[str]) -> int:
        rids = list(self._rids(conn, namespace, ids).values())
        if not rids:
            return 0
        for space in self._all_spaces(conn):
            vectors.delete_vectors(conn, space, namespace, rids)
        return int(
            conn.execute(
                "DELETE FROM messages WHERE rid IN (SELECT value FROM json_each(?))", (json.dumps(rids),)
            ).rowcount
        )

    def _checked(self, space: Any, vector: Vector) -> Vector:
        return self._b._checked_vector(space, vector)

    def _store_vector(self, conn: Any, message: Message, model: str, vector: Vector) -> None:
        space = self._writable_space(conn, model)
        rid = self._rids(conn, message.namespace, [message.id])[message.id]
        vectors.write_vector(conn, space, message.namespace, rid, self._checked(space, vector))

    # -- search ------------------------------------------------------------
    def search_messages_lexical(
        self, query: MessageQuery, terms: Sequence[str], k: int, *, exact_only: bool = False
    ) -> builtins.list[ChannelHit]:
        """FTS5 BM25 over matching hot messages (terms quoted, no query syntax), best first; bounded work.

        Ranked like the items' lexical channel (:func:`.lexical.search`): the
        whole match while the terms are in few messages, a bounded set of
        candidates past that (``exact_only``: nothing then).
        """
        phrases = tuple('"' + t.replace('"', '""') + '"' for t in terms if t.strip() and self._d.storable(t))
        if not phrases or k <= 0:
            return []
        fts = lexical.LexicalQuery("messages_fts", "", "bm25(messages_fts)", phrases, owner="messages")
        predicate = self.where(query, "i")
        # The indexed part of the query (namespace, thread, user, agent) places a filtered match's window.
        scope = self.where(
            MessageQuery(namespace=query.namespace, thread=query.thread, user=query.user, agent=query.agent,
                         clearance="secret", include_expired=True, now=query.now),
            "i",
        )  # fmt: skip
        with self._b._read() as conn:
            hits = lexical.search(
                conn, fts, k, self._b._lexical_bounds, predicate, predicate, scope=scope, exact_only=exact_only
            )
        return [ChannelHit(message_id, -rank) for message_id, rank in hits]

    def search_messages_vector(
        self, query: MessageQuery, model: str, vector: Vector, k: int
    ) -> builtins.list[ChannelHit]:
        """Cosine search over matching hot messages via :func:`.vectors.search`."""
        with self._b._read() as conn:
            if (found := self._query_space(conn, model, vector, k)) is None:
                return []
            space, checked = found
            predicate = self.where(query, "i")  # vectors.search names the owner table ``i``
            narrowed = (query.thread, query.user, query.agent, query.roles, query.after_turn, query.before_turn)
            scope = None  # the whole namespace: ranked in its in-process copy when that holds its vectors
            if any(part is not None for part in narrowed):
                scope = self.where(
                    query.model_copy(update={"clearance": "secret", "include_expired": True, "created_after": None,
                                             "created_before": None}), "i",
                )  # fmt: skip
            return vectors.search(
                conn, self._b._codes, space, query.namespace, predicate, predicate, scope, checked, int(k),
                exact_limit=self._b._exact_limit,
            )  # fmt: skip

    # -- vectors -------------------------------------------------------------
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
                (json.dumps(list(ids)), namespace),
            ).fetchall()
        return {str(r[0]): vectors.decode(space, r[1]) for r in rows}

    def set_message_vectors(self, namespace: str, model: str, updates: Sequence[tuple[str, Vector]]) -> int:
        """Store vectors, mark done, clear claims — one transaction; vectors checked first."""
        if not updates:
            return 0
        with self._b._write() as conn:
            space = self._writable_space(conn, model)
            checked = [(i, self._checked(space, v)) for i, v in updates]
            others = [s for s in self._all_spaces(conn) if s.space_id != space.space_id]
            rids = self._rids(conn, namespace, [i for i, _ in checked])
            for message_id, vector in checked:
                if (rid := rids.get(message_id)) is None:
                    continue
                for other in others:
                    vectors.delete_vectors(conn, other, namespace, [rid])
                vectors.write_vector(conn, space, namespace, rid, vector)
            conn.execute(
                "UPDATE messages SET embedding_status = 'done', embedding_model = ?, embedding_error = NULL, "
                "claimed_by = NULL, claimed_until = NULL WHERE rid IN (SELECT value FROM json_each(?))",
                (model, json.dumps(list(rids.values()))),
            )
        return len(rids)

    def media_in_use(self, hashes: Sequence[str]) -> set[str]:
        """Referenced media hashes among ``hashes`` (hot and archived messages)."""
        if not hashes:
            return set()
        with self._b._read() as conn:
            rows = conn.execute(
                "SELECT h.value FROM json_each(?) AS h WHERE EXISTS (SELECT 1 FROM messages m "
                "WHERE m.media IS NOT NULL AND json_extract(m.media, '$.sha256') = h.value) "
                "OR EXISTS (SELECT 1 FROM message_archive a WHERE json_extract(a.data, '$.media.sha256') = h.value)",
                (json.dumps(list(hashes)),),
            ).fetchall()
        return {str(r[0]) for r in rows}
