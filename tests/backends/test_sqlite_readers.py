"""SQLite searches read on connections of their own: recall runs its channels side by side, and neither channel
holds up the main connection's reads and writes."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from test_sqlite import DIM, MODEL, flt, make_item, record, stored

from memory import Memory
from memory.backends.sqlite import SQLiteBackend
from memory.errors import StorageError


def _run_together(threads: list[threading.Thread]) -> None:
    """Start every thread, then wait for all of them."""
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _store(path: Path) -> list[str]:
    with SQLiteBackend(path) as writer:
        items = [make_item(f"note {n} about {'tea' if n % 3 else 'coffee'} in berlin", model=None) for n in range(60)]
        writer.add([record(i, None) for i in items])
    return [i.id for i in items]


def test_lexical_search_has_its_own_connection_and_ranks_as_the_main_one(tmp_path: Path) -> None:
    _store(tmp_path / "lex.db")
    with SQLiteBackend(tmp_path / "lex.db") as backend:
        assert backend.concurrent_reads
        own = backend.search_lexical(flt(), ["coffee", "berlin"], 10)
        (reader,) = backend._readers_idle  # opened by the search, given back after it
        assert reader._conn is not backend._conn and backend._readers_open == 1
        backend.concurrent_reads = False  # type: ignore[misc]  # the same search on the main connection
        assert backend.search_lexical(flt(), ["coffee", "berlin"], 10) == own
        assert len(own) == 10 and all(hit.score > 0 for hit in own)
    with pytest.raises(StorageError, match="closed"):
        backend.search_lexical(flt(), ["coffee"], 10)
    assert backend._readers_idle == [] and backend._readers_open == 0


def test_a_write_committed_on_the_main_connection_is_found_lexically(tmp_path: Path) -> None:
    _store(tmp_path / "fresh.db")
    with SQLiteBackend(tmp_path / "fresh.db") as backend:
        assert backend.search_lexical(flt(), ["lisbon"], 5) == []  # the reader is open now
        added = make_item("moved to lisbon", model=None)
        backend.add([record(added, None)])
        assert [hit.id for hit in backend.search_lexical(flt(), ["lisbon"], 5)] == [added.id]


def test_recall_runs_the_lexical_channel_on_its_worker_thread(tmp_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(tmp_db, embedder="hashing") as mem:
        mem.remember_batch([f"note {n} about the tram to work" for n in range(30)])
        seen: list[str] = []
        search = type(mem.backend).search_lexical

        def spy(self: SQLiteBackend, *args: object, **kwargs: object) -> object:
            seen.append(threading.current_thread().name)
            return search(self, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(type(mem.backend), "search_lexical", spy)
        hits = mem.recall("tram to work", limit=5)
        assert len(hits) == 5 and "lexical" in hits[0].channels
        assert seen and all(name.startswith("memory-recall") for name in seen)


def test_recalls_and_writes_from_many_threads(tmp_db: str) -> None:
    with Memory(tmp_db, embedder="hashing") as mem:
        mem.remember_batch([f"seed {n}: tea in berlin" for n in range(50)])
        errors: list[BaseException] = []

        def work(n: int) -> None:
            try:
                for m in range(15):
                    mem.remember(f"thread {n} note {m} about tea")
                    assert mem.recall("tea in berlin", limit=5)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        _run_together([threading.Thread(target=work, args=(n,)) for n in range(6)])
        assert not errors, errors
        assert mem.stats().total == 50 + 6 * 15


def test_concurrent_lexical_searches_share_at_most_four_readers(tmp_path: Path) -> None:
    from memory.backends.sqlite.backend import READERS

    _store(tmp_path / "pool.db")
    with SQLiteBackend(tmp_path / "pool.db") as backend:
        expected = backend.search_lexical(flt(), ["tea", "berlin"], 10)
        results: list[object] = []
        errors: list[BaseException] = []

        def search() -> None:
            try:
                for _ in range(20):
                    results.append(backend.search_lexical(flt(), ["tea", "berlin"], 10))
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        _run_together([threading.Thread(target=search) for _ in range(6)])
        assert not errors, errors
        assert len(results) == 120 and all(r == expected for r in results)
        assert 1 <= backend._readers_open == len(backend._readers_idle) <= READERS == 4


def _vector_store(path: Path, count: int = 3000) -> tuple[list[str], np.ndarray]:
    """``count`` items with random unit vectors: more than the exact limit, so searches use the in-process copy."""
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((count, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    items = [make_item(f"text {n}") for n in range(count)]
    with SQLiteBackend(path) as writer:
        writer.ensure_vector_space(MODEL, DIM)
        writer.add([record(i, v) for i, v in zip(items, vectors, strict=True)])
    return [i.id for i in items], vectors


def test_vector_search_reads_on_a_reader_and_ranks_as_the_main_connection(tmp_path: Path) -> None:
    ids, vectors = _vector_store(tmp_path / "vec.db")
    query = np.random.default_rng(1).standard_normal(DIM).astype(np.float32)
    with SQLiteBackend(tmp_path / "vec.db", exact_limit=100) as backend:
        hits = backend.search_vector(flt(), MODEL, query, 10)
        (reader,) = backend._readers_idle  # opened by the search, given back after it
        assert reader._conn is not backend._conn
        expected = np.argsort(-(stored(vectors) @ (query / np.linalg.norm(query))))[:10]
        assert [h.id for h in hits] == [ids[n] for n in expected]
        backend.concurrent_reads = False  # type: ignore[misc]  # the same search on the main connection
        assert backend.search_vector(flt(), MODEL, query, 10) == hits


def test_a_vector_search_does_not_wait_for_the_main_connection(tmp_path: Path) -> None:
    ids, _ = _vector_store(tmp_path / "busy.db")
    query = np.random.default_rng(2).standard_normal(DIM).astype(np.float32)
    with SQLiteBackend(tmp_path / "busy.db", exact_limit=100) as backend:
        first = backend.search_vector(flt(), MODEL, query, 5)  # the space is known from here on
        held, release = threading.Event(), threading.Event()

        def hold_main_connection() -> None:
            with backend._read():  # a long operation on the main connection
                held.set()
                release.wait(10)

        holder = threading.Thread(target=hold_main_connection)
        holder.start()
        try:
            assert held.wait(5)
            found: list[object] = []
            searcher = threading.Thread(target=lambda: found.append(backend.search_vector(flt(), MODEL, query, 5)))
            searcher.start()
            searcher.join(5)
            assert found == [first]  # answered while the main connection was still taken
        finally:
            release.set()
            holder.join()


def test_vector_searches_and_writes_from_many_threads(tmp_path: Path) -> None:
    ids, vectors = _vector_store(tmp_path / "many.db")
    rng = np.random.default_rng(3)
    queries = rng.standard_normal((6, DIM)).astype(np.float32)
    with SQLiteBackend(tmp_path / "many.db", exact_limit=100) as backend:
        expected = [backend.search_vector(flt(), MODEL, q, 10) for q in queries]
        errors: list[BaseException] = []
        written: list[str] = []

        def search(n: int) -> None:
            try:
                for _ in range(25):
                    hits = backend.search_vector(flt(), MODEL, queries[n], 10)
                    # New items may enter the top 10; every old hit that stays keeps its exact score.
                    old = {h.id: h.score for h in expected[n]}
                    assert all(abs(h.score - old[h.id]) < 1e-6 for h in hits if h.id in old)
                    assert len(hits) == 10
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        def write() -> None:
            try:
                for m in range(40):
                    item = make_item(f"new {m}")
                    vector = rng.standard_normal(DIM).astype(np.float32)
                    backend.add([record(item, vector / np.linalg.norm(vector))])
                    written.append(item.id)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        _run_together([threading.Thread(target=search, args=(n,)) for n in range(6)] + [threading.Thread(target=write)])
        assert not errors, errors
        for item_id in written:  # every write is found by its own vector once committed
            (vector,) = backend.get_vectors("default", MODEL, [item_id]).values()
            assert backend.search_vector(flt(), MODEL, vector, 1)[0].id == item_id
