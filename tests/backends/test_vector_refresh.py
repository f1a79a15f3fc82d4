"""The SQLite backend's in-process vector copy is built in chunks, in one allocation (issue 22: RSS at 100k)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_sqlite import DIM, MODEL, NOW, flt, make_item, record, stored

import memory.backends.sqlite.vectors as vectors_module
from memory.backends.sqlite import SQLiteBackend
from memory.errors import InvalidInputError
from memory.records import ledger_entry


def test_chunked_refresh_finds_the_exact_neighbours_and_allocates_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db_path = tmp_path / "refresh.db"
    monkeypatch.setattr(vectors_module, "REFRESH_CHUNK", 64)
    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((1500, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    items = [make_item(f"text {n}") for n in range(len(vectors))]
    with SQLiteBackend(db_path) as writer:
        writer.ensure_vector_space(MODEL, DIM)
        writer.add([record(i, v) for i, v in zip(items, vectors, strict=True)])
        gone = [items[n].id for n in range(0, 1500, 3)]  # gaps in the sequence numbers
        writer.delete("default", gone, [ledger_entry("delete", g, "default", items[0].created_at) for g in gone])
    kept = [n for n in range(1500) if n % 3]
    with SQLiteBackend(db_path, exact_limit=0, vector_cache_mb=512) as reader:
        for _ in range(10):
            query = rng.standard_normal(DIM).astype(np.float32)
            hits = reader.search_vector(flt(), MODEL, query, 10)
            scores = stored(vectors[kept]) @ (query / np.linalg.norm(query))
            expected = [items[kept[i]].id for i in np.argsort(-scores)[:10]]
            assert [h.id for h in hits] == expected
        (index,) = reader._codes._indexes.values()
        assert index.exact and index.size == 1500 - len(gone)  # deleted rows are not read back
        assert index.rids.shape[0] == index.size  # counted first: one allocation of the right size
        assert index.floats is not None and index.floats.shape[0] == index.size


def test_reserve_respects_the_float_budget() -> None:
    index = vectors_module.CodeIndex(words=1, dim=16, float_budget=100 * 16 * 4)
    index.reserve(50)
    assert index.exact and index.rids.shape[0] == 50
    index.reserve(500)  # over the budget: sign bits only, room for all
    assert not index.exact and index.rids.shape[0] == 500
    assert index.norms.shape[0] == 0  # the lengths go with the vectors


def test_building_the_copy_holds_little_beyond_the_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tracemalloc

    monkeypatch.setattr(vectors_module, "REFRESH_CHUNK", 256)

    dim, count = 256, 8000
    rng = np.random.default_rng(12)
    vectors = rng.standard_normal((count, dim)).astype(np.float32)
    with SQLiteBackend(tmp_path / "peak.db") as writer:
        writer.ensure_vector_space(MODEL, dim)
        writer.add([record(make_item(f"peak {n}"), v) for n, v in enumerate(vectors)])
    with SQLiteBackend(tmp_path / "peak.db", exact_limit=0, vector_cache_mb=512) as reader:
        query = rng.standard_normal(dim).astype(np.float32)
        tracemalloc.start()
        try:
            reader.search_vector(flt(), MODEL, query, 10)  # the first search builds the copy
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    copy = count * dim * 4
    # Reading every row at once held the rows, their joined bytes and a normalised temporary
    # (4.3 times the copy here); in chunks it is the copy, one chunk and the search's own
    # float pool (the rows gathered for exact cosines: 1,000 here, an eighth of the copy).
    assert peak < 2 * copy, (peak, copy)


def _namespaces_store(path: Path, dim: int, per_namespace: int, names: Sequence[str]) -> np.ndarray:
    """A store of ``per_namespace`` random vectors in each namespace of ``names``; returns them by namespace."""
    rng = np.random.default_rng(13)
    vectors = rng.standard_normal((len(names), per_namespace, dim)).astype(np.float32)
    with SQLiteBackend(path) as writer:
        writer.ensure_vector_space(MODEL, dim)
        for ns, rows in zip(names, vectors, strict=True):
            writer.add([record(make_item(f"{ns} {n}", namespace=ns), v) for n, v in enumerate(rows)])
    return vectors


def _top_ids(backend: SQLiteBackend, namespace: str, queries: np.ndarray) -> list[list[str]]:
    return [[h.id for h in backend.search_vector(flt(namespace=namespace), MODEL, q, 10)] for q in queries]


def test_float_copies_share_one_budget_across_namespaces(tmp_path: Path) -> None:
    # 6,000 float16 vectors of 64 dimensions and their lengths: a copy of 0.76 MB per namespace, two do not fit in 1 MB.
    db_path, dim, names = tmp_path / "shared.db", 64, ("a", "b", "c")
    _namespaces_store(db_path, dim, 6000, names)
    queries = np.random.default_rng(14).standard_normal((5, dim)).astype(np.float32)
    options: dict[str, Any] = {"exact_limit": 0, "vector_cache_mb": 1}
    with (
        SQLiteBackend(db_path, **options, vector_cache_total_mb=1) as shared,
        SQLiteBackend(db_path, **options, vector_cache_total_mb=64) as roomy,
        SQLiteBackend(db_path, exact_limit=0, vector_cache_mb=0) as bits_only,
    ):
        found = {ns: _top_ids(shared, ns, queries) for ns in names}
        copies = {key[2]: index for key, index in shared._codes._indexes.items()}
        # The first namespace searched holds its vectors; the others, built once the budget is
        # spent, keep sign bits only and rank as a store without float copies does.
        assert copies["a"].exact and not copies["b"].exact and not copies["c"].exact
        assert 0 < shared._codes.float_bytes <= 1024 * 1024
        unbounded = {ns: _top_ids(roomy, ns, queries) for ns in names}
        assert found["a"] == unbounded["a"]
        for ns in ("b", "c"):
            assert found[ns] == _top_ids(bits_only, ns, queries)
        assert all(index.exact for index in roomy._codes._indexes.values())  # each fits alone
        assert roomy._codes.float_bytes > 2 * 1024 * 1024


def test_a_copy_that_grows_past_the_shared_budget_keeps_sign_bits_only(tmp_path: Path) -> None:
    db_path, dim = tmp_path / "grow.db", 64
    _namespaces_store(db_path, dim, 3700, ("a", "b"))  # 0.47 MB of float16 vectors and lengths each
    query = np.ones(dim, dtype=np.float32)
    with SQLiteBackend(db_path, exact_limit=0, vector_cache_mb=1, vector_cache_total_mb=1) as reader:
        for ns in ("a", "b"):
            reader.search_vector(flt(namespace=ns), MODEL, query, 10)
        copies = {key[2]: index for key, index in reader._codes._indexes.items()}
        assert copies["a"].exact and copies["b"].exact
        rng = np.random.default_rng(15)
        with SQLiteBackend(db_path) as writer:  # another connection adds to b: its copy must grow
            writer.add([record(make_item(f"b more {n}", namespace="b"), rng.standard_normal(dim)) for n in range(600)])
        hits = reader.search_vector(flt(namespace="b"), MODEL, query, 10)
        assert copies["a"].exact and not copies["b"].exact and copies["b"].size == 4300
        assert reader._codes.float_bytes <= 1024 * 1024 and len(hits) == 10
        # The running total the budget is checked against is what the copies hold, after growth and a drop.
        assert reader._codes.float_bytes == sum(index.float_bytes for index in reader._codes._indexes.values())


def test_cache_budgets_must_be_non_negative_integers(tmp_path: Path) -> None:
    for bad in (-1, 1.5, True):
        with pytest.raises(InvalidInputError, match="vector_cache_total_mb"):
            SQLiteBackend(tmp_path / "bad.db", vector_cache_total_mb=bad)


def test_writes_between_searches_do_not_copy_the_whole_copy_each_time(tmp_path: Path) -> None:
    db_path, dim = tmp_path / "live.db", 32
    _namespaces_store(db_path, dim, 3000, ("default",))
    rng = np.random.default_rng(16)
    query = rng.standard_normal(dim).astype(np.float32)
    with SQLiteBackend(db_path, exact_limit=0) as backend:
        backend.search_vector(flt(), MODEL, query, 5)
        (index,) = backend._codes._indexes.values()
        assert index.rids.shape[0] == index.size == 3000  # built to its size
        arrays = []
        for n in range(20):  # a live store: one write, then a search, again and again
            backend.add([record(make_item(f"live {n}"), rng.standard_normal(dim))])
            hits = backend.search_vector(flt(), MODEL, query, 5)
            assert len(hits) == 5
            arrays.append((index.rids, index.codes, index.floats))
        assert index.size == 3020 and index.exact
        # the first write grew it with room to spare; the next 19 wrote into that room
        assert all(a is arrays[0][0] and b is arrays[0][1] and c is arrays[0][2] for a, b, c in arrays[1:])


def test_a_namespace_wide_search_of_a_large_namespace_counts_nothing(tmp_path: Path) -> None:
    """No count of the scope; one read of the namespace's counters (how many vectors, is the copy current)."""
    db_path = tmp_path / "count.db"
    _namespaces_store(db_path, 16, 300, ("default",))
    query = np.random.default_rng(17).standard_normal(16).astype(np.float32)
    with SQLiteBackend(db_path, exact_limit=100) as backend:
        backend.concurrent_reads = False  # type: ignore[misc]  # on the main connection, to trace it
        statements: list[str] = []
        backend._conn.set_trace_callback(statements.append)
        wide = backend.search_vector(flt(), MODEL, query, 5)
        counts = [s for s in statements if "count(*)" in s]
        assert len(wide) == 5 and counts == []  # 300 vectors > exact_limit: more items than 100, no count
        assert len([s for s in statements if "vector_counters" in s]) == 1
        statements.clear()
        assert backend.search_vector(flt(user="nobody"), MODEL, query, 5) == []
        assert len([s for s in statements if "count(*)" in s]) == 1  # a narrowed scope is counted
    with SQLiteBackend(db_path, exact_limit=1000) as backend:  # 300 vectors <= exact_limit: counted, exact
        backend.concurrent_reads = False  # type: ignore[misc]
        assert [h.id for h in backend.search_vector(flt(), MODEL, query, 5)] == [h.id for h in wide]


