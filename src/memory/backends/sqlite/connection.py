"""Opening SQLite connections: driver choice, pragmas, error mapping.

The driver is ``pysqlite3`` (from the ``pysqlite3-binary`` package: a recent
SQLite with FTS5 on every platform it ships for) when it is installed, else
the stdlib ``sqlite3`` if its SQLite is new enough. No extension is loaded:
vectors are scored in numpy (:mod:`.vectors`).

:func:`driver_errors` is the one place where driver exceptions become
:mod:`memory.errors`.
"""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from memory.errors import ConfigError, Error, InvalidInputError, SchemaError, StorageError

__all__ = [
    "load_driver",
    "connect",
    "driver_errors",
    "OwnConnection",
    "DEFAULT_BUSY_TIMEOUT",
    "MIN_SQLITE_VERSION",
    "PAGE_SIZE",
]

#: Seconds a writer waits for another process's write lock before failing.
DEFAULT_BUSY_TIMEOUT = 30.0
#: JSON functions built in, RETURNING and row values are needed.
MIN_SQLITE_VERSION = (3, 38, 0)
#: Page size of a new file (see :func:`connect`).
PAGE_SIZE = 8192

_driver: ModuleType | None = None


def load_driver() -> ModuleType:
    """Return the DB-API module to use: ``pysqlite3.dbapi2``, else stdlib ``sqlite3``.

    Raises ConfigError when its SQLite is too old.
    """
    global _driver
    if _driver is not None:
        return _driver
    module: ModuleType
    try:
        module = importlib.import_module("pysqlite3.dbapi2")
    except ImportError:
        import sqlite3

        module = sqlite3
    version = tuple(int(part) for part in str(module.sqlite_version).split(".")[:3])
    if version < MIN_SQLITE_VERSION:
        raise ConfigError(
            f"SQLite {module.sqlite_version} is too old; the SQLite backend needs "
            f"{'.'.join(map(str, MIN_SQLITE_VERSION))} or newer (install pysqlite3-binary)"
        )
    _driver = module
    return module


def connect(path: Path, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT, driver: Any = None) -> Any:
    """Open ``path`` (creating parent directories) with WAL and foreign keys.

    The connection is in autocommit mode (transactions are explicit), usable
    from any thread (callers serialise access with a lock). ``driver`` is a
    DB-API module (default :func:`load_driver`), or another SQLite engine's
    driver object (libSQL). Raises ConfigError, StorageError, or SchemaError for a
    file that is not SQLite.
    """
    driver = load_driver() if driver is None else driver
    with driver_errors(driver, path, busy_timeout):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create the directory for {path}: {exc}") from exc
        conn = driver.connect(str(path), timeout=busy_timeout, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            # A new file gets 8 KB pages: a 4 KB page holds two 384-d float32 vectors (~2,050
            # bytes each), an 8 KB page five (~1,640). An existing file keeps its page size.
            conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            mode = _switch_to_wal(conn, driver, busy_timeout)
            if str(mode).lower() != "wal":
                raise StorageError(f"cannot switch {path} to WAL mode (journal_mode is {mode})")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA temp_store = MEMORY")
            conn.execute("PRAGMA cache_size = -32000")
            conn.execute("PRAGMA analysis_limit = 1000")  # keeps ANALYZE (via PRAGMA optimize) fast
        except BaseException:
            conn.close()
            raise
    return conn


def _switch_to_wal(conn: Any, driver: ModuleType, busy_timeout: float) -> str:
    """Set ``journal_mode = WAL`` and return the mode now in force.

    Switching a new file to WAL takes an exclusive lock *without* calling
    SQLite's busy handler, so when several processes open a new file at once
    all but one may get ``database is locked`` at once. Retry with a short
    backoff until ``busy_timeout`` has passed, as the busy handler would.
    """
    deadline = time.monotonic() + busy_timeout
    pause = 0.002
    while True:
        try:
            return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except driver.OperationalError as exc:
            lowered = str(exc).lower()
            if ("locked" not in lowered and "busy" not in lowered) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


@contextmanager
def driver_errors(driver: ModuleType, path: Path | str, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> Iterator[None]:
    """Translate driver exceptions raised inside the block to :mod:`memory.errors`.

    ``database is locked`` after the busy timeout becomes StorageError; a file
    that is not SQLite, a corrupt one, or a schema this code does not know
    becomes SchemaError; other driver errors become StorageError.
    """
    try:
        yield
    except Error:
        raise
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"text is not valid Unicode (it holds a lone surrogate): {exc}") from exc
    except driver.OperationalError as exc:
        message = str(exc)
        lowered = message.lower()
        if "locked" in lowered or "busy" in lowered:
            raise StorageError(
                f"database {path} is locked: another connection held a write lock for more than "
                f"{busy_timeout:g} s; retry, or find the process keeping a transaction open ({message})"
            ) from exc
        if lowered.startswith(("no such table", "no such column", "no such function", "no such module")):
            raise SchemaError(f"database {path} does not have the expected schema: {message}") from exc
        raise StorageError(f"SQLite error on {path}: {message}") from exc
    except driver.IntegrityError as exc:
        raise StorageError(f"SQLite constraint failed on {path}: {exc}") from exc
    except driver.DatabaseError as exc:
        message = str(exc)
        if "not a database" in message or "malformed" in message or "corrupt" in message:
            raise SchemaError(
                f"{path} is not a usable SQLite database ({message}); point memory at another file or restore a backup"
            ) from exc
        raise StorageError(f"SQLite error on {path}: {message}") from exc
    except driver.Error as exc:
        raise StorageError(f"SQLite error on {path}: {exc}") from exc


class OwnConnection:
    """A connection of its own to a store file (e.g. for API keys, so they never wait on the backend's lock)."""

    def __init__(self, path: Path, busy_timeout: float = DEFAULT_BUSY_TIMEOUT, driver: Any = None) -> None:
        """Connect to ``path`` through ``driver`` (default :func:`load_driver`). Raises StorageError."""
        self.path = path
        self._driver = load_driver() if driver is None else driver
        self._busy_timeout = busy_timeout
        self._conn = connect(path, busy_timeout=busy_timeout, driver=self._driver)
        self._lock = threading.Lock()

    @contextmanager
    def read(self) -> Iterator[Any]:
        """The connection, for reads, under the lock and the error mapping."""
        with self._lock, driver_errors(self._driver, self.path, self._busy_timeout):
            yield self._conn

    @contextmanager
    def write(self) -> Iterator[Any]:
        """One immediate transaction: committed when the block succeeds, rolled back otherwise."""
        with self._lock, driver_errors(self._driver, self.path, self._busy_timeout):
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()
