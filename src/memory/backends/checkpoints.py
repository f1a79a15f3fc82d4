"""Graph checkpoints (LangGraph's checkpointer) in the memory store's own database.

One SQL implementation over a DB-API connection, for SQLite (the backend's
connection, lock and transactions; ``memory://`` is SQLite too) and PostgreSQL
(the backend's pool). Values arrive
already serialised as ``(type, bytes)`` pairs: this module never unpickles or
decodes anything. Tables, created by the engines' named migrations
(:func:`checkpoint_tables`; SQLite ``0013_langgraph_checkpoints``, PostgreSQL
``0011_langgraph_checkpoints``). Earlier versions created them on first use as
``graph_checkpoints``, ``graph_blobs`` and ``graph_writes``; the migrations
rename those (:data:`EARLIER_TABLES`), so their checkpoints are kept:

* ``langgraph_checkpoints (thread_id, checkpoint_ns, checkpoint_id)`` — the
  checkpoint without its channel values, its metadata, parent id and run id;
* ``langgraph_blobs (thread_id, checkpoint_ns, channel, version)`` — one channel
  value per version (stored once, shared by every checkpoint that saw it);
* ``langgraph_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)`` —
  pending writes of a step, in the order LangGraph replays them.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from memory.backends.base import Backend
from memory.errors import ConfigError

__all__ = [
    "CheckpointRow", "WriteRow", "SQLCheckpointStore", "EARLIER_TABLES", "checkpoint_tables", "open_checkpoint_store",
]  # fmt: skip

#: Table names of versions that created the tables on first use, and their names now.
EARLIER_TABLES = {
    "graph_checkpoints": "langgraph_checkpoints", "graph_blobs": "langgraph_blobs", "graph_writes": "langgraph_writes",
}  # fmt: skip

Typed = tuple[str, bytes]


@dataclass(frozen=True, slots=True)
class CheckpointRow:
    """One stored checkpoint (serialised)."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_id: str | None
    checkpoint: Typed
    metadata: Typed


@dataclass(frozen=True, slots=True)
class WriteRow:
    """One pending write (serialised)."""

    task_id: str
    idx: int
    channel: str
    value: Typed
    task_path: str


def checkpoint_tables(blob: str) -> list[str]:
    """The statements creating the checkpoint tables, ``blob`` the engine's bytes type (for the migrations)."""
    return [
        "CREATE TABLE IF NOT EXISTS langgraph_checkpoints (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL, "
        f"checkpoint_id TEXT NOT NULL, parent_id TEXT, run_id TEXT, type TEXT NOT NULL, checkpoint {blob} NOT NULL, "
        f"metadata_type TEXT NOT NULL, metadata {blob} NOT NULL, "
        "PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id))",
        "CREATE INDEX IF NOT EXISTS langgraph_checkpoints_run ON langgraph_checkpoints (run_id)",
        "CREATE TABLE IF NOT EXISTS langgraph_blobs (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL, "
        f"channel TEXT NOT NULL, version TEXT NOT NULL, type TEXT NOT NULL, blob {blob}, "
        "PRIMARY KEY (thread_id, checkpoint_ns, channel, version))",
        "CREATE TABLE IF NOT EXISTS langgraph_writes (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL, "
        "checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL, idx INTEGER NOT NULL, channel TEXT NOT NULL, "
        f"type TEXT NOT NULL, blob {blob} NOT NULL, task_path TEXT NOT NULL DEFAULT '', "
        "PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx))",
    ]


_CP_COLUMNS = "thread_id, checkpoint_ns, checkpoint_id, parent_id, type, checkpoint, metadata_type, metadata"


def _row(r: Sequence[Any]) -> CheckpointRow:
    return CheckpointRow(r[0], r[1], r[2], r[3], (r[4], bytes(r[5])), (r[6], bytes(r[7])))


