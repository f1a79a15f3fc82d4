"""`PostgresBackend`: the store for scale — pgvector HNSW, tsvector/GIN with BM25, a connection pool.

Every write is one transaction on a pooled connection (the item, its tags,
its generated tsvector, its vector, its ledger entry and the namespace's
lexical statistics). Dedup is atomic across processes: a transaction-scoped
advisory lock per (scope, content hash) is taken, in sorted order, before
the check. The channel queries of ``hybrid_search_v1`` run as server-side
prepared statements; fusion stays in :mod:`memory.retrieval.fusion`, so this
backend and SQLite rank identically given the same channel results. Job
claims use ``FOR UPDATE SKIP LOCKED`` so any number of workers share the work.
"""

from __future__ import annotations

import builtins
import hashlib
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from memory.backends.base import ChannelHit, Vector
from memory.backends.feedback_sql import SQLFeedbackStore
from memory.backends.graph_sql import SQLGraphStore
from memory.backends.items import SQLItemStore
from memory.backends.items_write import item_statements
from memory.backends.keys import SQLKeyStore
from memory.backends.postgres.codec import (
    ROW_COLUMNS,
    doc_len,
    item_values,
    parse_vector,
    vector_text,
)
from memory.backends.postgres.connection import (
    SCHEMA_PATTERN,
    check_pgvector,
    driver_errors,
    has_iterative_scan,
    load_driver,
    redact,
    session_options,
)
from memory.backends.postgres.dialect import postgres_dialect
from memory.backends.postgres.migrations import HNSW_MAX_DIM, apply_migrations, create_space_table, space_table
from memory.backends.postgres.queries import (
    HYBRID_SEARCH_V1_KEY,
    LEXICAL_EXACT_DOCS,
    LEXICAL_MATCH_DOCS,
    LEXICAL_TERMS_DELTA,
    LEXICAL_TERMS_DROP_ZEROS,
    hybrid_search_v1_vector,
)
from memory.backends.postgres.sql import compile_filter, text_list
from memory.backends.tiers import SQLTierStore
from memory.errors import (
    ConfigError,
    InvalidInputError,
    StorageError,
)
from memory.filters import Filter
from memory.types import MemoryItem

if TYPE_CHECKING:
    from memory.backends.postgres.episodic import PostgresEpisodicStore

__all__ = ["PostgresBackend"]

#: An item row's INSERT (the shared store's, in psycopg's placeholders), for rows written straight to a
#: connection (e.g. into an older schema).
_INSERT_ITEM = item_statements(ROW_COLUMNS)[0].replace("?", "%s")
#: The vector-space lock (shared with the episodic store): one creator of space tables at a time.
_SPACE_LOCK = 7_361_120_101
#: First key of the per-namespace advisory lock that every transaction changing ``key_tsv``
#: (and so ``lexical_terms``) takes first: one such writer per namespace at a time, so the
#: document frequencies stay exact and concurrent writers cannot deadlock on their rows.
_TERMS_LOCK = 736_112_011
#: Store an item's vector in a space's table (``{table}``), replacing its old one.
_UPSERT_VECTOR = (
    "INSERT INTO {table} (namespace, id, embedding) VALUES (%s, %s, %s::vector) "
    "ON CONFLICT (namespace, id) DO UPDATE SET embedding = EXCLUDED.embedding"
)
#: Seconds a namespace's "more vectors than exact_limit" answer is reused.
_SIZE_TTL = 5.0
#: How long a recall's write of access records waits for a row another transaction holds.
ACCESS_LOCK_TIMEOUT = "50ms"


class _Space:
    __slots__ = ("space_id", "model", "dim", "table")

    def __init__(self, space_id: int, model: str, dim: int) -> None:
        self.space_id, self.model, self.dim, self.table = space_id, model, dim, space_table(space_id)


