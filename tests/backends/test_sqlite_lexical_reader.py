"""The SQLite lexical channel reads on a connection of its own, so recall runs it beside the vector channel."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from test_sqlite import flt, make_item, record

from memory import Memory
from memory.backends.sqlite import SQLiteBackend
from memory.errors import StorageError


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
        (reader,) = backend._lexical_idle  # opened by the search, given back after it
        assert reader._conn is not backend._conn and backend._lexical_open == 1
        backend.concurrent_reads = False  # type: ignore[misc]  # the same search on the main connection
        assert backend.search_lexical(flt(), ["coffee", "berlin"], 10) == own
        assert len(own) == 10 and all(hit.score > 0 for hit in own)
    with pytest.raises(StorageError, match="closed"):
        backend.search_lexical(flt(), ["coffee"], 10)
    assert backend._lexical_idle == [] and backend._lexical_open == 0


def test_a_write_committed_on_the_main_connection_is_found_lexically(tmp_path: Path) -> None:
    _store(tmp_path / "fresh.db")
    with SQLiteBackend(tmp_path / "fresh.db") as backend:
        assert backend.search_lexical(flt(), ["lisbon"], 5) == []  # the reader is open now
        added = make_item("moved to lisbon", model=None)
        backend.add([record(added, None)])
        assert [hit.id for hit in backend.search_lexical(flt(), ["lisbon"], 5)] == [added.id]


def test_contents_do_not_wait_for_a_search_holding_the_main_connection(tmp_path: Path) -> None:
    # Recall's feedback reads its lexical candidates' texts on the lexical thread while the vector
    # search holds the main connection: they are read on a lexical connection instead of waiting.
    ids = _store(tmp_path / "texts.db")
    with SQLiteBackend(tmp_path / "texts.db") as backend:
        found: dict[str, str] = {}
        with backend._lock:  # what a vector search in another thread holds
            reader = threading.Thread(target=lambda: found.update(backend.contents("default", ids[:3])))
            reader.start()
            reader.join(timeout=10)
            assert not reader.is_alive()
        assert found == {i: f"note {n} about {'tea' if n % 3 else 'coffee'} in berlin" for n, i in enumerate(ids[:3])}
        backend.concurrent_reads = False  # type: ignore[misc]  # libSQL's case: the main connection, same texts
        assert backend.contents("default", ids[:3]) == found


def _lexical_threads(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads that run ``mem``'s lexical searches from now on, in order."""
    seen: list[str] = []
    search = type(mem.backend).search_lexical

    def spy(self: SQLiteBackend, *args: object, **kwargs: object) -> object:
        seen.append(threading.current_thread().name)
        return search(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(type(mem.backend), "search_lexical", spy)
    return seen


def test_recall_runs_the_lexical_channel_on_its_worker_thread(tmp_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(tmp_db, embedder="hashing") as mem:
        mem.remember_batch([f"note {n} about the tram to work" for n in range(30)])
        seen = _lexical_threads(mem, monkeypatch)
        hits = mem.recall("tram to work", limit=5)
        assert len(hits) == 5 and "lexical" in hits[0].channels
        assert seen and all(name.startswith("memory-recall") for name in seen)


def test_a_cheap_lexical_channel_runs_on_the_recalling_thread(tmp_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import memory.retrieval.recall as recall_module

    with Memory(tmp_db, embedder="hashing") as mem:
        mem.remember_batch([f"note {n} about the tram to work" for n in range(30)])
        mem.remember_batch([f"note {n} about the tram to work" for n in range(30)], namespace="other")
        seen = _lexical_threads(mem, monkeypatch)
        # The bound far above what 30 short notes cost on any machine: the routing is tested, not the speed.
        monkeypatch.setattr(recall_module, "LEXICAL_INLINE_CPU", 0.05)
        first = mem.recall("tram to work", limit=5)  # its cost is not known yet: on a worker
        assert seen and all(name.startswith("memory-recall") for name in seen)
        for _ in range(2):  # on the worker or not, as the first (cold) cost says; then as the second says
            seen.clear()
            again = mem.recall("tram to work", limit=5)
        assert seen and all(name == threading.current_thread().name for name in seen)
        ranks = [
            [(h.id, {name: (c.rank, c.raw) for name, c in h.channels.items()}) for h in hits] for hits in (first, again)
        ]
        assert ranks[0] == ranks[1]  # the same channels' hits (the final scores move with the clock's recency)

        monkeypatch.setattr(recall_module, "LEXICAL_INLINE_CPU", 0.0)  # every namespace's channel is costly now
        seen.clear()
        mem.recall("tram to work", limit=5)
        assert seen and all(name.startswith("memory-recall") for name in seen)

        monkeypatch.setattr(recall_module, "LEXICAL_COSTS_KEPT", 1)
        mem.recall("tram to work", limit=5, namespace="other")  # forgets the default namespace's cost
        assert list(mem._recall._lexical_cpu) == ["other"]


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

        threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert mem.stats().total == 50 + 6 * 15


def test_concurrent_lexical_searches_share_at_most_two_readers(tmp_path: Path) -> None:
    from memory.backends.sqlite.backend import LEXICAL_READERS

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

        threads = [threading.Thread(target=search) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert len(results) == 120 and all(r == expected for r in results)
        assert 1 <= backend._lexical_open == len(backend._lexical_idle) <= LEXICAL_READERS == 2
