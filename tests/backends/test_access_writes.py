"""A recall's write of access records never waits for another writer: the accesses stay kept instead.

Before, the recall that made a batch due waited for another process's write
lock up to the busy timeout (30 s on SQLite, holding the backend's lock so
that the store's other reads waited too; on PostgreSQL without end behind a
locked row). Now it gives up at once and a later due recall, or close, writes
them (``flush_access(wait=False)``). And the due write runs behind the recall,
on the store's own thread (``access_writer``): the recall does not wait for it.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory.backends.access_log import AccessLog
from memory.backends.sqlite.backend import SQLiteBackend
from memory.backends.sqlite.connection import load_driver
from memory.backends.values import NewRecord
from memory.records import build_item, ledger_entry
from memory.registry import create
from pg_support import postgres_dsn, schema_for

NOW = datetime(2026, 5, 1, tzinfo=UTC)


def _record(content: str) -> NewRecord:
    item = build_item(content=content, namespace="ns", now=NOW)
    return NewRecord(item=item, vector=None, ledger=ledger_entry("add", item.id, "ns", NOW, after=item))


def _count(backend: object, item_id: str) -> int:
    return backend.get("ns", [item_id])[0].access_count  # type: ignore[attr-defined, no-any-return]


def test_sqlite_a_due_write_gives_way_to_another_writer(tmp_path: Path) -> None:
    driver = load_driver()  # the store's own SQLite: two copies in one process do not see each other's locks
    backend = SQLiteBackend(tmp_path / "store.db")
    reader = SQLiteBackend(tmp_path / "store.db")
    try:
        first, second = _record("tea in the morning"), _record("coffee after lunch")
        backend.add([first, second])
        backend.__dict__["_access_log"] = AccessLog(batch=2, delay=3600.0)  # due at two memories
        blocker = driver.connect(str(tmp_path / "store.db"), isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # another process writes
        try:
            started = time.monotonic()
            backend.record_access("ns", [first.item.id, second.item.id], NOW)  # due
            assert backend.access_written(10.0)
            assert time.monotonic() - started < 1.0  # the busy timeout is 30 s
            assert backend.access_writer.runs == 1  # it tried
            assert _count(backend, first.item.id) == 1  # kept: this store counts them
            assert _count(reader, first.item.id) == 0  # not written
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        backend.record_access("ns", [first.item.id], NOW + timedelta(minutes=1))  # due again: all written
        assert backend.access_written(10.0)
        assert _count(reader, first.item.id) == 2 and _count(reader, second.item.id) == 1
        assert _count(backend, first.item.id) == 2  # counted once
    finally:
        backend.close()
        reader.close()


def test_postgres_a_due_write_gives_way_to_a_locked_row(tmp_path: Path) -> None:
    import psycopg

    dsn = postgres_dsn()
    schema = schema_for(tmp_path)
    backend = create("backend", "postgres", {"dsn": dsn, "schema": schema})
    reader = create("backend", "postgres", {"dsn": dsn, "schema": schema})
    try:
        first, second = _record("tea in the morning"), _record("coffee after lunch")
        backend.add([first, second])
        backend.__dict__["_access_log"] = AccessLog(batch=2, delay=3600.0)
        with psycopg.connect(dsn) as blocker:  # another transaction holds the first row
            blocker.execute(f'SET search_path TO "{schema}"')
            blocker.execute("SELECT 1 FROM items WHERE id = %s FOR UPDATE", (first.item.id,))
            started = time.monotonic()
            backend.record_access("ns", [first.item.id, second.item.id], NOW)  # due
            assert backend.access_written(10.0)
            assert time.monotonic() - started < 5.0  # it waited its lock timeout (50 ms), not without end
            assert _count(backend, first.item.id) == 1 and _count(reader, second.item.id) == 0  # all kept
            blocker.rollback()
        backend.record_access("ns", [second.item.id], NOW + timedelta(minutes=1))
        assert backend.access_written(10.0)
        assert _count(reader, first.item.id) == 1 and _count(reader, second.item.id) == 2
    finally:
        backend.close()
        reader.close()


def test_closing_waits_for_the_lock_and_writes_what_is_kept(tmp_path: Path) -> None:
    backend = SQLiteBackend(tmp_path / "store.db")
    item = _record("a walk by the river")
    backend.add([item])
    backend.__dict__["_access_log"] = AccessLog(batch=100, delay=3600.0)
    backend.record_access("ns", [item.item.id], NOW)
    backend.close()  # close writes with the busy timeout, as before
    reader = SQLiteBackend(tmp_path / "store.db")
    try:
        assert _count(reader, item.item.id) == 1
    finally:
        reader.close()


@pytest.mark.parametrize("wait", [True, False])
def test_flush_access_writes_when_nothing_holds_the_store(tmp_path: Path, wait: bool) -> None:
    backend = SQLiteBackend(tmp_path / "store.db")
    try:
        item = _record("a quiet store")
        backend.add([item])
        backend.record_access("ns", [item.item.id], NOW)
        backend.flush_access(wait=wait)
        assert len(backend.access_log) == 0
        conn = load_driver().connect(str(tmp_path / "store.db"))
        try:
            row = conn.execute("SELECT access_count FROM items WHERE id = ?", (item.item.id,)).fetchone()
            busy = conn.execute("PRAGMA busy_timeout").fetchone()
        finally:
            conn.close()
        assert row[0] == 1 and busy is not None
        assert backend._conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30_000  # restored
    finally:
        backend.close()


def test_sqlite_the_due_recall_does_not_wait_for_the_write(tmp_path: Path) -> None:
    # Another thread of the process holds the store (a long read or write): the recall that makes
    # the batch due returns anyway, and the accesses are written once the store is free.
    backend = SQLiteBackend(tmp_path / "store.db")
    reader = SQLiteBackend(tmp_path / "store.db")
    try:
        first, second = _record("tea in the morning"), _record("coffee after lunch")
        backend.add([first, second])
        backend.__dict__["_access_log"] = AccessLog(batch=2, delay=3600.0)
        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            with backend._lock:
                held.set()
                release.wait(30.0)

        holder = threading.Thread(target=hold)
        holder.start()
        try:
            assert held.wait(10.0)
            recall = threading.Thread(target=backend.record_access, args=("ns", [first.item.id, second.item.id], NOW))
            recall.start()
            recall.join(10.0)
            assert not recall.is_alive()  # returned while the store was held
            assert not backend.access_written(0.2)  # the write waits for the store
            assert _count(reader, first.item.id) == 0
        finally:
            release.set()
            holder.join()
        assert backend.access_written(10.0)
        assert _count(reader, first.item.id) == 1 and _count(reader, second.item.id) == 1
        assert len(backend.access_log) == 0 and _count(backend, first.item.id) == 1  # counted once
    finally:
        backend.close()
        reader.close()


def test_a_due_write_goes_in_chunks_and_a_read_gets_the_store_between_them(tmp_path: Path) -> None:
    """512 rows in one transaction stalled a recall 10–23 ms at 1M memories; a chunk at a time, a read waits for one."""
    from memory.backends import access_log, items_write

    backend = SQLiteBackend(tmp_path / "store.db")
    reader = SQLiteBackend(tmp_path / "store.db")
    try:
        records = [_record(f"memory number {n}") for n in range(3 * access_log.ACCESS_CHUNK + 5)]
        backend.add(records)
        ids = [r.item.id for r in records]
        backend.__dict__["_access_log"] = AccessLog(batch=10_000, delay=3600.0)  # never due by itself
        backend.record_access("ns", ids, NOW)
        events: list[str] = []
        first_chunk = threading.Event()
        real_write = items_write.SQLItemWrites._write_access

        def slow_write(self: object, conn: object, taken: dict[object, object]) -> None:
            events.append(f"chunk {len(taken)}")
            first_chunk.set()
            time.sleep(0.05)  # a slow disk: the store is held this long per chunk
            real_write(self, conn, taken)  # type: ignore[arg-type]

        def read() -> None:
            first_chunk.wait(5.0)
            backend.get("ns", ids[:1])  # waits for the store's lock
            events.append("read")

        items_write.SQLItemWrites._write_access = slow_write  # type: ignore[method-assign]
        try:
            thread = threading.Thread(target=read)
            thread.start()
            backend.flush_access(wait=False)  # as the write-behind thread runs a due write
            thread.join(5.0)
        finally:
            items_write.SQLItemWrites._write_access = real_write  # type: ignore[method-assign]
        chunks = [e for e in events if e.startswith("chunk")]
        assert chunks == [f"chunk {access_log.ACCESS_CHUNK}"] * 3 + ["chunk 5"]
        assert events.index("read") < len(events) - 1  # the read got the store before the last chunk
        assert all(_count(reader, i) == 1 for i in ids)  # every access written once
        assert len(backend.access_log) == 0
        backend.record_access("ns", ids, NOW + timedelta(minutes=1))
        calls: list[int] = []

        def counted(self: object, conn: object, taken: dict[object, object]) -> None:
            calls.append(len(taken))
            real_write(self, conn, taken)  # type: ignore[arg-type]

        items_write.SQLItemWrites._write_access = counted  # type: ignore[method-assign]
        try:
            backend.flush_access()  # close and explicit flushes: one transaction
        finally:
            items_write.SQLItemWrites._write_access = real_write  # type: ignore[method-assign]
        assert calls == [len(ids)]
        assert all(_count(reader, i) == 2 for i in ids)
    finally:
        backend.close()
        reader.close()


def test_access_log_takes_the_oldest_first() -> None:
    kept = AccessLog(batch=100, delay=3600.0)
    kept.add("ns", ["a", "b", "c"], NOW)
    first = kept.take(2)
    assert list(first) == [("ns", "a"), ("ns", "b")] and len(kept) == 1
    assert list(kept.take(5)) == [("ns", "c")] and len(kept) == 0


def test_a_due_write_waits_for_the_store_to_be_quiet_until_it_is_urgent(tmp_path: Path) -> None:
    # A read under way (here held open by hand) keeps a due write from starting; once the
    # accesses are urgent it goes anyway, waiting at most ACCESS_YIELD_MAX for a quiet moment.
    backend = SQLiteBackend(tmp_path / "store.db")
    reader = SQLiteBackend(tmp_path / "store.db")
    try:
        first, second, third = _record("tea"), _record("coffee"), _record("cocoa")
        backend.add([first, second, third])
        backend.__dict__["_access_log"] = AccessLog(batch=2, delay=3600.0, urgent_batch=3, urgent_delay=3600.0)
        with backend._use:  # a read of the store under way
            backend.record_access("ns", [first.item.id, second.item.id], NOW)  # due, not urgent
            assert not backend.access_written(0.3)
            assert _count(reader, first.item.id) == 0 and _count(backend, first.item.id) == 1  # kept
        assert backend.access_written(10.0)  # quiet now: written
        assert _count(reader, first.item.id) == 1 and _count(reader, second.item.id) == 1
        with backend._use:  # never quiet: three memories make the accesses urgent
            backend.record_access("ns", [first.item.id, second.item.id, third.item.id], NOW)
            assert backend.access_written(10.0)
            assert _count(reader, third.item.id) == 1
        assert _count(backend, first.item.id) == 2  # counted once
    finally:
        backend.close()
        reader.close()


def test_store_use_counts_calls_under_way_and_the_quiet_since_the_last() -> None:
    from memory.backends.access_log import StoreUse

    now = [100.0]
    use = StoreUse(clock=lambda: now[0])
    assert use.quiet(0.001)  # never used
    with use:
        assert not use.quiet(0.0)
        with use:  # nested (a read inside a write)
            pass
        assert not use.quiet(0.0)  # the outer one is still under way
    assert not use.quiet(0.001)  # it just ended
    now[0] += 0.002
    assert use.quiet(0.001)
    assert use.wait_quiet(0.001, 0.0)  # already quiet: no wait
    with use:
        assert not use.wait_quiet(0.001, 0.0)  # under way and no time to wait
