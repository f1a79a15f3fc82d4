"""Where API keys live: a tiny :class:`KeyStore` protocol and how a backend provides one.

Keys are stored in the same database as the memories (hashed; see
:mod:`memory.keys`). A backend provides its store through
:meth:`~memory.backends.base.Backend.key_store` (None when it cannot hold keys);
:class:`SQLKeyStore` is that store for every SQL engine.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from memory.backends.dialect import Dialect
from memory.errors import ConfigError
from memory.keys import ApiKey

__all__ = ["KeyStore", "SQLKeyStore", "open_key_store"]


@runtime_checkable
class KeyStore(Protocol):
    """Stores API key records (hashes only)."""

    def add(self, key: ApiKey) -> None:
        """Store a new key. Raises StorageError."""
        ...

    def get(self, key_id: str) -> ApiKey | None:
        """The key with this id (revoked ones too), or None."""
        ...

    def list(self) -> builtins.list[ApiKey]:
        """Every key, oldest first."""
        ...

    def revoke(self, key_id: str, at: datetime) -> bool:
        """Mark a key revoked; False when no active key has that id."""
        ...


class _HoldsKeys(Protocol):
    """What :func:`open_key_store` needs of a backend (every :class:`~memory.backends.base.Backend` has it)."""

    name: str

    def key_store(self) -> KeyStore | None: ...


def open_key_store(backend: _HoldsKeys) -> KeyStore:
    """The key store of ``backend``'s database. Raises ConfigError when the backend cannot hold keys."""
    store = backend.key_store()
    if store is None:
        raise ConfigError(f"the {backend.name} backend cannot store API keys")
    return store


_COLUMNS = "id, name, token_hash, namespaces, read_only, secrets, created_at, revoked_at"


class SQLKeyStore:
    """Key records in the ``api_keys`` table of a SQL store (migrations ``*_api_keys`` of each engine).

    Keys are not namespaced (one key may cover several namespaces, or ``*``),
    so the table is keyed by the key id alone (on Citus: a reference table).
    """

    def __init__(self, dialect: Dialect, close: Callable[[], None] | None = None) -> None:
        """Run on ``dialect``'s transactions; ``close`` releases a connection of the store's own."""
        self._d = dialect
        self._close = close

    def _key(self, row: tuple[Any, ...]) -> ApiKey:
        created_at = self._d.time_value(row[6])
        assert created_at is not None  # NOT NULL column
        return ApiKey(
            id=row[0], name=row[1], token_hash=row[2], namespaces=tuple(self._d.json_value(row[3])),
            read_only=bool(row[4]), secrets=bool(row[5]), created_at=created_at,
            revoked_at=self._d.time_value(row[7]),
        )  # fmt: skip

    def add(self, key: ApiKey) -> None:
        """Store a new key. Raises StorageError (e.g. an id that exists)."""
        with self._d.write() as conn:
            conn.execute(
                self._d.sql(f"INSERT INTO api_keys ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
                (key.id, key.name, key.token_hash, self._d.json_param(list(key.namespaces)), key.read_only,
                 key.secrets, self._d.time_param(key.created_at), self._d.time_param(key.revoked_at)),
            )  # fmt: skip

    def get(self, key_id: str) -> ApiKey | None:
        """The key with this id (revoked ones too), or None."""
        if not self._d.storable(key_id):
            return None
        with self._d.read() as conn:
            rows = self._d.rows(conn, f"SELECT {_COLUMNS} FROM api_keys WHERE id = ?", (key_id,))
        return self._key(rows[0]) if rows else None

    def list(self) -> builtins.list[ApiKey]:
        """Every key, oldest first."""
        with self._d.read() as conn:
            rows = self._d.rows(conn, f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, id")
        return [self._key(r) for r in rows]

    def revoke(self, key_id: str, at: datetime) -> bool:
        """Mark a key revoked; False when no active key has that id."""
        if not self._d.storable(key_id):
            return False
        with self._d.write() as conn:
            cur = conn.execute(
                self._d.sql("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL"),
                (self._d.time_param(at), key_id),
            )
            return bool(cur.rowcount)

    def close(self) -> None:
        """Release the store's own connection, if it has one. Idempotent."""
        if self._close is not None:
            close, self._close = self._close, None
            close()
