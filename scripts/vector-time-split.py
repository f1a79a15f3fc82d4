"""Where a vector-only recall's time goes on a store of the speed benchmark's texts (a probe, not a benchmark).

    .venv/bin/python scripts/vector-time-split.py build --size 100000 --embedder minilm --store /tmp/probe/100k.db
    .venv/bin/python scripts/vector-time-split.py split --embedder minilm --store /tmp/probe/100k.db
    .venv/bin/python scripts/vector-time-split.py graphs --size 100000 --embedder minilm

``build`` writes the benchmark's generated texts (``memory bench speed``'s corpus, seed 0,
with the vectors it caches in the user cache dir) into a SQLite file kept after the run,
and settles it (HNSW graphs of large namespaces built). ``split`` opens it, warms it with
one pass of the queries, then times ``recall(retrieval="vector")`` over the benchmark's
queries with their vectors already cached (so no embedding is timed): the totals, and the
milliseconds a recall spends in the backend's calls and in the sign-bit copy's steps, and
the recalls that wrote the kept accesses (their times and where they fall among the slowest),
and the garbage collections that ran inside the recalls (by generation, and in the slowest).
``passes`` times the default preset's (hybrid) recall over the queries in three passes
after the store settles, and the first 20 recalls' mean of each pass (a cold start shows in the first).
``graphs`` builds HNSW graphs (usearch) over the same vectors, int8 with cosine and sign bits
with Hamming distance, and prints how much of the exact top 10 each holds and how long a search
takes (candidates rescored by exact cosine, as the store does) at several breadths.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import platformdirs

import memory.backends.sqlite.vectors as sqlite_vectors
from memory.bench.corpus import cached_vectors, corpus_cache_key, corpus_queries, generate_texts, load_corpus
from memory.bench.metrics import percentile
from memory.bench.speed import TimedEmbedder
from memory.config import Settings
from memory.embedders import create_embedder
from memory.embedders.base import Embedder, embed_texts
from memory.embedders.batching import forget_queries
from memory.memory import Memory

DATA = Path("../shared/bench/locomo_dev.json")
QUERIES = 200


def _corpus(size: int, embedder: str) -> tuple[Embedder, list[str], np.ndarray[Any, Any]]:
    """The embedder, the speed benchmark's first ``size`` texts (seed 0) and their vectors from its cache."""
    model = create_embedder(embedder)
    corpus = load_corpus(DATA)
    texts = generate_texts(corpus, size, seed=0)
    key = corpus_cache_key(corpus, seed=0)  # memory bench speed's cache key
    vectors = cached_vectors(model, texts, Path(platformdirs.user_cache_dir("memory")) / "bench", key)
    return model, texts, np.asarray(vectors, dtype=np.float32)


def _build(size: int, embedder: str, store: Path) -> None:
    model, texts, vectors = _corpus(size, embedder)
    url = f"sqlite:///{store}"
    started = time.perf_counter()
    with Memory(url, embedder=model, settings=Settings(database=url)) as mem:
        for first in range(0, size, 500):
            batch = range(first, min(first + 500, size))
            mem.remember_batch([{"content": texts[i], "vector": vectors[i]} for i in batch])
        added = time.perf_counter() - started
        print(f"added {size} in {added:.1f} s; settled in {mem.backend.settle():.1f} s")


