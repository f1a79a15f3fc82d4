"""MiniLM batches split over two threads or kept on one, beside busy Python threads (a probe, not a test).

    .venv/bin/python scripts/embed-contention.py            # 1 and 2 busy threads, 2 rounds, 6 s each
    .venv/bin/python scripts/embed-contention.py --seconds 10 --rounds 3

What a server under load does: a batch of 15 short texts is embedded again and again (as the batching
queue's worker does for concurrent requests) while other threads run Python with a GIL-releasing SQLite
query now and then (as request handling does). Each configuration prints the texts embedded a second and
the busy threads' work done a second. ``split`` is the default numpy runtime (each layer split over two
threads for passes of 24 tokens or more); ``one thread`` runs the same batches inside
:func:`memory.embedders.base.calling_thread_only`, as the batching worker now does.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import threading
import time
from collections.abc import Callable

from memory.embedders.base import calling_thread_only
from memory.embedders.minilm import MiniLMEmbedder

WORDS = "the quick brown fox jumps over lazy dog memory agent recall store user said thread likes coffee morning"


def _busy(stop: threading.Event, done: list[int]) -> None:
    """Python work with a short SQLite query in each unit, until ``stop``; counts units in ``done[0]``."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (x)")
    db.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(20_000)])
    while not stop.is_set():
        total = 0
        for i in range(2_000):
            total += i * i
        db.execute("SELECT sum(x) FROM t").fetchone()
        done[0] += 1


def _measure(embed: Callable[[], int], busy_threads: int, seconds: float) -> tuple[float, float]:
    """(texts embedded a second, busy units a second) while ``busy_threads`` threads run :func:`_busy`."""
    stop = threading.Event()
    counters = [[0] for _ in range(busy_threads)]
    threads = [threading.Thread(target=_busy, args=(stop, c)) for c in counters]
    for thread in threads:
        thread.start()
    texts = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        texts += embed()
    elapsed = time.perf_counter() - started
    stop.set()
    for thread in threads:
        thread.join()
    return texts / elapsed, sum(c[0] for c in counters) / elapsed


def main() -> None:
    """Print both configurations side by side, alternating, for 1 and 2 busy threads."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    rng = random.Random(1)
    words = WORDS.split()
    batch = [" ".join(rng.choice(words) for _ in range(rng.randint(6, 20))) for _ in range(15)]
    embedder = MiniLMEmbedder(runtime="numpy", threads=2)
    embedder.embed_batch(batch)  # load the model

    def split() -> int:
        embedder.embed_batch(batch)
        return len(batch)

    def one_thread() -> int:
        with calling_thread_only():
            embedder.embed_batch(batch)
        return len(batch)

    for busy_threads in (1, 2):
        for _ in range(args.rounds):
            for name, embed in (("split", split), ("one thread", one_thread)):
                texts, units = _measure(embed, busy_threads, args.seconds)
                line = f"busy threads {busy_threads}  {name:10s}  embedded {texts:6.1f} texts/s"
                print(f"{line}  busy work {units:7.1f}/s")


if __name__ == "__main__":
    main()
