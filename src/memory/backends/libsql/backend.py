""":class:`LibSQLBackend`: the SQLite backend's SQL, schema and stores over libSQL's driver.

libSQL is a fork of SQLite (FTS5, JSON, ``RETURNING``, WAL) with vector
search built in, so every store of the SQLite engine runs on it unchanged;
only the driver differs (:mod:`memory.backends.libsql.driver`). Vectors are
ranked with libSQL's own ``vector_distance_cos`` over the same float32
blobs, where SQLite loads sqlite-vec.
"""

from __future__ import annotations

import os
from typing import Any

from memory.backends.libsql.driver import LibSQLDriver
from memory.backends.sqlite.backend import SQLiteBackend
from memory.backends.sqlite.connection import DEFAULT_BUSY_TIMEOUT
from memory.errors import ConfigError

__all__ = ["LibSQLBackend", "AUTH_TOKEN_ENV"]

#: Where the auth token of a remote primary is read from when none is passed (never from the URL's log form).
AUTH_TOKEN_ENV = "MEMORY_LIBSQL_AUTH_TOKEN"
_REMOTE_SCHEMES = ("libsql://", "https://", "http://", "wss://", "ws://")


class LibSQLBackend(SQLiteBackend):
    """Memory store in a libSQL file, optionally an embedded replica of a remote libSQL/Turso database."""

    name = "libsql"

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        sync_url: str | None = None,
        auth_token: str | None = None,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        **options: Any,
    ) -> None:
        """Open (creating if needed) the libSQL file at ``path``; see :class:`SQLiteBackend` for ``options``.

        ``sync_url`` makes the file an embedded replica of that remote
        database; ``auth_token`` (default: the ``MEMORY_LIBSQL_AUTH_TOKEN``
        environment variable) authenticates to it. Raises ConfigError when
        ``libsql`` is not installed or ``sync_url`` is not a remote address.
        """
        if sync_url is not None and not str(sync_url).startswith(_REMOTE_SCHEMES):
            raise ConfigError(
                f"sync_url must be a libsql://, https:// or wss:// address of the primary, got {sync_url!r}"
            )
        token = auth_token if auth_token is not None else os.environ.get(AUTH_TOKEN_ENV) or None
        self.sync_url = sync_url
        self._libsql = LibSQLDriver(sync_url=sync_url, auth_token=token)
        super().__init__(path, busy_timeout=busy_timeout, **options)

    def __repr__(self) -> str:
        replica = f", sync_url={self.sync_url!r}" if self.sync_url else ""
        return f"LibSQLBackend({str(self.path)!r}{replica})"

    def _load_driver(self) -> Any:
        return self._libsql

    def sync(self) -> None:
        """Pull the primary's latest changes into this embedded replica. Raises ConfigError for a plain file."""
        if not self.sync_url:
            raise ConfigError("this libSQL store is a local file, not an embedded replica: there is nothing to sync")
        with self._read() as conn:
            conn.sync()
