""":class:`LibSQLBackend`: the SQLite backend's SQL, schema and stores over libSQL's driver.

libSQL is a fork of SQLite (FTS5, JSON, ``RETURNING``, WAL) with vector
search built in, so every store of the SQLite engine runs on it unchanged;
only the driver differs (:mod:`memory.backends.libsql.driver`). Vectors are
stored and scored as on SQLite (float16 blobs in new spaces, scored by numpy:
:mod:`memory.backends.sqlite.vectors`), so a file moves between the two
engines as it is; libSQL's own vector index, when asked for, holds a float32
copy (:mod:`.native_index`).
"""

from __future__ import annotations

import os
from typing import Any

from memory.backends.libsql.driver import LibSQLDriver
from memory.backends.libsql.native_index import NativeIndexCache, create_native_index
from memory.backends.sqlite import vectors
from memory.backends.sqlite.backend import SQLiteBackend
from memory.backends.sqlite.connection import DEFAULT_BUSY_TIMEOUT
from memory.backends.sqlite.sql import compile_filter, scope_of
from memory.backends.values import ChannelHit, Vector
from memory.errors import ConfigError
from memory.filters import Filter

__all__ = ["LibSQLBackend", "AUTH_TOKEN_ENV"]

#: Where the auth token of a remote primary is read from when none is passed (never from the URL's log form).
AUTH_TOKEN_ENV = "MEMORY_LIBSQL_AUTH_TOKEN"
#: Candidates asked of libSQL's index before exact rescoring (its recall is high; a sign-bit pool needs more).
NATIVE_MIN_CANDIDATES = 200
_REMOTE_SCHEMES = ("libsql://", "https://", "http://", "wss://", "ws://")


class LibSQLBackend(SQLiteBackend):
    """Memory store in a libSQL file, optionally an embedded replica of a remote libSQL/Turso database."""

    name = "libsql"
    #: One connection (an embedded replica syncs through it): the lexical channel reads on it too.
    concurrent_reads = False
    #: One connection (an embedded replica's frames go through it): SQLite's own checkpoints, in the commit.
    background_checkpoints = False

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        sync_url: str | None = None,
        auth_token: str | None = None,
        vector_index: bool = False,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        **options: Any,
    ) -> None:
        """Open (creating if needed) the libSQL file at ``path``; see :class:`SQLiteBackend` for ``options``.

        ``sync_url`` makes the file an embedded replica of that remote
        database; ``auth_token`` (default: the ``MEMORY_LIBSQL_AUTH_TOKEN``
        environment variable) authenticates to it. ``vector_index`` finds
        vector candidates with libSQL's own index instead of the in-process
        sign-bit copy (:mod:`.native_index`: slower writes, no copy to load or
        hold). Raises ConfigError when
        ``libsql`` is not installed or ``sync_url`` is not a remote address.
        """
        if sync_url is not None and not str(sync_url).startswith(_REMOTE_SCHEMES):
            raise ConfigError(
                f"sync_url must be a libsql://, https:// or wss:// address of the primary, got {sync_url!r}"
            )
        token = auth_token if auth_token is not None else os.environ.get(AUTH_TOKEN_ENV) or None
        if not isinstance(vector_index, bool):
            raise ConfigError(f"vector_index must be true or false, got {vector_index!r}")
        self.sync_url = sync_url
        self.vector_index = vector_index
        self._libsql = LibSQLDriver(sync_url=sync_url, auth_token=token)
        super().__init__(path, busy_timeout=busy_timeout, **options)
        if vector_index:
            self._native = NativeIndexCache()
            with self._write() as conn:
                for space in self._all_spaces(conn):
                    create_native_index(conn, space)

    def __repr__(self) -> str:
        replica = f", sync_url={self.sync_url!r}" if self.sync_url else ""
        return f"LibSQLBackend({str(self.path)!r}{replica})"

    def _load_driver(self) -> Any:
        return self._libsql

    def _create_space(self, conn: Any, space_id: int, dim: int) -> None:
        super()._create_space(conn, space_id, dim)
        if self.vector_index:
            create_native_index(conn, vectors.Space(space_id, "", dim, dtype=self.new_space_dtype))

    def _nearest(self, conn: Any, space: vectors.Space, flt: Filter, query: Vector, k: int) -> list[ChannelHit]:
        """Candidates from libSQL's index when ``vector_index`` is on (rescored exactly), else the SQLite way."""
        if not self.vector_index:
            return super()._nearest(conn, space, flt, query, k)
        return vectors.search(
            conn,
            self._native,
            space,
            flt.namespace,
            compile_filter(flt),
            compile_filter(flt, probe=True),
            compile_filter(scope_of(flt)),
            query,
            int(k),
            exact_limit=self._exact_limit,
            min_candidates=NATIVE_MIN_CANDIDATES,
        )

    def sync(self) -> None:
        """Pull the primary's latest changes into this embedded replica. Raises ConfigError for a plain file."""
        if not self.sync_url:
            raise ConfigError("this libSQL store is a local file, not an embedded replica: there is nothing to sync")
        with self._read() as conn:
            conn.sync()
