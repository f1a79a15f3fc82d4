"""The PostgreSQL :class:`~memory.backends.dialect.Dialect`: ``%s`` placeholders, jsonb, timestamptz.

Text cannot hold NUL characters; a transaction-scoped advisory lock named by
a string serialises numbering (prompt versions) across processes.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any

from memory.backends.dialect import Dialect

__all__ = ["postgres_dialect"]


# --- items store ---
_ITEMS: dict[str, Any] = {
    "one_of_sql": "{column} = ANY(?::text[])",
    "native_lists": True,
    "claim_lock": " FOR UPDATE SKIP LOCKED",
    "role_sql": "(i.metadata ->> 'role')",
    "speaker_sql": "(i.metadata ->> 'speaker')",
}
# --- end items store ---


def _advisory_lock(conn: Any, key: str) -> None:
    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 7361))", (key,))


def postgres_dialect(
    read: Callable[[], AbstractContextManager[Any]], write: Callable[[], AbstractContextManager[Any]]
) -> Dialect:
    """The dialect of a psycopg pool whose reads and write transactions ``read``/``write`` open."""
    from psycopg.types.json import Jsonb

    dialect = Dialect(
        name="postgres", read=read, write=write, mark="%s", rejects_nul=True, native_json=True, native_time=True,
        xact_lock=_advisory_lock, json_adapter=Jsonb, **_ITEMS,
    )  # fmt: skip
    return replace(dialect, **_EPISODIC_GRAPH)


# --- episodic/graph stores ---
#: Lists bind as ``text[]``, vectors as ``real[]``; rows are held with row locks, claims skip locked rows.
_EPISODIC_GRAPH: dict[str, Any] = {
    "native_floats": True,
    "for_update": " FOR UPDATE", "for_key_share": " FOR KEY SHARE", "skip_locked": " FOR UPDATE SKIP LOCKED",
}  # fmt: skip
