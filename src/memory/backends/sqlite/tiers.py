"""The SQLite :class:`~memory.backends.tiers.TierStore`: JSON documents in ``tier_records`` (migration 0010_tiers).

Runs on its backend's connection, lock, transactions and error mapping.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memory.backends.tiers import Doc, DocumentTierStore

if TYPE_CHECKING:
    from memory.backends.sqlite.backend import SQLiteBackend

__all__ = ["SQLiteTierStore"]


class SQLiteTierStore(DocumentTierStore):
    """Tier documents in one table keyed by (namespace, kind, owner, id); ``seq`` keeps insertion order."""

    def __init__(self, backend: SQLiteBackend) -> None:
        """Bind to ``backend``."""
        self._backend = backend

    def _get(self, namespace: str, kind: str, owner: str, id: str) -> str | None:
        with self._backend._read() as conn:
            row = conn.execute(
                "SELECT data FROM tier_records WHERE namespace = ? AND kind = ? AND owner = ? AND id = ?",
                (namespace, kind, owner, id),
            ).fetchone()
        return str(row[0]) if row else None

    def _list(self, namespace: str, kind: str, owner: str | None) -> builtins.list[tuple[str, str, str]]:
        with self._backend._read() as conn:
            if owner is None:
                rows = conn.execute(
                    "SELECT owner, id, data FROM tier_records WHERE namespace = ? AND kind = ? ORDER BY seq",
                    (namespace, kind),
                ).fetchall()
            else:
                rows = conn.execute(
                    "SELECT owner, id, data FROM tier_records WHERE namespace = ? AND kind = ? AND owner = ? "
                    "ORDER BY seq",
                    (namespace, kind, owner),
                ).fetchall()
        return [(str(o), str(i), str(d)) for o, i, d in rows]

    def _owners(self, namespace: str, kinds: Sequence[str]) -> builtins.list[str]:
        marks = ", ".join("?" for _ in kinds)
        with self._backend._read() as conn:
            rows = conn.execute(
                f"SELECT DISTINCT owner FROM tier_records WHERE namespace = ? AND kind IN ({marks}) ORDER BY owner",
                (namespace, *kinds),
            ).fetchall()
        return [str(r[0]) for r in rows]

    def _namespaces(self) -> builtins.list[str]:
        with self._backend._read() as conn:
            rows = conn.execute("SELECT DISTINCT namespace FROM tier_records ORDER BY namespace").fetchall()
        return [str(r[0]) for r in rows]

    def _apply(self, namespace: str, puts: Sequence[Doc], deletes: Sequence[tuple[str, str, str]]) -> None:
        with self._backend._write() as conn:
            conn.executemany(
                "DELETE FROM tier_records WHERE namespace = ? AND kind = ? AND owner = ? AND id = ?",
                [(namespace, kind, owner, id) for kind, owner, id in deletes],
            )
            conn.executemany(
                "INSERT INTO tier_records (namespace, kind, owner, id, data) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (namespace, kind, owner, id) DO UPDATE SET data = excluded.data",
                [(namespace, kind, owner, id, data) for kind, owner, id, data in puts],
            )
