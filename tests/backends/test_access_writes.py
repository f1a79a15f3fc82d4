"""Recalls' access records are written in the background: a due write never holds up the recall that made it due.

On SQLite they go through a connection of their own, so while one is written
(or waits for the database's write lock) searches and reads go on, and reads
through the same store still count them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory import Memory
from memory.backends.access_log import AccessLog, BackgroundWrites
from memory.backends.sqlite.backend import SQLiteBackend
from memory.backends.sqlite.connection import load_driver

# The driver the store uses: two SQLite libraries in one process do not see each other's locks.
sqlite3 = load_driver()

NOW = datetime(2026, 5, 1, tzinfo=UTC)


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(f"sqlite:///{tmp_path / 'store.db'}", embedder="hashing") as memory:
        yield memory


def _counts(path: Path, item_id: str) -> tuple[int, str | None]:
    """What another process would read: the row as written."""
    conn = sqlite3.connect(str(path))
    try:
        row = conn.execute("SELECT access_count, accessed_at FROM items WHERE id = ?", (item_id,)).fetchone()
    finally:
        conn.close()
    return int(row[0]), row[1]


def test_a_due_write_does_not_wait_for_the_database_lock(mem: Memory, tmp_path: Path) -> None:
    backend = mem.backend
    assert isinstance(backend, SQLiteBackend)
    first, second = mem.remember_batch(["tea in the morning", "coffee after lunch"])
    backend.__dict__["_access_log"] = AccessLog(batch=2, delay=3600.0)  # due at two memories
    blocker = sqlite3.connect(str(tmp_path / "store.db"), isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        started = time.monotonic()
        backend.record_access("default", [first, second], NOW)  # due: handed to the writer
        assert time.monotonic() - started < 1.0  # the busy timeout is far longer
        assert mem.get(first).access_count == mem.get(second).access_count == 1  # counted while they wait
        hits = mem.recall("tea", limit=1)  # a search goes on meanwhile (and records an access of its own)
        assert [h.id for h in hits] == [first]
        assert _counts(tmp_path / "store.db", first) == (0, None)  # not written yet
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    backend.access_writes.wait()
    assert _counts(tmp_path / "store.db", first)[0] == 1 and _counts(tmp_path / "store.db", second)[0] == 1
    assert mem.get(first).access_count == 2  # the written one, and the search's still kept: each counted once
    mem.close()
    assert _counts(tmp_path / "store.db", first)[0] == 2  # close writes what is left


def test_a_failed_background_write_keeps_the_accesses_for_the_next(mem: Memory, tmp_path: Path) -> None:
    backend = mem.backend
    assert isinstance(backend, SQLiteBackend)
    (item_id,) = mem.remember_batch(["a walk by the river"])
    backend.__dict__["_access_log"] = AccessLog(batch=1, delay=3600.0)
    backend._busy_timeout = 0.05  # the writer's connection is opened with it: give up quickly
    blocker = sqlite3.connect(str(tmp_path / "store.db"), isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        backend.record_access("default", [item_id], NOW)
        backend.access_writes.wait()  # it failed: database is locked
        assert _counts(tmp_path / "store.db", item_id) == (0, None)
        assert mem.get(item_id).access_count == 1  # kept, still counted by this store
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    backend.record_access("default", [item_id], NOW + timedelta(minutes=1))  # due again: both written
    backend.access_writes.wait()
    assert _counts(tmp_path / "store.db", item_id)[0] == 2
    assert mem.get(item_id).access_count == 2


def test_requests_while_a_write_runs_make_it_write_once_more() -> None:
    calls: list[int] = []
    release = threading.Event()

    def write() -> None:
        calls.append(len(calls))
        if len(calls) == 1:
            release.wait(5)

    writes = BackgroundWrites(write)
    writes.request()
    time.sleep(0.05)
    writes.request()
    writes.request()  # one more write, not two
    release.set()
    writes.wait()
    assert calls == [0, 1]
    writes.request()  # the writer ended: a new one starts
    writes.wait()
    assert calls == [0, 1, 2]


def test_a_writer_that_raises_is_logged_and_later_requests_still_run(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[int] = []

    def write() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("boom")

    writes = BackgroundWrites(write)
    writes.request()
    writes.wait()
    writes.request()
    writes.wait()
    assert len(calls) == 2
    assert "access records failed" in caplog.text
