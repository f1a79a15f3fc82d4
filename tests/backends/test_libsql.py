"""libSQL-specific tests: URLs, the driver's translations, processes and replicas.

Everything the stores do is checked by ``tests/contract`` (libsql is one of its
backends); this file covers what only the libSQL backend has. No libSQL server
(sqld) can be installed from this machine's registries, so embedded-replica
mode is tested only up to a primary that cannot be reached.
"""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import textwrap
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory import Memory
from memory.backends import backend_name_for, open_backend
from memory.backends.libsql import LibSQLBackend
from memory.backends.libsql.driver import LibSQLDriver
from memory.embedders.hashing import HashingEmbedder
from memory.errors import ConfigError, InvalidInputError, StorageError

pytest.importorskip("libsql", reason="the libsql extra is not installed")


def test_urls_name_files_and_replicas(tmp_path: Path) -> None:
    assert backend_name_for("libsql:///rel.db") == ("libsql", {"path": "rel.db"})
    assert backend_name_for("libsql:////abs/m.db") == ("libsql", {"path": "/abs/m.db"})
    assert backend_name_for("libsql:///r.db?sync_url=libsql://db.example.turso.io") == (
        "libsql",
        {"path": "r.db", "sync_url": "libsql://db.example.turso.io"},
    )
    with pytest.raises(ConfigError, match="names no file"):
        backend_name_for("libsql:///")
    assert backend_name_for("libsql:///r.db?vector_index=on")[1] == {"path": "r.db", "vector_index": True}
    with pytest.raises(ConfigError, match="vector_index must be on or off"):
        backend_name_for("libsql:///r.db?vector_index=maybe")
    with pytest.raises(ConfigError, match="takes sync_url and vector_index"):
        backend_name_for("libsql:///r.db?authToken=secret")
    with pytest.raises(ConfigError, match="names a server") as caught:
        backend_name_for("libsql://user:hunter2@db.example.turso.io")
    assert "hunter2" not in str(caught.value)


def test_memory_round_trip_and_reopen(tmp_path: Path) -> None:
    url = f"libsql:///{tmp_path / 'agent.db'}"
    with Memory(url, embedder=HashingEmbedder()) as mem:
        assert isinstance(mem.backend, LibSQLBackend)
        first = mem.remember("Maya moved to Porto in March", user="maya")
        mem.remember("The cat is called Miso", user="maya")
        hits = mem.recall("where does Maya live", user="maya", limit=1)
        assert hits[0].item.id == first
    with Memory(url, embedder=HashingEmbedder()) as again:  # the file holds it
        assert again.get(first).content == "Maya moved to Porto in March"
        assert [h.item.id for h in again.recall("Miso", user="maya", limit=1)] != []


def test_the_file_is_sqlite_compatible(tmp_path: Path) -> None:
    """libSQL writes the SQLite file format: the SQLite backend opens what libSQL wrote."""
    path = tmp_path / "shared.db"
    with Memory(f"libsql:///{path}", embedder=HashingEmbedder()) as mem:
        written = mem.remember("written through libSQL", user="u")
    with Memory(f"sqlite:///{path}", embedder=HashingEmbedder()) as mem:
        assert mem.get(written).content == "written through libSQL"
        assert mem.recall("libSQL", user="u", limit=1)[0].item.id == written


def test_bad_text_is_refused_without_a_write(tmp_path: Path) -> None:
    with Memory(f"libsql:///{tmp_path / 'm.db'}", embedder=HashingEmbedder()) as mem:
        with pytest.raises(InvalidInputError):
            mem.remember("lone \ud800 surrogate", user="u")
        assert mem.list(user="u").items == ()


def test_threads_with_their_own_connections_do_not_deadlock(tmp_path: Path) -> None:
    """libsql holds the GIL in its busy handler; the driver waits outside it, so writers take turns."""
    path = tmp_path / "busy.db"
    LibSQLBackend(path).close()
    errors: list[BaseException] = []
    backends = [Memory(backend=LibSQLBackend(path), embedder=HashingEmbedder()) for _ in range(4)]

    def write(mem: Memory, worker: int) -> None:
        try:
            for n in range(25):
                mem.remember(f"worker {worker} note {n}", user=f"u{worker}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(m, w)) for w, m in enumerate(backends)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    for mem in backends:
        mem.close()
    assert not errors, errors
    with Memory(backend=LibSQLBackend(path), embedder=HashingEmbedder()) as mem:
        assert sum(len(mem.list(user=f"u{w}", limit=100).items) for w in range(4)) == 100


def _process_writer(path: str, worker: int, barrier: Any, queue: Any) -> None:
    from memory import Memory
    from memory.backends.libsql import LibSQLBackend
    from memory.embedders.hashing import HashingEmbedder

    try:
        with Memory(backend=LibSQLBackend(path), embedder=HashingEmbedder()) as mem:
            barrier.wait(timeout=60)
            for n in range(40):
                mem.remember(f"process {worker} fact {n}", user=f"p{worker}")
        queue.put(("ok", worker))
    except BaseException as exc:  # pragma: no cover - reported by the parent
        queue.put(("error", repr(exc)))


def test_three_processes_write_one_file(tmp_path: Path) -> None:
    path = tmp_path / "procs.db"
    LibSQLBackend(path).close()
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(3)
    queue = ctx.Queue()
    processes = [ctx.Process(target=_process_writer, args=(str(path), w, barrier, queue)) for w in range(3)]
    for p in processes:
        p.start()
    reports = [queue.get(timeout=300) for _ in processes]
    for p in processes:
        p.join(timeout=60)
    assert all(r[0] == "ok" for r in reports), reports
    with Memory(backend=LibSQLBackend(path), embedder=HashingEmbedder()) as mem:
        assert sum(len(mem.list(user=f"p{w}", limit=100).items) for w in range(3)) == 120


def test_an_unreachable_primary_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="cannot open .* as a replica of http://127.0.0.1:9"):
        LibSQLBackend(tmp_path / "replica.db", sync_url="http://127.0.0.1:9", auth_token="not-a-token")
    with pytest.raises(ConfigError, match="sync_url must be"):
        LibSQLBackend(tmp_path / "replica.db", sync_url="ftp://example.org")