class SQLCheckpointStore:
    """Checkpoints, channel blobs and pending writes over a DB-API connection (``?`` or ``%s`` placeholders)."""

    def __init__(
        self,
        read: Callable[[], AbstractContextManager[Any]],
        write: Callable[[], AbstractContextManager[Any]],
        *,
        mark: str = "?",
    ) -> None:
        """Run reads in ``read()`` and writes in ``write()`` (one transaction each); the migrations made the tables."""
        self._read = read
        self._write = write
        self._mark = mark

    def _sql(self, text: str) -> str:
        return text if self._mark == "?" else text.replace("?", self._mark)

    def _rows(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> builtins.list[tuple[Any, ...]]:
        return [tuple(r) for r in conn.execute(self._sql(sql), tuple(params)).fetchall()]

    # -- writes --------------------------------------------------------------
    def put(
        self,
        row: CheckpointRow,
        run_id: str | None,
        blobs: Sequence[tuple[str, str, Typed | None]],
    ) -> None:
        """Store a checkpoint (replacing one with the same id) and its new channel values (None: empty)."""
        with self._write() as conn:
            for channel, version, value in blobs:
                kind, data = value if value is not None else ("empty", None)
                conn.execute(
                    self._sql(
                        "INSERT INTO langgraph_blobs (thread_id, checkpoint_ns, channel, version, type, blob) "
                        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (thread_id, checkpoint_ns, channel, version) "
                        "DO UPDATE SET type = excluded.type, blob = excluded.blob"
                    ),
                    (row.thread_id, row.checkpoint_ns, channel, version, kind, data),
                )
            conn.execute(
                self._sql(
                    f"INSERT INTO langgraph_checkpoints ({_CP_COLUMNS}, run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET "
                    "parent_id = excluded.parent_id, type = excluded.type, checkpoint = excluded.checkpoint, "
                    "metadata_type = excluded.metadata_type, "
                    "metadata = excluded.metadata, run_id = excluded.run_id"
                ),
                (
                    row.thread_id, row.checkpoint_ns, row.checkpoint_id, row.parent_id, row.checkpoint[0],
                    row.checkpoint[1], row.metadata[0], row.metadata[1], run_id,
                ),
            )  # fmt: skip

    def put_writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, writes: Sequence[WriteRow]) -> None:
        """Store pending writes: a regular write (idx >= 0) is kept as first stored, a special one replaced."""
        with self._write() as conn:
            for w in writes:
                conflict = (
                    "DO NOTHING"
                    if w.idx >= 0
                    else "DO UPDATE SET channel = excluded.channel, type = excluded.type, blob = excluded.blob, "
                    "task_path = excluded.task_path"
                )
                conn.execute(
                    self._sql(
                        "INSERT INTO langgraph_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, "
                        "type, blob, task_path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                        f"ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) {conflict}"
                    ),
                    (
                        thread_id, checkpoint_ns, checkpoint_id, w.task_id, w.idx, w.channel, w.value[0],
                        w.value[1], w.task_path,
                    ),
                )  # fmt: skip

    def delete_thread(self, thread_id: str) -> None:
        """Remove every checkpoint, blob and write of a thread."""
        with self._write() as conn:
            for table in ("langgraph_writes", "langgraph_blobs", "langgraph_checkpoints"):
                conn.execute(self._sql(f"DELETE FROM {table} WHERE thread_id = ?"), (thread_id,))

    def delete_runs(self, run_ids: Sequence[str]) -> None:
        """Remove the checkpoints made by these runs and their writes."""
        if not run_ids:
            return
        with self._write() as conn:
            marks = ", ".join("?" for _ in run_ids)
            found = self._rows(
                conn,
                f"SELECT thread_id, checkpoint_ns, checkpoint_id FROM langgraph_checkpoints WHERE run_id IN ({marks})",
                run_ids,
            )
            self._delete_checkpoints(conn, found)

    def _delete_checkpoints(self, conn: Any, keys: Sequence[tuple[Any, ...]]) -> None:
        for key in keys:
            where = "thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
            conn.execute(self._sql(f"DELETE FROM langgraph_writes WHERE {where}"), key)
            conn.execute(self._sql(f"DELETE FROM langgraph_checkpoints WHERE {where}"), key)

    def copy_thread(self, source: str, target: str) -> None:
        """Copy every checkpoint, blob and write of ``source`` to ``target`` (same ids, replacing clashes)."""
        with self._write() as conn:
            conn.execute(
                self._sql(
                    f"INSERT INTO langgraph_checkpoints ({_CP_COLUMNS}, run_id) "
                    "SELECT ?, checkpoint_ns, checkpoint_id, parent_id, type, checkpoint, metadata_type, metadata, "
                    "run_id FROM langgraph_checkpoints WHERE thread_id = ? "
                    "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO NOTHING"
                ),
                (target, source),
            )
            conn.execute(
                self._sql(
                    "INSERT INTO langgraph_blobs (thread_id, checkpoint_ns, channel, version, type, blob) "
                    "SELECT ?, checkpoint_ns, channel, version, type, blob FROM langgraph_blobs WHERE thread_id = ? "
                    "ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO NOTHING"
                ),
                (target, source),
            )
            conn.execute(
                self._sql(
                    "INSERT INTO langgraph_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, "
                    "type, blob, task_path) SELECT ?, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob, "
                    "task_path FROM langgraph_writes WHERE thread_id = ? "
                    "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO NOTHING"
                ),
                (target, source),
            )

    def prune(self, thread_ids: Sequence[str], keep: Callable[[builtins.list[CheckpointRow]], set[str]]) -> None:
        """Per thread and namespace, delete the checkpoints whose ids ``keep(rows)`` does not return.

        ``rows`` are a namespace's checkpoints, newest first. Blobs no kept
        checkpoint refers to are left for the caller's ``versions`` check: this
        store cannot read the serialised checkpoints, so it removes blobs only
        when a namespace keeps no checkpoint at all.
        """
        with self._write() as conn:
            for thread_id in thread_ids:
                rows = [
                    _row(r)
                    for r in self._rows(
                        conn,
                        f"SELECT {_CP_COLUMNS} FROM langgraph_checkpoints WHERE thread_id = ? "
                        "ORDER BY checkpoint_ns, checkpoint_id DESC",
                        (thread_id,),
                    )
                ]
                by_ns: dict[str, builtins.list[CheckpointRow]] = {}
                for row in rows:
                    by_ns.setdefault(row.checkpoint_ns, []).append(row)
                for ns, group in by_ns.items():
                    kept = keep(group)
                    doomed = [(thread_id, ns, r.checkpoint_id) for r in group if r.checkpoint_id not in kept]
                    self._delete_checkpoints(conn, doomed)
                    if not kept:
                        conn.execute(
                            self._sql("DELETE FROM langgraph_blobs WHERE thread_id = ? AND checkpoint_ns = ?"),
                            (thread_id, ns),
                        )

    # -- reads ---------------------------------------------------------------
    def get(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str | None) -> CheckpointRow | None:
        """The checkpoint with this id, or the latest of the thread and namespace; None when absent."""
        with self._read() as conn:
            if checkpoint_id is not None:
                found = self._rows(
                    conn,
                    f"SELECT {_CP_COLUMNS} FROM langgraph_checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
                    "AND checkpoint_id = ?",
                    (thread_id, checkpoint_ns, checkpoint_id),
                )
            else:
                found = self._rows(
                    conn,
                    f"SELECT {_CP_COLUMNS} FROM langgraph_checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
                    "ORDER BY checkpoint_id DESC LIMIT 1",
                    (thread_id, checkpoint_ns),
                )
        return _row(found[0]) if found else None

    def iter_checkpoints(
        self,
        *,
        thread_id: str | None = None,
        checkpoint_ns: str | None = None,
        checkpoint_id: str | None = None,
        before: str | None = None,
        run_id: str | None = None,
        page: int = 100,
    ) -> Iterator[CheckpointRow]:
        """Checkpoints matching the filters, newest id first (thread by thread), read a page at a time."""
        clauses: builtins.list[str] = []
        params: builtins.list[Any] = []
        for column, value in (
            ("thread_id", thread_id), ("checkpoint_ns", checkpoint_ns),
            ("checkpoint_id", checkpoint_id), ("run_id", run_id),
        ):  # fmt: skip
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if before is not None:
            clauses.append("checkpoint_id < ?")
            params.append(before)
        after: tuple[str, str, str] | None = None
        while True:
            where = list(clauses)
            extra: builtins.list[Any] = []
            if after is not None:  # keyset pagination in (thread_id, checkpoint_id DESC, checkpoint_ns) order
                where.append(
                    "(thread_id > ? OR (thread_id = ? AND (checkpoint_id < ? OR (checkpoint_id = ? "
                    "AND checkpoint_ns > ?))))"
                )
                extra = [after[0], after[0], after[1], after[1], after[2]]
            sql = f"SELECT {_CP_COLUMNS} FROM langgraph_checkpoints"
            if where:
                sql += " WHERE " + " AND ".join(where)
            sql += f" ORDER BY thread_id, checkpoint_id DESC, checkpoint_ns LIMIT {int(page)}"
            with self._read() as conn:
                rows = [_row(r) for r in self._rows(conn, sql, [*params, *extra])]
            yield from rows
            if len(rows) < page:
                return
            last = rows[-1]
            after = (last.thread_id, last.checkpoint_id, last.checkpoint_ns)

    def blobs(self, thread_id: str, checkpoint_ns: str, versions: Sequence[tuple[str, str]]) -> dict[str, Typed]:
        """The stored values of ``(channel, version)`` pairs by channel; empty markers and missing ones left out."""
        out: dict[str, Typed] = {}
        if not versions:
            return out
        with self._read() as conn:
            for channel, version in versions:
                found = self._rows(
                    conn,
                    "SELECT type, blob FROM langgraph_blobs WHERE thread_id = ? AND checkpoint_ns = ? AND channel = ? "
                    "AND version = ?",
                    (thread_id, checkpoint_ns, channel, version),
                )
                if found and found[0][0] != "empty":
                    out[channel] = (found[0][0], bytes(found[0][1]))
        return out

    def writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> builtins.list[WriteRow]:
        """The pending writes of a checkpoint (unordered; the caller sorts them the way LangGraph replays)."""
        with self._read() as conn:
            found = self._rows(
                conn,
                "SELECT task_id, idx, channel, type, blob, task_path FROM langgraph_writes "
                "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
                (thread_id, checkpoint_ns, checkpoint_id),
            )
        return [WriteRow(r[0], int(r[1]), r[2], (r[3], bytes(r[4])), r[5] or "") for r in found]


def open_checkpoint_store(backend: Backend) -> SQLCheckpointStore:
    """The checkpoint store in ``backend``'s database. Raises ConfigError when the backend cannot hold one."""
    dialect = backend.dialect
    if dialect is None:
        raise ConfigError(f"the {backend.name} backend cannot store graph checkpoints")
    return SQLCheckpointStore(dialect.read, dialect.write, mark=dialect.mark)
