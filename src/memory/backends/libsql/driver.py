"""libSQL (PyPI ``libsql``) behind the DB-API surface the SQLite engine code uses.

The SQLite backend's SQL runs unchanged on libSQL, a fork of SQLite; what
differs is the driver. ``libsql`` raises ``ValueError`` for every database
error and cannot bind ``memoryview`` (the engine's SQL calls no vector
function: it scores vectors in numpy). :class:`LibSQLDriver` is a
module-like object (``connect``, the DB-API exception classes,
``sqlite_version``) that :func:`memory.backends.sqlite.connection.connect`
takes in place of ``sqlite3``; its connections translate those differences
and nothing else.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Iterable, Iterator, Sequence
from types import ModuleType
from typing import Any

from memory.errors import ConfigError, InvalidInputError, StorageError

__all__ = ["LibSQLDriver", "LibSQLConnection", "load_libsql"]

#: Messages of errors that SQLite reports as OperationalError.
_OPERATIONAL = ("locked", "busy", "no such ", "syntax error", "cannot ", "unable to", "disk i/o", "interrupted")
_INTEGRITY = ("constraint failed", "foreign key", "not null", "unique")


class Error(Exception):
    """Base of the errors this driver raises (DB-API ``Error``)."""


class DatabaseError(Error):
    """An error reported by the database."""


class OperationalError(DatabaseError):
    """Locked, missing table or function, I/O: what SQLite calls operational."""


class IntegrityError(DatabaseError):
    """A constraint failed."""


def load_libsql() -> ModuleType:
    """Import the ``libsql`` module, or raise ConfigError naming the package to install."""
    try:
        return importlib.import_module("libsql")
    except ImportError as exc:
        raise ConfigError(
            "the libsql backend needs the libsql package: pip install 'llm-agent-memory[libsql]'"
        ) from exc


def _classify(exc: Exception) -> Exception:
    """The DB-API error (or InvalidInputError for an unbindable value) for a libsql ``ValueError``."""
    message = str(exc)
    lowered = message.lower()
    if lowered.startswith("unsupported parameter type"):
        return InvalidInputError(f"text is not valid Unicode or a value cannot be stored: {message[:200]}")
    if any(part in lowered for part in _INTEGRITY):
        return IntegrityError(message)
    if any(part in lowered for part in _OPERATIONAL):
        return OperationalError(message)
    return DatabaseError(message)


def _bindable(value: Any) -> Any:
    if isinstance(value, memoryview | bytearray):
        return bytes(value)
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:  # libsql would say only "unsupported parameter type"
            raise InvalidInputError(f"text is not valid Unicode (it holds a lone surrogate): {exc}") from exc
    return value


def _params(params: Sequence[Any] | None) -> tuple[Any, ...]:
    if params is None:
        return ()
    return tuple(_bindable(value) for value in params)


class LibSQLCursor:
    """libsql's cursor, iterable as sqlite3's is."""

    __slots__ = ("_raw",)

    def __init__(self, raw: Any) -> None:
        """Wrap the libsql cursor ``raw``."""
        self._raw = raw

    def __iter__(self) -> Iterator[Any]:
        return iter(self._raw.fetchall())

    def fetchone(self) -> Any:
        """The next row, or None."""
        return self._raw.fetchone()

    def fetchall(self) -> list[Any]:
        """The remaining rows."""
        return list(self._raw.fetchall())

    def fetchmany(self, size: int = 1) -> list[Any]:
        """Up to ``size`` of the remaining rows."""
        return list(self._raw.fetchmany(size))

    @property
    def rowcount(self) -> int:
        """Rows the last statement changed."""
        return int(self._raw.rowcount)

    @property
    def lastrowid(self) -> int | None:
        """Row id of the last inserted row."""
        return self._raw.lastrowid  # type: ignore[no-any-return]

    @property
    def description(self) -> Any:
        """Column descriptions of the last query."""
        return self._raw.description


class LibSQLConnection:
    """A libsql connection with sqlite3's behaviour where the engine code relies on it.

    libsql waits for another connection's lock inside its busy handler
    without releasing the GIL, so two connections of one process would
    deadlock until the timeout: SQLite's own busy wait is switched off and
    a locked statement is retried here, sleeping outside the driver, until
    ``busy_timeout`` has passed.
    """

    def __init__(self, raw: Any, busy_timeout: float) -> None:
        """Wrap the libsql connection ``raw``; ``busy_timeout`` is seconds to wait for a lock."""
        self._raw = raw
        self._busy_timeout = busy_timeout

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> LibSQLCursor:
        """Run one statement (waiting for a lock up to the busy timeout); returns its cursor."""
        text, values = sql, _params(params)
        if text.lstrip()[:22].upper().startswith("PRAGMA BUSY_TIMEOUT"):
            text = "PRAGMA busy_timeout = 0"  # the wait happens here, outside the driver (see the class doc)
        deadline = time.monotonic() + self._busy_timeout
        pause = 0.001
        while True:
            try:
                return LibSQLCursor(self._raw.execute(text, values))
            except ValueError as exc:
                error = _classify(exc)
                lowered = str(exc).lower()
                if ("locked" not in lowered and "busy" not in lowered) or time.monotonic() + pause > deadline:
                    raise error from exc
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> LibSQLCursor:
        """Run one statement for each parameter row."""
        try:
            return LibSQLCursor(self._raw.executemany(sql, [_params(row) for row in rows]))
        except ValueError as exc:
            raise _classify(exc) from exc

    def executescript(self, script: str) -> Any:
        """Run several statements."""
        try:
            return self._raw.executescript(script)
        except ValueError as exc:
            raise _classify(exc) from exc

    def cursor(self) -> _Statements:
        """A DB-API cursor: runs statements on this connection (closing it does not close the connection)."""
        return _Statements(self)

    @property
    def in_transaction(self) -> bool:
        """True inside an explicit transaction."""
        return bool(self._raw.in_transaction)

    def sync(self) -> Any:
        """Pull the remote primary's frames into an embedded replica (libSQL only)."""
        try:
            return self._raw.sync()
        except ValueError as exc:
            raise _classify(exc) from exc

    def close(self) -> None:
        """Close the connection."""
        self._raw.close()


