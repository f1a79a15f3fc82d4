"""The PostgreSQL :class:`~memory.backends.tiers.TierStore`: JSON documents in ``tier_records`` (migration 0008_tiers).

Keyed by (namespace, kind, owner, id) — namespace first, like every key of
this backend — with ``seq`` keeping insertion order. Runs on its backend's
pool, transactions and error mapping.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memory.backends.postgres.sql import storable
from memory.backends.tiers import Doc, DocumentTierStore
from memory.errors import InvalidInputError

if TYPE_CHECKING:
    from memory.backends.postgres.backend import PostgresBackend

__all__ = ["PostgresTierStore"]


class PostgresTierStore(DocumentTierStore):
    """Tier documents in one table keyed by (namespace, kind, owner, id); ``seq`` keeps insertion order."""

    def __init__(self, backend: PostgresBackend) -> None:
        """Bind to ``backend``."""
        self._backend = backend

    def _get(self, namespace: str, kind: str, owner: str, id: str) -> str | None:
        if not all(storable(v) for v in (namespace, kind, owner, id)):
            return None
        with self._backend._read() as conn:
            row = conn.execute(
                "SELECT data FROM tier_records WHERE namespace = %s AND kind = %s AND owner = %s AND id = %s",
                (namespace, kind, owner, id),
            ).fetchone()
        return str(row[0]) if row else None

    def _list(self, namespace: str, kind: str, owner: str | None) -> builtins.list[tuple[str, str, str]]:
        if not all(storable(v) for v in (namespace, kind, owner or "")):
            return []
        with self._backend._read() as conn:
            if owner is None:
                rows = conn.execute(
                    "SELECT owner, id, data FROM tier_records WHERE namespace = %s AND kind = %s ORDER BY seq",
                    (namespace, kind),
                ).fetchall()
            else:
                rows = conn.execute(
                    "SELECT owner, id, data FROM tier_records WHERE namespace = %s AND kind = %s AND owner = %s "
                    "ORDER BY seq",
                    (namespace, kind, owner),
                ).fetchall()
        return [(str(o), str(i), str(d)) for o, i, d in rows]

    def _owners(self, namespace: str, kinds: Sequence[str]) -> builtins.list[str]:
        if not storable(namespace):
            return []
        with self._backend._read() as conn:
            rows = conn.execute(
                "SELECT DISTINCT owner FROM tier_records WHERE namespace = %s AND kind = ANY(%s::text[]) "
                "ORDER BY owner",
                (namespace, [k for k in kinds if storable(k)]),
            ).fetchall()
        return [str(r[0]) for r in rows]

    def _namespaces(self) -> builtins.list[str]:
        with self._backend._read() as conn:
            rows = conn.execute("SELECT DISTINCT namespace FROM tier_records ORDER BY namespace").fetchall()
        return sorted(str(r[0]) for r in rows)

    def _apply(self, namespace: str, puts: Sequence[Doc], deletes: Sequence[tuple[str, str, str]]) -> None:
        for kind, owner, id, data in puts:
            if not all(storable(v) for v in (namespace, kind, owner, id, data)):
                raise InvalidInputError("tier records cannot hold NUL characters")
        with self._backend._tx() as conn, conn.cursor() as cur:
            if deletes:
                cur.executemany(
                    "DELETE FROM tier_records WHERE namespace = %s AND kind = %s AND owner = %s AND id = %s",
                    [(namespace, kind, owner, id) for kind, owner, id in deletes],
                )
            if puts:
                cur.executemany(
                    "INSERT INTO tier_records (namespace, kind, owner, id, data) VALUES (%s, %s, %s, %s, %s) "
                    "ON CONFLICT (namespace, kind, owner, id) DO UPDATE SET data = EXCLUDED.data",
                    [(namespace, kind, owner, id, data) for kind, owner, id, data in puts],
                )
