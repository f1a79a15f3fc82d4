"""Where API keys live: a tiny :class:`KeyStore` protocol and how a backend provides one.

Keys are stored in the same database as the memories (hashed; see
:mod:`memory.keys`). A backend provides its store through an optional
``key_store()`` method (how a new backend, e.g. Postgres, plugs in); the
built-in in-memory and SQLite backends are mapped here so their modules stay
untouched.
"""

from __future__ import annotations

import builtins
import threading
import weakref
from datetime import datetime
from typing import Protocol, runtime_checkable

from memory.backends.base import Backend
from memory.errors import ConfigError
from memory.keys import ApiKey

__all__ = ["KeyStore", "InMemoryKeyStore", "open_key_store"]


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


class InMemoryKeyStore:
    """Keys in a dict; for the in-memory backend and tests."""

    def __init__(self) -> None:
        """An empty store."""
        self._keys: dict[str, ApiKey] = {}
        self._lock = threading.Lock()

    def add(self, key: ApiKey) -> None:
        """Store a new key."""
        with self._lock:
            self._keys[key.id] = key

    def get(self, key_id: str) -> ApiKey | None:
        """The key with this id, or None."""
        with self._lock:
            return self._keys.get(key_id)

    def list(self) -> builtins.list[ApiKey]:
        """Every key, oldest first."""
        with self._lock:
            return sorted(self._keys.values(), key=lambda k: (k.created_at, k.id))

    def revoke(self, key_id: str, at: datetime) -> bool:
        """Mark a key revoked."""
        with self._lock:
            key = self._keys.get(key_id)
            if key is None or key.revoked_at is not None:
                return False
            self._keys[key_id] = key.model_copy(update={"revoked_at": at})
            return True


_inmemory_stores: weakref.WeakKeyDictionary[object, InMemoryKeyStore] = weakref.WeakKeyDictionary()
_inmemory_lock = threading.Lock()


def open_key_store(backend: Backend) -> KeyStore:
    """The key store of ``backend``'s database. Raises ConfigError when the backend cannot hold keys."""
    factory = getattr(backend, "key_store", None)
    if callable(factory):
        store: KeyStore = factory()
        return store
    from memory.backends.inmemory import InMemoryBackend

    if isinstance(backend, InMemoryBackend):
        with _inmemory_lock:
            return _inmemory_stores.setdefault(backend, InMemoryKeyStore())
    from memory.backends.sqlite.backend import SQLiteBackend

    if isinstance(backend, SQLiteBackend):
        from memory.backends.sqlite.keys import SQLiteKeyStore

        return SQLiteKeyStore(backend.path)
    raise ConfigError(f"the {backend.name} backend cannot store API keys yet")
