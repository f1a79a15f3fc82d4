"""``memory://``: the SQLite backend on a throwaway file — same behaviour, nothing left after close."""

from __future__ import annotations

import time
from pathlib import Path

from memory import Memory
from memory.backends import open_backend
from memory.backends.sqlite import SQLiteBackend
from memory.backends.sqlite.throwaway import ThrowawaySQLiteBackend
from memory.embedders.hashing import HashingEmbedder


def test_memory_url_opens_sqlite_on_a_private_file_that_close_deletes() -> None:
    backend = open_backend("memory://")
    assert isinstance(backend, ThrowawaySQLiteBackend) and isinstance(backend, SQLiteBackend)
    assert backend.path is not None
    directory = Path(backend.path).parent
    assert directory.is_dir() and backend.graph is not None and backend.episodic is not None
    backend.close()
    assert not directory.exists()
    backend.close()  # idempotent


def test_two_stores_are_separate_and_every_file_goes() -> None:
    first, second = Memory("memory://", embedder=HashingEmbedder()), Memory(":memory:", embedder=HashingEmbedder())
    first.remember("only in the first store")
    assert first.stats().total == 1 and second.stats().total == 0
    first.messages.append(thread="t", role="user", content="hello")
    dirs = [Path(m.backend.path).parent for m in (first, second)]  # type: ignore[arg-type]
    assert dirs[0] != dirs[1]
    for mem in (first, second):
        mem.close()
    assert not any(d.exists() for d in dirs)


def test_a_store_dropped_without_close_is_deleted_too() -> None:
    backend = ThrowawaySQLiteBackend()
    directory = Path(backend.path).parent  # type: ignore[arg-type]
    backend._cleanup()  # what the finalizer runs when the object is collected or the process exits
    assert not directory.exists()
    backend.close()


def test_opening_is_fast() -> None:
    started = time.perf_counter()
    for _ in range(5):
        open_backend("memory://").close()
    assert (time.perf_counter() - started) / 5 < 1.0  # a few milliseconds in practice; generous on a loaded CI
