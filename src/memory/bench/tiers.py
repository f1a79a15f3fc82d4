"""LoCoMo through tier retrieval vs. flat recall (same metric), and what consolidation costs per turn.

Per conversation a fresh store is opened. Flat: :func:`memory.bench.locomo.run_locomo`
(every turn a memory, ``recall(limit=20)``). Tiers: consecutive turns are
paired into dialogue pages (query = a turn, response = the next one; a page
stands for both dia_ids) and appended with :meth:`Tiers.add_page` for agent
``bench`` and user = the conversation id (``record=False``: the episodic copy
is not timed); after every page :meth:`Tiers.consolidate` runs and is timed
separately. Each question is answered with :meth:`Tiers.retrieve`; the ranked
turn list is the top-k MTM pages by score, then the STM pages newest first,
cut at 20 turn ids, and scored with the same metrics as the flat run.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory.bench.locomo import CATEGORIES, RECALL_LIMIT, Conversation, database_url, load_conversations, run_locomo
from memory.bench.metrics import METRIC_KEYS, mean_metrics, percentile, question_metrics
from memory.embedders import create_embedder
from memory.embedders.base import Embedder
from memory.errors import InvalidInputError
from memory.memory import Memory

__all__ = ["run_tiers_bench", "format_tiers_report"]


class _StepClock:
    """One minute per page, so recency and ordering are deterministic."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def _round(metrics: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in metrics.items()}


def _by_category(rows: list[dict[str, Any]]) -> dict[str, dict[str, float | int]]:
    out: dict[str, dict[str, float | int]] = {}
    for category in sorted({row["category"] for row in rows}):
        chosen = [row for row in rows if row["category"] == category]
        out[str(category)] = {**_round(mean_metrics(chosen)), "n": len(chosen)}
    return out


def _tier_rows(
    mem: Memory, clock: _StepClock, conv: Conversation, top_m: int, top_k: int, timings: dict[str, list[float]]
) -> list[dict[str, Any]]:
    agent, user = "bench", conv.sample_id
    mem.tiers.configure(agent=agent, top_m_segments=top_m, top_k_pages=top_k)
    turns = list(conv.turns)
    for start in range(0, len(turns), 2):
        pair = turns[start : start + 2]
        response = pair[1].content if len(pair) > 1 else ""
        began = time.perf_counter()
        mem.tiers.add_page(pair[0].content, response, agent=agent, user=user, record=False, consolidate=False,
                           metadata={"dia_ids": [t.dia_id for t in pair]})  # fmt: skip
        middle = time.perf_counter()
        mem.tiers.consolidate(agent=agent, user=user)
        ended = time.perf_counter()
        timings["add_ms"].append((middle - began) * 1000.0)
        timings["consolidate_ms"].append((ended - middle) * 1000.0)
        clock.now += timedelta(minutes=1)
    rows = []
    for question in conv.questions:
        if question.category not in CATEGORIES or not question.evidence:
            continue
        began = time.perf_counter()
        ctx = mem.tiers.retrieve(question.question, agent=agent, user=user)
        timings["retrieve_ms"].append((time.perf_counter() - began) * 1000.0)
        ranked: list[str] = []
        for page in [hit.page for hit in ctx.pages] + list(reversed(ctx.stm)):
            ranked.extend(d for d in page.metadata.get("dia_ids", []) if d not in ranked)
        ranked = ranked[:RECALL_LIMIT]
        rows.append({"category": question.category, **question_metrics(ranked, question.evidence)})
    return rows