class _Statements:
    """What ``connection.cursor()`` gives: the connection's execute/executemany; close() is a no-op."""

    __slots__ = ("_conn",)

    def __init__(self, conn: LibSQLConnection) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> LibSQLCursor:
        """Run one statement."""
        return self._conn.execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> LibSQLCursor:
        """Run one statement for each parameter row."""
        return self._conn.executemany(sql, rows)

    def close(self) -> None:
        """Nothing to release."""


class LibSQLDriver:
    """A module-like driver: ``connect`` plus the DB-API exception classes, for one libSQL target.

    ``sync_url`` and ``auth_token`` make a local file an embedded replica of a
    remote libSQL server (Turso); a ``libsql://``/``https://`` database with
    no local file is a remote connection.
    """

    Error = Error
    DatabaseError = DatabaseError
    OperationalError = OperationalError
    IntegrityError = IntegrityError

    def __init__(self, *, sync_url: str | None = None, auth_token: str | None = None) -> None:
        """Import ``libsql``; raises ConfigError when it is not installed."""
        self._module = load_libsql()
        self.sync_url = sync_url
        self.auth_token = auth_token
        self.sqlite_version = ".".join(str(part) for part in self._module.sqlite_version_info[:3])

    def connect(self, database: str, *, timeout: float, isolation_level: None = None, **_: Any) -> LibSQLConnection:
        """Open ``database`` (a file path or a remote URL) in autocommit mode."""
        options: dict[str, Any] = {"isolation_level": isolation_level}
        if self.sync_url:
            options["sync_url"] = self.sync_url
        if self.auth_token:
            options["auth_token"] = self.auth_token
        try:
            raw = self._module.connect(database, **options)
        except ValueError as exc:
            if self.sync_url and "sync" in str(exc).lower():
                raise StorageError(
                    f"cannot open {database} as a replica of {self.sync_url}: {exc} "
                    f"(check the address, and the token in MEMORY_LIBSQL_AUTH_TOKEN)"
                ) from exc
            raise _classify(exc) from exc
        conn = LibSQLConnection(raw, timeout)
        conn.execute("PRAGMA busy_timeout = 0")
        return conn
