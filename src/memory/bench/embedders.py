"""Compare the MiniLM runtimes: PyTorch (sentence-transformers, the reference) vs ONNX Runtime int8.

On real sentences (LoCoMo dialogue turns) and real queries (LoCoMo questions)
it measures, for each runtime in one run: the load time, batch throughput
(sentences/s at a given batch size), single-query latency (p50/p95), and the
cosine of every ONNX vector to the PyTorch vector of the same sentence.

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
#: ONNX int8 stays the default only if every vector is at least this close to PyTorch's.
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
    return {"cores": cores, "cpu": platform.processor() or platform.machine(), "versions": versions}


def _measure(
    embedder: MiniLMEmbedder, sentences: Sequence[str], queries: Sequence[str], batch_size: int
) -> tuple[dict[str, float], npt.NDArray[np.float32]]:
    started = time.perf_counter()
    embedder.warm_up()
    load_s = time.perf_counter() - started
    embedder.embed_batch(list(sentences[:batch_size]))  # one full batch before timing
    chunks = []
    started = time.perf_counter()
    for start in range(0, len(sentences), batch_size):
        chunks.append(embedder.embed_batch(list(sentences[start : start + batch_size])))
    batch_s = time.perf_counter() - started
    latencies = []
    for query in queries:
        started = time.perf_counter()
        embedder.embed_batch([query])
        latencies.append(time.perf_counter() - started)
    lat_ms = np.array(latencies) * 1000.0
    figures = {
        "load_s": round(load_s, 3),
        "batch_sentences_per_s": round(len(sentences) / batch_s, 1),
        "query_p50_ms": round(float(np.percentile(lat_ms, 50)), 2),
        "query_p95_ms": round(float(np.percentile(lat_ms, 95)), 2),
    }
    return figures, np.vstack(chunks)


def run_embedder_bench(
    data: Path = DEFAULT_DATA,
    *,
    sentences: int = 1000,
    queries: int = 200,
    batch_size: int = 32,
    threads: int | None = None,
    runtimes: Sequence[str] = ("torch", "onnx"),
) -> dict[str, Any]:
    """Measure each runtime on the same texts; returns a JSON-able report.

    ``report["runtimes"][name]`` holds load_s, batch_sentences_per_s,
    query_p50_ms and query_p95_ms (or ``skipped`` with the reason);
    ``report["cosine_onnx_vs_torch"]`` min/mean/p01 when both ran;
    ``report["decision"]`` whether ONNX int8 qualifies as the default.
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
        "runtimes": {},
    }
    vectors: dict[str, npt.NDArray[np.float32]] = {}
    for runtime in runtimes:
        try:
            embedder = MiniLMEmbedder(runtime=runtime, threads=threads)
        except ConfigError as exc:
            report["runtimes"][runtime] = {"skipped": str(exc)}
            continue
        figures, vectors[runtime] = _measure(embedder, texts, questions, batch_size)
        report["runtimes"][runtime] = figures
    if "torch" in vectors and "onnx" in vectors:
        cosines = np.sum(vectors["torch"] * vectors["onnx"], axis=1)
        report["cosine_onnx_vs_torch"] = {
            "min": round(float(cosines.min()), 5),
            "p01": round(float(np.percentile(cosines, 1)), 5),
            "mean": round(float(cosines.mean()), 5),
        }
        torch_fig, onnx_fig = report["runtimes"]["torch"], report["runtimes"]["onnx"]
        close = float(cosines.min()) >= COSINE_THRESHOLD
        faster_queries = onnx_fig["query_p50_ms"] < torch_fig["query_p50_ms"]
        report["decision"] = {
            "onnx_default": close and faster_queries,
            "cosine_min_ok": close,
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
        f"{report['queries']} single queries; {machine['cores']} cores ({machine['cpu']})",
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
    if "cosine_onnx_vs_torch" in report:
        cos = report["cosine_onnx_vs_torch"]
        lines.append(f"cosine onnx-int8 vs torch: min {cos['min']:.5f}  p01 {cos['p01']:.5f}  mean {cos['mean']:.5f}")
        decision = report["decision"]
        lines.append(
            f"onnx default: {'yes' if decision['onnx_default'] else 'NO'} "
            f"(cosine min >= {COSINE_THRESHOLD}: {decision['cosine_min_ok']}, "
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
    parser.add_argument("--runtime", action="append", choices=["torch", "onnx"], help="runtime(s) to run (default: both)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    try:
        report = run_embedder_bench(
            args.data,
            sentences=args.sentences,
            queries=args.queries,
            batch_size=args.batch_size,
            threads=args.threads,
            runtimes=args.runtime or ("torch", "onnx"),
        )
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