def test_sync_needs_a_replica(tmp_path: Path) -> None:
    with LibSQLBackend(tmp_path / "plain.db") as backend, pytest.raises(ConfigError, match="not an embedded replica"):
        backend.sync()


def test_the_driver_maps_libsql_errors(tmp_path: Path) -> None:
    driver = LibSQLDriver()
    conn = driver.connect(str(tmp_path / "e.db"), timeout=1.0, isolation_level=None)
    conn.execute("CREATE TABLE t (a PRIMARY KEY)")
    conn.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(driver.IntegrityError):
        conn.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(driver.OperationalError, match="no such table"):
        conn.execute("SELECT * FROM missing")
    assert [tuple(r) for r in conn.execute("SELECT a FROM t")] == [(1,)]
    conn.close()


def test_without_the_package_the_error_names_the_extra(tmp_path: Path) -> None:
    code = textwrap.dedent(
        f"""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "libsql":
                    raise ImportError("blocked")
        sys.meta_path.insert(0, Block())
        from memory.backends import open_backend
        from memory.errors import ConfigError
        try:
            open_backend("libsql:///{tmp_path / "x.db"}")
        except ConfigError as exc:
            print("ConfigError:", exc)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "llm-agent-memory[libsql]" in out.stdout, out.stderr
    assert not (tmp_path / "x.db").exists()


def test_open_backend_gives_libsql(tmp_path: Path) -> None:
    backend = open_backend(f"libsql:///{tmp_path / 'o.db'}")
    try:
        assert backend.name == "libsql"
    finally:
        backend.close()


def _unit(rng: np.random.Generator, n: int, dim: int = 32) -> np.ndarray:
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _store_with_vectors(path: Path, vectors: np.ndarray, **options: Any) -> list[str]:
    """Fill a store with one memory per vector (user u0 / u1 alternating); returns the ids in order."""
    from memory.backends.base import NewRecord
    from memory.records import build_item, ledger_entry

    now = datetime(2026, 1, 1, tzinfo=UTC)
    ids = []
    with LibSQLBackend(path, **options) as backend:
        backend.ensure_vector_space("m", vectors.shape[1])
        records = []
        for n, vector in enumerate(vectors):
            item = build_item(content=f"note {n}", namespace="default", now=now, user=f"u{n % 2}")
            item = item.model_copy(update={"embedding_status": "done", "embedding_model": "m"})
            records.append(NewRecord(item, vector, ledger_entry("add", item.id, item.namespace, now, after=item)))
            ids.append(item.id)
        backend.add(records)
    return ids


def _search(backend: LibSQLBackend, query: np.ndarray, k: int, user: str | None = None) -> list[str]:
    from memory.filters import Filter

    flt = Filter(namespace="default", now=datetime(2026, 1, 2, tzinfo=UTC), user=user)
    return [h.id for h in backend.search_vector(flt, "m", query, k)]


def test_native_vector_index_finds_what_exact_search_finds(tmp_path: Path) -> None:
    """With vector_index=on, candidates come from libSQL's index; hits and scores match an exact scan."""
    rng = np.random.default_rng(7)
    data = _unit(rng, 400)
    path = tmp_path / "indexed.db"
    ids = _store_with_vectors(path, data, vector_index=True, exact_limit=20)
    queries = _unit(rng, 20)
    found = 0
    with LibSQLBackend(path, vector_index=True, exact_limit=20) as indexed:
        tables = indexed._conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'lvec_%'").fetchall()
        assert {t[0] for t in tables} >= {"lvec_1", "lvec_1_idx"}
        for query in queries:
            truth = [ids[i] for i in np.argsort(-(data @ query), kind="stable")[:10]]
            got = _search(indexed, query, 10)
            found += len(set(got) & set(truth))
            user_hits = _search(indexed, query, 5, user="u1")  # a filter keeps half the candidates
            assert all(ids.index(h) % 2 == 1 for h in user_hits) and len(user_hits) == 5
        assert not indexed._codes._indexes  # no in-process sign-bit copy was loaded
    assert found / (10 * len(queries)) >= 0.9


def test_native_vector_index_follows_deletes_and_is_built_for_an_existing_store(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    data = _unit(rng, 200)
    path = tmp_path / "later.db"
    ids = _store_with_vectors(path, data, exact_limit=20)  # written without the index
    with LibSQLBackend(path, vector_index=True, exact_limit=20) as indexed:  # opening builds and fills it
        rows = indexed._conn.execute("SELECT count(*) FROM lvec_1").fetchone()[0]
        assert rows == 200
        target = data[17]
        assert _search(indexed, target, 1) == [ids[17]]
        indexed.delete("default", [ids[17]], [])
        assert indexed._conn.execute("SELECT count(*) FROM lvec_1").fetchone()[0] == 199
        assert ids[17] not in _search(indexed, target, 5)
