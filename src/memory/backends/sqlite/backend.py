"""`SQLiteBackend`: the embedded default store — one file, WAL, FTS5 BM25, float16 vectors scored by numpy.

The lexical channel ranks with FTS5's ``bm25()``, exactly while the query's
terms are in few documents and over a bounded set of candidates past that
(:mod:`.lexical`).

Every write runs in one ``BEGIN IMMEDIATE`` transaction (the item, its tags,
its FTS entry via triggers, its vector and its ledger entry), so several
processes writing one file serialise, and dedup (check, then insert) is
atomic. One connection per backend, usable from any thread; a lock
serialises the operations of one backend object.
"""

from __future__ import annotations

import builtins
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory.backends.access_log import ACCESS_QUIET, ACCESS_YIELD_MAX, StoreUse
from memory.backends.base import AddResult, ChannelHit, NewRecord, Vector
from memory.backends.feedback_sql import SQLFeedbackStore
from memory.backends.graph_sql import SQLGraphStore
from memory.backends.items import SQLItemStore
from memory.backends.items_write import item_statements
from memory.backends.keys import SQLKeyStore
from memory.backends.sqlite import hnsw, lexical, vectors
from memory.backends.sqlite.checkpoints import FALLBACK_PAGES, Checkpointer
from memory.backends.sqlite.codec import (
    ITEM_COLUMNS,
    item_values,
)
from memory.backends.sqlite.connection import (
    DEFAULT_BUSY_TIMEOUT,
    OwnConnection,
    connect,
    driver_errors,
    load_driver,
)
from memory.backends.sqlite.dialect import sqlite_dialect
from memory.backends.sqlite.migrations import apply_migrations, create_space_tables
from memory.backends.sqlite.sql import compile_filter, json_list, scope_of
from memory.backends.tiers import SQLTierStore
from memory.errors import (
    InvalidInputError,
    StorageError,
)
from memory.filters import Filter
from memory.index_layout import LEXICAL_FIELDS
from memory.types import MemoryItem

if TYPE_CHECKING:
    from memory.backends.sqlite.episodic import SQLiteEpisodicStore

__all__ = ["SQLiteBackend"]

#: An item row's INSERT (the shared store's), for rows written straight to a connection (e.g. an older schema).
_INSERT_ITEM = item_statements(ITEM_COLUMNS)[0]
#: Items added between two refreshes of the planner statistics.
_OPTIMIZE_EVERY = 10_000
#: Connections the lexical channel may hold open: concurrent recalls search lexically side by side.
LEXICAL_READERS = 2


