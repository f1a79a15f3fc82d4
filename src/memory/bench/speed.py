"""Speed benchmark: add throughput and recall latency, side by side with a peer store.

In one run, for growing store sizes (one store, filled stage by stage):

(a) add throughput: a live sample goes through :meth:`Memory.remember_batch`
    (embedding included) in batches; the time spent inside the embedder is
    measured by wrapping it, so storage + indexing overhead is
    ``(total - embedding) / embedding``. The bare embedder (``embed_texts`` on
    the same texts) is timed too. The rest of the stage is stored with
    precomputed vectors (``{"content": …, "vector": v}``): storage-only
    throughput at that size. Vectors come from a cache (see
    :mod:`memory.bench.corpus`), so only the first run embeds everything.
(b) recall latency p50/p95 per query (query embedding included) with the
    configured preset and vector-only, and the share of it spent embedding.
    Before the queries the store is settled (``backend.settle()``: SQLite
    ``PRAGMA optimize``, a WAL checkpoint and the HNSW graphs of namespaces
    past ``vector_graph_min``; PostgreSQL ``VACUUM (ANALYZE)`` and a
    ``CHECKPOINT``), so they are timed on a store at rest rather than
    against autovacuum, a checkpoint or a graph build catching up after the
    load. The vector-only results are checked against exact search over the
    same vectors (``exact_agreement``: the share of the exact top k they
    hold, ties counted). Then the preset again in a live store: one write (a
    memory with its vector, not timed) before each of :data:`LIVE_QUERIES`
    recalls ("write, recall").
(c) the same texts, vectors, batches, queries and k on a peer embedded
    vector store (:mod:`memory.bench.peers`), its results checked against
    exact search the same way.
"""

from __future__ import annotations

import os
import platform
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memory import __version__
from memory.backends.servers import store_size_mb
from memory.bench.corpus import cached_vectors, corpus_cache_key, corpus_queries, generate_texts, load_corpus
from memory.bench.locomo import fresh_store
from memory.bench.metrics import percentile
from memory.bench.peers import PeerStore, open_peer
from memory.config import Settings
from memory.embedders import create_embedder
from memory.embedders.base import Embedder, embed_query, embed_texts
from memory.embedders.batching import forget_queries
from memory.errors import InvalidInputError
from memory.memory import Memory

__all__ = ["TimedEmbedder", "machine_info", "run_speed", "format_speed", "DEFAULT_SIZES"]

DEFAULT_SIZES: tuple[int, ...] = (10_000, 100_000)
WARMUP_QUERIES = 5
#: Recalls timed with a write before each (:func:`_live_stage`).
LIVE_QUERIES = 50
#: Environment variables that change thread pools (recorded with the machine).
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "MKL_NUM_THREADS")
Progress = Callable[[str], None]