def _lock_key(item: MemoryItem) -> int:
    raw = "\x1f".join(
        [item.namespace, item.user or "\x00", item.agent or "\x00", item.thread or "\x00", item.content_hash]
    )
    return int.from_bytes(
        hashlib.blake2b(raw.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big", signed=True
    )


class PostgresBackend(SQLItemStore[_Space]):
    """Memory store in a PostgreSQL database with pgvector; safe for many threads, processes and hosts."""

    name = "postgres"
    #: pgvector's largest ``vector`` column.
    max_vector_dim = 16000
    #: Reads run on separate pooled connections, so recall may run its channels side by side.
    concurrent_reads = True
    #: A server, not a file.
    path = None
    #: An item's row: its fields and content word count (BM25's document length).
    item_columns = ROW_COLUMNS
    #: The window's word count, for BM25's document length over the index key.
    window_columns = ("window_len",)

    def __init__(
        self,
        dsn: str,
        *,
        schema: str | None = None,
        pool_size: int = 8,
        exact_limit: int = 5000,
        ef_search: int = 100,
        connect_timeout: float = 10.0,
    ) -> None:
        """Connect to ``dsn`` (``postgresql://…``), apply missing migrations and open a pool.

        ``schema`` puts the store in its own PostgreSQL schema (created if
        missing; several stores can share one database). ``exact_limit`` is
        the number of vectors in a namespace up to which vector search scans
        exactly; above it the HNSW index is used with ``ef_search``
        candidates (more means better recall, slower). Raises ConfigError
        (driver or pgvector missing, bad options), SchemaError (store from a
        newer version) or StorageError (server unreachable).
        """
        psycopg = load_driver()
        from psycopg_pool import ConnectionPool

        if schema is not None and not SCHEMA_PATTERN.match(schema):
            raise ConfigError(f"schema {schema!r} is not a plain lower-case identifier")
        for label, value, low in (
            ("pool_size", pool_size, 1),
            ("exact_limit", exact_limit, 0),
            ("ef_search", ef_search, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InvalidInputError(f"{label} must be an integer >= {low}, got {value!r}")
        self.dsn = dsn
        self.schema = schema
        self._where = redact(dsn) + (f" (schema {schema})" if schema else "")
        self._exact_limit = exact_limit
        self._ef_search = ef_search
        self._lock = threading.Lock()
        self._spaces: dict[str, _Space] = {}
        self._sizes: dict[tuple[int, str], tuple[bool, float]] = {}
        self._pool: Any = None
        self._episodic: PostgresEpisodicStore | None = None
        self._graph: SQLGraphStore | None = None
        #: What the stores written once over SQLite and PostgreSQL ask of this engine.
        self.dialect = postgres_dialect(self._read, self._tx)
        self.tiers = SQLTierStore(self.dialect)
        self.feedback = SQLFeedbackStore(self.dialect)
        kwargs: dict[str, Any] = {
            "options": session_options(schema, ef_search=ef_search),
            "connect_timeout": max(1, int(connect_timeout)),
        }
        with self._errors():
            with psycopg.connect(dsn, autocommit=True, **kwargs) as conn:
                if schema is not None:
                    exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
                    if exists is None:
                        try:
                            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
                        except psycopg.errors.UniqueViolation:
                            pass  # another process created it at the same moment
                apply_migrations(conn)
                self.pgvector_version = check_pgvector(conn)
            # pgvector < 0.8 has no iterative scan: a filtered HNSW search that returns
            # fewer than k rows then falls back to an exact scan (search_vector).
            self.iterative_scan = has_iterative_scan(self.pgvector_version)
            pooled = {
                **kwargs,
                "options": session_options(schema, ef_search=ef_search, iterative_scan=self.iterative_scan),
            }
            self._pool = ConnectionPool(
                dsn,
                min_size=1,
                max_size=pool_size,
                kwargs={**pooled, "autocommit": True},
                open=True,
                timeout=30.0,
                name=f"memory-{schema or 'public'}",
            )

    def __repr__(self) -> str:
        return f"PostgresBackend({self._where!r})"

    def __enter__(self) -> PostgresBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing ----------------------------------------------------------
    def _errors(self) -> Any:
        return driver_errors(self._where)

    @contextmanager
    def _read(self) -> Iterator[Any]:
        """A pooled connection in autocommit mode: each statement is its own snapshot (one round trip)."""
        pool = self._pool
        if pool is None:
            raise StorageError(f"the postgres backend for {self._where} is closed")
        with self._errors(), pool.connection() as conn:
            yield conn

    @contextmanager
    def _tx(self) -> Iterator[Any]:
        """One transaction on a pooled connection: committed when the block succeeds, rolled back otherwise."""
        pool = self._pool
        if pool is None:
            raise StorageError(f"the postgres backend for {self._where} is closed")
        with self._errors(), pool.connection() as conn:
            with conn.transaction():
                yield conn

    @contextmanager
    def _access_transaction(self, wait: bool) -> Iterator[Any]:
        """A write transaction for recalls' access records; ``wait=False``: a row another transaction holds
        fails it after ACCESS_LOCK_TIMEOUT (StorageError) instead of waiting without end."""
        with self._tx() as conn:
            if not wait:
                conn.execute(f"SET LOCAL lock_timeout = '{ACCESS_LOCK_TIMEOUT}'")
            yield conn

    def close(self) -> None:
        """Write the kept accesses and close the pool. Idempotent; later calls raise StorageError."""
        if self._pool is not None:
            self.close_access()
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def _compile(self, flt: Filter, *, probe: bool = False) -> tuple[str, builtins.list[Any]]:
        """The filter as a predicate over ``items i`` (see :func:`.sql.compile_filter`)."""
        return compile_filter(flt)

    # -- vector spaces -----------------------------------------------------
    def _new_space(self, space_id: int, model: str, dim: int) -> _Space:
        return _Space(space_id, model, dim)

    def _create_space(self, conn: Any, space_id: int, dim: int) -> None:
        create_space_table(conn, space_id, dim)

    def _lock_spaces(self, conn: Any) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SPACE_LOCK,))

    # -- hooks of the shared writes (memory.backends.items_write) -----------
    def _write_vector(self, conn: Any, space: _Space, namespace: str, item_id: Any, vector: Vector) -> None:
        conn.execute(_UPSERT_VECTOR.format(table=space.table), (namespace, item_id, vector_text(vector)))

    def _write_vectors(self, conn: Any, space: _Space, namespace: str, rows: Sequence[tuple[Any, Vector]]) -> None:
        if rows:
            with conn.cursor() as cur:  # pipelined: one round trip for the batch
                cur.executemany(
                    _UPSERT_VECTOR.format(table=space.table), [(namespace, key, vector_text(v)) for key, v in rows]
                )

    def _delete_vectors(self, conn: Any, space: _Space, namespace: str, keys: Sequence[Any]) -> None:
        if keys:
            conn.execute(
                f"DELETE FROM {space.table} WHERE namespace = %s AND id = ANY(%s::text[])", (namespace, list(keys))
            )

    def _item_values(self, item: MemoryItem) -> tuple[Any, ...]:
        return item_values(item)

    def _lock_scopes(self, conn: Any, items: Sequence[MemoryItem]) -> None:
        """Advisory locks on the items' (scope, content hash) keys, in sorted order: dedup across processes."""
        conn.execute(
            "SELECT count(pg_advisory_xact_lock(k)) FROM (SELECT unnest(%s::bigint[]) AS k ORDER BY 1) AS l",
            (sorted({_lock_key(item) for item in items}),),
        )

    def _window_values(self, text: str) -> tuple[Any, ...]:
        return (doc_len(text),)

    def _lock_terms(self, conn: Any, namespaces: Sequence[str]) -> None:
        """Take the namespaces' lexical-terms locks (transaction-scoped), in a fixed order."""
        conn.execute(
            "SELECT count(pg_advisory_xact_lock(%s, hashtext(n))) "
            "FROM (SELECT unnest(%s::text[]) AS n ORDER BY 1) AS l",
            (_TERMS_LOCK, sorted(set(namespaces))),
        )

    def _count_terms(self, conn: Any, namespace: str, ids: Sequence[str], sign: int) -> None:
        """Add (``sign`` 1) or remove (-1) these items in the namespace's lexical statistics.

        Their documents and words go to ``lexical_stats``, the lexemes of their
        ``key_tsv`` to the document frequencies (:data:`.queries.LEXICAL_TERMS_DELTA`):
        called before rows change or vanish (-1) and after they were written (+1).
        The caller holds the namespace's terms lock (:meth:`_lock_terms`). Frequency
        rows that fall to zero are deleted.
        """
        if not ids:
            return
        rows = conn.execute(LEXICAL_TERMS_DELTA, {"sign": sign, "namespace": namespace, "ids": list(ids)}).fetchall()
        zeros = [(str(r[0]), int(r[1])) for r in rows if int(r[2]) <= 0]
        if zeros:
            conn.execute(LEXICAL_TERMS_DROP_ZEROS, ([z[0] for z in zeros], [z[1] for z in zeros], namespace))

    # -- reads -------------------------------------------------------------
    def _lexical(
        self, flt: Filter, words: builtins.list[str], k: int, weights: tuple[float, ...], exact_only: bool = False
    ) -> builtins.list[ChannelHit]:
        """Okapi BM25 over tsvectors, weighing fields exactly as SQLite's ``bm25(items_key_fts, ...)``.

        k1=1.2, b=0.75 and the namespace's own document count and average
        length (the formula SQLite's FTS5 uses). Terms are stemmed by
        PostgreSQL (English, no stopword list). ``exact_only``: nothing when the
        query's lexemes are in more than ``LEXICAL_EXACT_DOCS`` documents of the
        namespace (counted once per lexeme, from ``lexical_terms``).
        """
        if exact_only:
            mask = sum(bit for bit, weight in zip((1, 2, 4), weights, strict=True) if weight > 0)
            with self._read() as conn:
                row = conn.execute(LEXICAL_MATCH_DOCS, [words, flt.namespace, mask], prepare=True).fetchone()
            if row is None or float(row[0]) > LEXICAL_EXACT_DOCS:
                return []
        where, params = compile_filter(flt)
        labels = "".join(label for label, weight in zip("ABC", weights, strict=True) if weight > 0)
        sql = HYBRID_SEARCH_V1_KEY.replace("{where}", where)
        mask = sum(bit for bit, weight in zip((1, 2, 4), weights, strict=True) if weight > 0)
        args = [*weights, words, labels, flt.namespace, flt.namespace, mask, *params, int(k)]
        with self._read() as conn:
            rows = conn.execute(sql, args, prepare=True).fetchall()
        return [ChannelHit(str(r[0]), float(r[1])) for r in rows]

    def _nearest(self, conn: Any, space: _Space, flt: Filter, query: Vector, k: int) -> builtins.list[ChannelHit]:
        """pgvector: exact while the namespace holds at most ``exact_limit`` vectors, else HNSW.

        The HNSW index reads ``ef_search`` candidates, at least ``k`` (with
        pgvector >= 0.8 an iterative scan keeps reading past rows the filter
        rejects), and an exact scan runs when fewer than ``k`` come back.
        """
        where, params = compile_filter(flt)
        text = vector_text(query)
        args = [text, flt.namespace, *params, text, int(k)]
        exact = space.dim > HNSW_MAX_DIM or not self._large(conn, space, flt.namespace)
        rows: list[Any] = []
        if not exact:
            approximate = hybrid_search_v1_vector(space.table, where, exact=False)
            if k > self._ef_search:  # the session default is ef_search; a larger k needs more candidates
                with conn.transaction():
                    conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(int(k)),))
                    rows = conn.execute(approximate, args, prepare=True).fetchall()
            else:
                rows = conn.execute(approximate, args, prepare=True).fetchall()
        if exact or len(rows) < k:
            rows = conn.execute(hybrid_search_v1_vector(space.table, where, exact=True), args, prepare=True).fetchall()
        return [ChannelHit(str(r[0]), float(r[1])) for r in rows]

    def _large(self, conn: Any, space: _Space, namespace: str) -> bool:
        """Whether ``namespace`` holds more than ``exact_limit`` vectors in ``space`` (cached for a few seconds).

        The count stops at ``exact_limit + 1`` (an index-only scan). A stale
        answer only picks the slower exact scan or the approximate index for
        a few seconds; results stay correct either way.
        """
        key = (space.space_id, namespace)
        now = time.monotonic()
        cached = self._sizes.get(key)
        if cached is not None and cached[1] > now:
            return cached[0]
        row = conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {space.table} WHERE namespace = %s LIMIT %s) AS s",
            (namespace, self._exact_limit + 1),
            prepare=True,
        ).fetchone()
        large = int(row[0]) > self._exact_limit
        with self._lock:
            if len(self._sizes) > 10_000:
                self._sizes.clear()
            self._sizes[key] = (large, now + _SIZE_TTL)
        return large

    def _stored_vectors(self, conn: Any, space: _Space, namespace: str, ids: Sequence[str]) -> dict[str, Vector]:
        rows = conn.execute(
            f"SELECT id, embedding::text FROM {space.table} WHERE namespace = %s AND id = ANY(%s::text[])",
            (namespace, text_list(ids)),
        ).fetchall()
        return {str(r[0]): parse_vector(r[1]) for r in rows}

    # -- other stores --------------------------------------------------------
    @property
    def episodic(self) -> PostgresEpisodicStore:
        """The conversation/blocks/job-state store in this schema (see :mod:`memory.backends.episodic`)."""
        with self._lock:
            if self._episodic is None:
                from memory.backends.postgres.episodic import PostgresEpisodicStore

                self._episodic = PostgresEpisodicStore(self)
            return self._episodic

    @property
    def graph(self) -> SQLGraphStore:
        """The knowledge-graph store in this schema: the shared SQL over this pool's dialect."""
        with self._lock:
            if self._graph is None:
                self._graph = SQLGraphStore(self.dialect)
            return self._graph

    @property
    def windows(self) -> PostgresBackend:
        """This backend stores context windows itself (see :class:`~memory.backends.base.WindowIndex`)."""
        return self

    def key_store(self) -> SQLKeyStore:
        """The API key store in this schema, on this backend's pool (see :mod:`memory.backends.keys`)."""
        return SQLKeyStore(self.dialect)

    # -- administration ----------------------------------------------------
    def server_info(self) -> dict[str, Any]:
        """What ``memory doctor`` shows: server and pgvector versions, migrations, spaces and their indexes."""
        from memory.backends.postgres.migrations import MIGRATIONS, applied_migrations

        with self._read() as conn:
            version = str(conn.execute("SHOW server_version").fetchone()[0])
            applied = applied_migrations(conn)
            spaces = []
            for space in self._all_spaces(conn):
                index = conn.execute(
                    "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = %s "
                    "AND indexdef LIKE '%%USING hnsw%%'",
                    (space.table,),
                ).fetchone()
                spaces.append(
                    {"model": space.model, "dim": space.dim, "table": space.table, "hnsw_index": index and index[0]}
                )
        return {
            "server_version": version,
            "pgvector_version": self.pgvector_version,
            "pgvector_iterative_scan": self.iterative_scan,
            "pgvector_runs": self.vector_check(),
            "schema": self.schema or "public",
            "migrations_applied": len(applied),
            "migrations_known": len(MIGRATIONS),
            "vector_spaces": spaces,
        }

    def vector_check(self) -> str:
        """Run pgvector's CPU code once: ``"ok"``, or why it failed.

        Inserts into an HNSW-indexed temporary table and runs a KNN query on a
        connection of its own, rolled back. A pgvector built for another CPU
        (``-march=native`` with AVX-512 on a CPU without it) kills the server
        process with SIGILL here: that is reported, not raised.
        """
        import psycopg

        try:
            with psycopg.connect(self.dsn, autocommit=False, connect_timeout=10) as conn:
                conn.execute("CREATE TEMPORARY TABLE memory_vector_check (id int, v vector(8)) ON COMMIT DROP")
                conn.execute("CREATE INDEX ON memory_vector_check USING hnsw (v vector_cosine_ops)")
                conn.execute(
                    "INSERT INTO memory_vector_check SELECT i, "
                    "(SELECT array_agg(random()::real) FROM generate_series(1, 8) WHERE i > 0)::vector "
                    "FROM generate_series(1, 64) AS i"
                )
                conn.execute("SET LOCAL enable_seqscan = off")
                conn.execute("SELECT id FROM memory_vector_check ORDER BY v <=> '[1,1,1,1,1,1,1,1]' LIMIT 3").fetchall()
                conn.rollback()
        except psycopg.OperationalError as exc:
            cause = " ".join(str(exc).split())
            return (
                f"failed: the server process died running pgvector code ({cause}); pgvector was "
                'probably built for another CPU (e.g. with AVX-512): rebuild it with OPTFLAGS=""'
            )
        except psycopg.Error as exc:
            return f"failed: {str(exc).strip()}"
        return "ok"

    def drop_vector_indexes(self) -> bool:
        """Drop every vector space's HNSW index (before a bulk load; searches scan exactly meanwhile); True."""
        with self._tx() as conn:
            for space in self._all_spaces(conn):
                conn.execute(f"DROP INDEX IF EXISTS {space.table}_hnsw")
        return True

    def build_vector_indexes(self, maintenance_work_mem: str = "1GB") -> float:
        """(Re)build the HNSW index of every vector space that lacks one; returns the seconds it took.

        Building after a bulk load is much faster than growing the graph row
        by row; ``maintenance_work_mem`` bounds the in-memory build.
        """
        if not re.fullmatch(r"\d+(kB|MB|GB)", maintenance_work_mem):
            raise InvalidInputError(f"maintenance_work_mem must look like 512MB or 2GB, got {maintenance_work_mem!r}")
        started = time.perf_counter()
        with self._tx() as conn:
            conn.execute(f"SET LOCAL maintenance_work_mem = '{maintenance_work_mem}'")
            for space in self._all_spaces(conn):
                create_space_table(conn, space.space_id, space.dim)
        return time.perf_counter() - started

    def settle(self) -> float:
        """Bring the store to rest after a bulk load; returns the seconds it took.

        ``VACUUM (ANALYZE)`` of the item, term and vector tables (fresh planner
        statistics, the visibility map set) and a ``CHECKPOINT`` when the role
        may run one, so later reads are not timed against autovacuum or a
        checkpoint catching up. Safe at any time; only slow on a big store.
        """
        started = time.perf_counter()
        with self._read() as conn:
            tables = ["items", "item_tags", "lexical_stats", "lexical_terms"]
            tables += [space.table for space in self._all_spaces(conn)]
            for table in tables:
                conn.execute(f"VACUUM (ANALYZE) {table}")
            try:
                conn.execute("CHECKPOINT")
            except load_driver().errors.InsufficientPrivilege:
                pass  # a role without pg_checkpoint: the server checkpoints on its own schedule
        return time.perf_counter() - started

    def drop_schema(self) -> None:
        """Drop this store's schema with everything in it and close (only for a store opened with ``schema``)."""
        if self.schema is None:
            raise ConfigError("drop_schema needs a store opened with schema=...")
        with self._tx() as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")
        self.close()
