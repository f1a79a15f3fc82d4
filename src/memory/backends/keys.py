"""Where API keys live: a tiny :class:`KeyStore` protocol and how a backend provides one.

Keys are stored in the same database as the memories (hashed; see
:mod:`memory.keys`). A backend provides its store through
:meth:`~memory.backends.base.Backend.key_store` (None when it cannot hold keys).
"""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import Protocol, runtime_checkable

from memory.backends.base import Backend
from memory.errors import ConfigError
from memory.keys import ApiKey

__all__ = ["KeyStore", "open_key_store"]


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


def open_key_store(backend: Backend) -> KeyStore:
    """The key store of ``backend``'s database. Raises ConfigError when the backend cannot hold keys."""
    store = backend.key_store()
    if store is None:
        raise ConfigError(f"the {backend.name} backend cannot store API keys")
    return store
