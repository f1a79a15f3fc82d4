"""HNSW graphs choose the vector candidates of large SQLite namespaces (issue 22: vector search at 1M).

Real usearch graphs, real SQLite files: built in the background, kept beside the
store, found again by the next process, extended by later writes, ignored when they
belong to another store or cannot be read. Scores stay exact cosines of the stored
vectors, deleted vectors never come back, and filters hold.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_sqlite import DIM, MODEL, flt, make_item, record, stored

from memory.backends.sqlite import SQLiteBackend
from memory.backends.sqlite.hnsw import graph_directory
from memory.backends.sqlite.throwaway import ThrowawaySQLiteBackend
from memory.errors import InvalidInputError
from memory.records import ledger_entry

COUNT = 3_000
GRAPH_MIN = 1_000


def _vectors(seed: int, count: int = COUNT) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _fill(path: Path, vectors: np.ndarray, **fields: object) -> list[str]:
    items = [make_item(f"text {n}", **fields) for n in range(len(vectors))]  # type: ignore[arg-type]
    with SQLiteBackend(path, vector_graph_min=0) as writer:
        writer.ensure_vector_space(MODEL, DIM)
        writer.add([record(i, v) for i, v in zip(items, vectors, strict=True)])
    return [item.id for item in items]


def _add(backend: SQLiteBackend, vectors: np.ndarray, label: str) -> list[str]:
    """Add one memory a vector ("label n") through ``backend``; their ids in order."""
    items = [make_item(f"{label} {n}") for n in range(len(vectors))]
    backend.add([record(i, v) for i, v in zip(items, vectors, strict=True)])
    return [item.id for item in items]


def _open(path: Path, **options: object) -> SQLiteBackend:
    return SQLiteBackend(path, exact_limit=0, vector_graph_min=GRAPH_MIN, **options)  # type: ignore[arg-type]


def _cosines(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Cosines of the stored (float16-rounded) vectors with ``query``: the scores searches give."""
    rows = stored(vectors)
    return (rows @ query) / np.linalg.norm(rows, axis=1) / float(np.linalg.norm(query))


def _exact(ids: list[str], vectors: np.ndarray, query: np.ndarray, k: int) -> list[str]:
    scores = _cosines(vectors, query)
    return [ids[n] for n in np.argsort(-scores)[:k]]


def _graph_of(backend: SQLiteBackend) -> object:
    """The graph the namespace's copy uses (after a search brought it up to date)."""
    backend.search_vector(flt(), MODEL, np.ones(DIM, dtype=np.float32), 1)
    (index,) = [copy for key, copy in backend._codes._indexes.items() if key[0] == "items"]
    return index.graph


