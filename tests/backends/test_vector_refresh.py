"""The SQLite backend's in-process vector copy is built in chunks, in one allocation (issue 22: RSS at 100k)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_sqlite import DIM, MODEL, flt, make_item, record, stored

import memory.backends.sqlite.vectors as vectors_module
from memory.backends.sqlite import SQLiteBackend
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
