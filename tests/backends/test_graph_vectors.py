"""The graph store's in-process vector copies: exact rankings, ties by id, a bounded cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memory import Memory
from memory.backends.graph_vectors import GraphVectorCache, VectorRows
from memory.embedders.hashing import HashingEmbedder


def _reference(rows: list[tuple[str, np.ndarray, bool]], query: np.ndarray, k: int, live_only: bool) -> list[str]:
    scored = []
    for item_id, vector, live in rows:
        if live_only and not live:
            continue
        length = float(np.linalg.norm(vector)) * float(np.linalg.norm(query))
        scored.append((-float(vector @ query) / (length or 1.0), item_id))
    return [item_id for _, item_id in sorted(scored)[:k]]


def test_the_best_rows_are_the_exact_ranking_with_ties_by_id() -> None:
    rng = np.random.default_rng(26)
    base = rng.standard_normal((30, 8)).astype(np.float32)
    vectors = np.concatenate([base, base[:10], np.zeros((2, 8), np.float32)])  # ten tied pairs, two zero rows
    ids = [f"r{n:03d}" for n in rng.permutation(len(vectors))]
    live = rng.random(len(vectors)) > 0.3
    rows = [(i, v, bool(flag)) for i, v, flag in zip(ids, vectors, live, strict=True)]
    copy = VectorRows.read([(i, v.tobytes(), flag) for i, v, flag in rows], with_live=True)
    for query in (rng.standard_normal(8).astype(np.float32), base[3], np.zeros(8, np.float32)):
        for k in (1, 5, 12, 41, 100):
            for live_only in (False, True):
                found = [i for i, _ in copy.best(query, k, live_only=live_only)]
                assert found == _reference(rows, query, k, live_only), (k, live_only)


def test_rows_read_as_bytes_or_floats_and_skip_missing_vectors() -> None:
    from_bytes = VectorRows.read([("a", np.array([1, 0], np.float32).tobytes()), ("b", None)])
    from_lists = VectorRows.read([("a", [1.0, 0.0]), ("b", None), ("c", memoryview(np.ones(2, np.float32).tobytes()))])
    assert from_bytes.ids == ["a"] and from_lists.ids == ["a", "c"]
    assert from_lists.best(np.array([1, 1], np.float32), 5)[0][0] == "c"
    assert VectorRows.read([]).best(np.ones(2, np.float32), 3) == []


def test_the_cache_holds_a_copy_for_its_version_within_its_budget() -> None:
    def copy(n: int) -> VectorRows:
        return VectorRows.read([(str(i), np.ones(4, np.float32).tobytes()) for i in range(n)])

    size = copy(10).nbytes
    cache = GraphVectorCache(budget=2 * size)
    cache.put(("relations", "a", "m"), 1, copy(10))
    cache.put(("relations", "b", "m"), 1, copy(10))
    assert cache.get(("relations", "a", "m"), 1) is not None  # a is now the most recently used
    assert cache.get(("relations", "a", "m"), 2) is None  # another version: read again
    cache.put(("entities", "a", "m"), 7, copy(10))
    assert cache.get(("relations", "b", "m"), 1) is None  # the least recently used went
    assert cache.get(("relations", "a", "m"), 1) is not None and cache.nbytes == 2 * size
    cache.put(("relations", "c", "m"), 1, copy(30))  # larger than the whole budget: not kept
    assert cache.get(("relations", "c", "m"), 1) is None and cache.nbytes <= 2 * size
    cache.put(("relations", "a", "m"), 2, copy(5))  # a new version replaces the old copy
    assert cache.get(("relations", "a", "m"), 1) is None and cache.get(("relations", "a", "m"), 2) is not None


def test_graph_reads_by_id_reach_rows_through_an_index(tmp_path: Path) -> None:
    """Mentions, relations and entities asked for by id never scan their table (SQLite's plans)."""
    with Memory(f"sqlite:///{tmp_path / 'plans.db'}", embedder=HashingEmbedder()) as mem:
        store, now = mem.graph.store, mem.now()
        said = mem.remember_batch([f"Alice noted {n}" for n in range(400)])  # planner statistics of a real size
        alice = store.upsert_entity(mem.namespace, "Alice", "person", now)
        bob = store.upsert_entity(mem.namespace, "Bob", "person", now)
        for n in range(300):
            store.upsert_entity(mem.namespace, f"Place {n}", "place", now)
        for memory_id in said:
            store.add_mentions(mem.namespace, memory_id, [alice.id])
        store.add_mentions(mem.namespace, said[0], [bob.id])
        relation = store.upsert_relation(
            mem.namespace, alice.id, "knows", bob.id, now, source_id=said[0], vector=np.ones(4, np.float32), model="m"
        )
        conn = mem.backend._conn  # type: ignore[attr-defined]
        conn.execute("ANALYZE")
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        try:
            store.mentions(mem.namespace, entity_ids=[bob.id])
            store.mentions(mem.namespace, memory_ids=said[:2])
            store.mentions(mem.namespace, entity_ids=[alice.id], limit=5)
            store.memories_reached(mem.namespace, bob.id, mentions=5, relations=5)
            store.get_entities(mem.namespace, [alice.id, bob.id])
            store.search_relations(mem.namespace, "m", np.ones(4, np.float32), 3)
        finally:
            conn.set_trace_callback(None)
        assert relation.id
        plans = {
            sql: " | ".join(str(row[3]) for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
            for sql in statements
            if sql.lstrip().upper().startswith("SELECT") and "graph_" in sql and "embedding IS NOT NULL" not in sql
        }  # (the copy of a namespace's vectors reads them all, once per version)
        assert len(plans) >= 7
        for sql, plan in plans.items():
            tables = ("graph_mentions", "graph_entities", "graph_relations")
            assert not any(f"SCAN {table}" in plan for table in tables), (sql, plan)
