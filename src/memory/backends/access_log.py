"""Recalls' access records, kept in process and written in batches.

Every recall counts an access of each memory it returns (``access_count``,
``accessed_at``: statistics shown by ``get`` and the inspector; nothing
ranks by them). Written at once, that is one write transaction per recall:
0.27 ms of a 2.2 ms vector-only recall at 100k memories on SQLite, and each
commit empties the page caches of the store's other connections (SQLite's
lexical readers). :class:`AccessLog` keeps the records instead, and the
store writes them together (:meth:`~memory.backends.items_write.SQLItemWrites.flush_access`)
once :data:`ACCESS_BATCH` memories have gathered, at the first recall
:data:`ACCESS_DELAY` seconds after the oldest record, and when it closes. Reads through the same store object see them
at once (:meth:`AccessLog.seen`); other processes see them once written.

A due write runs behind the recall that made it due, on a thread of the
store's own (:class:`WriteBehind`): 512 rows updated in one transaction took
10–15 ms, and the recall that happened to fill the batch waited for it (4 of
the 10 slowest of 200 vector-only recalls at 100k memories, 2026-12-03). The
recall returns at once; the next one's query embedding runs while the rows are
written. The write holds the store's lock as it did (SQLite: reads of the
store wait for it, and see the accesses either kept or written, never both),
but in transactions of at most :data:`ACCESS_CHUNK` rows, so a recall that
comes while it runs waits for one chunk, not for all: at 1M memories the 512
rows took 10–23 ms in one transaction, and the four recalls of 200 that met
such a write took that long (2026-12-04, the 2-core Xeon).

Each chunk waits for a quiet moment of the store first (:class:`StoreUse`:
no read or write of it under way or waiting, none for :data:`ACCESS_QUIET`
seconds). A recall's reads come in a burst after its query embedding, so the
chunks go in the gap the embedding leaves instead of between a recall's own
reads; with a fixed 2 ms pause between chunks instead, a due write spread
over ~30 ms and 9 of 200 vector-only recalls at 100k memories met a chunk
(search p95 2.9 ms, against 2.4 with no access writes at all; 2026-12-04, the
2-core Xeon). A store that is never quiet (back-to-back recalls with no
embedding between them) gets its accesses written anyway once they are
urgent (:meth:`AccessLog.urgent`: :data:`ACCESS_URGENT_BATCH` memories, or
:data:`ACCESS_URGENT_DELAY` seconds after the oldest), each chunk then waiting
at most :data:`ACCESS_YIELD_MAX` seconds for a quiet moment. So another
process sees a recall's accesses at most about that late while this one runs
(at once when it closes).
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from memory.types import MemoryItem

__all__ = [
    "ACCESS_BATCH",
    "ACCESS_CHUNK",
    "ACCESS_DELAY",
    "ACCESS_QUIET",
    "ACCESS_URGENT_BATCH",
    "ACCESS_URGENT_DELAY",
    "ACCESS_YIELD_MAX",
    "AccessLog",
    "Pending",
    "StoreUse",
    "WriteBehind",
]

log = logging.getLogger(__name__)

#: Memories whose accesses are kept before they are written.
ACCESS_BATCH = 512
#: Seconds after the oldest kept access at which the next recall writes them all.
ACCESS_DELAY = 1.0
#: Rows a due write updates per transaction, behind the recalls (the store's reads wait for one at most).
ACCESS_CHUNK = 64
#: A due write's chunk waits until the store has had no read or write for this long (seconds)...
ACCESS_QUIET = 0.001
#: ...and once the accesses are urgent, no longer than this (seconds) per chunk.
ACCESS_YIELD_MAX = 0.05
#: Kept accesses are urgent (written whether or not the store is ever quiet) at this many memories...
ACCESS_URGENT_BATCH = 8 * ACCESS_BATCH
#: ...or this many seconds after the oldest.
ACCESS_URGENT_DELAY = 10.0

#: Seconds a write-behind thread waits for the next due write before it ends (the next one starts another).
WRITER_IDLE = 30.0

#: Kept accesses: (namespace, id) -> (how many, the latest time).
Pending = dict[tuple[str, str], tuple[int, datetime]]


class AccessLog:
    """Thread-safe record of accesses not yet written, by (namespace, id)."""

    def __init__(
        self,
        batch: int = ACCESS_BATCH,
        delay: float = ACCESS_DELAY,
        clock: Callable[[], float] = time.monotonic,
        *,
        urgent_batch: int = ACCESS_URGENT_BATCH,
        urgent_delay: float = ACCESS_URGENT_DELAY,
    ) -> None:
        """Due for writing at ``batch`` memories, or ``delay`` seconds (by ``clock``) after the oldest access;
        urgent at ``urgent_batch`` memories or ``urgent_delay`` seconds (see :meth:`urgent`)."""
        self._batch = batch
        self._delay = delay
        self._urgent_batch = urgent_batch
        self._urgent_delay = urgent_delay
        self._clock = clock
        self._lock = threading.Lock()
        self._pending: Pending = {}
        self._oldest = 0.0

    def __len__(self) -> int:
        return len(self._pending)

    def add(self, namespace: str, ids: Sequence[str], at: datetime) -> bool:
        """Count one access of each of ``ids`` (a repeated id counts each time) at ``at``; True when due."""
        with self._lock:
            if not self._pending:
                self._oldest = self._clock()
            for item_id in ids:
                count, latest = self._pending.get((namespace, item_id), (0, at))
                self._pending[(namespace, item_id)] = (count + 1, max(latest, at))
            return len(self._pending) >= self._batch or self._clock() - self._oldest >= self._delay

    def urgent(self) -> bool:
        """True when the kept accesses should be written even if the store is never quiet (they are many, or old)."""
        with self._lock:
            if not self._pending:
                return False
            return len(self._pending) >= self._urgent_batch or self._clock() - self._oldest >= self._urgent_delay

    def take(self, limit: int | None = None) -> Pending:
        """Kept accesses removed from the log (to be written): all of them, or the ``limit`` oldest."""
        with self._lock:
            if limit is None or limit >= len(self._pending):
                taken, self._pending = self._pending, {}
                return taken
            keys = list(itertools.islice(self._pending, limit))
            return {key: self._pending.pop(key) for key in keys}

    def give_back(self, taken: Pending) -> None:
        """Keep ``taken`` again (its write failed), merged with what came since."""
        with self._lock:
            if not self._pending:
                self._oldest = self._clock()
            for key, (count, at) in taken.items():
                now_count, latest = self._pending.get(key, (0, at))
                self._pending[key] = (count + now_count, max(latest, at))

    def discard(self, namespace: str, ids: Sequence[str]) -> None:
        """Forget the kept accesses of ``ids`` (their rows were rewritten with counts that include them)."""
        with self._lock:
            for item_id in ids:
                self._pending.pop((namespace, item_id), None)

    def kept(self, namespace: str, item_id: str) -> tuple[int, datetime] | None:
        """The accesses of an item counted here and not yet written: how many, and the latest; None if none."""
        return self._pending.get((namespace, item_id))

    def seen(self, item: MemoryItem) -> MemoryItem:
        """``item`` as read from the store, with its kept accesses counted."""
        kept = self._pending.get((item.namespace, item.id))
        if kept is None:
            return item
        count, at = kept
        latest = at if item.accessed_at is None else max(item.accessed_at, at)
        return item.model_copy(update={"access_count": item.access_count + count, "accessed_at": latest})


class StoreUse:
    """A store's foreground calls: how many are under way (waiting for its lock or holding it), and when one last ended.

    Used as a context manager around each read and write of the store; the
    background access write asks :meth:`wait_quiet` before each chunk. Costs
    a lock and a clock read per call.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        """Count calls from now on; ``clock`` gives seconds."""
        self._clock = clock
        self._lock = threading.Lock()
        self._under_way = 0
        self._last_end = float("-inf")

    def __enter__(self) -> None:
        with self._lock:
            self._under_way += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._under_way -= 1
            self._last_end = self._clock()

    def quiet(self, seconds: float) -> bool:
        """True when no call is under way and none ended in the last ``seconds``."""
        with self._lock:
            return self._under_way == 0 and self._clock() - self._last_end >= seconds

    def wait_quiet(self, seconds: float, longest: float) -> bool:
        """Wait until :meth:`quiet` for ``seconds``, at most ``longest`` seconds; False when that passed first."""
        deadline = self._clock() + longest
        while not self.quiet(seconds):
            left = deadline - self._clock()
            if left <= 0:
                return False
            time.sleep(min(seconds / 2, left))
        return True


