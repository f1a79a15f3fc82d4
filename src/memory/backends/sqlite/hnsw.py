"""HNSW graphs over large namespaces' vectors: where the SQLite engine's vector candidates come from past a size.

Below :data:`GRAPH_MIN_VECTORS` vectors in a namespace, candidates come from
the sign bits of the in-process copy (:mod:`memory.backends.sqlite.vectors`):
a Hamming pass over every code, then exact cosines of a pool. That pass grows
with the namespace (about 1.5 ms at 100k vectors, 13 ms at 1M without the float
copy, issue 22). Past the size, a namespace gets an HNSW graph (`usearch`_,
cosine, int8 vectors) built in a background thread and kept in a file
beside the store, so the next process maps it instead of building it again.

What a graph changes and what it does not:

- It only chooses candidates. Their scores are still exact cosines of the
  stored vectors (from the float copy, or read from the table), and the
  filter is still checked in SQL; a graph never answers alone.
- Its keys are the vectors' sequence numbers (``vcodes_<id>.seq``), which a
  replaced or deleted vector loses: a stale key is dropped when candidates are
  checked, as the sign-bit copy's are.
- Vectors written after it was built (a *tail*: sequence numbers above its
  :attr:`Graph.last_seq`) are chosen from by their sign bits, as before, until
  a background build extends the graph (once the tail is more than
  :data:`TAIL_SHARE` of it); many deletions (over :data:`STALE_SHARE`) rebuild
  it from the table.
- It is approximate: measured on 100k MiniLM sentence vectors and 200 queries,
  the top 10 from 100 graph candidates hold 0.95 of the exact top 10 (the
  sign-bit pass: 0.996; HNSW in Chroma 1.5.9 with its defaults: 0.912).
  ``vector_graph_min=0`` turns graphs off for a store that wants the
  sign-bit pass at any size.

Files: ``<store>.hnsw/<owner>-<space>-<namespace digest>-<n>.usearch`` and a
``.json`` beside it naming the space (model, dimension, creation time: a
graph of another store at the same path is ignored), the sequence number and
deletion count it was built up to. A file that cannot be read, or written
(a read-only directory), leaves the namespace on the sign-bit pass; it never
fails a search or a write. A store opened as ``memory://`` keeps them in its
temporary directory, deleted with it.

.. _usearch: https://github.com/unum-cloud/usearch
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import importlib.util
import json
import logging
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memory.backends.sqlite.vectors import Space, decode_rows

log = logging.getLogger(__name__)

__all__ = ["GRAPH_MIN_VECTORS", "Graph", "GraphIndexes", "graph_directory"]

#: Namespaces with at least this many vectors get a graph (0 in ``vector_graph_min``: never). Below it the
#: sign-bit pass is fast and near-exact (1.3-1.8 ms and 0.996 of the exact top 10 at 100k MiniLM vectors) and
#: the store stays small (a graph adds about 530 bytes a vector); past it the pass grows with the namespace
#: (13 ms at 1M) while a graph's search stays under a millisecond (issue 22).
GRAPH_MIN_VECTORS = 200_000
#: Graph shape: int8 vectors (they only steer the search: scores come from the stored vectors), links per
#: node, and the breadth of the search while adding. Measured on 100k MiniLM vectors (issue 22; 100
#: candidates): int8, 16 links, breadth 128: built in 8 s on 2 threads, 53 MB, 0.949 of the exact top 10 at
#: search breadth 128 in 0.28 ms (0.972 at 256, 0.52 ms); float16 vectors searched at half that speed,
#: 32 links or breadth 200 cost two to three times the build for +0.01-0.03.
DTYPE = "i8"
CONNECTIVITY = 16
EXPANSION_ADD = 128
#: Breadth of a search (at least the number of candidates asked for). On the 1M hashing vectors of
#: ``memory bench speed`` (k = 50, 100 candidates): 128 kept 0.71 of the exact top 10, 200 0.79, 300 0.86
#: (vector-only recall p50 2.1, 2.2 and 2.6 ms; the sign-bit pass: 0.42 in 11.8 ms).
EXPANSION_SEARCH = 200
#: Rows read and added per step of a build (the build stops between steps when the store closes).
BUILD_CHUNK = 8_192
#: Extend the graph once vectors written since it was built are more than this share of it (and at
#: least TAIL_MIN); rebuild it once deletions since are more than STALE_SHARE of it.
TAIL_SHARE = 0.05
TAIL_MIN = 5_000
STALE_SHARE = 0.1
#: A failed build is not retried for this many seconds.
RETRY_SECONDS = 600.0
#: Graph files of a namespace that no ``.json`` names are deleted once they are this old (see _remove_leftovers).
LEFTOVER_SECONDS = 3600.0
_VERSION = 1

Key = tuple[str, int, str]


def graph_directory(store: Path) -> Path:
    """Where the graphs of the store file ``store`` are kept."""
    return store.with_name(store.name + ".hnsw")


@functools.cache
def _usearch() -> Any:
    """The usearch ``Index`` class, or None when the package is missing or does not load.

    Imported when a namespace first reaches a graph's size, not when a store
    opens: the import takes ~90 ms, which every small store would pay.
    onnxruntime (the MiniLM embedder's ONNX runtime) is loaded first when it
    is installed: its extension crashes the process (SIGSEGV in libstdc++'s
    locale set-up) when it loads after usearch's, and works loaded before it
    (onnxruntime 1.32, usearch 2.26; ~140 ms and ~20 MB once per process).
    """
    if "onnxruntime" not in sys.modules and importlib.util.find_spec("onnxruntime") is not None:
        try:
            import onnxruntime  # noqa: F401 - loaded for its side effect: before usearch, see above
        except Exception as exc:  # noqa: BLE001 - its own failure is the embedder's to report
            log.debug("onnxruntime does not load (%s)", exc)
    try:
        from usearch.index import Index
    except Exception as exc:  # pragma: no cover - the dependency is installed with memory
        log.warning("vector graphs are off: usearch does not load (%s)", exc)
        return None
    return Index


@dataclass(frozen=True, slots=True)
class Graph:
    """A built graph of one namespace's vectors in one space, mapped from its file (read-only)."""

    index: Any
    path: Path
    #: Every vector with a sequence number up to this one, when it was built, is in it.
    last_seq: int
    #: Entries it holds, and the namespace's deletion count when it was built.
    size: int
    deletions: int

    def search(self, query: npt.NDArray[np.float32], count: int) -> npt.NDArray[np.int64]:
        """Sequence numbers of about the ``count`` entries nearest ``query``, nearest first."""
        matches = self.index.search(query, count, threads=1)
        keys: npt.NDArray[np.int64] = np.asarray(matches.keys[: len(matches)], dtype=np.int64)
        return keys


@dataclass(frozen=True, slots=True)
class _Identity:
    """What a graph file must name to belong to a space of this store."""

    owner: str
    space_id: int
    model: str
    dim: int
    created_at: float
    namespace: str

    def matches(self, meta: dict[str, Any]) -> bool:
        return (
            meta.get("version") == _VERSION
            and meta.get("owner") == self.owner
            and meta.get("space_id") == self.space_id
            and meta.get("model") == self.model
            and meta.get("dim") == self.dim
            and meta.get("created_at") == self.created_at
            and meta.get("namespace") == self.namespace
        )


#: Graph sets whose store may still be building: stopped when the interpreter exits (:func:`_stop_builds`).
_OPEN: weakref.WeakSet[GraphIndexes] = weakref.WeakSet()


@atexit.register
def _stop_builds() -> None:
    """Stop the builds of stores nobody closed before the interpreter exits.

    A build runs in a daemon thread inside usearch's own threads; a process
    that exits while one runs (a script that never closes its ``Memory``, a
    Ctrl-C) was killed by ``std::terminate`` (SIGABRT, exit code 134). The
    builds stop between two chunks instead: nothing is written, the next
    process builds the graph again.
    """
    for graphs in list(_OPEN):
        graphs.close()


class GraphIndexes:
    """The graphs of one store: loaded from their files when first needed, built and extended in the background.

    ``connect`` opens a connection of the builder's own to the store (the
    searches' connection and lock are never held while a graph is built).
    """

    def __init__(
        self,
        directory: Path,
        connect: Callable[[], Any],
        *,
        min_vectors: int = GRAPH_MIN_VECTORS,
        threads: int | None = None,
    ) -> None:
        """Keep graphs in ``directory`` for namespaces of at least ``min_vectors`` vectors (0: none).

        A build started by :meth:`eagerly` (a caller that waits for it) adds
        on ``threads`` threads (default: every core); one started by a search
        leaves a core to the searches (one thread less, at least one).
        """
        self.directory = directory
        self.min_vectors = min_vectors
        cores = os.cpu_count() or 1
        self.threads = threads if threads is not None else cores
        self.background_threads = max(1, min(self.threads, cores - 1))
        self._eager = False
        self._connect = connect
        self._index_class: Any = None  # usearch's Index, imported by the first namespace of the size
        self._lock = threading.Lock()
        self._graphs: dict[Key, Graph] = {}
        self._looked: set[Key] = set()
        self._builds: dict[Key, threading.Thread] = {}
        self._failed: dict[Key, float] = {}
        self._closed = threading.Event()
        #: Graphs built by this process (tests and benchmarks read it).
        self.built = 0
        _OPEN.add(self)

    @property
    def enabled(self) -> bool:
        """True when namespaces of the size get graphs (0 turns them off; a failed usearch import is logged)."""
        return self.min_vectors > 0

    def current(
        self, conn: Any, space: Space, namespace: str, size: int, last_seq: int, deletions: int
    ) -> Graph | None:
        """The usable graph of ``namespace`` in ``space`` (a copy of ``size`` entries up to ``last_seq``), or None.

        Loads it from its file the first time; starts a background build when
        there is none, or when the tail or the deletions since it was built
        have grown past their shares. None below the size, while the first
        graph is being built, and when a graph is ahead of the store (a file
        left by a store that was rolled back).
        """
        if self.min_vectors <= 0 or size < self.min_vectors or self._closed.is_set():
            return None
        if self._index_class is None:
            self._index_class = _usearch()
            if self._index_class is None:
                return None
        key: Key = (space.owner, space.space_id, namespace)
        with self._lock:
            graph = self._graphs.get(key)
            looked = key in self._looked
            self._looked.add(key)
        if graph is None and not looked:
            graph = self._load(conn, space, namespace)
        if graph is not None and (graph.last_seq > last_seq or graph.deletions > deletions):
            graph = None  # built for a later state of the store than this one
        stale = graph is not None and deletions - graph.deletions > STALE_SHARE * graph.size
        tail = graph is not None and last_seq - graph.last_seq > max(TAIL_MIN, TAIL_SHARE * graph.size)
        if graph is None or stale or tail:
            self._start(conn, space, namespace, None if graph is None or stale else graph)
        return None if stale else graph

    @contextlib.contextmanager
    def eagerly(self) -> Iterator[None]:
        """Within the block, builds that start use every thread (the caller waits for them: ``settle``)."""
        self._eager = True
        try:
            yield
        finally:
            self._eager = False

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the builds running now; True when none is left."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                running = [thread for thread in self._builds.values() if thread.is_alive()]
            if not running:
                return True
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            running[0].join(left)

    def close(self) -> None:
        """Stop the builds (each between two steps) and forget the graphs. Idempotent."""
        self._closed.set()
        self.wait(timeout=60.0)
        with self._lock:
            self._graphs.clear()
            self._looked.clear()

    # -- files -------------------------------------------------------------
    def _identity(self, conn: Any, space: Space, namespace: str) -> _Identity | None:
        row = conn.execute("SELECT created_at FROM vector_spaces WHERE space_id = ?", (space.space_id,)).fetchone()
        if row is None:
            return None
        return _Identity(space.owner, space.space_id, space.model, space.dim, float(row[0]), namespace)

    def _stem(self, space: Space, namespace: str) -> str:
        digest = hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:16]
        return f"{space.owner}-{space.space_id}-{digest}"

    def _load(self, conn: Any, space: Space, namespace: str) -> Graph | None:
        """The graph in ``namespace``'s file, if there is one of this store's space; None otherwise."""
        meta_path = self.directory / f"{self._stem(space, namespace)}.json"
        identity = self._identity(conn, space, namespace)
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            if identity is None or not identity.matches(meta):
                return None
            path = self.directory / str(meta["file"])
            index = self._index_class.restore(str(path), view=True)
            if index is None or len(index) != int(meta["size"]) or index.ndim != space.dim:
                return None
            graph = Graph(index, path, int(meta["last_seq"]), int(meta["size"]), int(meta["deletions"]))
        except FileNotFoundError:
            return None
        except Exception as exc:  # a damaged or foreign file: build a new one
            log.warning("ignoring the vector graph %s: %s", meta_path, exc)
            return None
        self._publish((space.owner, space.space_id, namespace), graph)
        return graph

    def _publish(self, key: Key, graph: Graph) -> None:
        index = graph.index
        index.expansion_search = EXPANSION_SEARCH
        with self._lock:
            self._graphs[key] = graph

    # -- builds ------------------------------------------------------------
    def _busy(self, key: Key) -> bool:
        """True while a build of ``key`` runs or failed less than RETRY_SECONDS ago (call with the lock held)."""
        running = self._builds.get(key)
        if running is not None and running.is_alive():
            return True
        return time.monotonic() - self._failed.get(key, -RETRY_SECONDS) < RETRY_SECONDS

    def _start(self, conn: Any, space: Space, namespace: str, base: Graph | None) -> None:
        key: Key = (space.owner, space.space_id, namespace)
        with self._lock:  # every search of the namespace asks while a build runs: answer without a statement
            if self._busy(key):
                return
        identity = self._identity(conn, space, namespace)
        if identity is None:
            return
        with self._lock:
            if self._busy(key):
                return
            threads = self.threads if self._eager else self.background_threads
            thread = threading.Thread(
                target=self._build,
                args=(key, space, identity, base, threads),
                name=f"memory-hnsw-{space.space_id}",
                daemon=True,
            )
            self._builds[key] = thread
        thread.start()

    def _build(self, key: Key, space: Space, identity: _Identity, base: Graph | None, threads: int) -> None:
        what = f"the vector graph of namespace {identity.namespace!r} ({space.owner}, {space.model})"
        log.info("%s %s on %d thread(s)", "extending" if base is not None else "building", what, threads)
        started = time.perf_counter()
        try:
            graph = self._built(space, identity, base, threads)
        except Exception as exc:
            with self._lock:
                self._failed[key] = time.monotonic()
            log.warning("building %s failed (retried in %.0f s): %s", what, RETRY_SECONDS, exc)
            return
        if graph is not None:
            log.info("%s: %d vectors in %.1f s", what, graph.size, time.perf_counter() - started)
            self._publish(key, graph)
            with self._lock:
                self.built += 1
            if base is not None and base.path != graph.path:
                with contextlib.suppress(OSError):
                    base.path.unlink()

    def _built(self, space: Space, identity: _Identity, base: Graph | None, threads: int) -> Graph | None:
        """Read the namespace's vectors after ``base`` (all without one) into a graph, write it, map it."""
        own = self._connect()
        try:
            with own.read() as conn:
                row = conn.execute(
                    f"SELECT deletions FROM {space.counters_table} WHERE space_id = ? AND namespace = ?",
                    (space.space_id, identity.namespace),
                ).fetchone()
            deletions = int(row[0]) if row is not None else 0
            index = self._readable(base.path) if base is not None else None
            if base is not None and index is not None:  # extend it
                after, deletions = base.last_seq, base.deletions
            else:  # build from the start (also when the graph to extend is gone: another process replaced it)
                index = self._index_class(
                    ndim=space.dim, metric="cos", dtype=DTYPE, connectivity=CONNECTIVITY, expansion_add=EXPANSION_ADD
                )
                after = 0
            sql = (
                f"SELECT c.seq, v.embedding FROM {space.codes_table} c CROSS JOIN {space.vectors_table} v "
                "ON v.rid = c.rid WHERE c.namespace = ? AND c.seq > ? ORDER BY c.seq LIMIT ?"
            )
            while not self._closed.is_set():
                with own.read() as conn:
                    rows = conn.execute(sql, (identity.namespace, after, BUILD_CHUNK)).fetchall()
                if not rows:
                    break
                keys = np.fromiter((int(r[0]) for r in rows), dtype=np.uint64, count=len(rows))
                index.add(keys, decode_rows(space, [r[1] for r in rows]), threads=threads)
                after = int(rows[-1][0])
            if self._closed.is_set():
                return None
            return self._write(index, space, identity, after, deletions)
        finally:
            own.close()

    def _readable(self, path: Path) -> Any:
        """The graph in ``path`` loaded to be extended, or None when it cannot be read."""
        try:
            return self._index_class.restore(str(path), view=False)
        except Exception as exc:
            log.warning("building the vector graph %s again from the start: %s", path, exc)
            return None

    def _write(self, index: Any, space: Space, identity: _Identity, last_seq: int, deletions: int) -> Graph:
        """Save ``index`` under a new name, point the namespace's ``.json`` at it, and map it read-only."""
        self.directory.mkdir(parents=True, exist_ok=True)
        stem = self._stem(space, identity.namespace)
        path = self.directory / f"{stem}-{os.getpid()}-{time.time_ns()}.usearch"
        index.save(str(path))
        meta = {
            "version": _VERSION,
            "owner": identity.owner,
            "space_id": identity.space_id,
            "model": identity.model,
            "dim": identity.dim,
            "created_at": identity.created_at,
            "namespace": identity.namespace,
            "file": path.name,
            "last_seq": last_seq,
            "size": len(index),
            "deletions": deletions,
        }
        meta_path = self.directory / f"{stem}.json"
        scratch = meta_path.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(json.dumps(meta), encoding="utf-8")
        os.replace(scratch, meta_path)
        mapped = self._index_class.restore(str(path), view=True)
        self._remove_leftovers(stem, keep=path)
        return Graph(mapped, path, last_seq, len(mapped), deletions)

    def _remove_leftovers(self, stem: str, keep: Path) -> None:
        """Delete the namespace's graph files other than ``keep`` older than :data:`LEFTOVER_SECONDS`.

        Each build writes a new file; the one it replaces is deleted by the
        process that replaced it, but a build that failed half way or lost a
        race with another process's leaves its file behind. A recent one may
        still be on its way into another process's ``.json``, so it stays.
        """
        cutoff = time.time() - LEFTOVER_SECONDS
        for leftover in self.directory.glob(f"{stem}-*"):
            with contextlib.suppress(OSError):
                if leftover != keep and leftover.stat().st_mtime < cutoff:
                    leftover.unlink()