class TimedEmbedder:
    """An embedder that adds up the seconds spent in the wrapped one's ``embed_batch``."""

    def __init__(self, inner: Embedder) -> None:
        """Wrap ``inner``; ``seconds`` starts at 0."""
        self.inner = inner
        self.model_name = inner.model_name
        self.seconds = 0.0

    @property
    def dimension(self) -> int:
        """The wrapped embedder's dimension."""
        return self.inner.dimension

    def embed_batch(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed with the wrapped embedder, timing the call."""
        started = time.perf_counter()
        try:
            return self.inner.embed_batch(texts)
        finally:
            self.seconds += time.perf_counter() - started

    def reset(self) -> float:
        """Return the seconds counted so far and start again from 0."""
        seconds, self.seconds = self.seconds, 0.0
        return seconds


def machine_info() -> dict[str, Any]:
    """Cores, CPU model, memory, load average (1/5/15 min), OS and versions of this machine."""
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 1
    memory_gb = None
    try:
        memory_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3, 1)
    except (ValueError, OSError, AttributeError):
        pass
    try:
        load: list[float] | None = [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        load = None
    return {
        "cores": usable,
        "load_avg": load,
        "cpu": cpu,
        "memory_gb": memory_gb,
        "os": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "thread_env": {name: os.environ[name] for name in _THREAD_VARS if name in os.environ},
        "memory": __version__,
    }


def _disk_mb(path: Path) -> float:
    total = sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0
    return round(total / 1024**2, 1)


def _rate(items: int, seconds: float) -> float:
    return round(items / seconds, 1) if seconds > 0 else 0.0


def _latency(totals_ms: Sequence[float], embeds_ms: Sequence[float]) -> dict[str, float]:
    searches = [max(t - e, 0.0) for t, e in zip(totals_ms, embeds_ms, strict=True)]
    return {
        "p50_ms": round(percentile(totals_ms, 50), 2),
        "p95_ms": round(percentile(totals_ms, 95), 2),
        "search_p50_ms": round(percentile(searches, 50), 2),
        "search_p95_ms": round(percentile(searches, 95), 2),
        "embed_p50_ms": round(percentile(embeds_ms, 50), 2),
        "embed_share": round(sum(embeds_ms) / sum(totals_ms), 3) if sum(totals_ms) > 0 else 0.0,
    }


def _chunks(start: int, stop: int, size: int) -> list[range]:
    return [range(i, min(i + size, stop)) for i in range(start, stop, size)]


class _Stage:
    """Everything one stage needs: texts, cached vectors, batches, queries, and which memory holds which text."""

    def __init__(
        self, texts: list[str], vectors: npt.NDArray[np.float32], queries: list[str], batch: int, k: int
    ) -> None:
        self.texts, self.vectors, self.queries, self.batch, self.k = texts, vectors, queries, batch, k
        #: Position in ``texts`` of each memory stored so far (vector-only results are checked against exact search).
        self.positions: dict[str, int] = {}


def _memory_stage(
    mem: Memory,
    timed: TimedEmbedder,
    model: Embedder,
    stage: _Stage,
    live: range,
    bulk: range,
    preset: str,
    index_after_load: bool = False,
) -> dict[str, Any]:
    texts, vectors = stage.texts, stage.vectors
    started = time.perf_counter()
    embed_texts(model, texts[live.start : live.stop], batch_size=mem.settings.limits.embed_batch_size)
    bare = time.perf_counter() - started

    timed.reset()
    started = time.perf_counter()
    for chunk in _chunks(live.start, live.stop, stage.batch):
        stage.positions.update(zip(mem.remember_batch([texts[i] for i in chunk]), chunk, strict=True))
    live_total = time.perf_counter() - started
    live_embed = timed.reset()

    backend = mem.backend  # the benchmark times the backend's own bulk-load path
    index_after = index_after_load and len(bulk) > 0 and backend.drop_vector_indexes()
    started = time.perf_counter()
    for chunk in _chunks(bulk.start, bulk.stop, stage.batch):
        ids = mem.remember_batch([{"content": texts[i], "vector": vectors[i]} for i in chunk])
        stage.positions.update(zip(ids, chunk, strict=True))
    bulk_total = time.perf_counter() - started
    build_seconds = backend.build_vector_indexes("2GB") if index_after else None
    # Queries are timed on a store at rest: not against autovacuum or a checkpoint after the load.
    settle_seconds = backend.settle()

    latencies: dict[str, dict[str, float]] = {}
    for label, retrieval in (("recall", preset), ("recall_vector_only", "vector")):
        for query in stage.queries[-WARMUP_QUERIES:]:
            mem.recall(query, limit=stage.k, retrieval=retrieval)
        totals, embeds, found = [], [], []
        for query in stage.queries:
            forget_queries(mem.embedder)  # every timed query embeds (the query cache would answer repeats)
            timed.reset()
            started = time.perf_counter()
            hits = mem.recall(query, limit=stage.k, retrieval=retrieval)
            totals.append((time.perf_counter() - started) * 1000.0)
            embeds.append(timed.reset() * 1000.0)
            found.append([stage.positions.get(hit.id, -1) for hit in hits])
        latencies[label] = _latency(totals, embeds)
        if label == "recall_vector_only":
            latencies[label]["exact_agreement"] = _agreement(stage, model, stage.vectors[: bulk.stop], found)
    live_store = max(live_total - live_embed, 0.0)
    return {
        "embed_bare": {"items": len(live), "seconds": round(bare, 3), "items_per_s": _rate(len(live), bare)},
        "add_live": {
            "items": len(live),
            "seconds": round(live_total, 3),
            "items_per_s": _rate(len(live), live_total),
            "embed_seconds": round(live_embed, 3),
            "store_seconds": round(live_store, 3),
            "overhead_pct": round(100.0 * live_store / live_embed, 1) if live_embed > 0 else None,
            "overhead_vs_bare_pct": round(100.0 * (live_total - bare) / bare, 1) if bare > 0 else None,
        },
        "add_bulk": {
            "items": len(bulk),
            "seconds": round(bulk_total, 3),
            "items_per_s": _rate(len(bulk), bulk_total),
            "ms_per_item": round(1000.0 * bulk_total / len(bulk), 3) if len(bulk) else None,
            "index_build_seconds": None if build_seconds is None else round(build_seconds, 1),
            "settle_seconds": None if settle_seconds is None else round(settle_seconds, 1),
        },
        **latencies,
    }


def _live_stage(mem: Memory, timed: TimedEmbedder, stage: _Stage, preset: str) -> dict[str, float]:
    """Recall latency in a live store: one write (a memory with its vector) before each timed recall.

    An agent remembers and recalls turn by turn; a search right after a write
    pays for what the write changed (new entries in the in-process vector
    copies, new index pages). The writes are not timed, and are forgotten
    afterwards so the next size starts from the store it had.
    """
    written: list[str] = []
    totals, embeds = [], []
    for n, query in enumerate(stage.queries[:LIVE_QUERIES]):
        i = n % len(stage.texts)
        written += mem.remember_batch([{"content": f"{stage.texts[i]} (again: {n})", "vector": stage.vectors[i]}])
        forget_queries(mem.embedder)
        timed.reset()
        started = time.perf_counter()
        mem.recall(query, limit=stage.k, retrieval=preset)
        totals.append((time.perf_counter() - started) * 1000.0)
        embeds.append(timed.reset() * 1000.0)
    mem.forget(written)
    return _latency(totals, embeds)


def _peer_stage(peer: PeerStore, model: Embedder, stage: _Stage, live: range, bulk: range) -> dict[str, Any]:
    texts, vectors = stage.texts, stage.vectors
    embed_seconds = store_seconds = 0.0
    add_texts = getattr(peer, "add_texts", None)  # a memory library (mem0) embeds what it stores itself
    for chunk in _chunks(live.start, live.stop, stage.batch):
        batch = [texts[i] for i in chunk]
        if add_texts is not None:
            before = peer.embed_seconds  # type: ignore[attr-defined]
            started = time.perf_counter()
            add_texts([f"t{i}" for i in chunk], batch)
            spent = time.perf_counter() - started
            embedded = peer.embed_seconds - before  # type: ignore[attr-defined]
            embed_seconds += embedded
            store_seconds += max(spent - embedded, 0.0)
            continue
        started = time.perf_counter()
        fresh = embed_texts(model, batch)
        middle = time.perf_counter()
        peer.add([f"t{i}" for i in chunk], batch, fresh)
        store_seconds += time.perf_counter() - middle
        embed_seconds += middle - started
    live_total = embed_seconds + store_seconds

    started = time.perf_counter()
    for chunk in _chunks(bulk.start, bulk.stop, stage.batch):
        peer.add([f"t{i}" for i in chunk], [texts[i] for i in chunk], vectors[chunk.start : chunk.stop])
    bulk_total = time.perf_counter() - started

    search = getattr(peer, "search", None)  # a memory library searches by the text (mem0: entities, scoring)

    def ask(query: str, vector: npt.NDArray[np.float32]) -> list[str]:
        if search is not None:
            return list(search(query, vector, stage.k))
        return list(peer.query(vector, stage.k))

    for query in stage.queries[-WARMUP_QUERIES:]:
        ask(query, embed_query(model, query))
    totals, embeds, found = [], [], []
    for query in stage.queries:
        started = time.perf_counter()
        vector = embed_query(model, query)
        middle = time.perf_counter()
        ids = ask(query, vector)
        totals.append((time.perf_counter() - started) * 1000.0)
        embeds.append((middle - started) * 1000.0)
        found.append([int(name[1:]) if name.startswith("t") and name[1:].isdigit() else -1 for name in ids])
    query_latency = _latency(totals, embeds)
    if search is None:  # a vector store: its results against exact search over the same vectors
        query_latency["exact_agreement"] = _agreement(stage, model, vectors[: bulk.stop], found)
    return {
        "name": peer.name,
        **({"notes": list(peer.notes)} if hasattr(peer, "notes") else {}),
        "add_live": {
            "items": len(live),
            "seconds": round(live_total, 3),
            "items_per_s": _rate(len(live), live_total),
            "embed_seconds": round(embed_seconds, 3),
            "store_seconds": round(store_seconds, 3),
            "overhead_pct": round(100.0 * store_seconds / embed_seconds, 1) if embed_seconds > 0 else None,
        },
        "add_bulk": {
            "items": len(bulk),
            "seconds": round(bulk_total, 3),
            "items_per_s": _rate(len(bulk), bulk_total),
            "ms_per_item": round(1000.0 * bulk_total / len(bulk), 3) if len(bulk) else None,
        },
        "query": query_latency,
    }


def _agreement(
    stage: _Stage, model: Embedder, vectors: npt.NDArray[np.float32], found: Sequence[Sequence[int]]
) -> float:
    """Share of the exact top k that the results hold: each result at least as near as the exact k-th, over k.

    The exact neighbours are the cosines of each query's embedding with the
    corpus vectors stored so far (``vectors``), in float32; a result counts
    when its text's cosine is at least the k-th best (ties count as found),
    so approximate search is measured the same way for every store.
    """
    queries = embed_texts(model, stage.queries)
    norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))
    norms[norms == 0] = 1.0
    total = 0.0
    for query, positions in zip(queries, found, strict=True):
        unit = query / (float(np.linalg.norm(query)) or 1.0)
        scores = (vectors @ unit) / norms
        k = min(stage.k, scores.shape[0])
        kth = float(np.partition(scores, -k)[-k])
        total += sum(1 for n in positions[:k] if 0 <= n < scores.shape[0] and scores[n] >= kth - 1e-6) / k
    return round(total / max(len(found), 1), 4)


def run_speed(
    *,
    sizes: Sequence[int] = DEFAULT_SIZES,
    backend: str = "sqlite",
    peer: str = "chroma",
    queries: int = 200,
    k: int = 10,
    batch: int = 500,
    sample: int = 2_000,
    embedder: str | Embedder = "auto",
    preset: str = "balanced",
    data: Path | None = None,
    cache_dir: Path | None = None,
    seed: int = 0,
    progress: Progress | None = None,
    dsn: str | None = None,
    index_after_load: bool = False,
) -> dict[str, Any]:
    """Run the speed benchmark and return the report (see the module docs).

    ``sizes`` are store sizes, filled in increasing order in one store;
    ``sample`` texts per stage are added live (embedded), the rest with
    cached vectors; ``peer`` is 'chroma', 'lancedb' or 'none'; ``data`` a
    LoCoMo file to draw sentences from (None: built-in sentences);
    ``cache_dir`` where embeddings are cached (None: no cache kept);
    ``dsn`` the PostgreSQL server for ``backend='postgres'`` (a scratch
    database is created and dropped); ``index_after_load`` drops the
    vector index before each stage's bulk load and rebuilds it after,
    reporting the build time (postgres: the HNSW index). Raises
    InvalidInputError or ConfigError.
    """
    steps = sorted(set(sizes))
    if not steps or steps[0] < 1:
        raise InvalidInputError("sizes must be positive integers")
    for name, value, low in (("queries", queries, 1), ("k", k, 1), ("batch", batch, 1), ("sample", sample, 1)):
        if value < low:
            raise InvalidInputError(f"{name} must be at least {low}, got {value}")
    note = progress or (lambda message: None)
    machine = machine_info()
    settings = Settings(database="memory://", retrieval=preset)
    settings.retrieval_config()  # unknown preset: ConfigError before any work
    if batch > settings.limits.max_batch:
        raise InvalidInputError(f"batch must be at most {settings.limits.max_batch}")
    model = create_embedder(embedder) if isinstance(embedder, str) else embedder
    corpus = load_corpus(data)
    note(f"generating {steps[-1]} texts from {corpus.source}")
    texts = generate_texts(corpus, steps[-1], seed=seed)
    query_texts = corpus_queries(corpus, queries + WARMUP_QUERIES, seed=seed)
    embed_texts(model, texts[:64])  # load the model before anything is timed

    started = time.perf_counter()
    key = corpus_cache_key(corpus, seed)
    with tempfile.TemporaryDirectory(prefix="memory-speed-") as tmp:
        directory = Path(cache_dir) if cache_dir is not None else Path(tmp) / "cache"
        vectors = cached_vectors(
            model, texts, directory, key, progress=lambda done, total: note(f"embedding corpus: {done}/{total}")
        )
        prepare_seconds = time.perf_counter() - started
        stage = _Stage(texts, vectors, query_texts, batch, k)
        timed = TimedEmbedder(model)
        store_dir = Path(tmp) / "memory"
        store_dir.mkdir()
        report_sizes: list[dict[str, Any]] = []
        peer_store = open_peer(peer, Path(tmp) / "peer", model) if peer != "none" else None
        try:
            with (
                fresh_store(backend, store_dir, "speed", dsn) as url,
                Memory(url, embedder=timed, settings=settings.model_copy(update={"database": url})) as mem,
            ):
                previous = 0
                for size in steps:
                    live = range(previous, min(previous + sample, size))
                    bulk = range(live.stop, size)
                    note(f"size {size}: memory ({len(live)} live, {len(bulk)} with vectors)")
                    row: dict[str, Any] = {"size": size}
                    row["memory"] = _memory_stage(mem, timed, model, stage, live, bulk, preset, index_after_load)
                    row["memory"]["disk_mb"] = store_size_mb(url, store_dir)
                    row["memory"]["recall_after_write"] = _live_stage(mem, timed, stage, preset)
                    if peer_store is not None:
                        note(f"size {size}: {peer_store.name}")
                        row["peer"] = _peer_stage(peer_store, model, stage, live, bulk)
                        row["peer"]["disk_mb"] = _disk_mb(Path(tmp) / "peer")
                    report_sizes.append(row)
                    previous = size
        finally:
            if peer_store is not None:
                peer_store.close()
    machine["load_avg_end"] = machine_info()["load_avg"]
    return {
        "machine": machine,
        "config": {
            "embedder": model.model_name,
            "backend": backend,
            "peer": peer_store.name if peer_store is not None else "none",
            "preset": preset,
            "k": k,
            "batch": batch,
            "sample": sample,
            "queries": queries,
            "seed": seed,
            "corpus": corpus.source,
            "index_after_load": index_after_load,
        },
        "prepare_seconds": round(prepare_seconds, 1),
        "sizes": report_sizes,
    }


def _cell(value: Any, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def format_speed(report: dict[str, Any]) -> str:
    """A plain-text table of a :func:`run_speed` report, with the targets checked."""
    machine, config = report["machine"], report["config"]
    lines = [
        f"speed  embedder={config['embedder']}  backend={config['backend']}  preset={config['preset']}  "
        f"k={config['k']}  batch={config['batch']}  peer={config['peer']}",
        f"machine: {machine['cores']} cores, {machine['cpu']}, {machine['memory_gb']} GB, Python {machine['python']}, "
        f"load avg {machine['load_avg']} -> {machine.get('load_avg_end')}",
        f"{'size':>8}  {'system':<22}{'live add/s':>11}{'overhead':>10}{'bulk add/s':>11}"
        f"{'p50 ms':>9}{'p95 ms':>9}{'embed ms':>9}{'embed %':>9}{'srch p50':>9}{'srch p95':>9}{'disk MB':>9}",
    ]
    for row in report["sizes"]:
        mem = row["memory"]
        bare = mem["embed_bare"]
        lines.append(f"{row['size']:>8}  {'bare embedder':<22}{_cell(bare['items_per_s'], '.0f'):>11}")
        entries = [(f"memory ({config['preset']})", mem["add_live"], mem["add_bulk"], mem["recall"], mem["disk_mb"])]
        entries.append(("memory (vector only)", None, None, mem["recall_vector_only"], None))
        if "recall_after_write" in mem:
            entries.append(("memory (write, recall)", None, None, mem["recall_after_write"], None))
        if "peer" in row:
            peer = row["peer"]
            entries.append((peer["name"], peer["add_live"], peer["add_bulk"], peer["query"], peer["disk_mb"]))
        for name, live, bulk, query, disk in entries:
            overhead = None if live is None else live["overhead_pct"]
            lines.append(
                f"{'':>8}  {name:<22}"
                f"{_cell(None if live is None else live['items_per_s'], '.0f'):>11}"
                f"{_cell(overhead, '.1f') + ('%' if overhead is not None else ''):>10}"
                f"{_cell(None if bulk is None else bulk['items_per_s'], '.0f'):>11}"
                f"{query['p50_ms']:>9.1f}{query['p95_ms']:>9.1f}{query['embed_p50_ms']:>9.1f}"
                f"{100 * query['embed_share']:>8.0f}%{query['search_p50_ms']:>9.1f}{query['search_p95_ms']:>9.1f}"
                f"{_cell(disk, '.1f'):>9}"
            )
        if row.get("peer", {}).get("notes"):
            lines.append(f"{'':>8}  {row['peer']['name']}: {'; '.join(row['peer']['notes'])}")
        build = mem["add_bulk"].get("index_build_seconds")
        if build is not None:
            lines.append(f"{'':>8}  vector index rebuilt after the bulk load in {build:.1f} s")
        settled = mem["add_bulk"].get("settle_seconds")
        if settled is not None:
            lines.append(f"{'':>8}  store settled before the queries in {settled:.1f} s")
        peer_agreement = row.get("peer", {}).get("query", {}).get("exact_agreement")
        if mem["recall_vector_only"].get("exact_agreement") is not None:
            shown = f"memory (vector only) {mem['recall_vector_only']['exact_agreement']:.3f}"
            if peer_agreement is not None:
                shown += f", {row['peer']['name']} {peer_agreement:.3f}"
            lines.append(f"{'':>8}  top-{config['k']} agreement with exact search: {shown}")
    lines.append(
        "overhead = storage+indexing time / embedding time of the live sample (target <= 10%); "
        "bulk = adds with precomputed vectors; latency includes the query embedding (target p95 <= 50 ms); "
        "search = latency minus the query embedding."
    )
    return "\n".join(lines)
