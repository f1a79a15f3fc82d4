"""Time the graph channel's work (run by every default recall once a graph exists).

    .venv/bin/python scripts/bench-graph-search.py --relations 2000 20000 --mentions 20000

Relations: for each size, a fresh SQLite store with that many relations (random 384-d
vectors, 200 entities), then ``search_relations`` (k = 10) timed 50 times with the
in-process copy of the namespace's vectors (``memory.backends.graph_vectors``) and 50 times
with a store whose copy budget is 0 (every vector read for each search), alternated.
Mentions: a store of that many memories (hashing embedder) all mentioning one entity, and
``recall`` of a question naming it, 20 times with the default preset and 20 without the
graph channel (``nograph``), alternated. Prints medians (and max) in ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from memory import Memory
from memory.backends.graph_sql import SQLGraphStore
from memory.backends.graph_vectors import GraphVectorCache
from memory.backends.sqlite import SQLiteBackend
from memory.embedders.hashing import HashingEmbedder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--relations", type=int, nargs="+", default=[2_000, 20_000], help="Store sizes.")
    parser.add_argument("--mentions", type=int, nargs="*", default=[], help="Memories naming one entity.")
    parser.add_argument("--searches", type=int, default=50, help="Timed searches each way.")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}")
    rng = np.random.default_rng(0)
    for count in args.relations:
        with tempfile.TemporaryDirectory() as tmp, SQLiteBackend(Path(tmp) / "graph.db") as backend:
            store, now = backend.graph, datetime.now(UTC)
            ends = [store.upsert_entity("ns", f"entity {n}", "person", now).id for n in range(200)]
            for n in range(count):
                subject, target, vector = ends[n % 200], ends[(7 * n + 1) % 200], rng.standard_normal(384)
                store.upsert_relation("ns", subject, f"p{n}", target, now, vector=vector.astype(np.float32), model="m")
            uncached = SQLGraphStore(backend.dialect, GraphVectorCache(budget=0))
            query = rng.standard_normal(384).astype(np.float32)
            started = time.perf_counter()
            store.search_relations("ns", "m", query, 10)
            first = (time.perf_counter() - started) * 1000
            times: dict[str, list[float]] = {"copy": [], "no copy": []}
            for _ in range(args.searches):
                for name, each in (("copy", store), ("no copy", uncached)):
                    started = time.perf_counter()
                    each.search_relations("ns", "m", query, 10)
                    times[name].append((time.perf_counter() - started) * 1000)
            shown = ", ".join(f"{n} {statistics.median(t):.1f} (max {max(t):.1f})" for n, t in times.items())
            print(f"{count} relations: first search {first:.1f} ms; then median ms: {shown}")
    for count in args.mentions:
        _mentions(count)
    print(f"load average {os.getloadavg()[0]:.2f}")


def _mentions(count: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, Memory(f"sqlite:///{tmp}/m.db", embedder=HashingEmbedder()) as mem:
        ids: list[str] = []
        for start in range(0, count, 1000):
            texts = [f"Alice noted thing {n} about topic {n % 97}" for n in range(start, min(count, start + 1000))]
            ids += mem.remember_batch(texts)
        store = mem.graph.store
        alice = store.upsert_entity(mem.namespace, "Alice", "person", mem.now())
        for memory_id in ids:
            store.add_mentions(mem.namespace, memory_id, [alice.id])
        question = "what did Alice note about topic 5?"
        times: dict[str, list[float]] = {"balanced": [], "nograph": []}
        for preset in times:
            mem.recall(question, retrieval=preset)
        for _ in range(20):
            for preset, taken in times.items():
                started = time.perf_counter()
                mem.recall(question, retrieval=preset)
                taken.append((time.perf_counter() - started) * 1000)
        shown = ", ".join(f"{p} {statistics.median(t):.1f} (max {max(t):.1f})" for p, t in times.items())
        print(f"{count} memories naming Alice: recall median ms: {shown}")


if __name__ == "__main__":
    main()
