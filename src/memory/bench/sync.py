"""Sync benchmark: append throughput with the sync worker running alongside, and sync vs the bare embedder.

In one run, on a fresh SQLite file:

(a) append throughput: ``messages.append`` one message at a time, first
    alone, then while a ``memory worker --jobs sync`` process (a separate
    process on the same file, as deployed) embeds what arrives. Reports
    appends/s and per-append latency p50/p95 for both, and how long the worker
    needed to drain the backlog after the last append.
(b) sync throughput: the same texts, pending, embedded by the sync job
    (claim → embed → write vectors → mark done, in batches) and by the bare
    embedder (``embed_texts`` with the same batch size), in the same process,
    interleaved in ``rounds`` (alternating which goes first) so that load
    changes on a shared machine hit both alike. ``overhead = sync / bare - 1``
    over all rounds; also the time the job spends outside the embedder as a
    share of the time inside it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory import __version__
from memory.bench.corpus import generate_texts, load_corpus
from memory.bench.metrics import percentile
from memory.bench.speed import TimedEmbedder, machine_info
from memory.config import ProviderSpec, Settings
from memory.embedders import create_embedder
from memory.embedders.base import embed_texts
from memory.episodic.sync import SyncJob
from memory.errors import InvalidInputError
from memory.memory import Memory

__all__ = ["run_sync_bench", "format_sync_bench"]

Progress = Callable[[str], None]


def _append_all(mem: Memory, texts: list[str]) -> tuple[float, list[float]]:
    latencies = []
    started = time.perf_counter()
    for i, text in enumerate(texts):
        t0 = time.perf_counter()
        mem.messages.append(f"thread-{i % 20}", text, role="user" if i % 2 == 0 else "assistant")
        latencies.append(time.perf_counter() - t0)
    return time.perf_counter() - started, latencies


def _rates(seconds: float, latencies: list[float]) -> dict[str, float]:
    return {
        "seconds": round(seconds, 3),
        "per_second": round(len(latencies) / seconds, 1) if seconds else 0.0,
        "p50_ms": round(percentile(latencies, 50) * 1000, 3),
        "p95_ms": round(percentile(latencies, 95) * 1000, 3),
    }


def run_sync_bench(
    *,
    messages: int = 1000,
    embedder: str = "auto",
    batch_size: int = 64,
    data: Path | None = None,
    seed: int = 0,
    rounds: int = 4,
    progress: Progress | None = None,
    backend: str = "sqlite",
    dsn: str | None = None,
) -> dict[str, Any]:
    """Run both parts; returns a JSON-ready report. Raises InvalidInputError for bad sizes.

    ``backend`` 'sqlite' (files in a temp dir) or 'postgres' (scratch databases
    on ``dsn``'s server, dropped afterwards).
    """
    if backend not in ("sqlite", "postgres"):
        raise InvalidInputError(f"unknown backend {backend!r}; use 'sqlite' or 'postgres'")
    if messages < 10:
        raise InvalidInputError("--messages must be at least 10")
    note = progress or (lambda _: None)
    texts = generate_texts(load_corpus(data), messages, seed=seed)
    inner = create_embedder(embedder, {})
    timed = TimedEmbedder(inner)

    def settings_for(url: str) -> Settings:
        return Settings(database=url, embedder=ProviderSpec(provider=embedder))

    report: dict[str, Any] = {
        "benchmark": "sync",
        "memory_version": __version__,
        "machine": machine_info(),
        "embedder": inner.model_name,
        "messages": messages,
        "batch_size": batch_size,
        "rounds": rounds,
        "backend": backend,
    }
    from memory.bench.locomo import fresh_store

    with (
        tempfile.TemporaryDirectory(prefix="memory-bench-sync-") as tmp,
        fresh_store(backend, Path(tmp), "alone", dsn) as alone_db,
        fresh_store(backend, Path(tmp), "busy", dsn) as busy_db,
        fresh_store(backend, Path(tmp), "sync", dsn) as sync_db,
    ):
        # (a) appends alone, then with a worker process syncing alongside
        with Memory(settings=settings_for(alone_db), embedder=timed) as mem:
            note(f"appending {messages} messages (no sync running)")
            alone = _append_all(mem, texts)
        with Memory(settings=settings_for(busy_db), embedder=timed) as mem:
            env = {**os.environ, "MEMORY_EMBEDDER": embedder}
            env.pop("MEMORY_EMBEDDER_OPTIONS", None)
            worker = subprocess.Popen(
                [sys.executable, "-m", "memory", "--db", busy_db, "worker", "--jobs", "sync",
                 "--interval", "0.05", "--batch-size", str(batch_size)],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            try:
                time.sleep(1.0)  # let the worker load its embedder before the clock starts
                note(f"appending {messages} messages with a sync worker running alongside")
                busy = _append_all(mem, texts)
                drain_started = time.perf_counter()
                while mem.sync_status().pending and worker.poll() is None:
                    time.sleep(0.05)
                drained = time.perf_counter() - drain_started
                embedded_alongside = mem.sync_status().messages.get("done", 0)
            finally:
                worker.send_signal(signal.SIGTERM)
                _, err = worker.communicate(timeout=120)
            if worker.returncode != 0:
                raise InvalidInputError(f"the sync worker failed: {err.strip()[-500:]}")
        report["append"] = {
            "alone": _rates(*alone),
            "with_sync": _rates(*busy),
            "slowdown": round(busy[0] / alone[0] - 1.0, 4) if alone[0] else None,
            "drain_seconds_after_last_append": round(drained, 3),
            "embedded_by_worker": embedded_alongside,
        }
        # (b) sync job vs the bare embedder on the same texts, interleaved in rounds so that
        # load changes on a shared machine hit both alike
        note("warming up the embedder")
        embed_texts(inner, texts[:batch_size], batch_size=batch_size)
        size = -(-messages // rounds)
        chunks = [texts[i : i + size] for i in range(0, messages, size)]
        bare_times: list[float] = []
        sync_times: list[float] = []
        inside = 0.0
        batches = 0
        with Memory(settings=settings_for(sync_db), embedder=timed) as mem:
            for number, chunk in enumerate(chunks):
                mem.messages.append_many([{"thread": f"thread-{i % 20}", "content": t} for i, t in enumerate(chunk)])

                def bare(chunk: list[str] = chunk) -> None:
                    t0 = time.perf_counter()
                    embed_texts(inner, chunk, batch_size=batch_size)
                    bare_times.append(time.perf_counter() - t0)

                def synced(chunk: list[str] = chunk) -> None:
                    nonlocal inside, batches
                    timed.reset()
                    t0 = time.perf_counter()
                    result = SyncJob(mem.core, batch_size=batch_size).run()
                    sync_times.append(time.perf_counter() - t0)
                    inside += timed.reset()
                    batches += result.batches
                    if result.messages_done != len(chunk):
                        raise InvalidInputError(f"sync embedded {result.messages_done} of {len(chunk)}: {result.error}")

                note(f"round {number + 1}/{len(chunks)}: {len(chunk)} texts, bare embedder and sync job")
                for step in (bare, synced) if number % 2 == 0 else (synced, bare):
                    step()
        bare_total, sync_total = sum(bare_times), sum(sync_times)
        ratios = sorted(s / b - 1.0 for s, b in zip(sync_times, bare_times, strict=True))
        report["sync"] = {
            "rounds": len(chunks),
            "sync_seconds": round(sync_total, 3),
            "sync_per_second": round(messages / sync_total, 1),
            "bare_seconds": round(bare_total, 3),
            "bare_per_second": round(messages / bare_total, 1),
            "overhead": round(sync_total / bare_total - 1.0, 4),
            "overhead_per_round": [round(r, 4) for r in ratios],
            "seconds_inside_embedder": round(inside, 3),
            "overhead_outside_embedder": round((sync_total - inside) / inside, 4) if inside else None,
            "batches": batches,
        }
    report["machine_after"] = {"load_avg": machine_info()["load_avg"]}
    closer = getattr(inner, "close", None)
    if callable(closer):
        closer()
    return report


def format_sync_bench(report: dict[str, Any]) -> str:
    """The report as a few human lines."""
    a, s, m = report["append"], report["sync"], report["machine"]
    return (
        "\n".join(
            [
                f"sync benchmark — {report.get('backend', 'sqlite')}, {report['messages']} messages, "
                f"embedder {report['embedder']}, "
                f"batch {report['batch_size']}; {m['cores']} cores, load {m['load_avg']}",
                f"append alone:      {a['alone']['per_second']:>8} /s  p50 {a['alone']['p50_ms']} ms  "
                f"p95 {a['alone']['p95_ms']} ms",
                f"append with sync:  {a['with_sync']['per_second']:>8} /s  p50 {a['with_sync']['p50_ms']} ms  "
                f"p95 {a['with_sync']['p95_ms']} ms  (slowdown {a['slowdown']:+.1%}; worker drained "
                f"{a['drain_seconds_after_last_append']} s after the last append)",
                f"sync job:          {s['sync_per_second']:>8} /s  ({s['sync_seconds']} s, {s['batches']} batches, "
                f"{s['rounds']} rounds)",
                f"bare embedder:     {s['bare_per_second']:>8} /s  ({s['bare_seconds']} s)",
                f"sync overhead vs bare embedder: {s['overhead']:+.1%} (per round {s['overhead_per_round']}) "
                f"(outside the embedder: {s['overhead_outside_embedder']:+.1%} of embedding time)",
            ]
        )
        + "\n"
        + json.dumps({"load_avg_after": report["machine_after"]["load_avg"]})
    )
