"""WAL checkpoints on a thread and a connection of their own.

SQLite checkpoints a WAL file in the connection whose commit takes the log
past ``wal_autocheckpoint`` pages (1,000 by default): that commit copies the
logged pages back into the database file and syncs it before it returns —
10–55 ms on the 2-core machines here — while the backend's lock is held, so
every read and write of the process waits for it (they were 4 of the 10
slowest vector-only recalls at 100k and 1M, ``docs/retrieval.md``).

:class:`Checkpointer` takes that work off them: the backend tells it of each
commit (:meth:`Checkpointer.committed`, a flag and a counter); its thread runs
a ``PASSIVE`` checkpoint — one that never waits for readers or writers — at
most every :data:`CHECKPOINT_INTERVAL` seconds while commits come, on its own
connection. The backend's connection keeps an automatic checkpoint at
:data:`FALLBACK_PAGES` for the case the thread falls behind (a checkpoint
cannot pass a reader's snapshot, so a long read holds both back alike). The
thread starts at the first commit and ends after :data:`IDLE_SECONDS`
without one, so a store that is only read, or left unclosed, keeps no thread.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from memory.backends.sqlite.connection import OwnConnection
from memory.errors import Error

__all__ = ["CHECKPOINT_INTERVAL", "FALLBACK_PAGES", "IDLE_SECONDS", "Checkpointer"]

log = logging.getLogger(__name__)

#: Seconds between two background checkpoints while commits come (commits in between share one).
CHECKPOINT_INTERVAL = 0.5
#: The backend connection's own ``wal_autocheckpoint`` (pages) while a checkpointer runs beside it.
FALLBACK_PAGES = 8_000
#: Seconds without a commit after which the thread (and its connection) ends; the next commit starts it again.
IDLE_SECONDS = 30.0


class Checkpointer:
    """Runs the WAL checkpoints of one store file in the background (see the module's docstring).

    It holds the file's path and driver, not the backend: a backend that is
    never closed does not keep it alive, and its thread ends when idle.
    """

    def __init__(
        self,
        path: Path,
        busy_timeout: float,
        driver: Any,
        *,
        interval: float = CHECKPOINT_INTERVAL,
        idle: float = IDLE_SECONDS,
    ) -> None:
        """Checkpoint ``path`` (opened through ``driver``) every ``interval`` s while commits come."""
        self._path = path
        self._busy_timeout = busy_timeout
        self._driver = driver
        self._interval = interval
        self._idle = idle
        self._lock = threading.Lock()
        self._due = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: Checkpoints run, and the last one's (busy, frames in the log, frames checkpointed).
        self.runs = 0
        self.last: tuple[int, int, int] | None = None

    @property
    def running(self) -> bool:
        """True while the thread is alive."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def committed(self) -> None:
        """Note a commit on the store's connection: a checkpoint follows within ``interval`` seconds."""
        with self._lock:  # under the lock: a thread ending for idleness sees this commit or is replaced
            self._due.set()
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="memory-sqlite-checkpoints", daemon=True)
                self._thread.start()

    def close(self) -> None:
        """Stop the thread (after the checkpoint it may be running); later commits start none. Idempotent."""
        self._stop.set()
        self._due.set()
        with self._lock:
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self) -> None:
        own: OwnConnection | None = None
        try:
            while True:
                if not self._due.wait(self._idle):
                    with self._lock:  # idle: end, unless a commit came just now
                        if not self._due.is_set():
                            self._thread = None
                            return
                if self._stop.wait(self._interval):
                    return
                self._due.clear()
                try:
                    if own is None:
                        own = OwnConnection(self._path, self._busy_timeout, self._driver)
                    with own.read() as conn:
                        row = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    self.runs += 1
                    self.last = (int(row[0]), int(row[1]), int(row[2]))
                except Error as exc:  # the backend's own fallback checkpoint still runs
                    log.debug("background checkpoint of %s failed: %s", self._path, exc)
        finally:
            if own is not None:
                try:
                    own.close()
                except Error:  # pragma: no cover - closing a connection that failed
                    pass