def run_tiers_bench(
    data: str | Path | Sequence[Conversation],
    *,
    embedder: str | Embedder = "auto",
    backend: str = "sqlite",
    top_m: int = 5,
    top_k: int = 10,
    limit_conversations: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run flat and tier retrieval on the same conversations; returns the JSON report.

    Raises InvalidInputError (bad data or limits) or ConfigError (unknown embedder/backend).
    """
    conversations = list(data) if isinstance(data, Sequence) and not isinstance(data, str) else load_conversations(data)
    if limit_conversations is not None:
        if limit_conversations < 1:
            raise InvalidInputError("limit_conversations must be at least 1")
        conversations = conversations[:limit_conversations]
    if top_m < 1 or top_k < 1:
        raise InvalidInputError("top_m and top_k must be at least 1")
    model = create_embedder(embedder) if isinstance(embedder, str) else embedder
    note = progress or (lambda message: None)
    note("flat recall ...")
    flat = run_locomo(conversations, embedder=model, backend=backend).to_json()
    timings: dict[str, list[float]] = {"add_ms": [], "consolidate_ms": [], "retrieve_ms": []}
    rows: list[dict[str, Any]] = []
    turns = 0
    with tempfile.TemporaryDirectory(prefix="memory-tiers-bench-") as tmp:
        for index, conv in enumerate(conversations):
            note(f"tiers: conversation {index + 1}/{len(conversations)}: {conv.sample_id}")
            url = database_url(backend, Path(tmp), conv.sample_id)
            clock = _StepClock()
            with Memory(url, embedder=model, clock=clock, namespace=f"locomo-{conv.sample_id}") as mem:
                rows.extend(_tier_rows(mem, clock, conv, top_m, top_k, timings))
            turns += len(conv.turns)
    pages = len(timings["add_ms"])
    return {
        "n": len(rows),
        "conversations": len(conversations),
        "turns": turns,
        "pages": pages,
        "flat": {"overall": flat["overall"], "by_category": flat["by_category"], "latency_ms": flat["latency_ms"]},
        "tiers": {
            "overall": _round(mean_metrics(rows)),
            "by_category": _by_category(rows),
            "latency_ms": {
                "p50": round(percentile(timings["retrieve_ms"], 50), 3),
                "p95": round(percentile(timings["retrieve_ms"], 95), 3),
            },
        },
        "per_turn_ms": {
            "add_page": round(sum(timings["add_ms"]) / max(turns, 1), 3),
            "consolidation": round(sum(timings["consolidate_ms"]) / max(turns, 1), 3),
            "consolidation_p95_per_page": round(percentile(timings["consolidate_ms"], 95), 3),
        },
        "config": {
            "embedder": model.model_name,
            "backend": backend,
            "top_m": top_m,
            "top_k": top_k,
            "pairing": "2 turns per page",
            "limit": RECALL_LIMIT,
        },  # fmt: skip
    }


def format_tiers_report(report: dict[str, Any]) -> str:
    """A plain-text table of a :func:`run_tiers_bench` report."""
    columns = ("R@1", "R@5", "R@10", "R@20", "NDCG@10", "MRR")
    lines = [
        f"LoCoMo: tier retrieval vs flat recall  embedder={report['config']['embedder']}  "
        f"backend={report['config']['backend']}  top_m={report['config']['top_m']}  top_k={report['config']['top_k']}",
        f"{'':<24}{'n':>5}" + "".join(f"{c:>9}" for c in columns),
    ]
    for label in ("flat", "tiers"):
        part = report[label]
        lines.append(
            f"{label + ' overall':<24}{report['n']:>5}" + "".join(f"{part['overall'][k]:>9.3f}" for k in METRIC_KEYS)
        )
        for category, metrics in part["by_category"].items():
            name = f"  {category} {CATEGORIES.get(int(category), '?')}"
            lines.append(f"{name:<24}{metrics['n']:>5}" + "".join(f"{metrics[k]:>9.3f}" for k in METRIC_KEYS))
    t = report["per_turn_ms"]
    lines.append(
        f"per turn: add_page {t['add_page']:.2f} ms, consolidation {t['consolidation']:.2f} ms "
        f"(p95 per page {t['consolidation_p95_per_page']:.1f} ms); {report['turns']} turns in {report['pages']} pages"
    )
    lines.append(
        f"retrieval latency p50/p95: flat {report['flat']['latency_ms']['p50']:.1f}/"
        f"{report['flat']['latency_ms']['p95']:.1f} ms, "
        f"tiers {report['tiers']['latency_ms']['p50']:.1f}/{report['tiers']['latency_ms']['p95']:.1f} ms"
    )
    return "\n".join(lines)