class SQLiteBackend(SQLItemStore[vectors.Space]):
    """Memory store in one SQLite file; safe for several threads and processes."""

    name = "sqlite"
    row_key = "rid"
    tag_key = "rid"
    store_wide_ids = True
    #: The lexical channel reads on connections of its own (:meth:`_lexical_read`), so recall runs it
    #: beside the query's embedding and vector search: in WAL mode readers do not wait for each other.
    concurrent_reads = True
    #: The registry columns of a space: its storage type too (see :mod:`.vectors`).
    space_columns = "space_id, model, dim, dtype, code"
    #: How a new vector space stores its vectors (spaces made before 0016 keep float32).
    new_space_dtype = vectors.FLOAT16
    #: WAL checkpoints run on a thread of their own instead of in the commit that fills the log (:mod:`.checkpoints`).
    background_checkpoints = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        exact_limit: int = vectors.DEFAULT_EXACT_LIMIT,
        vector_cache_mb: int = vectors.DEFAULT_FLOAT_CACHE_BYTES // (1024 * 1024),
        vector_cache_total_mb: int = vectors.DEFAULT_TOTAL_FLOAT_CACHE_BYTES // (1024 * 1024),
        lexical_bounds: lexical.LexicalBounds | None = None,
        vector_graph_min: int = hnsw.GRAPH_MIN_VECTORS,
    ) -> None:
        """Open (creating if needed) the database at ``path`` and apply missing migrations.

        ``busy_timeout`` is how long (seconds) a write waits for another
        process's lock; ``exact_limit`` is the number of filter matches up to
        which vector search scans exactly (a whole namespace whose copy holds
        its vectors is scored in the copy instead); ``vector_cache_mb`` caps the
        copy of a namespace's vectors (as stored: float16 or float32, with
        their lengths) kept in process for exact ranking above that (0 = sign
        bits only, approximate; see :mod:`.vectors`), and ``vector_cache_total_mb``
        the copies of all namespaces together (a copy built once the others hold it keeps sign bits only);
        ``lexical_bounds`` bound the lexical channel's work (the defaults of
        :mod:`.lexical` when None; tests pass small ones); a namespace with at
        least ``vector_graph_min`` vectors gets an HNSW graph, built in the
        background and kept beside the file, to choose its vector candidates
        (0: never; see :mod:`.hnsw`). Raises
        ConfigError (no usable driver), SchemaError (not a memory database, or
        one from a newer version) or StorageError.
        """
        if isinstance(exact_limit, bool) or not isinstance(exact_limit, int) or exact_limit < 0:
            raise InvalidInputError(f"exact_limit must be a non-negative integer, got {exact_limit!r}")
        self.path = Path(path).expanduser()
        self._driver = self._load_driver()
        self._busy_timeout = float(busy_timeout)
        self._exact_limit = exact_limit
        self._lexical_bounds = lexical_bounds if lexical_bounds is not None else lexical.LexicalBounds()
        self._lock = threading.RLock()
        #: Reads and writes of the main connection under way: the access writes behind the recalls yield to them.
        self._use = StoreUse()
        sizes = (
            ("vector_cache_mb", vector_cache_mb),
            ("vector_cache_total_mb", vector_cache_total_mb),
            ("vector_graph_min", vector_graph_min),
        )
        for name, value in sizes:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidInputError(f"{name} must be a non-negative integer, got {value!r}")
        self._graphs = hnsw.GraphIndexes(
            hnsw.graph_directory(self.path),
            lambda: OwnConnection(self.path, self._busy_timeout, self._driver),
            min_vectors=vector_graph_min,
        )
        self._codes = vectors.CodeCache(
            float_budget=vector_cache_mb * 1024 * 1024,
            total_float_budget=vector_cache_total_mb * 1024 * 1024,
            graphs=self._graphs,
        )
        self._spaces: dict[str, vectors.Space] = {}
        self._conn: Any = connect(self.path, busy_timeout=self._busy_timeout, driver=self._driver)
        self._checkpointer: Checkpointer | None = None
        if self.background_checkpoints:
            self._checkpointer = Checkpointer(self.path, self._busy_timeout, self._driver)
            with self._errors():
                self._conn.execute(f"PRAGMA wal_autocheckpoint = {FALLBACK_PAGES}")
        # The lexical channel's connections: idle ones, and how many are open (at most LEXICAL_READERS).
        self._lexical_idle: builtins.list[OwnConnection] = []
        self._lexical_open = 0
        self._lexical_free = threading.Condition()  # not the main lock: a vector search does not hold them up
        self._added_since_optimize = 0
        #: What the stores written once over SQLite and PostgreSQL ask of this engine.
        self.dialect = sqlite_dialect(self._read, self._write)
        self.graph = SQLGraphStore(self.dialect)  # immediate transactions serialise writers: no row locks
        self.tiers = SQLTierStore(self.dialect)
        self.feedback = SQLFeedbackStore(self.dialect)
        self._episodic: SQLiteEpisodicStore | None = None
        try:
            with self._errors():
                apply_migrations(self._conn)
                self._conn.execute("PRAGMA optimize = 0x10002")
        except BaseException:
            self._conn.close()
            self._conn = None
            raise

    def __repr__(self) -> str:
        return f"SQLiteBackend({str(self.path)!r})"

    def __enter__(self) -> SQLiteBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing ----------------------------------------------------------
    def _load_driver(self) -> Any:
        """The DB-API driver this engine talks through (libSQL's backend answers its own)."""
        return load_driver()

    def _errors(self) -> Any:
        return driver_errors(self._driver, self.path, self._busy_timeout)

    def _open_conn(self) -> Any:
        if self._conn is None:
            raise StorageError(f"the SQLite backend for {self.path} is closed")
        return self._conn

    @contextmanager
    def _read(self) -> Iterator[Any]:
        with self._use, self._lock:
            conn = self._open_conn()
            with self._errors():
                yield conn

    @contextmanager
    def _write(self, *, wait: bool = True, foreground: bool = True) -> Iterator[Any]:
        """One immediate transaction: committed when the block succeeds, rolled back otherwise.

        ``wait=False``: StorageError at once when another connection holds the
        write lock (busy timeout 0 while it begins), instead of waiting up to
        the busy timeout with this backend's lock held. ``foreground=False``
        (the access writes behind the recalls): not counted as a use of the
        store that they yield to (:meth:`_yield_to_reads`).
        """
        with self._use if foreground else nullcontext(), self._lock:
            conn = self._open_conn()
            with self._errors():
                self._begin(conn, wait)
                try:
                    yield conn
                    conn.execute("COMMIT")
                    if self._checkpointer is not None:
                        self._checkpointer.committed()
                except BaseException:
                    if conn.in_transaction:
                        try:
                            conn.execute("ROLLBACK")
                        except self._driver.Error:  # pragma: no cover - keep the original error
                            pass
                    raise

    def _begin(self, conn: Any, wait: bool) -> None:
        if wait:
            conn.execute("BEGIN IMMEDIATE")
            return
        conn.execute("PRAGMA busy_timeout = 0")
        try:
            conn.execute("BEGIN IMMEDIATE")
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")

    def _access_transaction(self, wait: bool) -> AbstractContextManager[Any]:
        """A write transaction for recalls' access records (``wait=False``: see :meth:`_write`)."""
        return self._write(wait=wait, foreground=wait)

    def _yield_to_reads(self) -> None:
        """A chunk of a due access write waits for a quiet moment of the store (see :mod:`..access_log`).

        Without end while the accesses are not urgent; once they are (or the
        store is closing), at most ``ACCESS_YIELD_MAX`` seconds.
        """
        writer = self.__dict__.get("_access_writer")
        while not self._use.quiet(ACCESS_QUIET):
            if self.access_log.urgent() or (writer is not None and writer.closing) or self._conn is None:
                self._use.wait_quiet(ACCESS_QUIET, ACCESS_YIELD_MAX)
                return
            time.sleep(ACCESS_QUIET)

    def settle(self) -> float:
        """Bring the store to rest after a bulk load; returns the seconds it took.

        ``PRAGMA optimize`` (fresh planner statistics) and a truncating WAL
        checkpoint, so later reads are not timed against a checkpoint catching up;
        then the HNSW graphs that namespaces of ``vector_graph_min`` vectors or
        more need are built (or extended), and waited for.
        """
        started = time.perf_counter()
        with self._lock:
            conn = self._open_conn()
            with self._errors():
                conn.execute("PRAGMA optimize = 0x10002")
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                if self._graphs.enabled:
                    with self._graphs.eagerly():
                        self._start_graphs(conn)
        self._graphs.wait()
        return time.perf_counter() - started

    def _start_graphs(self, conn: Any) -> None:
        """Bring every namespace's copy up to date, which starts the graph builds the large ones need."""
        for space in self._all_spaces(conn):
            for owned in (space, space.for_messages()):
                sizes = conn.execute(
                    f"SELECT namespace FROM {owned.counters_table} WHERE space_id = ? AND last_seq - deletions >= ?",
                    (owned.space_id, self._graphs.min_vectors),
                ).fetchall()
                for (namespace,) in sizes:
                    self._codes.refresh(conn, owned, str(namespace))

    @property
    def windows(self) -> SQLiteBackend:
        """This backend stores context windows itself (see :class:`~memory.backends.base.WindowIndex`)."""
        return self

    def key_store(self) -> SQLKeyStore:
        """The API key store in this file, on a connection of its own (the caller closes it)."""
        own = OwnConnection(self.path, self._busy_timeout, self._driver)
        return SQLKeyStore(sqlite_dialect(own.read, own.write), close=own.close)

    def server_info(self) -> None:
        """No server: None."""
        return None

    def drop_vector_indexes(self) -> bool:
        """SQLite keeps no approximate index to rebuild after a bulk load: False."""
        return False

    def build_vector_indexes(self, maintenance_work_mem: str = "1GB") -> float:
        """Nothing to build: 0 seconds."""
        return 0.0

    def close(self) -> None:
        """Write the kept accesses, stop graph builds, close the connections. Idempotent; later use: StorageError."""
        if self._conn is not None:
            self.close_access()
        if self._checkpointer is not None:
            self._checkpointer.close()
        self._graphs.close()
        with self._lock:
            if self._conn is not None:
                conn, self._conn = self._conn, None
                self._codes.clear()
                with self._errors():
                    try:
                        conn.execute("PRAGMA optimize")
                    except self._driver.Error:
                        pass  # best effort, see _optimize
                    finally:
                        conn.close()
        with self._lexical_free:
            idle, self._lexical_idle = self._lexical_idle, []
            self._lexical_open -= len(idle)
            self._lexical_free.notify_all()  # a search waiting for a reader finds the backend closed
        for reader in idle:
            reader.close()  # a reader in use is closed when its search gives it back

    def _compile(self, flt: Filter, *, probe: bool = False) -> tuple[str, builtins.list[Any]]:
        """The filter as a predicate over ``items i`` (see :func:`.sql.compile_filter`)."""
        return compile_filter(flt, probe=probe)

    # -- vector spaces -----------------------------------------------------
    def _new_space(self, space_id: int, model: str, dim: int) -> vectors.Space:
        return vectors.Space(space_id, model, dim)

    def _space_of(self, row: Sequence[Any]) -> vectors.Space:
        return vectors.Space(int(row[0]), str(row[1]), int(row[2]), dtype=str(row[3]), code=str(row[4]))

    def _create_space(self, conn: Any, space_id: int, dim: int) -> None:
        create_space_tables(conn, space_id, self.new_space_dtype)

    def _write_vector(self, conn: Any, space: vectors.Space, namespace: str, key: Any, vector: Vector) -> None:
        vectors.write_vector(conn, space, namespace, int(key), vector)

    def _write_vectors(
        self, conn: Any, space: vectors.Space, namespace: str, rows: Sequence[tuple[Any, Vector]]
    ) -> None:
        vectors.write_new_vectors(conn, space, namespace, rows)

    def _delete_vectors(self, conn: Any, space: vectors.Space, namespace: str, keys: Sequence[Any]) -> None:
        vectors.delete_vectors(conn, space, namespace, [int(k) for k in keys])

    # -- hooks of the shared writes (memory.backends.items_write) -----------
    def _item_values(self, item: MemoryItem) -> tuple[Any, ...]:
        return item_values(item)

    def _row_keys(self, conn: Any, ids: Sequence[str]) -> dict[str, Any]:
        where, values = self.dialect.one_of("id", ids)
        return {str(r[0]): int(r[1]) for r in conn.execute(f"SELECT id, rid FROM items WHERE {where}", values)}

    def _forget_vectors(self, conn: Any, namespace: str, ids: Sequence[str]) -> None:
        """Remove the vectors and sign-bit codes of these items from every space (codes have no foreign key)."""
        where, params = self._by_ids(namespace, ids)
        rids = [int(r[0]) for r in conn.execute(f"SELECT i.rid FROM items i WHERE {where}", params)]
        if rids:
            for space in self._all_spaces(conn):
                vectors.delete_vectors(conn, space, namespace, rids)

    def add(self, records: Sequence[NewRecord]) -> list[AddResult]:
        """Insert records with dedup (see :meth:`SQLItemWrites.add`); the planner statistics follow a growing store."""
        results = super().add(records)
        with self._lock:
            self._added_since_optimize += sum(1 for result in results if result.created)
            due = self._added_since_optimize >= _OPTIMIZE_EVERY
        if due:
            self._optimize()
        return results

    def _optimize(self) -> None:
        """Refresh the query planner's statistics where tables grew; best effort, never raises."""
        with self._lock:
            self._added_since_optimize = 0
            if self._conn is not None:
                try:
                    # 0x10002: every table whose statistics are stale, not only those this connection's
                    # statements used. Plain ``PRAGMA optimize`` left a store created empty in this
                    # process with its empty-table statistics, and bulk loads slowed down steadily
                    # (4,900/s at 25k rows to 1,900/s at 150k; flat at ~4,400/s with this). Cheap:
                    # analysis_limit is set.
                    self._conn.execute("PRAGMA optimize = 0x10002")
                except self._driver.Error:
                    pass  # statistics only help the planner; a busy database can skip them

    # -- reads -------------------------------------------------------------
    def _lexical(
        self, flt: Filter, words: builtins.list[str], k: int, weights: tuple[float, ...], exact_only: bool = False
    ) -> builtins.list[ChannelHit]:
        """FTS5 BM25: each word a quoted FTS5 string; score ``-bm25()``; bounded work (see :func:`.lexical.search`)."""
        query = self._lexical_query(words, weights)
        with self._lexical_read() as conn:
            hits = lexical.search(
                conn, query, k, self._lexical_bounds, compile_filter(flt, probe=True), compile_filter(flt),
                scope=compile_filter(scope_of(flt)), exact_only=exact_only,
            )  # fmt: skip
        return [ChannelHit(item_id, -rank) for item_id, rank in hits]

    def _side_read(self) -> AbstractContextManager[Any]:
        """Recall's reads beside a vector search (its lexical candidates' texts) take a lexical channel's
        connection: on the main one they would wait for the vector search that holds it."""
        return self._lexical_read()

    @contextmanager
    def _lexical_read(self) -> Iterator[Any]:
        """A connection of the lexical channel's own (at most :data:`LEXICAL_READERS`, opened when needed).

        Where reads are not concurrent (libSQL), the main connection.
        """
        if not self.concurrent_reads:
            with self._read() as conn:
                yield conn
            return
        reader: OwnConnection | None = None
        with self._lexical_free:
            while True:
                self._open_conn()  # StorageError once closed
                if self._lexical_idle:
                    reader = self._lexical_idle.pop()
                    break
                if self._lexical_open < LEXICAL_READERS:
                    self._lexical_open += 1  # this search opens one
                    break
                self._lexical_free.wait()
        try:
            if reader is None:
                reader = OwnConnection(self.path, self._busy_timeout, self._driver)
            with reader.read() as conn:
                yield conn
        finally:
            with self._lexical_free:
                if reader is None or self._conn is None:  # not opened, or the backend closed meanwhile
                    self._lexical_open -= 1
                    if reader is not None:
                        reader.close()
                else:
                    self._lexical_idle.append(reader)
                self._lexical_free.notify()

    def _lexical_query(self, words: Sequence[str], weights: tuple[float, ...]) -> lexical.LexicalQuery:
        """Each word a quoted FTS5 string, over the index key's weighted fields (content only: its content column)."""
        phrases = tuple('"' + term.replace('"', '""') + '"' for term in words)
        # A field of weight 0 must not match either: restrict the query to the weighted fields.
        columns = " ".join(name for name, weight in zip(LEXICAL_FIELDS, weights, strict=True) if weight > 0)
        bm25 = "bm25(items_key_fts, " + ", ".join(repr(float(w)) for w in weights) + ")"
        return lexical.LexicalQuery("items_key_fts", "{" + columns + "} : ", bm25, phrases)

    def _nearest(
        self, conn: Any, space: vectors.Space, flt: Filter, query: Vector, k: int
    ) -> builtins.list[ChannelHit]:
        """Sign-bit candidates rescored exactly (see :mod:`.vectors`); exact scan up to ``exact_limit`` matches.

        Above ``exact_limit`` filter matches, sign bits (refined by exact
        cosine from an in-process copy of the vectors) pick candidates, whose
        scores come from that copy or from their stored vectors. A whole
        namespace whose copy holds its vectors is ranked from the copy at any
        size (exactly while it is small).
        """
        where, params = compile_filter(flt)
        narrowed = (flt.user, flt.agent, flt.thread, flt.kinds, flt.tags_any, flt.tags_all, flt.ids)
        scope = compile_filter(scope_of(flt)) if any(field is not None for field in narrowed) else None
        return vectors.search(
            conn,
            self._codes,
            space,
            flt.namespace,
            (where, params),
            compile_filter(flt, probe=True),
            scope,
            query,
            int(k),
            exact_limit=self._exact_limit,
        )

    def _as_stored(self, space: vectors.Space, given: builtins.list[Vector]) -> builtins.list[Vector]:
        if not given:
            return []
        rows = vectors.storable_rows(space, given)
        return list(vectors.decode(space, rows.tobytes()).reshape(len(given), space.dim))

    def _stored_vectors(self, conn: Any, space: vectors.Space, namespace: str, ids: Sequence[str]) -> dict[str, Vector]:
        if vectors.stored_vectors(conn, space, namespace) == 0:  # one key read: e.g. a window space nobody uses here
            return {}
        rows = conn.execute(
            f"SELECT i.id, v.embedding FROM json_each(?) AS j CROSS JOIN items i ON i.id = j.value "
            f"CROSS JOIN {space.vectors_table} v ON v.rid = i.rid WHERE i.namespace = ?",
            (json_list(ids), namespace),
        ).fetchall()
        return {str(r[0]): vectors.decode(space, r[1]) for r in rows}

    @property
    def episodic(self) -> SQLiteEpisodicStore:
        """The conversation/blocks/job-state store in this file (see :mod:`memory.backends.episodic`)."""
        with self._lock:
            if self._episodic is None:
                from memory.backends.sqlite.episodic import SQLiteEpisodicStore

                self._episodic = SQLiteEpisodicStore(self)
            return self._episodic

    # -- ledger transfer (memory migrate) ------------------------------------
