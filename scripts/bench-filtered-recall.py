"""Time recall filtered by user in a large SQLite store shared by many users (not a test: run by hand).

    .venv/bin/python scripts/bench-filtered-recall.py --size 100000 --users 100 --db /tmp/filtered-100k.db

The store (built once at ``--db``, reused; hashing embedder): ``size`` chat lines of the speed
benchmark's corpus (``memory.bench.corpus``, LoCoMo dialogue when the dev file is beside the
repo), the first ``size / users`` of them by user ``early`` (written in one stretch, the oldest),
the rest by ``u0`` … ``u<users-1>`` in turns. Then ``--queries`` questions of the corpus, each
recalled (limit 10) three ways, in turn: filtered by one of the users writing in turns, by
``early``, and unfiltered. Prints p50 / p95 (ms) and the mean number of hits of each, the load
average before and after, and writes the hits (ids) to ``<db>.hits.<label>.json`` when
``--label`` is given, so two versions of the code can be compared on the same store.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from memory import Memory
from memory.bench.corpus import corpus_queries, generate_texts, load_corpus
from memory.bench.metrics import percentile

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo_dev.json"


def build(url: str, size: int, users: int) -> None:
    """Fill the store at ``url`` up to ``size`` memories (see the module docs)."""
    corpus = load_corpus(LOCOMO if LOCOMO.exists() else None)
    texts = generate_texts(corpus, size)
    early = size // users
    with Memory(url, embedder="hashing", namespace="bench") as mem:
        have = mem.stats().total
        for start in range(have, size, 1_000):
            chunk = range(start, min(start + 1_000, size))
            mem.remember_batch(
                [{"content": texts[n], "user": "early" if n < early else f"u{n % users}"} for n in chunk]
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000, help="Memories in the store.")
    parser.add_argument("--users", type=int, default=100, help="Users writing in turns.")
    parser.add_argument("--db", default="/tmp/filtered-recall.db", help="The store's SQLite file (built once).")
    parser.add_argument("--queries", type=int, default=100, help="Questions, each recalled three ways.")
    parser.add_argument("--label", help="Write the hits to <db>.hits.<label>.json.")
    args = parser.parse_args()
    url = f"sqlite:///{Path(args.db).resolve()}"
    started = time.perf_counter()
    build(url, args.size, args.users)
    print(f"store ready in {time.perf_counter() - started:.0f} s; load average {os.getloadavg()[0]:.2f}")
    questions = corpus_queries(load_corpus(LOCOMO if LOCOMO.exists() else None), args.queries)
    cases = {"user writing in turns": lambda n: f"u{n % args.users}", "user in one stretch": lambda n: "early",
             "no filter": lambda n: None}  # fmt: skip
    times: dict[str, list[float]] = {name: [] for name in cases}
    hits: dict[str, list[list[str]]] = {name: [] for name in cases}
    with Memory(url, embedder="hashing", namespace="bench") as mem:
        mem.recall(questions[0], limit=10)  # the first search loads the namespace's vector copy
        for n, question in enumerate(questions):
            for name, user in cases.items():
                began = time.perf_counter()
                found = mem.recall(question, limit=10, user=user(n))
                times[name].append((time.perf_counter() - began) * 1000)
                hits[name].append([h.id for h in found])
    for name, values in times.items():
        mean_hits = sum(len(h) for h in hits[name]) / len(hits[name])
        print(f"{name:22s} p50 {statistics.median(values):6.1f}  p95 {percentile(values, 95):6.1f} ms"
              f"  ({mean_hits:.1f} hits)")  # fmt: skip
    print(f"load average after {os.getloadavg()[0]:.2f}")
    if args.label:
        Path(f"{args.db}.hits.{args.label}.json").write_text(json.dumps(hits))


if __name__ == "__main__":
    main()
