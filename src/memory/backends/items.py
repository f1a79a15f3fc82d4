"""The items store's SQL written once for every SQL engine (SQLite and PostgreSQL).

:class:`SQLItemStore` holds the item and ledger queries that read the same
on every engine: reads by id and by filter, counts, keyset iteration, the
ledger (resolving adds stored by reference, :mod:`memory.backends.ledger_refs`),
the embedding queue and its claims. It speaks ``?`` SQL through the
backend's :class:`~memory.backends.dialect.Dialect` and asks the engine only
for what truly differs (``_compile``: the filter predicate, whose tag,
metadata and list syntax is the engine's). The writes come from
:class:`~memory.backends.items_write.SQLItemWrites`, vector spaces from
:class:`~memory.backends.item_vectors.SQLVectorStore`. The rankings (FTS5 or
tsvector BM25, sign bits or pgvector), the write hooks that keep engine-side
indexes (sign-bit codes, tsvector statistics, vector tables) and DDL stay in
the engine packages.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict

from memory.backends.columns import ITEM_COLUMNS, JSON_COLUMNS, LEDGER_SELECT, TIME_COLUMNS
from memory.backends.item_vectors import S
from memory.backends.items_write import SQLItemWrites
from memory.backends.ledger_refs import is_item_ref, resolve_item_ref
from memory.backends.values import ChannelHit, ListOrder, RankFields
from memory.errors import InvalidInputError
from memory.filters import Filter
from memory.index_layout import field_weights
from memory.records import snapshot
from memory.types import LedgerEntry, MemoryItem

__all__ = [
    "ITEM_SELECT",
    "ItemCounts",
    "SQLItemStore",
    "check_claim",
    "EMBEDDING_STATUSES",
    "GROUP_COLUMNS",
]

#: The columns :meth:`SQLItemStore.group_counts` may group by.
GROUP_COLUMNS = {"kind": "i.kind", "sensitivity": "i.sensitivity", "embedding_status": "i.embedding_status"}
EMBEDDING_STATUSES = ("done", "pending", "failed", "skipped")
#: ``SELECT`` list of the item columns for ``items`` aliased ``i``, in ITEM_COLUMNS order ("user" quoted).
#: Positions in ITEM_COLUMNS of the columns :meth:`SQLItemStore._item` decodes (JSON text, times).
_JSON_AT = tuple(n for n, column in enumerate(ITEM_COLUMNS) if column in JSON_COLUMNS)
_TIME_AT = tuple(n for n, column in enumerate(ITEM_COLUMNS) if column in TIME_COLUMNS)
_ID_AT, _NAMESPACE_AT = ITEM_COLUMNS.index("id"), ITEM_COLUMNS.index("namespace")
_COUNT_AT, _ACCESSED_AT = ITEM_COLUMNS.index("access_count"), ITEM_COLUMNS.index("accessed_at")
ITEM_SELECT = ", ".join(f'i."{c}"' if c == "user" else f"i.{c}" for c in ITEM_COLUMNS)


class ItemCounts(TypedDict):
    """The counts of a scope's items, from one scan (see :meth:`SQLItemStore.item_counts`)."""

    total: int
    by_kind: dict[str, int]
    by_sensitivity: dict[str, int]
    by_embedding_status: dict[str, int]