def test_a_large_namespace_gets_a_graph_that_the_next_process_maps(tmp_path: Path) -> None:
    path = tmp_path / "graph.db"
    vectors = _vectors(1)
    ids = _fill(path, vectors)
    queries = _vectors(2, 30)
    with _open(path) as backend:
        backend.settle()  # builds what the namespace needs and waits for it
        assert backend._graphs.built == 1
        files = sorted(p.suffix for p in graph_directory(path).iterdir())
        assert files == [".json", ".usearch"]
        first = [backend.search_vector(flt(), MODEL, q, 10) for q in queries]
        assert _graph_of(backend) is not None
    found = 0
    for hits, query in zip(first, queries, strict=True):
        expected = _exact(ids, vectors, query, 10)
        found += len({h.id for h in hits} & set(expected))
        # Scores are the exact cosines of the stored vectors, whatever chose the candidates.
        by_id = dict(zip(ids, _cosines(vectors, query), strict=True))
        assert all(abs(h.score - float(by_id[h.id])) < 1e-5 for h in hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert found / (10 * len(queries)) >= 0.9
    with _open(path) as again:
        second = [again.search_vector(flt(), MODEL, q, 10) for q in queries]
        assert again._graphs.built == 0  # mapped from its file, not built again
        assert _graph_of(again) is not None
    assert [[h.id for h in hits] for hits in second] == [[h.id for h in hits] for hits in first]


def test_vectors_written_after_the_graph_are_found_and_then_added_to_it(tmp_path: Path) -> None:
    path = tmp_path / "tail.db"
    _fill(path, _vectors(3))
    with _open(path) as backend:
        backend.settle()
        built = _graph_of(backend)
        fresh = _vectors(4, 200)
        ids = _add(backend, fresh, "new")
        for n in (0, 77, 199):  # each new vector is its own nearest neighbour
            hits = backend.search_vector(flt(), MODEL, fresh[n], 3)
            assert hits[0].id == ids[n]
            assert hits[0].score == pytest.approx(float(_cosines(fresh[n : n + 1], fresh[n])[0]), abs=1e-5)
        assert _graph_of(backend) is built  # a small tail is searched by its sign bits
        more = _vectors(5, 6_000)  # a tail past its share: the graph is extended in the background
        _add(backend, more, "more")
        backend.settle()
        extended = _graph_of(backend)
        assert extended is not built and extended.size == COUNT + 200 + 6_000  # type: ignore[attr-defined]
    assert len(list(graph_directory(path).glob("*.usearch"))) == 1  # the one it replaced is gone


def test_deleted_and_replaced_vectors_never_come_back(tmp_path: Path) -> None:
    path = tmp_path / "stale.db"
    vectors = _vectors(6)
    ids = _fill(path, vectors)
    query = _vectors(7, 1)[0]
    with _open(path) as backend:
        backend.settle()
        top = [h.id for h in backend.search_vector(flt(), MODEL, query, 10)]
        gone = top[:3]
        backend.delete("default", gone, [ledger_entry("delete", g, "default", make_item("x").created_at) for g in gone])
        moved = top[3]
        away = -query  # its new vector points the other way
        backend.set_vectors("default", MODEL, [(moved, away)])
        hits = backend.search_vector(flt(), MODEL, query, 10)
        assert not {h.id for h in hits} & {*gone, moved}
        assert [h.id for h in hits][:6] == top[4:10]
        worst = backend.search_vector(flt(), MODEL, away, 1)
        assert worst[0].id == moved and worst[0].score == pytest.approx(1.0, abs=1e-3)
    assert len(ids) == COUNT


def test_many_deletions_rebuild_the_graph(tmp_path: Path) -> None:
    path = tmp_path / "rebuild.db"
    ids = _fill(path, _vectors(8))
    with _open(path) as backend:
        backend.settle()
        gone = ids[: COUNT // 5]
        backend.delete("default", gone, [ledger_entry("delete", g, "default", make_item("x").created_at) for g in gone])
        hits = backend.search_vector(flt(), MODEL, _vectors(9, 1)[0], 10)
        assert not {h.id for h in hits} & set(gone)
        backend.settle()
        assert backend._graphs.built == 2
        assert _graph_of(backend).size == COUNT - len(gone)  # type: ignore[attr-defined]


# 1 in 250 with k = 6: the graph is asked for 20 candidates first and far more are needed; the widest search
# stays 64 x 40 candidates (most of these 3,000), not 64 x the first ask, so the rare items are still found.
@pytest.mark.parametrize("every,k,seed", [(50, 5, 10), (250, 6, 12)])
def test_filters_hold_with_a_graph(tmp_path: Path, every: int, k: int, seed: int) -> None:
    path = tmp_path / "filter.db"
    vectors = _vectors(seed)
    items = [make_item(f"text {n}", user="rare" if n % every == 0 else "common") for n in range(COUNT)]
    with SQLiteBackend(path, vector_graph_min=0) as writer:
        writer.ensure_vector_space(MODEL, DIM)
        writer.add([record(i, v) for i, v in zip(items, vectors, strict=True)])
    rare = {items[n].id for n in range(COUNT) if n % every == 0}
    with _open(path) as backend:
        backend.settle()
        for query in _vectors(seed + 1, 5):
            hits = backend.search_vector(flt(user="rare"), MODEL, query, k)
            assert len(hits) == k and {h.id for h in hits} <= rare


def test_a_graph_left_by_another_store_at_the_same_path_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "reused.db"
    _fill(path, _vectors(12))
    with _open(path) as backend:
        backend.settle()
    for leftover in tmp_path.glob("reused.db*"):
        if leftover.is_file():
            leftover.unlink()
    vectors = _vectors(13)
    ids = _fill(path, vectors)  # a new store, its graph directory still there
    query = vectors[42]
    with _open(path) as backend:
        hits = backend.search_vector(flt(), MODEL, query, 1)
        assert hits[0].id == ids[42]
        assert _graph_of(backend) is None and backend._graphs.built == 0
        backend.settle()
        assert backend._graphs.built == 1


def test_a_damaged_graph_file_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "damaged.db"
    vectors = _vectors(14)
    ids = _fill(path, vectors)
    with _open(path) as backend:
        backend.settle()
    (graph_file,) = graph_directory(path).glob("*.usearch")
    graph_file.write_bytes(graph_file.read_bytes()[:100])
    with _open(path) as backend:
        assert backend.search_vector(flt(), MODEL, vectors[7], 1)[0].id == ids[7]
        backend.settle()
        assert backend._graphs.built == 1 and _graph_of(backend) is not None
    meta = json.loads(next(graph_directory(path).glob("*.json")).read_text())
    assert meta["size"] == COUNT


def test_below_the_size_or_with_graphs_off_there_is_no_graph(tmp_path: Path) -> None:
    path = tmp_path / "small.db"
    _fill(path, _vectors(15))
    with SQLiteBackend(path, exact_limit=0, vector_graph_min=0) as backend:
        backend.settle()
        backend.search_vector(flt(), MODEL, _vectors(16, 1)[0], 10)
        assert _graph_of(backend) is None
    with SQLiteBackend(path, exact_limit=0, vector_graph_min=COUNT + 1) as backend:
        backend.settle()
        backend.search_vector(flt(), MODEL, _vectors(16, 1)[0], 10)
        assert _graph_of(backend) is None
    assert not graph_directory(path).exists()
    for bad in (-1, 1.5, True):
        with pytest.raises(InvalidInputError, match="vector_graph_min"):
            SQLiteBackend(path, vector_graph_min=bad)  # type: ignore[arg-type]


def test_closing_during_a_build_stops_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import memory.backends.sqlite.hnsw as hnsw_module

    monkeypatch.setattr(hnsw_module, "BUILD_CHUNK", 16)
    path = tmp_path / "closing.db"
    _fill(path, _vectors(17))
    backend = _open(path)
    backend.search_vector(flt(), MODEL, _vectors(18, 1)[0], 10)  # starts the build
    backend.close()
    assert backend._graphs.wait(timeout=0)
    assert not list(graph_directory(path).glob("*.json"))  # a build stopped half way writes nothing


def test_a_throwaway_store_deletes_its_graphs_with_it() -> None:
    backend = ThrowawaySQLiteBackend(exact_limit=0, vector_graph_min=GRAPH_MIN)
    directory = graph_directory(backend.path)
    vectors = _vectors(19)
    backend.ensure_vector_space(MODEL, DIM)
    _add(backend, vectors, "t")
    backend.settle()
    assert directory.is_dir() and _graph_of(backend) is not None
    backend.close()
    assert not directory.exists()


def test_files_left_by_failed_or_lost_builds_are_removed_once_old(tmp_path: Path) -> None:
    import os
    import time

    path = tmp_path / "leftovers.db"
    _fill(path, _vectors(20))
    directory = graph_directory(path)
    directory.mkdir()
    stem = "items-1-" + __import__("hashlib").sha256(b"default").hexdigest()[:16]
    old, fresh = directory / f"{stem}-1-1.usearch", directory / f"{stem}-2-2.usearch"
    for leftover in (old, fresh):
        leftover.write_bytes(b"half a graph")
    two_hours_ago = time.time() - 7200
    os.utime(old, (two_hours_ago, two_hours_ago))
    with _open(path) as backend:
        backend.settle()
        assert _graph_of(backend) is not None
    assert not old.exists() and fresh.exists()  # a recent one may be another process's, on its way
    assert len(list(directory.glob("*.usearch"))) == 2


def test_messages_of_a_large_namespace_get_their_own_graph(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from memory.episodic.types import Message, MessageQuery
    from memory.ids import new_id

    at = datetime(2026, 1, 1, tzinfo=UTC)
    vectors = _vectors(21, 1_500)
    with _open(tmp_path / "messages.db") as backend:
        backend.ensure_vector_space(MODEL, DIM)
        store = backend.episodic
        stored = store.append_messages(
            [
                Message(id=new_id(), namespace="ns", thread=f"t{n % 3}", role="user", content=f"m {n}", created_at=at)
                for n in range(len(vectors))
            ]
        )
        store.set_message_vectors("ns", MODEL, [(m.id, vectors[n]) for n, m in enumerate(stored)])
        backend.settle()
        assert backend._graphs.built == 1
        assert {p.name.split("-")[0] for p in graph_directory(backend.path).glob("*.usearch")} == {"messages"}
        query = MessageQuery(namespace="ns", now=at)
        for n in (3, 500, 1_499):
            hits = store.search_messages_vector(query, MODEL, vectors[n], 3)
            assert hits[0].id == stored[n].id
        (copy,) = [c for key, c in backend._codes._indexes.items() if key[0] == "messages"]
        assert copy.graph is not None
        in_thread = store.search_messages_vector(query.model_copy(update={"thread": "t1"}), MODEL, vectors[1], 3)
        assert in_thread[0].id == stored[1].id and {h.id for h in in_thread} <= {m.id for m in stored[1::3]}


def test_a_build_a_search_starts_leaves_a_core_to_the_searches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memory.backends.sqlite.hnsw import GraphIndexes

    used: list[int] = []
    original = GraphIndexes._build

    def recording(self: GraphIndexes, *args: object) -> None:
        used.append(args[-1])  # type: ignore[arg-type]
        original(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(GraphIndexes, "_build", recording)
    path = tmp_path / "threads.db"
    ids = _fill(path, _vectors(22))
    with _open(path) as backend:
        graphs = backend._graphs
        assert graphs.threads >= 1 and graphs.background_threads == max(1, min(graphs.threads, graphs.threads - 1))
        backend.search_vector(flt(), MODEL, _vectors(23, 1)[0], 10)  # a search starts it
        assert graphs.wait(timeout=60)
        gone = ids[: COUNT // 5]
        backend.delete("default", gone, [ledger_entry("delete", g, "default", make_item("x").created_at) for g in gone])
        backend.settle()  # a rebuild settle starts and waits for
    assert used == [graphs.background_threads, graphs.threads]


def test_writes_and_searches_go_on_while_a_graph_is_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    import memory.backends.sqlite.hnsw as hnsw_module

    monkeypatch.setattr(hnsw_module, "BUILD_CHUNK", 64)  # a build of many steps, to overlap with the others
    path = tmp_path / "busy.db"
    _fill(path, _vectors(24))
    fresh = _vectors(25, 600)
    items = [make_item(f"busy {n}") for n in range(len(fresh))]
    errors: list[BaseException] = []
    with _open(path) as backend:
        backend.search_vector(flt(), MODEL, fresh[0], 5)  # starts the build

        def write() -> None:
            try:
                for start in range(0, len(items), 50):
                    chunk = range(start, start + 50)
                    backend.add([record(items[n], fresh[n]) for n in chunk])
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        def search() -> None:
            try:
                for n in range(60):
                    hits = backend.search_vector(flt(), MODEL, _vectors(26 + n, 1)[0], 10)
                    assert len(hits) == 10 and len({h.id for h in hits}) == 10
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        workers = [threading.Thread(target=write), threading.Thread(target=search)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert not errors, errors
        backend.settle()
        assert _graph_of(backend) is not None
        for n in (0, 299, 599):  # written during the build: in the graph or its tail
            assert backend.search_vector(flt(), MODEL, fresh[n], 1)[0].id == items[n].id


def test_a_graph_that_cannot_be_written_leaves_the_search_as_it_was(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    path = tmp_path / "readonly.db"
    vectors = _vectors(27)
    ids = _fill(path, vectors)
    graph_directory(path).write_text("a file where the folder would go")  # the folder cannot be made
    with caplog.at_level(logging.INFO, logger="memory.backends.sqlite.hnsw"), _open(path) as backend:
        backend.settle()
        assert backend._graphs.built == 0 and _graph_of(backend) is None
        assert backend.search_vector(flt(), MODEL, vectors[9], 1)[0].id == ids[9]
        backend.settle()  # not retried at once: a failed build waits RETRY_SECONDS
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("building the vector graph of namespace 'default'") for m in messages)
    assert sum("failed (retried in 600 s)" in m for m in messages) == 1


def test_a_graph_to_extend_that_is_gone_is_built_again(tmp_path: Path) -> None:
    path = tmp_path / "gone.db"
    _fill(path, _vectors(28))
    with _open(path) as backend:
        backend.settle()
        graph = _graph_of(backend)
        graph.path.unlink()  # type: ignore[attr-defined]  # e.g. another process replaced it and cleaned up
        more = _vectors(29, 6_000)
        ids = _add(backend, more, "more")
        backend.settle()
        rebuilt = _graph_of(backend)
        assert rebuilt is not graph and rebuilt.size == COUNT + 6_000  # type: ignore[attr-defined]
        assert backend.search_vector(flt(), MODEL, more[123], 1)[0].id == ids[123]


@pytest.mark.parametrize("cache_mb", [512, 0], ids=["float-copy", "table"])
def test_every_filter_and_clearance_holds_on_the_graph_path(tmp_path: Path, cache_mb: int) -> None:
    from test_sqlite import FILTERS, _fill

    from memory.filters import matches

    rng = np.random.default_rng(30)
    vectors = rng.standard_normal((COUNT, DIM)).astype(np.float32)
    with _open(tmp_path / "filters.db", vector_cache_mb=cache_mb) as backend:
        backend.ensure_vector_space(MODEL, DIM)
        items = _fill(backend, vectors)
        backend.settle()
        assert _graph_of(backend) is not None
        by_id = {item.id: item for item in items}
        for fields in FILTERS:
            f = flt(**fields)
            for query in rng.standard_normal((3, DIM)).astype(np.float32):
                hits = backend.search_vector(f, MODEL, query, 10)
                assert hits and all(matches(f, by_id[h.id]) for h in hits), fields
                if f.clearance != "secret":
                    assert all(by_id[h.id].sensitivity != "secret" for h in hits)


def test_the_onnx_runtime_still_loads_once_a_graph_has_loaded_usearch() -> None:
    """onnxruntime's extension crashes the process when it loads after usearch's: graphs load it first."""
    pytest.importorskip("onnxruntime")
    script = (
        "from memory.backends.sqlite import hnsw\n"
        "assert hnsw._usearch() is not None\n"
        "import onnxruntime\n"
        "print(onnxruntime.get_available_providers())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "CPUExecutionProvider" in done.stdout


def test_a_graph_written_before_its_vector_versions_upgrades(tmp_path: Path) -> None:
    """Relations stored before ``graph_vector_versions`` are searched, and later changes are seen."""
    from datetime import UTC, datetime

    from memory.backends.sqlite.connection import connect
    from memory.backends.sqlite.migrations import MIGRATIONS, apply_migrations

    db = tmp_path / "graph-era.db"
    conn = connect(db)
    try:
        versions = next(i for i, m in enumerate(MIGRATIONS) if m.name.endswith("_graph_vector_versions"))
        apply_migrations(conn, MIGRATIONS[:versions])
        at = datetime.now(UTC).timestamp()
        conn.execute(
            "INSERT INTO graph_entities (id, namespace, name, type, created_at, updated_at) VALUES "
            "('e1', 'ns', 'Alice', 'person', ?, ?), ('e2', 'ns', 'Acme', 'organisation', ?, ?)",
            (at, at, at, at),
        )
        conn.execute(
            "INSERT INTO graph_relations (id, namespace, subject_id, predicate, object_id, model, embedding, "
            "created_at) VALUES ('r1', 'ns', 'e1', 'works at', 'e2', 'm', ?, ?)",
            (np.array([0, 1, 0], np.float32).tobytes(), at),
        )
        conn.commit()
    finally:
        conn.close()
    query = np.array([0, 1, 0.2], np.float32)
    with SQLiteBackend(db) as backend:
        store = backend.graph
        assert [r.id for r, _ in store.search_relations("ns", "m", query, 3)] == ["r1"]
        later = store.upsert_relation(
            "ns", "e2", "employs", "e1", datetime.now(UTC), vector=np.array([0, 1, 0.2], np.float32), model="m"
        )
        assert [r.id for r, _ in store.search_relations("ns", "m", query, 3)] == [later.id, "r1"]


def test_a_process_that_exits_during_a_build_without_closing_exits_cleanly(tmp_path: Path) -> None:
    """A script that never closes its store, exiting while usearch builds a graph, was killed by SIGABRT (134)."""
    path = tmp_path / "unclosed.db"
    rng = np.random.default_rng(23)
    vectors = rng.standard_normal((12_000, 384)).astype(np.float32)
    items = [make_item(f"text {n}") for n in range(len(vectors))]
    with SQLiteBackend(path, vector_graph_min=0) as writer:
        writer.ensure_vector_space(MODEL, 384)
        writer.add([record(i, v) for i, v in zip(items, vectors, strict=True)])
    script = (
        "import sys, time\n"
        "import numpy as np\n"
        "from memory.backends.sqlite import SQLiteBackend\n"
        "from memory.filters import Filter\n"
        f"backend = SQLiteBackend({str(path)!r}, exact_limit=0, vector_graph_min=1_000)\n"
        "flt = Filter(namespace='default', now=__import__('datetime').datetime.now(__import__('datetime').UTC))\n"
        f"backend.search_vector(flt, {MODEL!r}, np.ones(384, dtype=np.float32), 10)  # starts the build\n"
        "time.sleep(1.0)  # inside usearch's add by now\n"
        "print('exiting', flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "exiting" in done.stdout
    assert not list(graph_directory(path).glob("*.json"))  # stopped half way: nothing written
