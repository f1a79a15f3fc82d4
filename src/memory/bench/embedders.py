"""Compare the MiniLM runtimes: PyTorch (the reference), numpy fp32 and ONNX Runtime int8.

On real sentences (LoCoMo dialogue turns) and real queries (LoCoMo questions)
it measures, for each runtime in one run: the load time, batch throughput
(sentences/s at a given batch size), single-query latency (p50/p95), the
cosine of every numpy / ONNX vector to the PyTorch vector of the same text,
and how many of each query's 10 nearest turns they share with PyTorch's.

Run it where PyTorch is installed (never needed by `memory` itself)::

    python -m memory.bench.embedders --data ../shared/bench/locomo_dev.json

Without PyTorch only the speed figures are reported.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memory.embedders.minilm import MiniLMEmbedder
from memory.errors import ConfigError

__all__ = ["DEFAULT_DATA", "COSINE_THRESHOLD", "RUNTIMES", "load_texts", "run_embedder_bench", "format_report", "main"]

#: The LoCoMo development split, relative to the repository checkout.
DEFAULT_DATA = Path("..") / "shared" / "bench" / "locomo_dev.json"
#: A runtime may be the default only if every vector is at least this close to PyTorch's.
COSINE_THRESHOLD = 0.999
#: The runtimes, the reference first.
RUNTIMES = ("torch", "numpy", "onnx")


def load_texts(path: Path, sentences: int, queries: int) -> tuple[list[str], list[str]]:
    """The first ``sentences`` turns (as "Speaker: text") and ``queries`` questions of a LoCoMo file.

    Raises ConfigError when the file is missing or not LoCoMo-shaped.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read LoCoMo data {path}: {exc} (give --data PATH)") from exc
    turns: list[str] = []
    questions: list[str] = []
    try:
        for conversation in data:
            sessions = conversation["conversation"]
            keys = [k for k in sessions if k.startswith("session_") and isinstance(sessions[k], list)]
            for key in sorted(keys, key=lambda k: int(k.split("_")[1])):
                turns.extend(f"{t['speaker']}: {t['text']}" for t in sessions[key])
            questions.extend(str(q["question"]) for q in conversation["qa"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(f"{path} is not a LoCoMo file: {exc}") from exc
    return turns[:sentences], questions[:queries]


def _machine() -> dict[str, Any]:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    versions: dict[str, str] = {"python": platform.python_version(), "numpy": np.__version__}
    for module in ("onnxruntime", "tokenizers", "torch", "sentence_transformers"):
        if importlib.util.find_spec(module) is not None:
            versions[module] = str(getattr(__import__(module), "__version__", "?"))
    return {
        "cores": cores,
        "cpu": platform.processor() or platform.machine(),
        "load_average_before": _load_average(),
        "versions": versions,
    }


def _load_average() -> float | None:
    """The 1-minute load average (other work on the machine skews timings), if known."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _timed(embedder: MiniLMEmbedder, texts: list[str]) -> tuple[float, npt.NDArray[np.float32]]:
    started = time.perf_counter()
    vectors = embedder.embed_batch(texts)
    return time.perf_counter() - started, vectors


def _batch_pass(
    embedder: MiniLMEmbedder, sentences: Sequence[str], batch_size: int
) -> tuple[float, npt.NDArray[np.float32]]:
    seconds = 0.0
    chunks = []
    for start in range(0, len(sentences), batch_size):
        elapsed, vectors = _timed(embedder, list(sentences[start : start + batch_size]))
        seconds += elapsed
        chunks.append(vectors)
    return seconds, np.vstack(chunks)


def _top_k_overlap(
    reference: npt.NDArray[np.float32],
    other: npt.NDArray[np.float32],
    ref_queries: npt.NDArray[np.float32],
    other_queries: npt.NDArray[np.float32],
    k: int,
) -> float:
    """Mean share of the reference's top-k neighbours that the other runtime also returns."""
    ref_top = np.argsort(-(ref_queries @ reference.T), axis=1)[:, :k]
    other_top = np.argsort(-(other_queries @ other.T), axis=1)[:, :k]
    shared = [len(set(a.tolist()) & set(b.tolist())) / k for a, b in zip(ref_top, other_top, strict=True)]
    return float(np.mean(shared))


def _agreement(
    reference: npt.NDArray[np.float32],
    other: npt.NDArray[np.float32],
    ref_queries: npt.NDArray[np.float32],
    other_queries: npt.NDArray[np.float32],
) -> dict[str, float | None]:
    """Cosines of ``other``'s vectors to the reference's (sentences and queries pooled), top-10 overlap."""
    cosines = np.sum(reference * other, axis=1)
    if len(ref_queries):
        cosines = np.concatenate([cosines, np.sum(ref_queries * other_queries, axis=1)])
    overlap = _top_k_overlap(reference, other, ref_queries, other_queries, 10) if len(ref_queries) else None
    return {
        "cosine_min": round(float(cosines.min()), 7),
        "cosine_p01": round(float(np.percentile(cosines, 1)), 7),
        "cosine_mean": round(float(cosines.mean()), 7),
        "top10_overlap": None if overlap is None else round(overlap, 4),
    }


def _decide(report: dict[str, Any]) -> dict[str, Any]:
    """The rule: the fastest single-query p50 among the runtimes whose min cosine is >= the threshold.

    PyTorch is the reference, not a candidate: it is never a dependency of `memory`.
    """
    figures = {name: fig for name, fig in report["runtimes"].items() if "skipped" not in fig}
    exact = {name: agree["cosine_min"] >= COSINE_THRESHOLD for name, agree in report["agreement"].items()}
    eligible = [name for name in figures if exact.get(name)]
    default = min(eligible, key=lambda name: figures[name]["query_p50_ms"]) if eligible else None
    return {
        "default": default,
        "exact_enough": exact,
        "fastest_for_queries": min(figures, key=lambda name: figures[name]["query_p50_ms"]),
        "fastest_for_batches": max(figures, key=lambda name: figures[name]["batch_sentences_per_s"]),
    }


def run_embedder_bench(
    data: Path = DEFAULT_DATA,
    *,
    sentences: int = 1000,
    queries: int = 200,
    batch_size: int = 32,
    threads: int | None = None,
    repeats: int = 3,
    runtimes: Sequence[str] = RUNTIMES,
) -> dict[str, Any]:
    """Measure each runtime on the same texts, interleaved; returns a JSON-able report.

    Runtimes take turns, ``repeats`` rounds of (batch pass, then every query
    alone) each, so that other load on the machine hits them alike;
    throughput is the best round, latencies are pooled over all rounds.
    ``report["runtimes"][name]`` holds load_s (load and first embedding),
    batch_sentences_per_s, query_p50_ms and query_p95_ms (or ``skipped`` with
    the reason). When PyTorch ran, ``report["agreement"][name]`` holds, for
    each other runtime, the cosine of its vectors to PyTorch's (min/p01/mean)
    and the top-10 neighbour overlap of the queries, and ``report["decision"]``
    the default by the rule: the fastest for single queries (p50) among the
    runtimes other than PyTorch whose minimum cosine is >= COSINE_THRESHOLD.
    Raises ConfigError when the data cannot be read.
    """
    texts, questions = load_texts(Path(data), sentences, queries)
    report: dict[str, Any] = {
        "machine": _machine(),
        "data": str(data),
        "sentences": len(texts),
        "queries": len(questions),
        "batch_size": batch_size,
        "threads": threads,
        "repeats": repeats,
        "runtimes": {},
    }
    embedders: dict[str, MiniLMEmbedder] = {}
    for runtime in runtimes:
        try:
            embedder = MiniLMEmbedder(runtime=runtime, threads=threads)
        except ConfigError as exc:
            report["runtimes"][runtime] = {"skipped": str(exc)}
            continue
        started = time.perf_counter()
        embedder.warm_up()
        report["runtimes"][runtime] = {"load_s": round(time.perf_counter() - started, 3)}
        embedders[runtime] = embedder
    best: dict[str, float] = {name: float("inf") for name in embedders}
    vectors: dict[str, npt.NDArray[np.float32]] = {}
    latencies: dict[str, list[float]] = {name: [] for name in embedders}
    query_vectors: dict[str, list[npt.NDArray[np.float32]]] = {name: [] for name in embedders}
    for _ in range(max(1, repeats)):
        for name, embedder in embedders.items():
            seconds, vectors[name] = _batch_pass(embedder, texts, batch_size)
            best[name] = min(best[name], seconds)
            query_vectors[name] = []
            for query in questions:
                elapsed, row = _timed(embedder, [query])
                latencies[name].append(elapsed * 1000.0)
                query_vectors[name].append(row[0])
    report["machine"]["load_average_after"] = _load_average()
    for name in embedders:
        report["runtimes"][name].update(
            batch_sentences_per_s=round(len(texts) / best[name], 1),
            query_p50_ms=round(float(np.percentile(latencies[name], 50)), 2),
            query_p95_ms=round(float(np.percentile(latencies[name], 95)), 2),
        )
    if "torch" in embedders:
        report["agreement"] = {}
        for name in embedders:
            if name != "torch":
                report["agreement"][name] = _agreement(
                    vectors["torch"], vectors[name], np.array(query_vectors["torch"]), np.array(query_vectors[name])
                )
        report["decision"] = _decide(report)
    return report


def format_report(report: dict[str, Any]) -> str:
    """A side-by-side table of a :func:`run_embedder_bench` report."""
    machine = report["machine"]
    lines = [
        f"all-MiniLM-L6-v2 runtimes — {report['sentences']} LoCoMo turns, batch {report['batch_size']}, "
        f"{report['queries']} single queries x {report['repeats']} rounds; {machine['cores']} cores "
        f"({machine['cpu']}), load average {machine['load_average_before']} -> {machine['load_average_after']}",
        f"{'runtime':<8} {'load s':>8} {'batch sent/s':>13} {'query p50 ms':>13} {'query p95 ms':>13}",
    ]
    for name, fig in report["runtimes"].items():
        if "skipped" in fig:
            lines.append(f"{name:<8} skipped: {fig['skipped']}")
            continue
        lines.append(
            f"{name:<8} {fig['load_s']:>8.2f} {fig['batch_sentences_per_s']:>13.1f} "
            f"{fig['query_p50_ms']:>13.2f} {fig['query_p95_ms']:>13.2f}"
        )
    for name, agree in report.get("agreement", {}).items():
        lines.append(
            f"cosine {name} vs torch: min {agree['cosine_min']:.7f}  p01 {agree['cosine_p01']:.7f}  "
            f"mean {agree['cosine_mean']:.7f}; top-10 neighbour overlap {agree['top10_overlap']}"
        )
    if "decision" in report:
        decision = report["decision"]
        exact = ", ".join(f"{name} {'yes' if ok else 'NO'}" for name, ok in decision["exact_enough"].items())
        lines.append(
            f"default: {decision['default']} (min cosine >= {COSINE_THRESHOLD}: {exact}; "
            f"fastest for queries: {decision['fastest_for_queries']}, "
            f"for batches: {decision['fastest_for_batches']})"
        )
    versions = ", ".join(f"{k} {v}" for k, v in machine["versions"].items())
    lines.append(f"versions: {versions}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison and print the table (or JSON with --json); returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m memory.bench.embedders", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo JSON file (default: %(default)s)")
    parser.add_argument("--sentences", type=int, default=1000, help="turns to embed (default: %(default)s)")
    parser.add_argument("--queries", type=int, default=200, help="single queries to time (default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=32, help="texts per batch (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads per runtime (default: cores, max 4)")
    parser.add_argument(
        "--repeats", type=int, default=3, help="batch passes per runtime, best kept (default: %(default)s)"
    )
    parser.add_argument(
        "--runtime", action="append", choices=list(RUNTIMES), help="runtime(s) to run (default: all three)"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    try:
        report = run_embedder_bench(
            args.data,
            sentences=args.sentences,
            queries=args.queries,
            batch_size=args.batch_size,
            threads=args.threads,
            repeats=args.repeats,
            runtimes=args.runtime or RUNTIMES,
        )
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
