"""WAL checkpoints run on a thread of their own, not in the commit that fills the log (backends/sqlite/checkpoints.py).

Real SQLite files; the log's state is read with SQLite's own pragmas on a
separate connection, the thread's with ``threading``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory.backends.sqlite.backend import SQLiteBackend
from memory.backends.sqlite.checkpoints import FALLBACK_PAGES, Checkpointer
from memory.backends.sqlite.connection import load_driver
from memory.backends.sqlite.throwaway import ThrowawaySQLiteBackend
from memory.backends.values import NewRecord
from memory.records import build_item, ledger_entry

NOW = datetime(2026, 5, 1, tzinfo=UTC)


def _records(count: int, start: int = 0) -> list[NewRecord]:
    out = []
    for i in range(start, start + count):
        words = " ".join(f"word{i * 97 + k}" for k in range(60))  # words of their own: a large full-text index
        item = build_item(content=f"note {i}: tea and {words}", namespace="ns", now=NOW)
        out.append(NewRecord(item=item, vector=None, ledger=ledger_entry("add", item.id, "ns", NOW, after=item)))
    return out


def _wait(predicate: object, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def _threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "memory-sqlite-checkpoints"]


def test_the_backends_connection_leaves_checkpoints_to_the_thread(tmp_path: Path) -> None:
    with SQLiteBackend(tmp_path / "store.db") as backend:
        with backend._read() as conn:
            assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == FALLBACK_PAGES
        assert backend._checkpointer is not None and not backend._checkpointer.running  # nothing written yet
        backend.add(_records(3000))  # about 1,400 pages of 8 KB: past SQLite's own threshold of 1,000
        checkpointer = backend._checkpointer
        assert _wait(lambda: checkpointer.runs >= 1)
        assert checkpointer.last is not None
        busy, logged, done = checkpointer.last
        assert busy == 0 and logged > 0 and done == logged  # every frame of the log is in the file
        # The log restarts from its beginning at the next write: what a commit's own checkpoint would give.
        backend.add(_records(5, start=3000))
        assert _wait(lambda: checkpointer.runs >= 2)
        assert checkpointer.last is not None and checkpointer.last[1] < logged


def test_the_commit_that_fills_the_log_returns_before_its_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with SQLiteBackend(path) as backend:
        assert backend._checkpointer is not None
        backend._checkpointer._interval = 5.0  # nothing in the background during this test's reads
        empty = path.stat().st_size
        backend.add(_records(4000))  # one commit of about 1,300 pages
        wal = Path(str(path) + "-wal").stat().st_size
        assert wal > 1000 * 8192
        # Checkpointed in the commit, the pages would be in the file now; they are still only in the log.
        assert path.stat().st_size == empty
        assert backend._checkpointer.runs == 0


def test_a_reader_sees_every_commit_while_checkpoints_run_beside(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with SQLiteBackend(path) as backend, SQLiteBackend(path) as reader:
        written: list[str] = []
        for round_ in range(6):
            batch = _records(60, start=round_ * 60)
            backend.add(batch)
            written += [r.item.id for r in batch]
            assert len(reader.get("ns", written)) == len(written)
        assert backend._checkpointer is not None
        assert _wait(lambda: backend._checkpointer.runs >= 1)  # type: ignore[union-attr]
    with SQLiteBackend(path) as again:
        assert len(again.get("ns", written)) == len(written)


def test_close_stops_the_thread_and_folds_the_log_into_the_file(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    backend = SQLiteBackend(path)
    backend.add(_records(20))
    checkpointer = backend._checkpointer
    assert checkpointer is not None and checkpointer.running
    backend.close()
    assert not checkpointer.running
    assert not Path(str(path) + "-wal").exists()  # the last connection closed: SQLite folded and removed the log
    checkpointer.committed()  # after close: starts nothing
    assert not checkpointer.running


@contextmanager
def _beside_a_connection(tmp_path: Path, interval: float, idle: float) -> Iterator[tuple[Checkpointer, Any]]:
    """A checkpointer of a store file, and a plain connection to it holding a new table ``t``."""
    path = tmp_path / "store.db"
    SQLiteBackend(path).close()
    driver = load_driver()
    checkpointer = Checkpointer(path, 5.0, driver, interval=interval, idle=idle)
    conn = driver.connect(str(path), isolation_level=None)
    try:
        conn.execute("CREATE TABLE t (x)")
        yield checkpointer, conn
    finally:
        checkpointer.close()
        conn.close()


def test_the_thread_ends_when_idle_and_the_next_commit_starts_it(tmp_path: Path) -> None:
    with _beside_a_connection(tmp_path, interval=0.01, idle=0.2) as (checkpointer, conn):
        checkpointer.committed()
        assert _wait(lambda: checkpointer.runs == 1)
        assert _wait(lambda: not checkpointer.running, 5.0)  # idle for 0.2 s: ended
        conn.execute("INSERT INTO t VALUES (1)")
        checkpointer.committed()
        assert checkpointer.running
        assert _wait(lambda: checkpointer.runs == 2)
    assert not checkpointer.running


def test_commits_in_one_interval_share_one_checkpoint(tmp_path: Path) -> None:
    with _beside_a_connection(tmp_path, interval=1.0, idle=5.0) as (checkpointer, conn):
        for i in range(20):  # well within the interval
            conn.execute("INSERT INTO t VALUES (?)", (i,))
            checkpointer.committed()
        assert _wait(lambda: checkpointer.runs >= 1)
        time.sleep(1.3)  # past another interval: nothing more was due
        assert checkpointer.runs == 1


def test_a_failing_checkpoint_is_not_raised_and_the_thread_goes_on(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir" / "x" / "store.db"
    (tmp_path / "no-such-dir").write_text("a file where a directory should be")
    checkpointer = Checkpointer(missing, 1.0, load_driver(), interval=0.01, idle=5.0)
    try:
        checkpointer.committed()
        time.sleep(0.2)
        assert checkpointer.running and checkpointer.runs == 0  # it could not connect: nothing raised
    finally:
        checkpointer.close()


def test_stores_that_keep_sqlites_own_checkpoints() -> None:
    with ThrowawaySQLiteBackend() as backend:  # in RAM, never synced
        assert backend._checkpointer is None
        with backend._read() as conn:
            assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
        before = len(_threads())
        backend.add(_records(3))
        assert len(_threads()) == before
