"""API keys in the SQLite store (table ``api_keys``, migration ``api_keys``).

Uses its own connection to the store's file (WAL), so key lookups never wait
on the memory backend's lock.
"""

from __future__ import annotations

import builtins
import json
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

from memory.backends.sqlite.connection import connect, driver_errors, load_driver
from memory.ids import from_epoch, to_epoch
from memory.keys import ApiKey

__all__ = ["SQLiteKeyStore", "API_KEYS_MIGRATION"]

#: Statements of the appended migration that creates the table.
API_KEYS_MIGRATION = [
    """CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        token_hash TEXT NOT NULL,
        namespaces TEXT NOT NULL,
        read_only INTEGER NOT NULL DEFAULT 0,
        secrets INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        revoked_at REAL
    )""",
]

_COLUMNS = "id, name, token_hash, namespaces, read_only, secrets, created_at, revoked_at"


def _row(row: Any) -> ApiKey:
    return ApiKey(
        id=row[0],
        name=row[1],
        token_hash=row[2],
        namespaces=tuple(json.loads(row[3])),
        read_only=bool(row[4]),
        secrets=bool(row[5]),
        created_at=from_epoch(row[6]),
        revoked_at=from_epoch(row[7]) if row[7] is not None else None,
    )


class SQLiteKeyStore:
    """Key records in the ``api_keys`` table of a memory SQLite file (opened by SQLiteBackend first)."""

    def __init__(self, path: str | Path) -> None:
        """Connect to the store at ``path``. Raises StorageError."""
        self.path = Path(path)
        self._driver = load_driver()
        self._conn = connect(self.path)
        self._lock = threading.Lock()

    def _errors(self) -> Any:
        return driver_errors(self._driver, self.path)

    def add(self, key: ApiKey) -> None:
        """Store a new key."""
        with self._lock, self._errors():
            self._conn.execute(
                f"INSERT INTO api_keys ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key.id, key.name, key.token_hash, json.dumps(list(key.namespaces)), int(key.read_only),
                    int(key.secrets), to_epoch(key.created_at),
                    to_epoch(key.revoked_at) if key.revoked_at else None,
                ),
            )  # fmt: skip

    def get(self, key_id: str) -> ApiKey | None:
        """The key with this id, or None."""
        with self._lock, self._errors():
            row = self._conn.execute(f"SELECT {_COLUMNS} FROM api_keys WHERE id = ?", (key_id,)).fetchone()
        return _row(row) if row else None

    def list(self) -> builtins.list[ApiKey]:
        """Every key, oldest first."""
        with self._lock, self._errors():
            rows = self._conn.execute(f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, id").fetchall()
        return [_row(r) for r in rows]

    def revoke(self, key_id: str, at: datetime) -> bool:
        """Mark a key revoked."""
        with self._lock, self._errors():
            cursor = self._conn.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (to_epoch(at), key_id)
            )
        return bool(cursor.rowcount)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()
