"""What differs between the SQL engines, for the stores written once over both.

A store written against :class:`Dialect` holds its SQL once, with ``?``
placeholders, and asks the dialect for the rest: its engine's placeholder,
transactions (:attr:`Dialect.read` / :attr:`Dialect.write`), which strings
the engine can store, how to bind a list to ``IN``, JSON and timestamp
values, and a lock that serialises numbering inside a transaction.

Each engine builds its dialect in its own package
(:func:`memory.backends.sqlite.dialect.sqlite_dialect`,
:func:`memory.backends.postgres.dialect.postgres_dialect`); stores never
import an engine module.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from memory.ids import from_epoch, to_epoch

__all__ = ["COMPACT_JSON", "Dialect"]

#: What ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` writes, without building an encoder per call:
#: JSON columns where JSON is text.
COMPACT_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass(frozen=True)
class Dialect:
    """One engine's answers to what the shared SQL cannot say the same way."""

    #: ``"sqlite"`` or ``"postgres"`` (for messages only: stores never branch on it).
    name: str
    #: A context manager yielding a connection for reads.
    read: Callable[[], AbstractContextManager[Any]]
    #: A context manager yielding a connection inside one write transaction (committed on success).
    write: Callable[[], AbstractContextManager[Any]]
    #: The engine's parameter placeholder (``?`` or ``%s``).
    mark: str = "?"
    #: True when text cannot hold NUL characters (PostgreSQL).
    rejects_nul: bool = False
    #: True when JSON columns take and return structured values (jsonb), False for JSON text.
    native_json: bool = False
    #: True when time columns are timestamps (timestamptz), False for epoch seconds.
    native_time: bool = False
    #: Takes a transaction-scoped lock named by a string (None: the write transaction already serialises).
    xact_lock: Callable[[Any, str], None] | None = None
    #: Wraps a structured value for a JSON parameter (jsonb adapter), when ``native_json``.
    json_adapter: Callable[[Any], Any] | None = None

    # --- episodic/graph stores ---
    #: Without arrays, lists up to this long are bound value by value (``IN (?, ?)``): SQLite's planner
    #: then uses the column's index instead of scanning a namespace for a ``json_each`` list.
    expand_up_to: int = 500
    #: Prefixed to a column the planner must not reach rows by (SQLite's unary ``+``): with ``namespace = ?
    #: AND id IN (...)`` SQLite scanned a namespace index (23 ms at 20,000 relations) instead of the ids'.
    not_indexed: str = ""
    #: True when float-vector columns are ``real[]`` (PostgreSQL), False for float32 bytes (BLOB).
    native_floats: bool = False
    #: Appended to a SELECT to hold its rows until commit ("" where write transactions already serialise).
    for_update: str = ""
    #: Appended to a SELECT so its rows cannot be deleted before commit.
    for_key_share: str = ""
    #: Appended to a claiming SELECT: lock the rows, skipping rows another transaction holds.
    skip_locked: str = ""

    def sql(self, text: str) -> str:
        """``text`` (written with ``?``) in this engine's placeholders."""
        return text if self.mark == "?" else text.replace("?", self.mark)

    def storable(self, *values: str | None) -> bool:
        """True when the engine can store every given string (None counts as storable)."""
        return all(v is None or (_utf8(v) and not (self.rejects_nul and "\x00" in v)) for v in values)

    def rows(self, conn: Any, text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of the query ``text`` (written with ``?``) as tuples."""
        return [tuple(r) for r in conn.execute(self.sql(text), tuple(params)).fetchall()]

    def in_list(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """A ``column IN (...)`` condition over ``values`` and its parameters (never an empty ``IN``)."""
        if not values:
            return "1 = 0", []
        return f"{column} IN ({', '.join('?' for _ in values)})", list(values)

    def lock(self, conn: Any, key: str) -> None:
        """Serialise writers of ``key`` until the transaction ends (a no-op where writes already are)."""
        if self.xact_lock is not None:
            self.xact_lock(conn, key)

    def json_param(self, value: Any) -> Any:
        """``value`` bound for a JSON column."""
        if self.native_json and self.json_adapter is not None:
            return self.json_adapter(value)
        return json.dumps(value)

    def json_value(self, raw: Any) -> Any:
        """A JSON column's value as Python data (the empty list and object, most rows' tags and metadata, at once)."""
        if raw == "[]":
            return []
        if raw == "{}":
            return {}
        return json.loads(raw) if isinstance(raw, (str, bytes)) else raw

    def time_param(self, value: datetime | None) -> Any:
        """``value`` bound for a time column (None stays NULL)."""
        if value is None or self.native_time:
            return value
        return to_epoch(value)

    def time_value(self, raw: Any) -> datetime | None:
        """A time column's value as an aware datetime (NULL: None)."""
        if raw is None or isinstance(raw, datetime):
            return raw
        return from_epoch(float(raw))

    # --- items store ---
    # (appended in a block of its own; the fields below have defaults, the engines set them)

    #: ``{column}`` tested against a list bound as one parameter (see :meth:`one_of`).
    one_of_sql: str = "{column} IN (SELECT value FROM json_each(?))"
    #: True when a list parameter is bound as the list itself (PostgreSQL arrays), False for JSON text.
    native_lists: bool = False
    #: Appended to a claim's SELECT so concurrent claimers skip each other's rows ("" where the
    #: write transaction already serialises claimers).
    claim_lock: str = ""
    #: An item's ``metadata["role"]`` and ``metadata["speaker"]`` (alias ``i``), read with the
    #: fields ranking reads (the engines set them; NULL: no turn's score is scaled by who said it).
    role_sql: str = "NULL"
    speaker_sql: str = "NULL"

    def one_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """A ``column`` in ``values`` condition with the list bound as ONE parameter (any length, one plan).

        Strings the engine cannot store are dropped (they can equal no stored value).
        """
        kept = [v for v in values if not isinstance(v, str) or self.storable(v)]
        param = kept if self.native_lists else json.dumps(kept, ensure_ascii=False)
        return self.one_of_sql.format(column=column), [param]

    def json_compact(self, value: Any) -> Any:
        """``value`` bound for a JSON column, as compact text (non-ASCII kept) where JSON is text."""
        if self.native_json and self.json_adapter is not None:
            return self.json_adapter(value)
        return COMPACT_JSON.encode(value)

    # --- episodic/graph stores ---
    def any_of(self, column: str, values: Sequence[str]) -> tuple[str, list[Any]]:
        """``column`` equal to one of ``values`` (strings); a long list is bound as one parameter.

        Strings the engine cannot store are dropped: they never equal a stored value.
        """
        kept = [v for v in values if self.storable(v)]
        if not self.native_lists and len(kept) <= self.expand_up_to:
            return self.in_list(column, kept)
        return self.one_of_sql.format(column=column), [kept if self.native_lists else json.dumps(kept)]

    def floats_param(self, vector: Any) -> Any:
        """A float vector (or None) bound for a vector column: ``real[]`` values or float32 bytes."""
        if vector is None:
            return None
        values = np.asarray(vector, dtype=np.float32)
        return [float(x) for x in values] if self.native_floats else values.tobytes()

    def floats_value(self, raw: Any) -> Any:
        """A vector column's value as a float32 numpy array (NULL: None)."""
        if raw is None:
            return None
        if isinstance(raw, (bytes, bytearray, memoryview)):
            return np.frombuffer(bytes(raw), dtype=np.float32).copy()
        return np.asarray(raw, dtype=np.float32)

    def run(self, conn: Any, text: str, params: Sequence[Any] = ()) -> Any:
        """Execute ``text`` (written with ``?``) with ``params``; the cursor (for ``rowcount``)."""
        return conn.execute(self.sql(text), tuple(params))

    def many(self, conn: Any, text: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run the statement ``text`` (written with ``?``) once per row of ``rows``."""
        if not rows:
            return
        cursor = conn.cursor()
        try:
            cursor.executemany(self.sql(text), rows)
        finally:
            cursor.close()
