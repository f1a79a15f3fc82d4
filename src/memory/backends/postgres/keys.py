"""API keys in the PostgreSQL store (table ``api_keys``, migration ``0006_api_keys``).

Keys are not namespaced (one key may cover several namespaces, or ``*``), so
``api_keys`` is keyed by the key id alone; on Citus it would be a reference
table. Only token hashes are stored (see :mod:`memory.keys`). The store uses
its backend's pool: a key lookup is one autocommit statement.
"""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memory.backends.postgres.sql import storable
from memory.keys import ApiKey

if TYPE_CHECKING:
    from memory.backends.postgres.backend import PostgresBackend

__all__ = ["PostgresKeyStore", "API_KEYS_STATEMENTS"]

#: Statements of the appended migration that creates the table.
API_KEYS_STATEMENTS: list[str] = [
    """CREATE TABLE api_keys (
        id text PRIMARY KEY,
        name text NOT NULL,
        token_hash text NOT NULL,
        namespaces jsonb NOT NULL,
        read_only boolean NOT NULL DEFAULT false,
        secrets boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL,
        revoked_at timestamptz
    )""",
]

_COLUMNS = "id, name, token_hash, namespaces, read_only, secrets, created_at, revoked_at"


def _row(row: Any) -> ApiKey:
    return ApiKey(
        id=row[0], name=row[1], token_hash=row[2], namespaces=tuple(row[3]), read_only=bool(row[4]),
        secrets=bool(row[5]), created_at=row[6], revoked_at=row[7],
    )  # fmt: skip


class PostgresKeyStore:
    """Key records in the ``api_keys`` table of a :class:`PostgresBackend`'s schema."""

    def __init__(self, backend: PostgresBackend) -> None:
        """Use ``backend``'s pool."""
        self._b = backend

    def add(self, key: ApiKey) -> None:
        """Store a new key. Raises StorageError (e.g. an id that exists)."""
        from psycopg.types.json import Jsonb

        with self._b._tx() as conn:
            conn.execute(
                f"INSERT INTO api_keys ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (key.id, key.name, key.token_hash, Jsonb(list(key.namespaces)), key.read_only, key.secrets,
                 key.created_at, key.revoked_at),
            )  # fmt: skip

    def get(self, key_id: str) -> ApiKey | None:
        """The key with this id (revoked ones too), or None."""
        if not storable(key_id):
            return None
        with self._b._read() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM api_keys WHERE id = %s", (key_id,)).fetchone()
        return _row(row) if row else None

    def list(self) -> builtins.list[ApiKey]:
        """Every key, oldest first."""
        with self._b._read() as conn:
            rows = conn.execute(f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, id").fetchall()
        return [_row(r) for r in rows]

    def revoke(self, key_id: str, at: datetime) -> bool:
        """Mark a key revoked; False when no active key has that id."""
        if not storable(key_id):
            return False
        with self._b._tx() as conn:
            cur = conn.execute("UPDATE api_keys SET revoked_at = %s WHERE id = %s AND revoked_at IS NULL", (at, key_id))
            return bool(cur.rowcount)
