"""LoCoMo through the tiers: tier retrieval alone, segment formation, and the default context with/without tiers.

Per conversation a fresh store is opened. Flat (optional reference):
:func:`memory.bench.locomo.run_locomo` (every turn a memory, ``recall(limit=20)``).
Tiers: consecutive turns of one session are paired into dialogue pages
(query = a turn, response = the next one; a page stands for both dia_ids) and
appended with :meth:`Tiers.add_page` for agent ``bench`` and user = the
conversation id (``record=False``); after every page :meth:`Tiers.consolidate`
runs and is timed separately. The same store also holds every turn as a
memory (as the flat run does, scoped to the user), so the context runs see
both.

* **Tier retrieval**: each question is answered with :meth:`Tiers.retrieve`;
  the ranked turn list is the top-k MTM pages by score, then the STM pages
  newest first, each page giving both its turn ids in order, cut at 20 turn
  ids, and scored with the flat run's metrics. So R@10 is over ten *turns* —
  five two-turn pages — as flat recall's R@10 is over ten turns: both turns of
  a page count, and each takes a place in the top ten.

Pages carry their session's date as ``created_at`` and its chat session as
``thread`` (as the flat run stores each turn).
* **Segments**: after the last page, the join rate within sessions (of two
  consecutive pages of one session, how often the second joined the first's
  segment) and across sessions (the same for the last page of a session and
  the first of the next), pages per segment, segments formed.
* **Context**: :meth:`Memory.context` for the question (user, agent, the same
  token budget) with the default strategy, once with the ``tiers`` source and
  once without; the share of the question's evidence turns that reach the
  compiled prompt (a memory's turn, or either turn of a page).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory.bench.locomo import (
    CATEGORIES,
    RECALL_LIMIT,
    Conversation,
    database_url,
    load_conversations,
    run_locomo,
    session_time,
    thread_of,
)
from memory.bench.metrics import METRIC_KEYS, mean_metrics, percentile, question_metrics
from memory.config import Settings
from memory.context.types import ContextRequest, ContextStrategy, TokenBudget
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


def _store_turns(mem: Memory, conv: Conversation, user: str, agent: str) -> dict[str, list[str]]:
    """Every turn as a memory of ``user`` with ``agent`` (as the flat run stores them, in the scope the context
    requests name); returns memory id -> dia_ids."""
    entries = [
        {
            "content": turn.content, "kind": "conversation", "thread": thread_of(conv, turn), "user": user,
            "agent": agent,
            **({"created_at": when} if (when := session_time(turn.session_date)) is not None else {}),
            "metadata": {"dia_id": turn.dia_id, "session": turn.session, "speaker": turn.speaker},
        }
        for turn in conv.turns
    ]  # fmt: skip
    out: dict[str, list[str]] = {}
    for start in range(0, len(entries), 500):
        ids = mem.remember_batch(entries[start : start + 500])
        for memory_id, turn in zip(ids, conv.turns[start : start + 500], strict=True):
            out.setdefault(memory_id, []).append(turn.dia_id)
    return out


def _pairs(conv: Conversation) -> list[list[Any]]:
    """Consecutive turns of one session, two per page."""
    pages: list[list[Any]] = []
    for session in sorted({t.session for t in conv.turns}):
        turns = [t for t in conv.turns if t.session == session]
        pages += [turns[i : i + 2] for i in range(0, len(turns), 2)]
    return pages


def _segment_stats(mem: Memory, agent: str, user: str) -> dict[str, int]:
    """Join counts within and across sessions, from where each page ended up (evicted pages left out)."""
    store = mem.tiers.store
    where: dict[str, tuple[str, int]] = {}  # first dia_id -> (segment id, session)
    for seg in store.segments(mem.namespace, agent, user):
        for page in seg.pages:
            first = page.metadata["dia_ids"][0]
            where[first] = (seg.id, int(page.metadata["session"]))
    for page in store.stm(mem.namespace, agent, user):
        where[page.metadata["dia_ids"][0]] = ("stm", int(page.metadata["session"]))
    order = sorted(where.items(), key=lambda kv: (kv[1][1], int(kv[0].split(":")[1]) if ":" in kv[0] else 0))
    stats = {"within_pairs": 0, "within_joined": 0, "across_pairs": 0, "across_joined": 0}
    segments = {v[0] for v in where.values() if v[0] != "stm"}
    for (_, (seg_a, session_a)), (_, (seg_b, session_b)) in zip(order, order[1:], strict=False):
        if "stm" in (seg_a, seg_b):
            continue
        kind = "within" if session_a == session_b else "across"
        stats[f"{kind}_pairs"] += 1
        stats[f"{kind}_joined"] += int(seg_a == seg_b)
    stats["segments"] = len(segments)
    stats["mtm_pages"] = sum(1 for v in where.values() if v[0] != "stm")
    return stats


def _evidence_share(compiled: Any, evidence: Sequence[str], turns_of: dict[str, list[str]],
                    page_turns: dict[str, list[str]]) -> float:  # fmt: skip
    found: set[str] = set()
    for section in compiled.sections:
        if section.id.startswith("tier:page:"):
            found.update(page_turns.get(section.id[len("tier:page:") :], []))
        elif section.source.ref is not None:
            found.update(turns_of.get(section.source.ref, []))
    return sum(1 for e in evidence if e in found) / len(evidence)


def _tier_rows(
    mem: Memory, clock: _StepClock, conv: Conversation, top_m: int, top_k: int, timings: dict[str, list[float]],
    context: dict[str, list[float]], budget: int,
) -> tuple[list[dict[str, Any]], dict[str, int]]:  # fmt: skip
    agent, user = "bench", conv.sample_id
    mem.tiers.configure(agent=agent, top_m_segments=top_m, top_k_pages=top_k)
    turns_of = _store_turns(mem, conv, user, agent) if budget else {}
    page_turns: dict[str, list[str]] = {}
    for pair in _pairs(conv):
        response = pair[1].content if len(pair) > 1 else ""
        began = time.perf_counter()
        meta = {"dia_ids": [t.dia_id for t in pair], "session": pair[0].session}
        page = mem.tiers.add_page(
            pair[0].content, response, agent=agent, user=user, record=False, consolidate=False, metadata=meta,
            created_at=session_time(pair[0].session_date), thread=thread_of(conv, pair[0]),
        )  # fmt: skip
        page_turns[page.id] = [t.dia_id for t in pair]
        middle = time.perf_counter()
        mem.tiers.consolidate(agent=agent, user=user)
        ended = time.perf_counter()
        timings["add_ms"].append((middle - began) * 1000.0)
        timings["consolidate_ms"].append((ended - middle) * 1000.0)
        clock.now += timedelta(minutes=1)
    stats = _segment_stats(mem, agent, user)
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
        if budget:
            for label, with_tiers in (("without_tiers", False), ("with_tiers", True)):
                request = ContextRequest(
                    observation=question.question, user=user, agent=agent, budget=TokenBudget(total=budget),
                    strategy=ContextStrategy(include_tiers=with_tiers, include_time=False),
                )  # fmt: skip
                compiled = mem.context(request)
                context[label].append(_evidence_share(compiled, question.evidence, turns_of, page_turns))
    return rows, stats


def run_tiers_bench(
    data: str | Path | Sequence[Conversation],
    *,
    embedder: str | Embedder = "auto",
    backend: str = "sqlite",
    top_m: int = 5,
    top_k: int = 10,
    limit_conversations: int | None = None,
    progress: Callable[[str], None] | None = None,
    flat: bool = True,
    budget: int = 4000,
) -> dict[str, Any]:
    """Run tier retrieval, segment formation and the context comparison (and flat recall unless ``flat`` is
    False) on the same conversations; returns the JSON report. ``budget`` 0 skips the context runs.

    Raises InvalidInputError (bad data or limits) or ConfigError (unknown embedder/backend).
    """
    conversations = list(data) if isinstance(data, Sequence) and not isinstance(data, str) else load_conversations(data)
    if limit_conversations is not None:
        if limit_conversations < 1:
            raise InvalidInputError("limit_conversations must be at least 1")
        conversations = conversations[:limit_conversations]
    if top_m < 1 or top_k < 1:
        raise InvalidInputError("top_m and top_k must be at least 1")
    if budget < 0:
        raise InvalidInputError("budget must be 0 (no context runs) or a positive token count")
    model = create_embedder(embedder) if isinstance(embedder, str) else embedder
    note = progress or (lambda message: None)
    flat_report = None
    if flat:
        note("flat recall ...")
        flat_report = run_locomo(conversations, embedder=model, backend=backend).to_json()
    timings: dict[str, list[float]] = {"add_ms": [], "consolidate_ms": [], "retrieve_ms": []}
    context: dict[str, list[float]] = {"without_tiers": [], "with_tiers": []}
    rows: list[dict[str, Any]] = []
    totals: dict[str, int] = {}
    turns = 0
    with tempfile.TemporaryDirectory(prefix="memory-tiers-bench-") as tmp:
        for index, conv in enumerate(conversations):
            note(f"tiers: conversation {index + 1}/{len(conversations)}: {conv.sample_id}")
            url = database_url(backend, Path(tmp), conv.sample_id)
            clock = _StepClock()
            settings = Settings(database=url, namespace=f"locomo-{conv.sample_id}")
            with Memory(embedder=model, clock=clock, settings=settings) as mem:
                conv_rows, stats = _tier_rows(mem, clock, conv, top_m, top_k, timings, context, budget)
                rows.extend(conv_rows)
            for key, value in stats.items():
                totals[key] = totals.get(key, 0) + value
            turns += len(conv.turns)
    pages = len(timings["add_ms"])
    report: dict[str, Any] = {
        "n": len(rows),
        "conversations": len(conversations),
        "turns": turns,
        "pages": pages,
        "tiers": {
            "overall": _round(mean_metrics(rows)),
            "by_category": _by_category(rows),
            "latency_ms": {
                "p50": round(percentile(timings["retrieve_ms"], 50), 3),
                "p95": round(percentile(timings["retrieve_ms"], 95), 3),
            },
        },
        "segments": {
            **totals,
            "join_rate_within_sessions": round(totals["within_joined"] / max(totals["within_pairs"], 1), 4),
            "join_rate_across_sessions": round(totals["across_joined"] / max(totals["across_pairs"], 1), 4),
            "pages_per_segment": round(totals["mtm_pages"] / max(totals["segments"], 1), 2),
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
            "pairing": "2 turns of one session per page",
            "limit": RECALL_LIMIT,
            "budget": budget,
        },  # fmt: skip
    }
    if flat_report is not None:
        report["flat"] = {k: flat_report[k] for k in ("overall", "by_category", "latency_ms")}
    if budget:
        report["context"] = {
            label: {"evidence_in_context": round(sum(v) / len(v), 4) if v else None, "n": len(v)}
            for label, v in context.items()
        }
    return report


def format_tiers_report(report: dict[str, Any]) -> str:
    """A plain-text table of a :func:`run_tiers_bench` report."""
    columns = ("R@1", "R@5", "R@10", "R@20", "NDCG@10", "MRR")
    config = report["config"]
    lines = [
        f"LoCoMo: tier retrieval (and flat recall)  embedder={config['embedder']}  backend={config['backend']}  "
        f"top_m={config['top_m']}  top_k={config['top_k']}",
        f"{'':<24}{'n':>5}" + "".join(f"{c:>9}" for c in columns),
    ]
    for label in ("flat", "tiers"):
        if label not in report:
            continue
        part = report[label]
        lines.append(
            f"{label + ' overall':<24}{report['n']:>5}" + "".join(f"{part['overall'][k]:>9.3f}" for k in METRIC_KEYS)
        )
        for category, metrics in part["by_category"].items():
            name = f"  {category} {CATEGORIES.get(int(category), '?')}"
            lines.append(f"{name:<24}{metrics['n']:>5}" + "".join(f"{metrics[k]:>9.3f}" for k in METRIC_KEYS))
    seg = report["segments"]
    lines.append(
        f"segments: {seg['segments']} formed from {seg['mtm_pages']} MTM pages ({seg['pages_per_segment']} per "
        f"segment); join rate within sessions {seg['join_rate_within_sessions']:.3f} "
        f"({seg['within_joined']}/{seg['within_pairs']}), across sessions {seg['join_rate_across_sessions']:.3f} "
        f"({seg['across_joined']}/{seg['across_pairs']})"
    )
    if "context" in report:
        c = report["context"]
        lines.append(
            f"context ({config['budget']} tokens): evidence turns in the prompt without tiers "
            f"{c['without_tiers']['evidence_in_context']:.3f}, with tiers {c['with_tiers']['evidence_in_context']:.3f}"
        )
    t = report["per_turn_ms"]
    lines.append(
        f"per turn: add_page {t['add_page']:.2f} ms, consolidation {t['consolidation']:.2f} ms "
        f"(p95 per page {t['consolidation_p95_per_page']:.1f} ms); {report['turns']} turns in {report['pages']} pages"
    )
    flat = f"flat {report['flat']['latency_ms']['p50']:.1f}/{report['flat']['latency_ms']['p95']:.1f} ms, " if (
        "flat" in report) else ""  # fmt: skip
    lines.append(
        f"retrieval latency p50/p95: {flat}"
        f"tiers {report['tiers']['latency_ms']['p50']:.1f}/{report['tiers']['latency_ms']['p95']:.1f} ms"
    )
    return "\n".join(lines)
