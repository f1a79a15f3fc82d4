"""Dynamic batching of embeddings across concurrent callers, and a bounded query-embedding cache.

A local model embeds 16 short texts in one pass for about the price of
three single-text passes (docs/embedders.md), but a server embeds each
request's text alone. :class:`BatchingEmbedder` wraps any embedder: every
``embed_batch`` call joins the process's one queue of that embedder
(:func:`queue_for`), and a worker thread runs what is waiting as one call
to the wrapped embedder, then hands each caller its own rows.

- **A lone caller embeds in its own thread.** With nothing queued or running
  and no concurrent callers of late, the caller runs the wrapped embedder
  itself: no hand-off to the worker and back (measured 0.14 ms a call,
  p50, with the MiniLM embedder on the 2-core machine of issue 22).
  Callers that arrive meanwhile queue for the worker.
- **Waiting is bounded.** A lone caller's texts go at once. While callers
  are concurrent (the last batch had several), the worker waits at most
  :data:`MAX_WAIT` seconds after the oldest waiting request for others to
  join, or until :data:`MAX_BATCH` texts are waiting. Requests that arrive
  while a batch runs make up the next batch.
- **The worker's batches run on its own thread.** An embedder that splits
  a call over threads (MiniLM's numpy runtime) runs the worker's batches
  unsplit (:func:`memory.embedders.base.calling_thread_only`): while
  callers are concurrent, the process's other threads (a server's request
  handling, searches and writes) want the other cores (measured in
  docs/embedders.md). A lone caller's call still splits.
- **A failure fails only its own callers.** When a shared batch fails (an
  exception or a wrong result shape), each request in it is run again
  alone, so a text the embedder cannot take fails its caller and no other.
- **One queue per process and embedder instance.** ``Memory`` objects that
  share an embedder (the servers' per-namespace views do) share its queue.
  After ``fork`` the child starts with empty queues and no worker.
- **The query cache** (:class:`QueryCache`, one per queue, so per model)
  keeps the vectors of the last :data:`CACHE_ENTRIES` distinct query texts
  (texts up to :data:`CACHE_TEXT_CHARS` characters; at most
  :data:`CACHE_CHARS` characters of keys in all), used by
  :func:`memory.embedders.base.embed_query` only — stored documents are
  never cached. It lives in process memory and is never exposed.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from memory.embedders.base import Embedder, calling_thread_only

__all__ = [
    "BatchingEmbedder",
    "EmbedQueue",
    "QueryCache",
    "batching",
    "forget_queries",
    "queue_for",
    "MAX_BATCH",
    "MAX_WAIT",
]

#: A batch closes when this many texts wait (one request larger than this runs alone).
MAX_BATCH = 64
#: Longest a request waits for others to join its batch, in seconds (only while callers are concurrent).
MAX_WAIT = 0.003
#: Callers count as concurrent when the last batch had several requests and ended this recently (seconds).
CONCURRENT_WINDOW = 0.5
#: A worker with nothing to do for this long exits (a new request starts another).
IDLE_EXIT = 2.0
#: Query cache: distinct texts kept, longest text cached, total characters of the keys.
CACHE_ENTRIES = 2048
CACHE_TEXT_CHARS = 1000
CACHE_CHARS = 400_000


class QueryCache:
    """A thread-safe LRU map from query text to its unit vector, bounded by entries and characters."""

    def __init__(
        self, entries: int = CACHE_ENTRIES, text_chars: int = CACHE_TEXT_CHARS, chars: int = CACHE_CHARS
    ) -> None:
        """Keep at most ``entries`` texts of at most ``text_chars`` characters, ``chars`` characters in all."""
        self._entries = max(0, entries)
        self._text_chars = max(0, text_chars)
        self._chars = max(0, chars)
        self._lock = threading.Lock()
        self._map: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._used = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._map)

    @property
    def chars(self) -> int:
        """Characters of the cached texts."""
        return self._used

    def get(self, text: str) -> npt.NDArray[np.float32] | None:
        """A copy of the cached vector of ``text``, or None (counted as a miss)."""
        with self._lock:
            vector = self._map.get(text)
            if vector is None:
                self.misses += 1
                return None
            self._map.move_to_end(text)
            self.hits += 1
        return vector.copy()

    def put(self, text: str, vector: npt.NDArray[np.float32]) -> None:
        """Remember ``vector`` for ``text`` (a copy); too long a text is not kept."""
        if len(text) > self._text_chars or self._entries == 0:
            return
        stored = np.array(vector, dtype=np.float32, copy=True)
        stored.flags.writeable = False
        with self._lock:
            old = self._map.pop(text, None)
            if old is not None:
                self._used -= len(text)
            self._map[text] = stored
            self._used += len(text)
            while self._map and (len(self._map) > self._entries or self._used > self._chars):
                evicted, _ = self._map.popitem(last=False)
                self._used -= len(evicted)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._map.clear()
            self._used = 0


@dataclass
class _Request:
    texts: list[str]
    arrived: float
    done: threading.Event = field(default_factory=threading.Event)
    rows: npt.NDArray[np.float32] | None = None
    error: BaseException | None = None


class EmbedQueue:
    """The shared queue of one embedder: callers submit texts, a worker thread embeds them in batches."""

    def __init__(self, inner: Embedder, *, max_batch: int = MAX_BATCH, max_wait: float = MAX_WAIT) -> None:
        """Queue calls to ``inner``; a batch holds up to ``max_batch`` texts, gathered for at most ``max_wait`` s."""
        self.inner = inner
        self.max_batch = max(1, max_batch)
        self.max_wait = max(0.0, max_wait)
        self.cache = QueryCache()
        #: Counters: batches run (``lone`` of them in their caller's thread), requests served, texts
        #: embedded, largest batch (requests).
        self.batches = 0
        self.lone = 0
        self.requests = 0
        self.texts = 0
        self.largest = 0
        self._reset()

    def _reset(self) -> None:
        """Fresh synchronisation state (at construction, and in a forked child)."""
        self._cond = threading.Condition(threading.Lock())
        self._pending: list[_Request] = []
        self._busy = False  # a batch is running (in the worker, or in a lone caller's thread)
        self._worker: threading.Thread | None = None
        self._last_requests = 0
        self._last_done = 0.0

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Rows of the wrapped embedder for ``texts``, computed in a batch shared with concurrent callers.

        Raises what the wrapped embedder raised for these texts.
        """
        request = _Request(list(texts), time.monotonic())
        with self._cond:
            alone = not self._busy and not self._pending and not self._concurrent(request.arrived)
            if alone:
                self._busy = True
            else:
                self._pending.append(request)
                if self._worker is None or not self._worker.is_alive():
                    self._worker = threading.Thread(target=self._work, name="memory-embed-batcher", daemon=True)
                    self._worker.start()
                self._cond.notify()
        if alone:
            self.lone += 1
            self._run_batch([request])
        else:
            request.done.wait()
        if request.error is not None:
            error, request.error = request.error, None
            raise error
        assert request.rows is not None
        return request.rows

    def _concurrent(self, now: float) -> bool:
        """True while callers count as concurrent: the last batch had several requests and ended recently."""
        return self._last_requests > 1 and now - self._last_done < CONCURRENT_WINDOW

    # -- the worker ------------------------------------------------------------
    def _take(self) -> list[_Request] | None:
        """The next batch (oldest first), or None when idle long enough to exit. Called with the lock held.

        Waits while a lone caller's batch runs in its own thread: one batch at a time.
        """
        while not self._pending or self._busy:
            if not self._cond.wait(IDLE_EXIT) and not self._pending and not self._busy:
                self._worker = None
                return None
        now = time.monotonic()
        if self.max_wait > 0 and (self._concurrent(now) or len(self._pending) > 1):
            deadline = self._pending[0].arrived + self.max_wait
            while sum(len(r.texts) for r in self._pending) < self.max_batch:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
        batch: list[_Request] = []
        count = 0
        while self._pending and (not batch or count + len(self._pending[0].texts) <= self.max_batch):
            request = self._pending.pop(0)
            batch.append(request)
            count += len(request.texts)
        self._busy = True
        return batch

    def _work(self) -> None:
        while True:
            with self._cond:
                if self._worker is not threading.current_thread():
                    return  # replaced (after fork) or no longer wanted
                batch = self._take()
            if batch is None:
                return
            with calling_thread_only():  # its callers are concurrent: their threads want the other cores
                self._run_batch(batch)

    def _run_batch(self, batch: list[_Request]) -> None:
        """Run ``batch`` (the caller set ``_busy``), hand each request its rows or error, count it, free the queue."""
        try:
            self._run(batch)
        finally:
            for request in batch:  # never leave a caller waiting, whatever happened
                if request.rows is None and request.error is None:
                    request.error = RuntimeError("the embedding worker stopped")
                request.done.set()
            with self._cond:
                self._busy = False
                self._last_requests = len(batch)
                self._last_done = time.monotonic()
                self.batches += 1
                self.requests += len(batch)
                self.texts += sum(len(r.texts) for r in batch)
                self.largest = max(self.largest, len(batch))
                self._cond.notify_all()  # the worker, if callers queued meanwhile

    def _run(self, batch: list[_Request]) -> None:
        texts = [text for request in batch for text in request.texts]
        try:
            rows = np.asarray(self.inner.embed_batch(texts), dtype=np.float32)
        except BaseException as exc:  # noqa: BLE001 - handed to the callers
            if len(batch) == 1:
                batch[0].error = exc
                return
            rows = None
        if rows is not None and rows.ndim == 2 and rows.shape[0] == len(texts):
            start = 0
            for request in batch:
                request.rows = rows[start : start + len(request.texts)]
                start += len(request.texts)
            return
        if len(batch) == 1:  # a wrong shape for one request: its caller's validation reports it
            batch[0].rows = rows if rows is not None else np.zeros((0, 0), dtype=np.float32)
            return
        for request in batch:  # the shared batch failed: each request alone, so a failure stays its own
            try:
                request.rows = np.asarray(self.inner.embed_batch(request.texts), dtype=np.float32)
            except BaseException as exc:  # noqa: BLE001 - handed to its caller
                request.error = exc


