"""``memory://``: the SQLite backend on a private temporary file, deleted when the store is closed.

A throwaway store for tests and short-lived agents runs the same SQL as the
embedded default, so it behaves exactly like it (transactions, dedup, FTS5,
vectors, every optional store); nothing is written to the user's disk:
the file lives in RAM (``/dev/shm``) where the system has it, otherwise in
the temporary directory, and both it and its WAL go on :meth:`close` (or
when the object is collected, or the process exits).

Opening is a file copy: the first store of a process migrates a template
file once (tens of milliseconds), every store after copies it.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Any

from memory.backends.sqlite.backend import SQLiteBackend
from memory.errors import StorageError

__all__ = ["ThrowawaySQLiteBackend"]

_RAM_DIR = Path("/dev/shm")


def _scratch_dir() -> Path:
    """A new private directory, in RAM when the system offers one."""
    base = str(_RAM_DIR) if _RAM_DIR.is_dir() and os.access(_RAM_DIR, os.W_OK | os.X_OK) else None
    try:
        return Path(tempfile.mkdtemp(prefix="memory-", dir=base))
    except OSError as exc:
        raise StorageError(f"cannot create a temporary directory for memory:// ({exc})") from exc


_template_lock = threading.Lock()
_template: Path | None = None


def _template_file() -> Path:
    """A migrated, empty store file for this process to copy (made on first use, deleted at exit)."""
    global _template
    with _template_lock:
        if _template is None or not _template.exists():
            directory = _scratch_dir()
            atexit.register(shutil.rmtree, directory, ignore_errors=True)
            path = directory / "template.db"
            SQLiteBackend(path).close()  # closing the last connection folds the WAL into the file
            _template = path
        return _template


class ThrowawaySQLiteBackend(SQLiteBackend):
    """A SQLite store that exists until it is closed; what ``memory://`` opens."""

    name = "inmemory"
    #: Its file is in RAM and never synced: a checkpoint is a copy in memory, cheap in the commit itself.
    background_checkpoints = False

    def __init__(self, **options: Any) -> None:
        """Create an empty store in a new temporary directory; ``options`` as for SQLiteBackend."""
        directory = _scratch_dir()
        self._cleanup = weakref.finalize(self, shutil.rmtree, directory, ignore_errors=True)
        try:
            path = directory / "memory.db"
            shutil.copyfile(_template_file(), path)
            super().__init__(path, **options)
            with self._read() as conn:  # nothing here has to survive a crash: skip the fsyncs
                conn.execute("PRAGMA synchronous = OFF")
        except BaseException:
            self._cleanup()
            raise

    def __repr__(self) -> str:
        return "ThrowawaySQLiteBackend()"

    def close(self) -> None:
        """Close the connection and delete the files. Idempotent."""
        try:
            super().close()
        finally:
            self._cleanup()
