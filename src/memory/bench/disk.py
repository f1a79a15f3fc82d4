"""Disk and memory benchmark: bytes per memory by component, and the process's RSS while it searches.

One SQLite store of ``size`` memories (generated sentences as in
``bench speed``, stored with precomputed vectors in batches) is measured:

- **disk by component**, from SQLite's page statistics after a WAL
  checkpoint: the memory rows and their indexes, the full-text index
  (content + window + date), the vectors (float16; float32 in a
  space made before migration 0016), the sign bits,
  the window vectors (memories in threads), the ledger, and the rest;
- **RSS**: of this process after the load, then its peak while it runs
  ``queries`` recalls (hybrid preset and vector-only), and after them. On
  Linux the peak is reset (``/proc/self/clear_refs``) before the searches,
  so it is the searches' own.

Vectors come from the embedder given (default: the hashing embedder at 384
dimensions, MiniLM's size: disk figures depend on the dimension, not on the
model) and are cached like ``bench speed``'s.
"""

from __future__ import annotations

import gc
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory import registry
from memory.backends.base import Backend
from memory.backends.servers import sqlite_space
from memory.bench.corpus import GENERATOR_VERSION, cached_vectors, corpus_queries, generate_texts, load_corpus
from memory.bench.procfs import status_mb
from memory.bench.speed import machine_info
from memory.config import Settings
from memory.embedders import create_embedder
from memory.embedders.base import Embedder
from memory.embedders.batching import forget_queries
from memory.errors import InvalidInputError
from memory.memory import Memory

__all__ = ["run_disk", "format_disk", "components", "COMPONENTS"]

COMPONENTS = ("rows", "fts_keys", "vectors", "sign_bits", "window_vectors", "ledger", "other")
_ROWS = ("items", "sqlite_autoindex_items_1", "items_ns_", "items_dedup", "items_pending", "item_tags")