def test_a_live_copy_checks_row_ids_and_a_stale_one_sequence_numbers(tmp_path: Path) -> None:
    """No deletion since the copy was read: candidates are checked against the items alone (one lookup each).
    After a vector is replaced the copy holds its old entry: candidates are named by sequence number, so the
    old entry is dropped and the item scores by its new vector."""
    db_path, dim = tmp_path / "live-check.db", 16
    _namespaces_store(db_path, dim, 400, ("default",))
    rng = np.random.default_rng(18)
    query = rng.standard_normal(dim).astype(np.float32)
    with SQLiteBackend(db_path, exact_limit=50) as backend:
        backend.concurrent_reads = False  # type: ignore[misc]
        statements: list[str] = []
        backend._conn.set_trace_callback(statements.append)
        before = backend.search_vector(flt(), MODEL, query, 5)
        (index,) = backend._codes._indexes.values()
        checks = [s for s in statements if "json_each" in s]
        assert index.live and checks and all("vcodes" not in s for s in checks)
        top = before[0].id
        away = -query / np.linalg.norm(query)  # the best match now points away from the query
        assert backend.set_vectors("default", MODEL, [(top, away)]) == 1
        statements.clear()
        after = backend.search_vector(flt(), MODEL, query, 5)
        checks = [s for s in statements if "json_each" in s]
        assert not index.live and checks and all("vcodes" in s for s in checks)
        assert top not in [h.id for h in after]
        assert [h.id for h in after][:4] == [h.id for h in before][1:5]
        statements.clear()
        backend.delete("default", [top], [ledger_entry("delete", top, "default", NOW)])
        assert [h.id for h in backend.search_vector(flt(), MODEL, query, 5)] == [h.id for h in after]


def test_vector_hits_carry_the_rank_fields_speaker_included(tmp_path: Path) -> None:
    dim = 16
    rng = np.random.default_rng(19)
    items = [
        make_item(f"turn {n}", metadata={"speaker": "Caroline" if n % 2 else "Melanie", "role": "user"})
        for n in range(40)
    ]
    with SQLiteBackend(tmp_path / "fields.db", exact_limit=10) as backend:
        backend.ensure_vector_space(MODEL, dim)
        backend.add([record(item, rng.standard_normal(dim)) for item in items])
        by_id = {item.id: item for item in items}
        for exact_limit in (10, 1000):  # the sign-bit copy's hits and the exact scan's
            backend._exact_limit = exact_limit
            hits = backend.search_vector(flt(), MODEL, rng.standard_normal(dim).astype(np.float32), 5)
            assert len(hits) == 5
            for hit in hits:
                assert hit.fields is not None
                assert hit.fields.speaker == by_id[hit.id].metadata["speaker"] and hit.fields.role == "user"
                assert hit.fields.created_at == by_id[hit.id].created_at
