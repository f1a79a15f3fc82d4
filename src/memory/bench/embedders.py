"""Compare the MiniLM runtimes: PyTorch (sentence-transformers, the reference) vs ONNX Runtime int8.

On real sentences (LoCoMo dialogue turns) and real queries (LoCoMo questions)
it measures, for each runtime in one run: the load time, batch throughput
(sentences/s at a given batch size), single-query latency (p50/p95), the
cosine of every ONNX vector to the PyTorch vector of the same text, and how
many of each query's 10 nearest turns the two runtimes share.

Run it where PyTorch is installed (never needed by `memory` itself)::

    python -m memory.bench.embedders --data ../shared/bench/locomo_dev.json

Without PyTorch only the ONNX figures are reported.
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

__all__ = ["DEFAULT_DATA", "COSINE_THRESHOLD", "load_texts", "run_embedder_bench", "format_report", "main"]

#: The LoCoMo development split, relative to the repository checkout.
DEFAULT_DATA = Path("..") / "shared" / "bench" / "locomo_dev.json"
#: ONNX int8 stays the default only if its vectors are this close to PyTorch's on average.
COSINE_THRESHOLD = 0.999


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


def run_embedder_bench(
    data: Path = DEFAULT_DATA,
    *,
    sentences: int = 1000,
    queries: int = 200,
    batch_size: int = 32,
    threads: int | None = None,
    repeats: int = 3,
    runtimes: Sequence[str] = ("torch", "onnx"),
) -> dict[str, Any]:
    """Measure each runtime on the same texts, interleaved; returns a JSON-able report.

    Runtimes take turns, ``repeats`` rounds of (batch pass, then every query
    alone) each, so that other load on the machine hits them alike;
    throughput is the best round, latencies are pooled over all rounds.
    ``report["runtimes"][name]`` holds load_s (load and first embedding),
    batch_sentences_per_s, query_p50_ms and query_p95_ms (or ``skipped`` with
    the reason); when both ran, ``report["agreement"]`` holds the cosine of
    each ONNX vector to the PyTorch one (min/p01/mean) and the top-10
    neighbour overlap of the queries, and ``report["decision"]`` whether ONNX
    int8 qualifies as the default. Raises ConfigError when the data cannot be read.
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
    if "torch" in embedders and "onnx" in embedders:
        cosines = np.sum(vectors["torch"] * vectors["onnx"], axis=1)
        query_cosines = np.sum(np.array(query_vectors["torch"]) * np.array(query_vectors["onnx"]), axis=1)
        all_cosines = np.concatenate([cosines, query_cosines])
        overlap = (
            _top_k_overlap(
                vectors["torch"], vectors["onnx"],
                np.array(query_vectors["torch"]), np.array(query_vectors["onnx"]), 10,
            )
            if questions
            else None
        )  # fmt: skip
        report["agreement"] = {
            "cosine_min": round(float(all_cosines.min()), 5),
            "cosine_p01": round(float(np.percentile(all_cosines, 1)), 5),
            "cosine_mean": round(float(all_cosines.mean()), 5),
            "top10_overlap": None if overlap is None else round(overlap, 4),
        }
        torch_fig, onnx_fig = report["runtimes"]["torch"], report["runtimes"]["onnx"]
        close = float(all_cosines.mean()) >= COSINE_THRESHOLD
        faster_queries = onnx_fig["query_p50_ms"] < torch_fig["query_p50_ms"]
        report["decision"] = {
            "onnx_default": close and faster_queries,
            "cosine_mean_ok": close,
            "cosine_min_ok": float(all_cosines.min()) >= COSINE_THRESHOLD,
            "onnx_faster_for_queries": faster_queries,
            "faster_for_batches": (
                "onnx" if onnx_fig["batch_sentences_per_s"] > torch_fig["batch_sentences_per_s"] else "torch"
            ),
        }
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
    if "agreement" in report:
        agree = report["agreement"]
        lines.append(
            f"cosine onnx-int8 vs torch: min {agree['cosine_min']:.5f}  p01 {agree['cosine_p01']:.5f}  "
            f"mean {agree['cosine_mean']:.5f}; top-10 neighbour overlap {agree['top10_overlap']}"
        )
        decision = report["decision"]
        lines.append(
            f"onnx default: {'yes' if decision['onnx_default'] else 'NO'} "
            f"(cosine mean >= {COSINE_THRESHOLD}: {decision['cosine_mean_ok']}, "
            f"min >= {COSINE_THRESHOLD}: {decision['cosine_min_ok']}, "
            f"faster for queries: {decision['onnx_faster_for_queries']}); "
            f"faster for batches: {decision['faster_for_batches']}"
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
        "--runtime", action="append", choices=["torch", "onnx"], help="runtime(s) to run (default: both)"
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
            runtimes=args.runtime or ("torch", "onnx"),
        )
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