def components(tables: dict[str, int], vector_models: dict[str, str]) -> dict[str, int]:
    """Bytes per component (:data:`COMPONENTS`) from bytes per table/index and vector table -> model."""
    out = dict.fromkeys(COMPONENTS, 0)
    windows = {t.split("_", 1)[1] for t, model in vector_models.items() if model.endswith("+window")}
    for name, size in tables.items():
        suffix = name.split("_", 1)[1].split("_", 1)[0] if "_" in name else ""
        if name.startswith(("vectors_", "vcodes_")) and suffix in windows:
            part = "window_vectors"
        elif name.startswith("vectors_"):
            part = "vectors"
        elif name.startswith("vcodes_"):
            part = "sign_bits"
        elif name.startswith("items_key_fts"):
            part = "fts_keys"
        elif name.startswith(("ledger", "sqlite_autoindex_ledger")):
            part = "ledger"
        elif name.startswith(_ROWS):
            part = "rows"
        else:
            part = "other"
        out[part] += size
    return out


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def run_disk(
    *,
    size: int = 100_000,
    queries: int = 200,
    batch: int = 500,
    thread_size: int = 0,
    embedder: str | Embedder | None = None,
    preset: str = "balanced",
    data: Path | None = None,
    cache_dir: Path | None = None,
    seed: int = 0,
    namespaces: int = 1,
    vector_cache_total_mb: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Build the store, measure it and search it; returns the report (see the module docs).

    ``thread_size`` > 0 puts every run of that many memories in one thread
    (window vectors and window texts are then kept); ``embedder`` default:
    hashing at 384 dimensions. ``namespaces`` > 1 stores the ``size``
    memories in each of that many namespaces (the bytes per memory count
    them all) and asks the queries of the RSS stage in each in turn, as a
    server with several users does; ``vector_cache_total_mb`` is the SQLite
    backend's budget for the vector copies of all namespaces together
    (default: the backend's). Raises InvalidInputError or ConfigError.
    """
    for name, value in (("size", size), ("queries", queries), ("batch", batch), ("namespaces", namespaces)):
        if value < 1:
            raise InvalidInputError(f"{name} must be at least 1, got {value}")
    if thread_size < 0:
        raise InvalidInputError("thread_size must be 0 (no threads) or positive")
    note = progress or (lambda message: None)
    model = (
        create_embedder("hashing", {"dim": 384})
        if embedder is None
        else create_embedder(embedder)
        if isinstance(embedder, str)
        else embedder
    )
    machine = machine_info()
    corpus = load_corpus(data)
    texts = generate_texts(corpus, size, seed=seed)
    asked = corpus_queries(corpus, queries, seed=seed)
    settings = Settings(database="memory://", retrieval=preset)
    settings.retrieval_config()
    if batch > settings.limits.max_batch:
        raise InvalidInputError(f"batch must be at most {settings.limits.max_batch}")
    with tempfile.TemporaryDirectory(prefix="memory-disk-") as tmp:
        key = f"{corpus.source}-{corpus.fingerprint}-g{GENERATOR_VERSION}-s{seed}"
        vectors = cached_vectors(
            model, texts, Path(cache_dir) if cache_dir else Path(tmp) / "cache", key,
            progress=lambda done, total: note(f"embedding corpus: {done}/{total}"),
        )  # fmt: skip
        path = Path(tmp) / "disk.db"
        url = f"sqlite:///{path}"
        rss_start = status_mb("VmRSS")
        names = [settings.namespace] if namespaces == 1 else [f"ns{n}" for n in range(namespaces)]
        budget = {} if vector_cache_total_mb is None else {"vector_cache_total_mb": vector_cache_total_mb}
        with Memory(
            embedder=model, settings=settings.model_copy(update={"database": url}),
            backend=registry.create("backend", "sqlite", {"path": str(path), **budget}, protocol=Backend),
        ) as mem:  # fmt: skip
            started = time.perf_counter()
            for namespace in names:
                for start in range(0, size, batch):
                    stop = min(start + batch, size)
                    entries: list[dict[str, Any]] = []
                    for i in range(start, stop):
                        entry: dict[str, Any] = {"content": texts[i], "vector": vectors[i]}
                        if thread_size:
                            entry["thread"] = f"t{i // thread_size}"
                        entries.append(entry)
                    mem.remember_batch(entries, namespace=namespace)
                    if stop % 10_000 < batch:
                        note(f"stored {stop}/{size} in {namespace}")
            load_seconds = time.perf_counter() - started
            mem.backend.settle()
            gc.collect()
            rss_loaded = status_mb("VmRSS")
            peak_reset = _reset_peak()
            started = time.perf_counter()
            for retrieval in (preset, "vector"):
                for n, query in enumerate(asked):
                    forget_queries(mem.embedder)
                    mem.recall(query, limit=10, retrieval=retrieval, namespace=names[n % len(names)])
            search_seconds = time.perf_counter() - started
            rss_peak = status_mb("VmHWM")
            rss_after = status_mb("VmRSS")
        tables, models = sqlite_space(path)
        parts = components(tables, models)
        file_bytes = sum(f.stat().st_size for f in Path(tmp).glob("disk.db*"))
    stored = size * namespaces
    per_memory = {name: round(value / stored, 1) for name, value in parts.items()}
    machine["load_avg_end"] = machine_info()["load_avg"]
    return {
        "machine": machine,
        "config": {
            "size": size,
            "embedder": model.model_name,
            "dimension": model.dimension,
            "thread_size": thread_size,
            "batch": batch,
            "queries": queries,
            "preset": preset,
            "seed": seed,
            "namespaces": namespaces,
            "vector_cache_total_mb": vector_cache_total_mb,
            "corpus": corpus.source,
            "pid": os.getpid(),
        },  # fmt: skip
        "load_seconds": round(load_seconds, 1),
        "file_mb": round(file_bytes / 1024**2, 1),
        "bytes_per_memory": round(file_bytes / stored, 1),
        "components_bytes": parts,
        "components_bytes_per_memory": per_memory,
        "tables_bytes": dict(sorted(tables.items(), key=lambda kv: -kv[1])),
        "rss_mb": {
            "start": rss_start,
            "after_load": rss_loaded,
            "peak_during_searches": rss_peak if peak_reset else None,
            "after_searches": rss_after,
        },
        "search_seconds": round(search_seconds, 1),
    }


def format_disk(report: dict[str, Any]) -> str:
    """The report of :func:`run_disk` as text."""
    config, machine = report["config"], report["machine"]
    lines = [
        f"disk  size={config['size']}  embedder={config['embedder']} ({config['dimension']}-d)  "
        f"thread_size={config['thread_size']}  load avg {machine['load_avg']} -> {machine.get('load_avg_end')}",
        f"file {report['file_mb']} MB = {report['bytes_per_memory']:.0f} bytes per memory "
        f"(stored in {report['load_seconds']} s)",
        f"{'component':<16}{'MB':>9}{'bytes/memory':>14}",
    ]
    for name in COMPONENTS:
        total = report["components_bytes"][name]
        lines.append(f"{name:<16}{total / 1024**2:>9.1f}{report['components_bytes_per_memory'][name]:>14.0f}")
    rss = report["rss_mb"]
    lines.append(
        f"RSS MB: start {rss['start']}, after the load {rss['after_load']}, peak during "
        f"{2 * config['queries']} searches {rss['peak_during_searches']}, after {rss['after_searches']}"
    )
    if config["namespaces"] > 1:
        lines.append(f"{config['namespaces']} namespaces of {config['size']} memories, searched in turn")
    return "\n".join(lines)