def check_claim(limit: object, worker: object, lease_seconds: object) -> None:
    """Validate the arguments of a claim (``claim_pending_embeddings``/``claim_pending_messages``).

    Raises InvalidInputError for a negative or non-integer limit, an empty
    worker name, or a lease that is not a positive finite number.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise InvalidInputError(f"limit must be a non-negative integer, got {limit!r}")
    if not isinstance(worker, str) or not worker.strip() or "\x00" in worker:
        raise InvalidInputError("worker must be a non-empty string")
    try:
        worker.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError("worker must be a non-empty string") from None
    if not isinstance(lease_seconds, (int, float)) or not math.isfinite(lease_seconds) or lease_seconds <= 0:
        raise InvalidInputError(f"lease_seconds must be a positive number, got {lease_seconds!r}")


class SQLItemStore(SQLItemWrites[S]):
    """Item and ledger queries shared by the SQL backends (a base class of each engine's backend).

    The engine sets :attr:`dialect`, ``_spaces`` (a cache) and ``_lock``, and
    implements :meth:`_compile`, :meth:`_lexical` and the vector hooks of
    :class:`~memory.backends.item_vectors.SQLVectorStore`; everything here
    runs on the dialect's transactions. ``S`` is the engine's vector space object.
    """

    #: ``SELECT`` list of the item columns for ``items`` aliased ``i``, in ITEM_COLUMNS order.
    item_select: str = ITEM_SELECT

    def _lexical(
        self, flt: Filter, words: builtins.list[str], k: int, weights: tuple[float, ...], exact_only: bool = False
    ) -> builtins.list[ChannelHit]:
        """The engine's BM25 ranking (FTS5 or tsvector) of ``words`` over items matching ``flt`` (``exact_only``:
        see :meth:`search_lexical`)."""
        raise NotImplementedError

    # -- rows ----------------------------------------------------------------
    def _time(self, raw: Any) -> datetime | None:
        value = self.dialect.time_value(raw)
        return None if value is None else value.astimezone(UTC)

    def _item(self, row: Sequence[Any]) -> MemoryItem:
        """A MemoryItem from a row selected with :attr:`item_select` (extra trailing columns ignored)."""
        values = list(row[: len(ITEM_COLUMNS)])
        json_value, time_value = self.dialect.json_value, self._time
        for n in _JSON_AT:
            value = json_value(values[n])
            values[n] = tuple(value) if isinstance(value, list) else value
        for n in _TIME_AT:
            values[n] = time_value(values[n])
        if len(self.access_log) and (kept := self.access_log.kept(values[_NAMESPACE_AT], values[_ID_AT])):
            count, at = kept  # accesses not yet written count as read (see AccessLog.seen)
            values[_COUNT_AT] += count
            latest = values[_ACCESSED_AT]
            values[_ACCESSED_AT] = at if latest is None else max(latest, at)
        return MemoryItem(**dict(zip(ITEM_COLUMNS, values, strict=True)))

    def _ledger(self, row: Sequence[Any]) -> LedgerEntry:
        entry_id, namespace, item_id, op, at, before, after, reason = row
        d = self.dialect
        when = self._time(at)
        assert when is not None  # NOT NULL column
        return LedgerEntry(
            id=entry_id, namespace=namespace, item_id=item_id, op=op, at=when,
            before=None if before is None else d.json_value(before),
            after=None if after is None else d.json_value(after), reason=reason,
        )  # fmt: skip

    def _items(self, conn: Any, text: str, params: Sequence[Any]) -> builtins.list[MemoryItem]:
        return [self._item(r) for r in self.dialect.rows(conn, text, params)]

    # -- search channels (the engine ranks; the arguments are checked here) --------
    def search_lexical(
        self,
        flt: Filter,
        terms: Sequence[str],
        k: int,
        *,
        fields: Mapping[str, float] | None = None,
        exact_only: bool = False,
    ) -> builtins.list[ChannelHit]:
        """BM25-ranked items matching ``flt`` that contain any of ``terms``, best first, ties by id.

        ``fields`` weighs the indexed fields (``content``, ``window``, ``time``;
        see :mod:`memory.retrieval.window`); by default only content counts,
        and a field of weight 0 does not match. Terms are only ever bound as
        data (no query syntax gets through); higher scores are better.
        ``exact_only``: nothing where the engine would bound its work (see the protocol).
        """
        weights = field_weights(fields)
        words = [t for t in terms if isinstance(t, str) and t.strip() and self.dialect.storable(t)]
        if not words or k <= 0 or not any(weights):
            return []
        return self._lexical(flt, words, int(k), weights, exact_only)

    # -- reads ---------------------------------------------------------------
    def get(self, namespace: str, ids: Sequence[str]) -> builtins.list[MemoryItem]:
        """Items by id in ``namespace``, in the order asked; unknown ids are omitted."""
        if not ids or not self.dialect.storable(namespace):
            return []
        where, params = self._by_ids(namespace, ids)
        sql = f"SELECT {self.item_select} FROM items i WHERE {where}"
        with self.dialect.read() as conn:
            found = {item.id: item for item in self._items(conn, sql, params)}
        return [found[i] for i in ids if i in found]

    def rank_fields(self, namespace: str, ids: Sequence[str]) -> dict[str, RankFields]:
        """created_at, importance, metadata role and speaker of the items ``ids`` in ``namespace`` (no rows decoded)."""
        if not ids or not self.dialect.storable(namespace):
            return {}
        where, params = self._by_ids(namespace, ids)
        d = self.dialect
        sql = f"SELECT i.id, i.created_at, i.importance, {d.role_sql}, {d.speaker_sql} FROM items i WHERE {where}"
        with d.read() as conn:
            rows = d.rows(conn, sql, params)
        out: dict[str, RankFields] = {}
        for item_id, created_at, importance, role, speaker in rows:
            when = d.time_value(created_at)
            if when is not None:
                out[str(item_id)] = RankFields(when, float(importance), role, speaker)
        return out

    def _side_read(self) -> AbstractContextManager[Any]:
        """A read that recall makes beside a vector search in another thread (the engine's read by default)."""
        return self.dialect.read()

    def contents(self, namespace: str, ids: Sequence[str]) -> dict[str, str]:
        """The content of the items ``ids`` in ``namespace``, by id (no rows decoded); unknown ids omitted."""
        if not ids or not self.dialect.storable(namespace):
            return {}
        where, params = self._by_ids(namespace, ids)
        with self._side_read() as conn:
            rows = self.dialect.rows(conn, f"SELECT i.id, i.content FROM items i WHERE {where}", params)
        return {str(item_id): str(content) for item_id, content in rows}

    def find_ids(self, flt: Filter, limit: int | None = None) -> builtins.list[str]:
        """Ids of the items matching ``flt``, newest first (all when ``limit`` is None or 0)."""
        where, params = self._compile(flt)
        sql = f"SELECT i.id FROM items i WHERE {where} ORDER BY i.created_at DESC, i.id DESC"
        if limit:
            sql += " LIMIT ?"
            params.append(max(int(limit), 0))
        with self.dialect.read() as conn:
            return [str(r[0]) for r in self.dialect.rows(conn, sql, params)]

    def list(self, flt: Filter, limit: int, order: ListOrder) -> builtins.list[MemoryItem]:
        """Items matching ``flt`` in keyset ``order`` (created_at, id), at most ``limit``."""
        where, params = self._compile(flt)
        direction = "DESC" if order.newest_first else "ASC"
        if order.after_created_at is not None and order.after_id is not None:
            where += f" AND (i.created_at, i.id) {'<' if order.newest_first else '>'} (?, ?)"
            after_id = order.after_id if self.dialect.storable(order.after_id) else ""
            params += [self.dialect.time_param(order.after_created_at), after_id]
        sql = (
            f"SELECT {self.item_select} FROM items i WHERE {where} "
            f"ORDER BY i.created_at {direction}, i.id {direction} LIMIT ?"
        )
        with self.dialect.read() as conn:
            return self._items(conn, sql, [*params, max(int(limit), 0)])

    def count(self, flt: Filter) -> int:
        """Number of items matching ``flt``."""
        where, params = self._compile(flt)
        with self.dialect.read() as conn:
            return int(self.dialect.rows(conn, f"SELECT count(*) FROM items i WHERE {where}", params)[0][0])

    def group_counts(self, flt: Filter, column: str) -> dict[str, int]:
        """Counts of matching items grouped by ``column`` (kind, sensitivity or embedding_status)."""
        sql_column = GROUP_COLUMNS.get(column)
        if sql_column is None:
            raise InvalidInputError(f"cannot group by {column!r}; use one of {', '.join(GROUP_COLUMNS)}")
        where, params = self._compile(flt)
        with self.dialect.read() as conn:
            rows = self.dialect.rows(
                conn, f"SELECT {sql_column}, count(*) FROM items i WHERE {where} GROUP BY {sql_column}", params
            )
        return {str(value): int(n) for value, n in rows}

    def item_counts(self, flt: Filter) -> ItemCounts:
        """The number of items matching ``flt`` and their counts by kind, sensitivity and embedding status.

        One scan: a single ``GROUP BY`` over the three columns (a handful of
        groups), summed here, instead of a count and three grouped scans.
        """
        where, params = self._compile(flt)
        sql = (
            "SELECT i.kind, i.sensitivity, i.embedding_status, count(*) FROM items i "
            f"WHERE {where} GROUP BY i.kind, i.sensitivity, i.embedding_status"
        )
        with self.dialect.read() as conn:
            rows = self.dialect.rows(conn, sql, params)
        counts = ItemCounts(total=0, by_kind={}, by_sensitivity={}, by_embedding_status={})
        for kind, sensitivity, status, n in rows:
            counts["total"] += int(n)
            for group, value in (("by_kind", kind), ("by_sensitivity", sensitivity), ("by_embedding_status", status)):
                into: dict[str, int] = counts[group]  # type: ignore[literal-required]
                into[str(value)] = into.get(str(value), 0) + int(n)
        return counts

    def namespaces(self) -> builtins.list[str]:
        """Namespaces that hold at least one item, sorted."""
        with self.dialect.read() as conn:
            return [
                str(r[0]) for r in self.dialect.rows(conn, "SELECT DISTINCT namespace FROM items ORDER BY namespace")
            ]

    def iter_items(self, flt: Filter, batch_size: int = 500) -> Iterator[MemoryItem]:
        """All items matching ``flt``, oldest first, read in keyset batches of ``batch_size``."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError(f"batch_size must be a positive integer, got {batch_size!r}")
        where, params = self._compile(flt)
        after: tuple[Any, str] | None = None
        while True:
            clause, values = where, builtins.list(params)
            if after is not None:
                clause += " AND (i.created_at, i.id) > (?, ?)"
                values += builtins.list(after)
            with self.dialect.read() as conn:
                rows = self.dialect.rows(
                    conn,
                    f"SELECT {self.item_select}, i.created_at FROM items i WHERE {clause} "
                    "ORDER BY i.created_at, i.id LIMIT ?",
                    [*values, batch_size],
                )
            for row in rows:
                yield self._item(row)
            if len(rows) < batch_size:
                return
            after = (rows[-1][-1], str(rows[-1][0]))  # the stored created_at, as the engine compares it

    # -- the embedding queue ---------------------------------------------------
    def pending_embeddings(self, namespace: str | None, limit: int) -> builtins.list[MemoryItem]:
        """Items whose embedding_status is 'pending' or 'failed', oldest first (any namespace if None)."""
        sql = f"SELECT {self.item_select} FROM items i WHERE i.embedding_status IN ('pending', 'failed')"
        params: builtins.list[Any] = []
        if namespace is not None:
            if not self.dialect.storable(namespace):
                return []
            sql += " AND i.namespace = ?"
            params.append(namespace)
        sql += " ORDER BY i.created_at, i.id LIMIT ?"
        with self.dialect.read() as conn:
            return self._items(conn, sql, [*params, max(int(limit), 0)])

    def claim_pending_embeddings(
        self, namespace: str | None, limit: int, worker: str, lease_seconds: float, now: datetime
    ) -> builtins.list[MemoryItem]:
        """Claim up to ``limit`` pending/failed, non-secret items no live lease holds; oldest first.

        The rows are picked and leased (``claimed_by=worker``,
        ``claimed_until=now+lease``) in one write transaction; the dialect's
        claim lock (``FOR UPDATE SKIP LOCKED`` on PostgreSQL; SQLite's
        ``BEGIN IMMEDIATE`` serialises claimers already) keeps two concurrent
        callers from getting the same item. ``set_vectors`` and
        ``mark_embedding`` clear the claim.
        """
        check_claim(limit, worker, lease_seconds)
        d = self.dialect
        if limit == 0 or (namespace is not None and not d.storable(namespace)):
            return []
        sql = (
            f"SELECT {self.item_select} FROM items i WHERE i.embedding_status IN ('pending', 'failed') "
            "AND i.sensitivity <> 'secret' AND (i.claimed_until IS NULL OR i.claimed_until <= ?)"
        )
        params: builtins.list[Any] = [d.time_param(now)]
        if namespace is not None:
            sql += " AND i.namespace = ?"
            params.append(namespace)
        sql += f" ORDER BY i.created_at, i.id LIMIT ?{d.claim_lock}"
        until = d.time_param(now + timedelta(seconds=float(lease_seconds)))
        with d.write() as conn:
            items = self._items(conn, sql, [*params, limit])
            by_namespace: dict[str, builtins.list[str]] = {}
            for item in items:
                by_namespace.setdefault(item.namespace, []).append(item.id)
            for ns, ids in by_namespace.items():
                where, values = d.one_of("id", ids)
                conn.execute(
                    d.sql(f"UPDATE items SET claimed_by = ?, claimed_until = ? WHERE namespace = ? AND {where}"),
                    (worker, until, ns, *values),
                )
        return items

    def mark_embedding(self, namespace: str, ids: Sequence[str], status: str, error: str | None) -> int:
        """Set embedding_status (and error) on items of ``namespace`` and clear their claim; returns rows updated."""
        if status not in EMBEDDING_STATUSES:
            raise InvalidInputError(f"embedding status must be one of {', '.join(EMBEDDING_STATUSES)}; got {status!r}")
        if not ids or not self.dialect.storable(namespace):
            return 0
        where, values = self.dialect.one_of("id", ids)
        with self.dialect.write() as conn:
            cursor = conn.execute(
                self.dialect.sql(
                    "UPDATE items SET embedding_status = ?, embedding_error = ?, claimed_by = NULL, "
                    f"claimed_until = NULL WHERE namespace = ? AND {where}"
                ),
                (status, error, namespace, *values),
            )
            return max(int(cursor.rowcount), 0)

    # -- the ledger ------------------------------------------------------------
    def history(self, namespace: str, item_id: str) -> builtins.list[LedgerEntry]:
        """Ledger entries of an item, oldest first (also after deletion), add markers resolved.

        The entries give each add stored by reference its next ``before``; only
        an add with none after it costs one more query (:meth:`_ref_bases`).
        """
        if not self.dialect.storable(namespace, item_id):
            return []
        with self.dialect.read() as conn:
            rows = self.dialect.rows(
                conn,
                f"SELECT {LEDGER_SELECT} FROM ledger WHERE namespace = ? AND item_id = ? ORDER BY seq",
                (namespace, item_id),
            )
            entries = [self._ledger(r) for r in rows]
            following: dict[str, Any] | None = None  # the nearest later entry's before
            for index in range(len(entries) - 1, -1, -1):
                entry = entries[index]
                if is_item_ref(entry.after):
                    base = following
                    if base is None:
                        base = self._ref_bases(conn, namespace, [entry.id]).get(entry.id)
                    entries[index] = self._resolved(entry, base)
                if entry.before is not None:
                    following = entry.before
        return entries

    def ledger_count(self, namespace: str) -> int:
        """Number of ledger entries in ``namespace``."""
        if not self.dialect.storable(namespace):
            return 0
        with self.dialect.read() as conn:
            return int(self.dialect.rows(conn, "SELECT count(*) FROM ledger WHERE namespace = ?", (namespace,))[0][0])

    def iter_ledger(self, batch_size: int = 1000) -> Iterator[LedgerEntry]:
        """Every ledger entry of every namespace, in the order recorded, read in batches, add markers resolved.

        The markers of a batch are resolved with one query per namespace they are in (:meth:`_ref_bases`).
        """
        after = 0
        while True:
            with self.dialect.read() as conn:
                rows = self.dialect.rows(
                    conn,
                    f"SELECT {LEDGER_SELECT}, seq FROM ledger WHERE seq > ? ORDER BY seq LIMIT ?",
                    (after, batch_size),
                )
                entries = [self._ledger(row[:-1]) for row in rows]
                markers: dict[str, builtins.list[str]] = {}
                for entry in entries:
                    if is_item_ref(entry.after):
                        markers.setdefault(entry.namespace, []).append(entry.id)
                bases = {
                    (namespace, entry_id): base
                    for namespace, ids in markers.items()
                    for entry_id, base in self._ref_bases(conn, namespace, ids).items()
                }
            for entry in entries:
                if is_item_ref(entry.after):
                    entry = self._resolved(entry, bases.get((entry.namespace, entry.id)))
                yield entry
            if len(rows) < batch_size:
                return
            after = int(rows[-1][-1])

    def _ref_bases(self, conn: Any, namespace: str, entry_ids: Sequence[str]) -> dict[str, dict[str, Any] | None]:
        """What the add entries ``entry_ids`` of ``namespace`` (stored by reference) resolve against, by entry id.

        For each: the ``before`` of the item's next ledger entry that has one,
        else the snapshot of its current row, else None. One statement, so
        the row and the entries after it are read at one moment: a change
        committed since the caller read the ledger shows as that next ``before``.
        """
        where, params = self.dialect.one_of("m.id", entry_ids)
        rows = self.dialect.rows(
            conn,
            'SELECT m.id, (SELECT l."before" FROM ledger l WHERE l.namespace = m.namespace AND '
            'l.item_id = m.item_id AND l.seq > m.seq AND l."before" IS NOT NULL ORDER BY l.seq LIMIT 1), '
            f"{self.item_select} FROM ledger m LEFT JOIN items i ON i.namespace = m.namespace AND i.id = m.item_id "
            f"WHERE m.namespace = ? AND {where}",
            [namespace, *params],
        )
        bases: dict[str, dict[str, Any] | None] = {}
        for row in rows:
            if row[1] is not None:
                bases[str(row[0])] = self.dialect.json_value(row[1])
            else:
                bases[str(row[0])] = None if row[2] is None else snapshot(self._item(row[2:]))
        return bases

    @staticmethod
    def _resolved(entry: LedgerEntry, base: Mapping[str, Any] | None) -> LedgerEntry:
        """``entry`` with its marker ``after`` resolved against ``base`` (None: neither row nor later entry)."""
        assert entry.after is not None
        return entry.model_copy(update={"after": resolve_item_ref(entry.after, base)})
