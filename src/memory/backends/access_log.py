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
but in transactions of at most :data:`ACCESS_CHUNK` rows with a pause
between them (:data:`ACCESS_PAUSE`), so a recall that comes while it runs
waits for one chunk, not for all: at 1M memories the 512 rows took 10–23 ms
in one transaction, and the four recalls of 200 that met such a write took
that long (2026-12-04, the 2-core Xeon).
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

__all__ = ["ACCESS_BATCH", "ACCESS_CHUNK", "ACCESS_DELAY", "ACCESS_PAUSE", "AccessLog", "Pending", "WriteBehind"]

log = logging.getLogger(__name__)

#: Memories whose accesses are kept before they are written.
ACCESS_BATCH = 512
#: Seconds after the oldest kept access at which the next recall writes them all.
ACCESS_DELAY = 1.0
#: Rows a due write updates per transaction, behind the recalls (the store's reads wait for one at most).
ACCESS_CHUNK = 64
#: Seconds a due write pauses between its transactions, so a read waiting for the store gets it first.
ACCESS_PAUSE = 0.002

#: Seconds a write-behind thread waits for the next due write before it ends (the next one starts another).
WRITER_IDLE = 30.0

#: Kept accesses: (namespace, id) -> (how many, the latest time).
Pending = dict[tuple[str, str], tuple[int, datetime]]


class AccessLog:
    """Thread-safe record of accesses not yet written, by (namespace, id)."""

    def __init__(
        self, batch: int = ACCESS_BATCH, delay: float = ACCESS_DELAY, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """Due for writing at ``batch`` memories, or ``delay`` seconds (by ``clock``) after the oldest access."""
        self._batch = batch
        self._delay = delay
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

    def seen(self, item: MemoryItem) -> MemoryItem:
        """``item`` as read from the store, with its kept accesses counted."""
        kept = self._pending.get((item.namespace, item.id))
        if kept is None:
            return item
        count, at = kept
        latest = at if item.accessed_at is None else max(item.accessed_at, at)
        return item.model_copy(update={"access_count": item.access_count + count, "accessed_at": latest})


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
