"""The items store's writes, written once for every SQL engine (SQLite and PostgreSQL).

:class:`SQLItemWrites` adds (with the dedup rule), replaces, deletes and
re-windows items, records their access (in batches, :mod:`memory.backends.access_log`)
and appends to the ledger, in ``?``
SQL through the backend's :class:`~memory.backends.dialect.Dialect`. It is
a base class of :class:`~memory.backends.items.SQLItemStore` (the reads),
over :class:`~memory.backends.item_vectors.SQLVectorStore` (the vector
spaces). Items are reached by id through the engine's filter
(:meth:`SQLItemWrites._by_ids`), so each planner takes its best way in.
An added item's ledger entry keeps its ``after`` by reference to the row
(:mod:`memory.backends.ledger_refs`) whenever that reads back the same.

The engine answers, through small hooks, only what truly differs:

* its row of an item (:attr:`~SQLItemWrites.item_columns` and
  ``_item_values``: its codec) and how its tags and vectors name an item
  (``row_key``, :attr:`~SQLItemWrites.tag_key`, ``_row_keys``: SQLite's
  ``rid``; whether an id is unique in the store or in its namespace);
* its lexical statistics (``_lock_terms``, ``_count_terms``,
  ``window_columns``): PostgreSQL keeps BM25 statistics of its tsvectors
  itself, SQLite's FTS5 tables follow the rows through triggers;
* its vectors (``_write_vector``, ``_write_vectors``, ``_delete_vectors``,
  ``_forget_vectors``: SQLite's sign-bit codes, pgvector rows);
* the lock that makes dedup atomic across processes (``_lock_scopes``:
  PostgreSQL's advisory locks; SQLite's write transaction already
  serialises).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, closing
from datetime import UTC, datetime
from functools import cache
from typing import Any

from memory.backends.access_log import ACCESS_CHUNK, AccessLog, Pending, WriteBehind
from memory.backends.columns import ITEM_COLUMNS, LEDGER_SELECT, TIME_COLUMNS
from memory.backends.item_vectors import S, SQLVectorStore
from memory.backends.ledger_refs import item_ref
from memory.backends.values import AddResult, NewRecord, Vector
from memory.errors import InvalidInputError, NotFoundError, StorageError
from memory.filters import Filter
from memory.records import snapshot
from memory.types import LedgerEntry, MemoryItem

__all__ = ["DedupKey", "SQLItemWrites", "item_statements"]

#: Items dedup within (namespace, user, agent, thread, content hash).
DedupKey = tuple[str, str | None, str | None, str | None, str]
_Rows = list[tuple[Any, ...]]
_INSERT_LEDGER = f"INSERT INTO ledger ({LEDGER_SELECT}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
#: Tag rows; ``{key}`` is the engine's :attr:`SQLItemWrites.tag_key`.
_INSERT_TAGS = "INSERT INTO item_tags (namespace, tag, {key}) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"


@cache
def item_statements(columns: tuple[str, ...]) -> tuple[str, str]:
    """The ``INSERT`` of an item row of ``columns`` and the ``UPDATE`` of one by (namespace, id), with ``?``.

    The update also clears the row's embedding claim: a replaced item is new work.
    """
    names = [f'"{c}"' if c == "user" else c for c in columns]
    insert = f"INSERT INTO items ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})"
    update = (
        f"UPDATE items SET {', '.join(f'{n} = ?' for n in names)}, claimed_by = NULL, claimed_until = NULL "
        "WHERE namespace = ? AND id = ?"
    )
    return insert, update


#: The ``meta`` key that records the rule the stored windows were computed by.
_WINDOW_RULE_KEY = "window_rule"


class SQLItemWrites(SQLVectorStore[S]):
    """Item writes shared by the SQL backends (a base class of :class:`~memory.backends.items.SQLItemStore`).

    The engine implements :meth:`_compile`, :meth:`_item_values`, the vector
    writes (:meth:`_write_vectors`, :meth:`_delete_vectors`) and the hooks of
    :class:`~memory.backends.item_vectors.SQLVectorStore`, and overrides the
    other hooks below where its default does not hold; everything here runs
    on the dialect's write transactions.
    """

    #: The columns of an item's row, in :meth:`_item_values` order (MemoryItem fields, then engine columns).
    item_columns: tuple[str, ...] = ITEM_COLUMNS
    #: The column of ``item_tags`` that names an item by its :attr:`row_key`.
    tag_key: str = "item_id"
    #: True when an item id is unique in the whole store (SQLite's ``items.id UNIQUE``), not only in its namespace.
    store_wide_ids: bool = False
    #: Engine columns set with a window's text (filled by :meth:`_window_values`), e.g. its word count.
    window_columns: tuple[str, ...] = ()

    def _compile(self, flt: Filter, *, probe: bool = False) -> tuple[str, list[Any]]:
        """The engine's predicate over ``items i`` that ``flt`` matches, and its parameters."""
        raise NotImplementedError

    def _by_ids(self, namespace: str, ids: Sequence[str]) -> tuple[str, list[Any]]:
        """The predicate over ``items i`` selecting the items of ``namespace`` named by ``ids``, and its parameters.

        Through the engine's filter, which knows how its planner reaches rows
        by id best (SQLite: the id index, never a scan of the namespace).
        """
        flt = Filter.model_construct(
            namespace=namespace, ids=tuple(ids), clearance="secret", include_expired=True, include_invalid=True,
            now=datetime.now(UTC),
        )  # fmt: skip
        return self._compile(flt)

    # -- what engines add --------------------------------------------------------
    def _lock_terms(self, conn: Any, namespaces: Sequence[str]) -> None:
        """Serialise the writers of these namespaces' lexical statistics until the transaction ends.

        Default: nothing (the write transaction already serialises, and the
        engine's full-text tables follow the rows through triggers).
        """

    def _count_terms(self, conn: Any, namespace: str, ids: Sequence[str], sign: int) -> None:
        """Count these items in the engine's lexical statistics (``sign`` 1, after their rows were written) or
        out of them (-1, before the rows change or vanish). Default: nothing (see :meth:`_lock_terms`)."""

    def _lock_scopes(self, conn: Any, items: Sequence[MemoryItem]) -> None:
        """Serialise the adders of these items' dedup scopes until the transaction ends, so the dedup check and
        the insert are atomic. Default: nothing (the write transaction already serialises writers)."""

    def _row_keys(self, conn: Any, ids: Sequence[str]) -> dict[str, Any]:
        """The :attr:`row_key` of each item just inserted, by id. Default: the id itself."""
        return {item_id: item_id for item_id in ids}

    def _item_values(self, item: MemoryItem) -> tuple[Any, ...]:
        """The engine's row of ``item`` for :attr:`item_columns`, ready to bind (its codec)."""
        raise NotImplementedError

    def _window_values(self, text: str) -> tuple[Any, ...]:
        """Values of :attr:`window_columns` for the window ``text``."""
        return ()

    def _write_vectors(self, conn: Any, space: S, namespace: str, rows: Sequence[tuple[Any, Vector]]) -> None:
        """Store vectors (by :attr:`row_key`) of items that have none in ``space``; the caller checked them."""
        raise NotImplementedError

    def _delete_vectors(self, conn: Any, space: S, namespace: str, keys: Sequence[Any]) -> None:
        """Remove the vectors of the items whose :attr:`row_key` is in ``keys`` from ``space``."""
        raise NotImplementedError

    def _forget_vectors(self, conn: Any, namespace: str, ids: Sequence[str]) -> None:
        """Remove the vectors of items about to be deleted. Default: nothing (they go with the rows: cascade)."""

    # -- dedup (the rule of ``add``, one copy for every engine) -----------------
    def _stored_duplicates(self, conn: Any, items: Sequence[MemoryItem]) -> dict[DedupKey, _Rows]:
        """Stored non-secret items sharing a content hash with ``items``: ``(id, expires_at, valid_to)`` raw
        rows by dedup key, oldest first. One query per namespace; secrets are never dedup targets."""
        d = self.dialect
        by_ns: dict[str, set[str]] = {}
        for item in items:
            by_ns.setdefault(item.namespace, set()).add(item.content_hash)
        out: dict[DedupKey, _Rows] = {}
        for namespace, hashes in by_ns.items():
            where, values = d.one_of("content_hash", sorted(hashes))
            for row in d.rows(
                conn,
                'SELECT id, "user", agent, thread, content_hash, expires_at, valid_to FROM items '
                f"WHERE namespace = ? AND {where} AND sensitivity <> 'secret' ORDER BY created_at, id",
                (namespace, *values),
            ):
                out.setdefault((namespace, row[1], row[2], row[3], str(row[4])), []).append(
                    (str(row[0]), row[5], row[6])
                )
        return out

    def _plan_adds(
        self, records: Sequence[NewRecord], stored: dict[DedupKey, _Rows]
    ) -> tuple[list[AddResult], list[NewRecord]]:
        """Which records ``add`` inserts, and its answer for each: the dedup rule.

        A record whose scope holds a live item (neither expired nor closed at
        the record's ``created_at``) with its content hash, stored or inserted
        earlier in the batch, answers that item's id with ``created=False``.
        Secrets never dedup, either way: the answer would tell a writer that
        the secret exists.
        """
        results: list[AddResult] = []
        inserted: list[NewRecord] = []
        staged: dict[DedupKey, str] = {}
        for record in records:
            item = record.item
            key: DedupKey = (item.namespace, item.user, item.agent, item.thread, item.content_hash)
            existing: str | None = None
            if item.sensitivity != "secret":
                created = self.dialect.time_param(item.created_at)
                existing = staged.get(key) or next(
                    (
                        found
                        for found, expires, valid_to in stored.get(key, ())
                        if (expires is None or expires > created) and (valid_to is None or valid_to > created)
                    ),
                    None,
                )
            if existing is not None:
                results.append(AddResult(existing, False))
                continue
            inserted.append(record)
            if item.sensitivity != "secret":
                staged[key] = item.id
            results.append(AddResult(item.id, True))
        return results, inserted

    # -- the ledger ------------------------------------------------------------
    def _ledger_values(self, entry: LedgerEntry, after: Mapping[str, Any] | None = None) -> tuple[Any, ...]:
        """The ledger row of ``entry``, storing ``after`` (an add's marker) in place of its own when given."""
        d = self.dialect
        stored = entry.after if after is None else after
        return (
            entry.id, entry.namespace, entry.item_id, entry.op, d.time_param(entry.at),
            None if entry.before is None else d.json_compact(entry.before),
            None if stored is None else d.json_compact(stored),
            entry.reason,
        )  # fmt: skip

    def _insert_ledger(self, conn: Any, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert ledger rows (:meth:`_ledger_values`) on ``conn`` (inside the caller's transaction)."""
        if rows:
            with closing(conn.cursor()) as cursor:
                cursor.executemany(self.dialect.sql(_INSERT_LEDGER), rows)

    def _append_ledger(self, conn: Any, entries: Sequence[LedgerEntry]) -> None:
        """Insert ledger entries on ``conn`` as they are (inside the caller's transaction)."""
        self._insert_ledger(conn, [self._ledger_values(e) for e in entries])

    def _reads_back(self, item: MemoryItem) -> bool:
        """True when ``item``'s row reads back as ``item`` wherever the engine's row and ledger codecs differ.

        Times are stored as timestamps or epoch seconds (the ledger keeps their
        ISO text): each must be in UTC, as rows are read, and survive the
        engine's conversion (epoch seconds lose microseconds far from 1970).
        A negative zero importance reads back as 0.0 from SQLite's REAL.
        """
        if item.importance == 0.0 and math.copysign(1.0, item.importance) < 0:
            return False
        d = self.dialect
        for column in TIME_COLUMNS:
            value: datetime | None = getattr(item, column)
            if value is not None and (value.tzinfo is not UTC or d.time_value(d.time_param(value)) != value):
                return False
        return True

    def _add_ledger_row(self, record: NewRecord) -> tuple[Any, ...]:
        """The ledger row of an inserted record's entry: an add whose ``after`` is the item is stored by reference.

        The marker (:mod:`memory.backends.ledger_refs`) is written when it reads
        back as the entry's ``after``; every other entry is stored whole.
        """
        entry, item = record.ledger, record.item
        marker = None
        if (
            entry.op == "add"
            and entry.after is not None
            and (entry.namespace, entry.item_id) == (item.namespace, item.id)
            and self._reads_back(item)
        ):
            marker = item_ref(entry.after, snapshot(item))
        return self._ledger_values(entry, marker)

    def write_ledger(self, entries: Sequence[LedgerEntry]) -> None:
        """Append ledger entries as they are, in one transaction (copying a store's history)."""
        if entries:
            with self.dialect.write() as conn:
                self._append_ledger(conn, entries)

    # -- writes ----------------------------------------------------------------
    def _check_new_ids(self, conn: Any, items: Sequence[MemoryItem]) -> None:
        """InvalidInputError when an id repeats in the batch or is taken (in the store or in its namespace)."""
        d = self.dialect
        by_scope: dict[str | None, set[str]] = {}
        for item in items:
            ids = by_scope.setdefault(None if self.store_wide_ids else item.namespace, set())
            if item.id in ids:
                raise InvalidInputError(f"id {item.id} already exists")
            ids.add(item.id)
        for scope, ids in by_scope.items():
            where, values = d.one_of("id", sorted(ids))
            if scope is not None:
                where, values = f"namespace = ? AND {where}", [scope, *values]
            taken = d.rows(conn, f"SELECT id FROM items WHERE {where} LIMIT 1", values)
            if taken:
                raise InvalidInputError(f"id {taken[0][0]} already exists")

    def add(self, records: Sequence[NewRecord]) -> list[AddResult]:
        """Insert records in one transaction with dedup by (scope, content_hash); one result per record.

        A live item with the same content hash in the same scope (also one
        inserted earlier in this batch) is returned with ``created=False``.
        A record's ``window`` goes in with its row: the text into
        ``index_window`` (indexed once, not inserted empty and then updated),
        the vector into the window space it names. Raises InvalidInputError
        (an id that exists, a vector that does not fit its space, a window
        text the engine cannot store) and then nothing of the batch is stored. A batch costs
        a bounded number of statements, not several per record: the id and
        duplicate checks once per namespace, each write one executemany.
        """
        if not records:
            return []
        d = self.dialect
        items = [record.item for record in records]
        for record in records:
            if record.window is not None:
                self._check_window_text(record.window.text)
        with d.write() as conn:
            self._check_new_ids(conn, items)
            checked: dict[tuple[str, str], list[tuple[S, Vector]]] = {}
            for record in records:  # every vector is checked, also those of duplicates
                given = [(record.item.embedding_model, record.vector)]
                if record.window is not None:
                    given.append((record.window.model, record.window.vector))
                for model, vector in given:
                    if vector is not None:
                        space = self._require_space(conn, model)
                        checked.setdefault((record.item.namespace, record.item.id), []).append(
                            (space, self._checked_vector(space, vector))
                        )
            self._lock_scopes(conn, items)
            results, inserted = self._plan_adds(records, self._stored_duplicates(conn, items))
            new = [record.item for record in inserted]
            d.many(
                conn,
                item_statements((*self.item_columns, "index_window", *self.window_columns))[0],
                [
                    (*self._item_values(record.item), text, *self._window_values(text))
                    for record in inserted
                    for text in (record.window.text if record.window is not None else "",)
                ],
            )
            keys = self._row_keys(conn, [item.id for item in new])
            d.many(
                conn,
                _INSERT_TAGS.format(key=self.tag_key),
                [(item.namespace, tag, keys[item.id]) for item in new for tag in dict.fromkeys(item.tags)],
            )
            self._insert_ledger(conn, [self._add_ledger_row(record) for record in inserted])
            new_vectors: dict[tuple[int, str], tuple[S, list[tuple[Any, Vector]]]] = {}
            created: dict[str, list[str]] = {}
            for item in new:
                created.setdefault(item.namespace, []).append(item.id)
                for space, vector in checked.get((item.namespace, item.id), ()):
                    rows = new_vectors.setdefault((space.space_id, item.namespace), (space, []))[1]
                    rows.append((keys[item.id], vector))
            for (_, namespace), (space, rows) in new_vectors.items():
                self._write_vectors(conn, space, namespace, rows)
            if created:
                self._lock_terms(conn, list(created))
                for namespace in sorted(created):
                    self._count_terms(conn, namespace, created[namespace], 1)
        return results

    def delete(self, namespace: str, ids: Sequence[str], ledger: Sequence[LedgerEntry]) -> int:
        """Delete items of ``namespace`` with their tags, lexical entries and vectors; record ``ledger``.

        Returns the number of items deleted. The ledger is kept.
        """
        d = self.dialect
        wanted = [item_id for item_id in ids if d.storable(item_id)]
        with d.write() as conn:
            count = 0
            if wanted and d.storable(namespace):
                self._lock_terms(conn, [namespace])
                self._count_terms(conn, namespace, wanted, -1)
                self._forget_vectors(conn, namespace, wanted)
                where, params = self._by_ids(namespace, wanted)
                count = max(int(d.run(conn, f"DELETE FROM items AS i WHERE {where}", params).rowcount), 0)
            self._append_ledger(conn, ledger)
            return count

    @property
    def access_log(self) -> AccessLog:
        """The accesses recorded and not yet written (created on first use)."""
        log: AccessLog | None = self.__dict__.get("_access_log")
        if log is None:
            log = self.__dict__.setdefault("_access_log", AccessLog())
            assert log is not None
        return log

    @property
    def access_writer(self) -> WriteBehind:
        """The thread that writes due accesses behind the recalls (created on first use)."""
        writer: WriteBehind | None = self.__dict__.get("_access_writer")
        if writer is None:
            writer = self.__dict__.setdefault("_access_writer", WriteBehind(self, _write_due))
            assert writer is not None
        return writer

    def record_access(self, namespace: str, ids: Sequence[str], at: datetime) -> None:
        """Count an access of each listed id (once per listing) and set accessed_at for ``ids`` in ``namespace``.

        Kept in :attr:`access_log` and written in batches (see
        :mod:`memory.backends.access_log`): once enough have gathered, this
        call has them written behind it (:attr:`access_writer`), unless another
        writer holds the store then (that write does not wait for it: they stay
        kept). Reads through this store see them at once. A failed write keeps
        them for the next one: statistics never fail the recall that records them.
        """
        d = self.dialect
        wanted = [item_id for item_id in ids if d.storable(item_id)]
        if not wanted or not d.storable(namespace):
            return
        if self.access_log.add(namespace, wanted, at):
            self.access_writer.wake()

    def access_written(self, timeout: float | None = None) -> bool:
        """Wait until no due access write is asked for or under way (False: ``timeout`` seconds passed first)."""
        writer: WriteBehind | None = self.__dict__.get("_access_writer")
        return True if writer is None else writer.settle(timeout)

    def flush_access(self, *, wait: bool = True) -> None:
        """Write the kept accesses (kept again if a write fails, and the error raised).

        They are taken from :attr:`access_log` inside each write transaction,
        so a read of this store sees each access once: kept, or written.
        ``wait=True`` writes them all in one transaction. ``wait=False`` (a due
        write, behind the recalls) writes those kept when it starts in
        transactions of :data:`~memory.backends.access_log.ACCESS_CHUNK` rows,
        each after :meth:`_yield_to_reads`, so a read of the store waits for one
        of them at most; and when another writer holds the store, it fails at once
        (StorageError) instead of waiting for it (up to the busy timeout, 30 s
        on SQLite, while reads of this store wait too).
        """
        left = len(self.access_log)
        chunk = None if wait else ACCESS_CHUNK
        while left > 0:
            if chunk is not None:
                self._yield_to_reads()
            taken: Pending = {}
            try:
                with self._access_transaction(wait) as conn:
                    taken = self.access_log.take(chunk)
                    if taken:
                        self._write_access(conn, taken)
            except BaseException:
                if taken:
                    self.access_log.give_back(taken)
                raise
            left -= len(taken)
            if chunk is None or not taken:
                return

    def _yield_to_reads(self) -> None:
        """Before each chunk of a due access write: wait for the store's reads if they would wait for it.

        Nothing here (PostgreSQL's reads never wait for a writer); the SQLite
        store waits for a quiet moment (:class:`~memory.backends.access_log.StoreUse`).
        """

    def flush_access_quietly(self) -> None:
        """:meth:`flush_access` where a failure must not stop what follows (closing): those accesses go uncounted."""
        try:
            self.flush_access()
        except StorageError:
            pass

    def close_access(self) -> None:
        """Closing: stop the write-behind thread, then write what is kept (:meth:`flush_access_quietly`)."""
        writer: WriteBehind | None = self.__dict__.get("_access_writer")
        if writer is not None:
            writer.close()
        self.flush_access_quietly()

    def _access_transaction(self, wait: bool) -> AbstractContextManager[Any]:
        """The write transaction accesses are written in; ``wait=False``: one that fails at once on another's lock."""
        return self.dialect.write()

    def _write_access(self, conn: Any, taken: Pending) -> None:
        d = self.dialect
        rows = [
            (count, d.time_param(at), namespace, item_id)
            for (namespace, item_id), (count, at) in sorted(taken.items())  # one lock order for every writer
        ]
        d.many(
            conn,
            "UPDATE items SET access_count = access_count + ?, accessed_at = ? WHERE namespace = ? AND id = ?",
            rows,
        )

    def replace(self, item: MemoryItem, vector: Vector | None, ledger: LedgerEntry) -> None:
        """Overwrite an item, its tags, lexical entries and vector, and record ``ledger``; its embedding claim ends.

        With ``vector=None`` the stored vector is kept if ``item`` stays
        embedded ('done') in the same model, and removed otherwise. Raises
        NotFoundError when the item does not exist in its namespace.
        """
        d = self.dialect
        with d.write() as conn:
            self._lock_terms(conn, [item.namespace])
            rows = d.rows(
                conn,
                f"SELECT {self.row_key} FROM items WHERE namespace = ? AND id = ?{d.for_update}",
                (item.namespace, item.id),
            )
            if not rows:
                raise NotFoundError(f"no memory {item.id} in namespace {item.namespace!r}")
            key = rows[0][0]
            new_space: S | None = None
            checked: Vector | None = None
            if vector is not None:
                new_space = self._require_space(conn, item.embedding_model)
                checked = self._checked_vector(new_space, vector)
            keep: S | None = None
            if vector is None and item.embedding_status == "done":
                keep = self._space(conn, item.embedding_model)
            self._count_terms(conn, item.namespace, [item.id], -1)
            d.run(conn, item_statements(self.item_columns)[1], (*self._item_values(item), item.namespace, item.id))
            self._count_terms(conn, item.namespace, [item.id], 1)
            d.run(conn, f"DELETE FROM item_tags WHERE namespace = ? AND {self.tag_key} = ?", (item.namespace, key))
            d.many(
                conn,
                _INSERT_TAGS.format(key=self.tag_key),
                [(item.namespace, tag, key) for tag in dict.fromkeys(item.tags)],
            )
            for space in self._all_spaces(conn):
                if keep is None or space.space_id != keep.space_id:
                    self._delete_vectors(conn, space, item.namespace, [key])
            if new_space is not None and checked is not None:
                self._write_vector(conn, new_space, item.namespace, key, checked)
            self._append_ledger(conn, [ledger])
        # Its row now holds the counts it was read with, kept accesses included (see AccessLog.seen).
        self.access_log.discard(item.namespace, [item.id])

    def window_rule(self) -> str | None:
        """The recorded window-rule state (:meth:`set_window_rule`), or None if never set."""
        with self.dialect.read() as conn:
            rows = self.dialect.rows(conn, "SELECT value FROM meta WHERE key = ?", (_WINDOW_RULE_KEY,))
        return str(rows[0][0]) if rows else None

    def set_window_rule(self, rule: str) -> None:
        """Record the window-rule state: the rule every stored window follows, or an upgrade's progress."""
        with self.dialect.write() as conn:
            self.dialect.run(
                conn,
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (_WINDOW_RULE_KEY, rule),
            )

    def _check_window_text(self, text: object) -> None:
        """InvalidInputError unless ``text`` is a window text the engine can store."""
        d = self.dialect
        if not isinstance(text, str) or not d.storable(text):
            nul = ", no NUL characters" if d.rejects_nul else ""
            raise InvalidInputError(f"window text must be a string {d.name} can store (valid Unicode{nul})")

    def set_windows(self, namespace: str, model: str | None, updates: Sequence[tuple[str, str, Vector | None]]) -> int:
        """Store the context windows of existing items: (id, window text, window vector or None).

        The text goes to the lexical ``window`` field (``index_window``); the
        vector to ``model``'s space (registered with :meth:`ensure_vector_space`),
        replacing the old one (None removes it; ``model=None`` leaves vectors
        alone). The last update of an item listed twice wins. Embedding status
        is not touched. Every text and vector is checked before anything is
        written (InvalidInputError). Returns the number of updates whose item exists.
        """
        if not updates:
            return 0
        d = self.dialect
        for _, text, _ in updates:
            self._check_window_text(text)
        with d.write() as conn:
            space = self._require_space(conn, model) if model is not None else None
            checked = [
                (item_id, text, None if vector is None or space is None else self._checked_vector(space, vector))
                for item_id, text, vector in updates
            ]
            wanted = sorted({item_id for item_id, _, _ in checked if isinstance(item_id, str) and d.storable(item_id)})
            self._lock_terms(conn, [namespace])
            where, params = self._by_ids(namespace, wanted)
            current = {
                str(r[0]): (r[1], str(r[2]))
                for r in d.rows(
                    conn,
                    f"SELECT i.id, i.{self.row_key}, i.index_window FROM items i WHERE {where} ORDER BY i.id"
                    f"{d.for_update}",
                    params,
                )
            }
            found = [(item_id, text, vector) for item_id, text, vector in checked if item_id in current]
            final = {item_id: text for item_id, text, _ in found}
            changed = sorted(item_id for item_id, text in final.items() if text != current[item_id][1])
            self._count_terms(conn, namespace, changed, -1)
            extra = "".join(f", {column} = ?" for column in self.window_columns)
            d.many(
                conn,
                f"UPDATE items SET index_window = ?{extra} WHERE namespace = ? AND id = ?",
                [(final[i], *self._window_values(final[i]), namespace, i) for i in changed],
            )
            self._count_terms(conn, namespace, changed, 1)
            if space is not None:
                latest = {current[item_id][0]: vector for item_id, _, vector in found}
                self._delete_vectors(conn, space, namespace, sorted(latest))
                self._write_vectors(conn, space, namespace, [(k, v) for k, v in latest.items() if v is not None])
            return len(found)


def _write_due(store: SQLItemWrites[Any]) -> None:
    """A due write, behind the recall (:class:`~memory.backends.access_log.WriteBehind`): it does not wait for
    another writer, and a failure keeps the accesses for the next one."""
    try:
        store.flush_access(wait=False)
    except StorageError:
        pass  # kept by flush_access; the next due recall, or close, writes them
