"""One SQL implementation of :class:`~memory.backends.feedback.FeedbackStore` for SQLite and PostgreSQL.

Tables (SQLite migration ``0011_feedback``, PostgreSQL ``0010_feedback``),
namespace first in every key and index:

* ``feedback_records (namespace, thread)`` — the record as a JSON document
  plus the columns queries filter on (user, agent, prompt, reward, times as
  epoch seconds); ``reflected_at`` is a column only.
* ``prompt_versions (namespace, name, version)`` — text and origin as JSON,
  ``status`` and ``promoted_at`` as columns; a partial unique index allows
  one ``active`` row per (namespace, name).

The SQL is written once with ``?`` placeholders; the engine's
:class:`~memory.backends.dialect.Dialect` supplies its placeholders,
transactions, which strings it can store and the lock taken before
numbering a new version (PostgreSQL: an advisory lock; SQLite's immediate
transactions already serialise it).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from memory.backends.dialect import Dialect
from memory.backends.feedback import (
    RecordQuery,
    check_new_prompt,
    check_origin,
    check_prompt_text,
    check_query,
    check_record,
    check_version,
    prompt_json,
    record_json,
)
from memory.errors import InvalidInputError, NotFoundError
from memory.feedback.types import ConversationRecord, PromptOrigin, PromptVersion, VersionAggregate
from memory.ids import from_epoch, to_epoch
from memory.records import check_name

__all__ = ["SQLFeedbackStore"]

_RECORD_COLUMNS = "data, reflected_at, revision"
_PROMPT_COLUMNS = "data, status, promoted_at"


def _epoch(value: datetime | None) -> float | None:
    return None if value is None else to_epoch(value)


class SQLFeedbackStore:
    """Feedback records and prompt versions over a DB-API connection (SQLite or psycopg)."""

    def __init__(self, dialect: Dialect) -> None:
        """Run on ``dialect``'s transactions (one per call)."""
        self._d = dialect
        self._read = dialect.read
        self._write = dialect.write

    # -- what the dialect answers ---------------------------------------------
    def _sql(self, text: str) -> str:
        return self._d.sql(text)

    def _lock_prompt(self, conn: Any, namespace: str, name: str) -> None:
        """Serialise version numbering of (namespace, name) inside the transaction."""
        self._d.lock(conn, f"{namespace}\x1f{name}")

    def _check_storable(self, *values: str | None) -> None:
        """Refuse values the database cannot hold (PostgreSQL: NUL characters)."""
        if not self._d.storable(*values):
            raise InvalidInputError("feedback records and prompts cannot hold NUL characters or unpaired surrogates")

    def _rows(self, conn: Any, sql: str, params: tuple[Any, ...]) -> builtins.list[tuple[Any, ...]]:
        return self._d.rows(conn, sql, params)

    # -- records -------------------------------------------------------------
    @staticmethod
    def _record(row: tuple[Any, ...]) -> ConversationRecord:
        data = json.loads(row[0])
        data["reflected_at"] = from_epoch(float(row[1])) if row[1] is not None else None
        data["revision"] = int(row[2])
        return ConversationRecord.model_validate(data)

    def put_record(self, record: ConversationRecord) -> None:
        """Insert or replace the record of (namespace, thread)."""
        check_record(record)
        data = record_json(record)
        self._check_storable(data)
        values = (*self._values(record)[:-1], record.revision, data)
        with self._write() as conn:
            conn.execute(
                self._sql(
                    "INSERT INTO feedback_records (namespace, thread, user_id, agent, prompt_name, prompt_version, "
                    "reward, created_at, updated_at, reflected_at, revision, data) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (namespace, thread) DO UPDATE SET user_id = excluded.user_id, "
                    "agent = excluded.agent, prompt_name = excluded.prompt_name, "
                    "prompt_version = excluded.prompt_version, reward = excluded.reward, "
                    "updated_at = excluded.updated_at, reflected_at = excluded.reflected_at, "
                    "revision = excluded.revision, data = excluded.data"
                ),
                values,
            )

    def save_record(self, record: ConversationRecord, expected: int | None) -> bool:
        """Write ``record`` if the stored revision is ``expected`` (None: only if absent); False otherwise."""
        check_record(record)
        data = record_json(record)
        self._check_storable(data)
        with self._write() as conn:
            if expected is None:
                cur = conn.execute(
                    self._sql(
                        "INSERT INTO feedback_records (namespace, thread, user_id, agent, prompt_name, "
                        "prompt_version, reward, created_at, updated_at, reflected_at, revision, data) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (namespace, thread) DO NOTHING"
                    ),
                    (*self._values(record)[:-1], record.revision, data),
                )
            else:
                cur = conn.execute(
                    self._sql(
                        "UPDATE feedback_records SET user_id = ?, agent = ?, prompt_name = ?, prompt_version = ?, "
                        "reward = ?, updated_at = ?, reflected_at = ?, revision = ?, data = ? "
                        "WHERE namespace = ? AND thread = ? AND revision = ?"
                    ),
                    (
                        record.user,
                        record.agent,
                        record.prompt_name,
                        record.prompt_version,
                        record.reward,
                        _epoch(record.updated_at),
                        _epoch(record.reflected_at),
                        record.revision,
                        data,
                        record.namespace,
                        record.thread,
                        expected,
                    ),  # fmt: skip
                )
            return int(cur.rowcount) == 1

    @staticmethod
    def _values(record: ConversationRecord) -> tuple[Any, ...]:
        return (
            record.namespace, record.thread, record.user, record.agent, record.prompt_name, record.prompt_version,
            record.reward, _epoch(record.created_at), _epoch(record.updated_at), _epoch(record.reflected_at),
            record_json(record),
        )  # fmt: skip

    def get_record(self, namespace: str, thread: str) -> ConversationRecord | None:
        """The record of a thread, or None."""
        check_name(namespace, "namespace", optional=False)
        check_name(thread, "thread", optional=False)
        with self._read() as conn:
            rows = self._rows(
                conn,
                f"SELECT {_RECORD_COLUMNS} FROM feedback_records WHERE namespace = ? AND thread = ?",
                (namespace, thread),
            )
        return self._record(rows[0]) if rows else None

    def namespaces(self) -> builtins.list[str]:
        """Namespaces that hold conversation records or prompt versions, sorted."""
        with self._read() as conn:
            rows = self._rows(
                conn,
                "SELECT namespace FROM feedback_records UNION SELECT namespace FROM prompt_versions ORDER BY 1",
                (),
            )
        return [str(r[0]) for r in rows]

    def iter_records(self, namespace: str, batch_size: int = 1000) -> Iterator[ConversationRecord]:
        """Every record of a namespace, by thread, ``batch_size`` per query (keyset pagination)."""
        check_name(namespace, "namespace", optional=False)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError(f"batch_size must be a positive integer, got {batch_size!r}")
        after = ""
        while True:
            with self._read() as conn:
                rows = self._rows(
                    conn,
                    f"SELECT {_RECORD_COLUMNS} FROM feedback_records WHERE namespace = ? AND thread > ? "
                    "ORDER BY thread LIMIT ?",
                    (namespace, after, batch_size),
                )
            records = [self._record(r) for r in rows]
            yield from records
            if len(records) < batch_size:
                return
            after = records[-1].thread

    def list_records(self, namespace: str, query: RecordQuery) -> builtins.list[ConversationRecord]:
        """Records matching ``query``, by last update then thread."""
        check_name(namespace, "namespace", optional=False)
        check_query(query)
        where, params = ["namespace = ?"], [namespace]
        for column, value in (("prompt_name", query.prompt_name), ("prompt_version", query.prompt_version),
                              ("user_id", query.user), ("agent", query.agent)):  # fmt: skip
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)  # type: ignore[arg-type]
        if query.reward_below is not None:
            where.append("reward < ?")
            params.append(float(query.reward_below))  # type: ignore[arg-type]
        if query.scored is True:
            where.append("reward IS NOT NULL")
        elif query.scored is False:
            where.append("reward IS NULL")
        if query.unreflected:
            where.append("reflected_at IS NULL")
        order = "DESC" if query.newest_first else "ASC"
        sql = (
            f"SELECT {_RECORD_COLUMNS} FROM feedback_records WHERE {' AND '.join(where)} "
            f"ORDER BY updated_at {order}, thread {order} LIMIT ?"
        )
        with self._read() as conn:
            rows = self._rows(conn, sql, (*params, query.limit))
        return [self._record(r) for r in rows]

    def mark_reflected(self, namespace: str, threads: builtins.list[str], at: datetime) -> int:
        """Set ``reflected_at`` of these threads' records."""
        check_name(namespace, "namespace", optional=False)
        for thread in threads:
            check_name(thread, "thread", optional=False)
        changed = 0
        with self._write() as conn:
            for thread in threads:
                cur = conn.execute(
                    self._sql(
                        "UPDATE feedback_records SET reflected_at = ?, revision = revision + 1 "
                        "WHERE namespace = ? AND thread = ?"
                    ),
                    (to_epoch(at), namespace, thread),
                )
                changed += max(int(cur.rowcount), 0)
        return changed

    def delete_records(
        self, namespace: str, *, thread: str | None = None, user: str | None = None, agent: str | None = None
    ) -> int:
        """Delete the records of a scope."""
        check_name(namespace, "namespace", optional=False)
        where, params = ["namespace = ?"], [namespace]
        for column, value, what in (("thread", thread, "thread"), ("user_id", user, "user"),
                                    ("agent", agent, "agent")):  # fmt: skip
            if check_name(value, what) is not None:
                where.append(f"{column} = ?")
                params.append(value)  # type: ignore[arg-type]
        with self._write() as conn:
            cur = conn.execute(self._sql(f"DELETE FROM feedback_records WHERE {' AND '.join(where)}"), tuple(params))
            return max(int(cur.rowcount), 0)

    # -- prompts -------------------------------------------------------------
    @staticmethod
    def _prompt(row: tuple[Any, ...]) -> PromptVersion:
        data = json.loads(row[0])
        data["status"] = str(row[1])
        data["promoted_at"] = from_epoch(float(row[2])) if row[2] is not None else None
        return PromptVersion.model_validate(data)

    def add_prompt(
        self,
        namespace: str,
        name: str,
        text: str,
        *,
        at: datetime,
        origin: PromptOrigin = "manual",
        parent: int | None = None,
        note: str = "",
        activate: bool = False,
    ) -> PromptVersion:
        """Store the next version of ``name``; the first one, or ``activate``, makes it active."""
        check_new_prompt(namespace, name, text, origin, parent, note)
        self._check_storable(namespace, name, text, note)
        with self._write() as conn:
            self._lock_prompt(conn, namespace, name)
            (latest,) = self._rows(
                conn, "SELECT MAX(version) FROM prompt_versions WHERE namespace = ? AND name = ?", (namespace, name)
            )[0]
            if parent is not None and (latest is None or parent > int(latest)):
                raise NotFoundError(f"prompt {name!r} has no version {parent} in namespace {namespace!r}")
            number = 1 if latest is None else int(latest) + 1
            active = activate or number == 1
            version = PromptVersion(
                namespace=namespace, name=name, version=number, text=text, origin=origin, parent=parent,
                status="active" if active else "candidate", note=note, created_at=at,
                promoted_at=at if active else None,
            )  # fmt: skip
            if active:
                conn.execute(
                    self._sql(
                        "UPDATE prompt_versions SET status = 'retired' "
                        "WHERE namespace = ? AND name = ? AND status = 'active'"
                    ),
                    (namespace, name),
                )
            conn.execute(
                self._sql(
                    "INSERT INTO prompt_versions (namespace, name, version, status, created_at, promoted_at, data) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)"
                ),
                (
                    namespace,
                    name,
                    number,
                    version.status,
                    to_epoch(at),
                    _epoch(version.promoted_at),
                    prompt_json(version),
                ),  # fmt: skip
            )
        return version

    def put_prompt(self, version: PromptVersion) -> bool:
        """Store a version as given (import); False when it exists. A second active one is stored retired."""
        check_name(version.namespace, "namespace", optional=False)
        check_name(version.name, "prompt name", optional=False)
        check_version(version.version)
        check_prompt_text(version.text)
        check_origin(version.origin)
        data = prompt_json(version)
        self._check_storable(data)
        ns, name = version.namespace, version.name
        with self._write() as conn:
            self._lock_prompt(conn, ns, name)
            exists = self._rows(conn, "SELECT status FROM prompt_versions WHERE namespace = ? AND name = ?", (ns, name))
            taken = self._rows(
                conn, "SELECT 1 FROM prompt_versions WHERE namespace = ? AND name = ? AND version = ?",
                (ns, name, version.version),
            )  # fmt: skip
            if taken:
                return False
            status = version.status
            if status == "active" and any(str(r[0]) == "active" for r in exists):
                status = "retired"
            conn.execute(
                self._sql(
                    "INSERT INTO prompt_versions (namespace, name, version, status, created_at, promoted_at, data) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)"
                ),
                (ns, name, version.version, status, to_epoch(version.created_at), _epoch(version.promoted_at), data),
            )
        return True

    def get_prompt(self, namespace: str, name: str, version: int | None = None) -> PromptVersion | None:
        """One version, or the active one."""
        check_name(namespace, "namespace", optional=False)
        check_name(name, "prompt name", optional=False)
        with self._read() as conn:
            if version is None:
                rows = self._rows(
                    conn,
                    f"SELECT {_PROMPT_COLUMNS} FROM prompt_versions WHERE namespace = ? AND name = ? "
                    "AND status = 'active'",
                    (namespace, name),
                )
            else:
                check_version(version)
                rows = self._rows(
                    conn,
                    f"SELECT {_PROMPT_COLUMNS} FROM prompt_versions WHERE namespace = ? AND name = ? AND version = ?",
                    (namespace, name, version),
                )
        return self._prompt(rows[0]) if rows else None

    def prompt_versions(self, namespace: str, name: str) -> builtins.list[PromptVersion]:
        """Every version of ``name``, oldest first."""
        check_name(namespace, "namespace", optional=False)
        check_name(name, "prompt name", optional=False)
        with self._read() as conn:
            rows = self._rows(
                conn,
                f"SELECT {_PROMPT_COLUMNS} FROM prompt_versions WHERE namespace = ? AND name = ? ORDER BY version",
                (namespace, name),
            )
        return [self._prompt(r) for r in rows]

    def prompt_names(self, namespace: str) -> builtins.list[str]:
        """Names of the prompts of a namespace, sorted."""
        check_name(namespace, "namespace", optional=False)
        with self._read() as conn:
            rows = self._rows(
                conn, "SELECT DISTINCT name FROM prompt_versions WHERE namespace = ? ORDER BY name", (namespace,)
            )
        return [str(r[0]) for r in rows]

    def promote(self, namespace: str, name: str, version: int, at: datetime) -> PromptVersion:
        """Make ``version`` the active one, retiring the former active one, in one transaction."""
        check_name(namespace, "namespace", optional=False)
        check_name(name, "prompt name", optional=False)
        check_version(version)
        with self._write() as conn:
            self._lock_prompt(conn, namespace, name)
            rows = self._rows(
                conn,
                f"SELECT {_PROMPT_COLUMNS} FROM prompt_versions WHERE namespace = ? AND name = ? AND version = ?",
                (namespace, name, version),
            )
            if not rows:
                raise NotFoundError(f"prompt {name!r} has no version {version} in namespace {namespace!r}")
            current = self._prompt(rows[0])
            if current.status == "active":
                return current
            conn.execute(
                self._sql(
                    "UPDATE prompt_versions SET status = 'retired' "
                    "WHERE namespace = ? AND name = ? AND status = 'active'"
                ),
                (namespace, name),
            )
            conn.execute(
                self._sql(
                    "UPDATE prompt_versions SET status = 'active', promoted_at = ? "
                    "WHERE namespace = ? AND name = ? AND version = ?"
                ),
                (to_epoch(at), namespace, name, version),
            )
        return current.model_copy(update={"status": "active", "promoted_at": at})

    def aggregates(self, namespace: str, name: str) -> builtins.list[tuple[VersionAggregate, int]]:
        """Per version: scored count, sum and sum of squares of rewards, and all attributed records."""
        check_name(namespace, "namespace", optional=False)
        check_name(name, "prompt name", optional=False)
        with self._read() as conn:
            rows = self._rows(
                conn,
                "SELECT prompt_version, COUNT(reward), SUM(reward), SUM(reward * reward), COUNT(*) "
                "FROM feedback_records WHERE namespace = ? AND prompt_name = ? AND prompt_version IS NOT NULL "
                "GROUP BY prompt_version ORDER BY prompt_version",
                (namespace, name),
            )
        return [
            (
                VersionAggregate(version=int(v), count=int(n), total=float(s or 0.0), total_squares=float(q or 0.0)),
                int(c),
            )
            for v, n, s, q, c in rows
        ]

    def delete_prompts(self, namespace: str) -> int:
        """Delete every prompt version of a namespace."""
        check_name(namespace, "namespace", optional=False)
        with self._write() as conn:
            cur = conn.execute(self._sql("DELETE FROM prompt_versions WHERE namespace = ?"), (namespace,))
            return max(int(cur.rowcount), 0)