def _timed(spent: dict[str, float], label: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[label] = spent.get(label, 0.0) + time.perf_counter() - started

    return timed


def _split(embedder: str, store: Path, embed: bool) -> None:
    inner = create_embedder(embedder)
    model = TimedEmbedder(inner)
    queries = corpus_queries(load_corpus(DATA), QUERIES, seed=0)
    spent: dict[str, float] = {}
    for step in ("distances", "_cosines", "_ranked", "_graph_positions"):
        setattr(sqlite_vectors.CodeIndex, step, _timed(spent, f"copy.{step}", getattr(sqlite_vectors.CodeIndex, step)))
    url = f"sqlite:///{store}"
    with Memory(url, embedder=model, settings=Settings(database=url)) as mem:
        backend = mem.backend
        for call in ("search_vector", "get", "record_access", "flush_access"):
            setattr(backend, call, _timed(spent, f"backend.{call}", getattr(backend, call)))
        flushes: list[int] = []
        for query in queries:  # warm: the copies read, the graph mapped, every query vector cached
            mem.recall(query, limit=10, retrieval="vector")
        spent.clear()
        totals: list[float] = []
        collections: list[list[tuple[int, float]]] = []  # per recall: (generation, ms) of each collection in it
        gc_started: list[float] = []

        def on_gc(phase: str, info: dict[str, int]) -> None:
            if phase == "start":
                gc_started[:] = [time.perf_counter()]
            elif gc_started and collections:
                collections[-1].append((info["generation"], (time.perf_counter() - gc_started[0]) * 1000.0))

        gc.callbacks.append(on_gc)
        for query in queries:
            collections.append([])
            before = spent.get("backend.flush_access", 0.0)
            if embed:  # as `memory bench speed` times it: the query embedded in the recall, its time taken out
                forget_queries(mem.embedder)
            model.reset()
            started = time.perf_counter()
            mem.recall(query, limit=10, retrieval="vector")
            totals.append((time.perf_counter() - started) * 1000.0 - model.reset() * 1000.0)
            if spent.get("backend.flush_access", 0.0) > before:
                flushes.append(len(totals) - 1)
        gc.callbacks.remove(on_gc)
    print(
        f"vector-only recall, {len(queries)} queries: p50 {percentile(totals, 50):.2f} "
        f"p95 {percentile(totals, 95):.2f} mean {sum(totals) / len(totals):.2f} ms"
    )
    for label, seconds in sorted(spent.items(), key=lambda item: -item[1]):
        print(f"  {label}: {1000.0 * seconds / len(queries):.3f} ms a recall")
    slowest = [int(n) for n in np.argsort(totals)[::-1][:10]]
    print(
        "recalls that wrote the kept accesses (ms):",
        [round(totals[n], 1) for n in flushes],
        f"- {sum(1 for n in flushes if n in slowest)} of the 10 slowest",
    )
    by_generation = [sum(1 for run in collections for g, _ in run if g == gen) for gen in range(3)]
    print(
        f"garbage collections in the recalls (generation 0/1/2): {by_generation}, "
        f"{sum(ms for run in collections for _, ms in run) / len(queries):.3f} ms a recall"
    )
    print(
        "the 10 slowest (ms, collections in them as generation:ms):",
        [(round(totals[n], 1), [f"{g}:{ms:.1f}" for g, ms in collections[n]]) for n in slowest],
    )


def _graphs(size: int, embedder: str) -> None:
    from usearch.index import Index

    model, _, vectors = _corpus(size, embedder)
    stored = vectors.astype(np.float16).astype(np.float32)  # as the store holds them
    units = stored / np.maximum(np.linalg.norm(stored, axis=1, keepdims=True), 1e-12)
    queries = embed_texts(model, corpus_queries(load_corpus(DATA), QUERIES, seed=0))
    queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    exact = units @ queries.T
    kth = np.sort(exact, axis=0)[-10]
    keys = np.arange(len(units))
    shapes: list[tuple[str, str, str, np.ndarray[Any, Any], Callable[[Any], Any], list[tuple[int, int]]]] = [
        ("int8, cosine", "i8", "cos", units, lambda q: q, [(64, 26), (128, 26), (200, 26)]),
        (
            "sign bits, Hamming",
            "b1",
            "hamming",
            np.packbits(units > 0, axis=1),
            lambda q: np.packbits(q > 0),
            [(128, 100), (200, 200), (400, 400), (600, 600)],
        ),
    ]
    for name, dtype, metric, data, coded, settings in shapes:
        index: Any = Index(ndim=units.shape[1], metric=metric, dtype=dtype, connectivity=16, expansion_add=128)
        started = time.perf_counter()
        index.add(keys, data, threads=2)
        built = time.perf_counter() - started
        print(f"{name}: built in {built:.1f} s, {index.memory_usage / len(units):.0f} bytes a vector in memory")
        for breadth, count in settings:
            index.expansion_search = breadth
            took, held = [], 0.0
            for j, query in enumerate(queries):
                started = time.perf_counter()
                candidates = index.search(coded(query), count, threads=1).keys
                best = candidates[np.argsort(-(units[candidates] @ query))][:10]
                took.append((time.perf_counter() - started) * 1000.0)
                held += float(np.sum(exact[best, j] >= kth[j] - 1e-6)) / 10
            print(
                f"  breadth {breadth}, {count} candidates: holds {held / len(queries):.3f} of the exact top 10, "
                f"p50 {percentile(took, 50):.3f} p95 {percentile(took, 95):.3f} ms"
            )


def _passes(embedder: str, store: Path) -> None:
    model = create_embedder(embedder)
    queries = corpus_queries(load_corpus(DATA), QUERIES, seed=0)
    url = f"sqlite:///{store}"
    with Memory(url, embedder=model, settings=Settings(database=url)) as mem:
        print(f"settled in {mem.backend.settle():.1f} s")
        for n in range(3):
            totals: list[float] = []
            for query in queries:
                started = time.perf_counter()
                mem.recall(query, limit=10)
                totals.append((time.perf_counter() - started) * 1000.0)
            print(
                f"pass {n}: recall p50 {percentile(totals, 50):.1f} p95 {percentile(totals, 95):.1f} ms, "
                f"first 20 mean {sum(totals[:20]) / 20:.1f} ms"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("build", "split", "passes", "graphs"))
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--store", type=Path, help="the SQLite file (build, split, passes)")
    parser.add_argument(
        "--embed", action="store_true", help="split: embed each query inside its recall, its time taken out"
    )
    args = parser.parse_args()
    if args.action == "graphs":
        _graphs(args.size, args.embedder)
    elif args.store is None:
        parser.error("--store is needed for build, split and passes")
    elif args.action == "passes":
        _passes(args.embedder, args.store)
    elif args.action == "build":
        _build(args.size, args.embedder, args.store)
    else:
        _split(args.embedder, args.store, args.embed)


if __name__ == "__main__":
    main()
