"""Recalls' access records, kept in process and written in batches, off the recall's path.

Every recall counts an access of each memory it returns (``access_count``,
``accessed_at``: statistics shown by ``get`` and the inspector; nothing
ranks by them). Written at once, that is one write transaction per recall:
0.27 ms of a 2.2 ms vector-only recall at 100k memories on SQLite, and each
commit empties the page caches of the store's other connections (SQLite's
lexical readers). :class:`AccessLog` keeps the records instead, and the
store writes them together (:meth:`~memory.backends.items_write.SQLItemWrites.flush_access`)
once :data:`ACCESS_BATCH` memories have gathered, at the first recall
:data:`ACCESS_DELAY` seconds after the oldest record, and when it closes.
Reads through the same store object see them at once (:meth:`AccessLog.seen`,
also while they are being written); other processes see them once written.

A due write runs in a thread of its own (:class:`BackgroundWrites`), so the
recall that makes it due does not wait for it: 512 rows updated and
committed took 7-42 ms on a 100k-memory SQLite store (a WAL checkpoint
sometimes with them), a stall of one recall in fifty.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime

from memory.types import MemoryItem

__all__ = ["ACCESS_BATCH", "ACCESS_DELAY", "AccessLog", "BackgroundWrites", "Pending"]

log = logging.getLogger(__name__)

#: Memories whose accesses are kept before they are written.
ACCESS_BATCH = 512
#: Seconds after the oldest kept access at which the next recall writes them all.
ACCESS_DELAY = 1.0

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
        #: Batches taken for writing and not yet written (:meth:`take_for_write`): reads still count them.
        self._writing: list[Pending] = []

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

    def take(self) -> Pending:
        """Every kept access, removed from the log."""
        with self._lock:
            taken, self._pending = self._pending, {}
            return taken

    def take_for_write(self) -> Pending:
        """Every kept access, to be written: :meth:`seen` counts them until :meth:`written` or :meth:`give_back`."""
        with self._lock:
            taken, self._pending = self._pending, {}
            if taken:
                self._writing.append(taken)
            return taken

    def written(self, taken: Pending) -> None:
        """``taken`` (from :meth:`take_for_write`) is in the store now: reads find it there."""
        with self._lock:
            self._writing = [batch for batch in self._writing if batch is not taken]

    def give_back(self, taken: Pending) -> None:
        """Keep ``taken`` again (its write failed), merged with what came since."""
        with self._lock:
            self._writing = [batch for batch in self._writing if batch is not taken]
            if not self._pending:
                self._oldest = self._clock()
            for key, (count, at) in taken.items():
                now_count, latest = self._pending.get(key, (0, at))
                self._pending[key] = (count + now_count, max(latest, at))

    @property
    def unwritten(self) -> bool:
        """True while some access is kept or being written (reads must pass items through :meth:`seen`)."""
        return bool(self._pending) or bool(self._writing)

    def discard(self, namespace: str, ids: Sequence[str]) -> None:
        """Forget the kept accesses of ``ids`` (their rows were rewritten with counts that include them)."""
        with self._lock:
            for item_id in ids:
                self._pending.pop((namespace, item_id), None)

    def seen(self, item: MemoryItem) -> MemoryItem:
        """``item`` as read from the store, with its kept accesses (and those being written) counted."""
        key = (item.namespace, item.id)
        with self._lock:
            kept = [batch[key] for batch in (*self._writing, self._pending) if key in batch]
        if not kept:
            return item
        count = item.access_count + sum(n for n, _ in kept)
        latest = max(at for _, at in kept)
        if item.accessed_at is not None:
            latest = max(item.accessed_at, latest)
        return item.model_copy(update={"access_count": count, "accessed_at": latest})


class BackgroundWrites:
    """Runs a store's access writes in a thread of their own, one at a time.

    :meth:`request` starts the writer (a daemon thread) unless one runs; a
    request that comes while it runs makes it write once more before it
    ends. ``write`` must not raise for a failed write (it keeps the accesses
    for the next one); anything it does raise is logged.
    """

    def __init__(self, write: Callable[[], None], name: str = "memory-access-writer") -> None:
        """Call ``write`` in the writer thread (named ``name``)."""
        self._write = write
        self._name = name
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._again = False

    def request(self) -> None:
        """Have the accesses written soon, without waiting for it."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                self._again = True
                return
            self._again = False
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                self._write()
            except Exception:  # noqa: BLE001 - a thread of its own: nobody else would see it
                log.exception("writing recalls' access records failed")
            with self._lock:
                if not self._again:
                    self._thread = None
                    return
                self._again = False

    def wait(self) -> None:
        """Return once no write is running (the one running, and those requested meanwhile, are done)."""
        with self._lock:
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