_QUEUES: weakref.WeakValueDictionary[int, EmbedQueue] = weakref.WeakValueDictionary()
_QUEUES_LOCK = threading.Lock()


def queue_for(inner: Embedder) -> EmbedQueue:
    """The process's queue of ``inner`` (created on first use; kept while some wrapper holds it)."""
    with _QUEUES_LOCK:
        queue = _QUEUES.get(id(inner))
        if queue is None or queue.inner is not inner:
            queue = EmbedQueue(inner)
            _QUEUES[id(inner)] = queue
        return queue


def _after_fork() -> None:
    global _QUEUES_LOCK
    _QUEUES_LOCK = threading.Lock()
    for queue in list(_QUEUES.values()):
        queue._reset()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


class BatchingEmbedder:
    """An embedder whose calls share batches with concurrent callers of the same wrapped embedder.

    Same ``model_name`` and ``dimension`` as the wrapped one (``inner``);
    other attributes (``runtime``, ``warm_up``, ``close`` …) are the wrapped
    embedder's.
    """

    def __init__(self, inner: Embedder) -> None:
        """Wrap ``inner`` (not a BatchingEmbedder: use :func:`batching`, which does not wrap twice)."""
        self.inner = inner
        self.model_name = inner.model_name
        self._queue = queue_for(inner)

    @property
    def dimension(self) -> int:
        """The wrapped embedder's vector length."""
        return self.inner.dimension

    @property
    def queue(self) -> EmbedQueue:
        """The shared queue (its counters say how batches formed)."""
        return self._queue

    @property
    def query_cache(self) -> QueryCache:
        """The bounded cache of query vectors of this model (used by ``embed_query``)."""
        return self._queue.cache

    def embed_batch(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The wrapped embedder's rows for ``texts``, computed in a shared batch."""
        if not texts:
            return np.zeros((0, self.inner.dimension), dtype=np.float32)
        return self._queue.embed(texts)

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (during unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"BatchingEmbedder({self.inner!r})"


def batching(embedder: Embedder) -> Embedder:
    """``embedder`` wrapped in a :class:`BatchingEmbedder`, unless it already is one."""
    if isinstance(embedder, BatchingEmbedder) or getattr(embedder, "batching", True) is False:
        return embedder
    return BatchingEmbedder(embedder)


def forget_queries(embedder: Embedder) -> None:
    """Empty ``embedder``'s query cache, if it has one (benchmarks time cold query embeddings)."""
    cache = getattr(embedder, "query_cache", None)
    if isinstance(cache, QueryCache):
        cache.clear()