class WriteBehind:
    """Runs a store's due access writes on a thread of its own: the recall that made them due does not wait.

    :meth:`wake` asks for a write; wakes that come while one is asked for or
    running share the next. The thread calls ``write(store)`` (which must not
    raise for a busy store: the accesses stay kept for the next due write),
    starts at the first wake and ends after ``idle`` seconds without one. It
    holds the store weakly: a store that is never closed is not kept alive
    by it. :meth:`close` stops it (waiting for a write under way); the store
    then writes what is left itself.
    """

    def __init__(self, store: object, write: Callable[[Any], None], *, idle: float = WRITER_IDLE) -> None:
        """Write ``store``'s kept accesses by ``write(store)`` when woken."""
        self._store = weakref.ref(store)
        self._write = write
        self._idle = idle
        self._state = threading.Condition(threading.Lock())
        self._due = False
        self._busy = False
        self._closed = False
        self._thread: threading.Thread | None = None
        #: Writes run.
        self.runs = 0
        _WRITERS.add(self)

    def wake(self) -> None:
        """Ask for a write soon (at once, unless one is under way: then right after it)."""
        with self._state:
            if self._closed:
                return
            self._due = True
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="memory-access-writes", daemon=True)
                self._thread.start()
            self._state.notify_all()

    @property
    def closing(self) -> bool:
        """True once :meth:`close` was called (a write under way should finish without waiting for quiet)."""
        return self._closed

    def settle(self, timeout: float | None = None) -> bool:
        """Wait until no write is asked for or under way; False when ``timeout`` seconds passed first."""
        with self._state:
            return self._state.wait_for(lambda: self._closed or not (self._due or self._busy), timeout)

    def close(self) -> None:
        """Stop the thread: a write under way finishes, one only asked for is left to the store. Idempotent."""
        with self._state:
            self._closed = True
            self._due = False
            self._state.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self) -> None:
        while True:
            with self._state:
                if not self._due and not self._closed:
                    self._state.wait(self._idle)
                if self._closed or not self._due:
                    self._thread = None
                    self._state.notify_all()
                    return
                self._due, self._busy = False, True
            try:
                store = self._store()
                if store is not None:
                    self._write(store)
                    self.runs += 1
                del store
            except Exception:  # a write must never end the thread; the accesses stay kept (see AccessLog)
                log.warning("writing kept accesses failed", exc_info=True)
            finally:
                with self._state:
                    self._busy = False
                    self._state.notify_all()

    def _after_fork(self) -> None:
        """In a forked child: no thread runs (the parent's does not follow), and no lock is held."""
        self._state = threading.Condition(threading.Lock())
        self._thread = None
        self._due = self._busy = False


_WRITERS: weakref.WeakSet[WriteBehind] = weakref.WeakSet()


def _reset_after_fork() -> None:
    for writer in list(_WRITERS):
        writer._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
