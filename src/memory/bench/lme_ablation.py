"""LongMemEval ablation: the LoCoMo ablation's steps (:data:`memory.bench.ablation.STEPS`) on LongMemEval.

Each question's haystack is stored once per distinct store setting (context
window size, fact keys) through ``remember_batch``, and every step's config
recalls the question on its store, as ``memory bench locomo --ablation`` does
on LoCoMo; steps that change what a thread is do not apply (a LongMemEval
thread is a session) and are left out. The RRF(k=60) baseline of the same
run is a row of its own. ``memory bench longmemeval --ablation`` prints the
table: turn R@5 / R@10 / NDCG@10 overall and turn R@5 / R@10 per question type.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memory.bench.ablation import STEPS, Step
from memory.bench.baselines import baseline_rankings
from memory.bench.locomo import fresh_store
from memory.bench.longmemeval import (
    RECALL_LIMIT,
    TYPES,
    LmeQuestion,
    LmeResult,
    _entries,
    _fixed,
    _record,
    load_questions,
    round_robin,
)
from memory.config import Settings
from memory.embedders.base import Embedder, embed_chunked, embed_query
from memory.memory import Memory

__all__ = ["LME_STEPS", "run_lme_ablation", "format_lme_ablation"]

#: The ablation steps that apply to LongMemEval (a thread is a session there).
LME_STEPS: tuple[Step, ...] = tuple(s for s in STEPS if s.threads == "session")


def run_lme_ablation(
    data: str | Path | Sequence[LmeQuestion],
    *,
    embedder: Embedder,
    steps: Sequence[Step] = LME_STEPS,
    limit_questions: int | None = None,
    backend: str = "sqlite",
    dsn: str | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> list[dict[str, Any]]:
    """Run every step on every question; returns one JSON-ready row per step, then the RRF(k=60) baseline."""
    questions = list(data) if isinstance(data, Sequence) and not isinstance(data, str) else load_questions(data)
    if limit_questions is not None:
        questions = round_robin(questions)[:limit_questions]
    results = [LmeResult(step.name) for step in steps]
    baseline = LmeResult("baseline RRF(k=60) of BM25 + dense")
    groups: dict[tuple[int, str], list[int]] = {}
    for index, step in enumerate(steps):
        groups.setdefault((step.context_window, step.fact_keys), []).append(index)
    with tempfile.TemporaryDirectory(prefix="memory-lme-ablation-") as tmp:
        for number, question in enumerate(questions):
            if progress is not None:
                progress(number, len(questions), question.id)
            entries, ids = _entries(question)
            for (window, fact_keys), members in groups.items():
                name = f"q{number}-w{window}-{fact_keys}"
                settings = Settings(database="memory://", context_window=window, fact_keys=fact_keys)
                with (
                    fresh_store(backend, Path(tmp), name, dsn) as url,
                    Memory(
                        url,
                        embedder=embedder,
                        settings=settings.model_copy(update={"database": url}),
                        clock=_fixed(question.date),
                    ) as mem,
                ):
                    mem.remember_batch([{**e, "kind": "conversation"} for e in entries])
                    for index in members:
                        hits = mem.recall(question.question, limit=RECALL_LIMIT, retrieval=steps[index].config)
                        _record(results[index], question, [str(h.item.metadata["turn"]) for h in hits])
            texts = [e["content"] for e in entries]
            vectors = embed_chunked(embedder, texts)
            rankings = baseline_rankings(texts, vectors, question.question, embed_query(embedder, question.question))
            order = next(v for k, v in rankings.items() if "RRF" in k)
            _record(baseline, question, [ids[i] for i in order[:RECALL_LIMIT]])
    if progress is not None:
        progress(len(questions), len(questions), "")
    rows = []
    for step, result in zip(steps, results, strict=True):
        rows.append({"step": step.name, "verdict": step.verdict, "fact_keys": step.fact_keys, **result.to_json()})
    rows.append({"step": baseline.name, "verdict": "reference", "fact_keys": "-", **baseline.to_json()})
    return rows


def format_lme_ablation(rows: Sequence[dict[str, Any]], *, markdown: bool = False) -> str:
    """The table: turn R@5 / R@10 / NDCG@10 overall, then turn R@5 / R@10 per question type."""
    head = ["step", "verdict", "turn R@5 / R@10 / NDCG@10", *(f"{t} R@5/R@10" for t in TYPES)]
    lines = []
    if markdown:
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * (len(head) - 2)]
    else:
        lines.append("  ".join(head))
    for row in rows:
        o = row["overall"]
        cells = [row["step"], row["verdict"], f"{o['turn R@5']:.3f} / {o['turn R@10']:.3f} / {o['turn NDCG@10']:.3f}"]
        for kind in TYPES:
            m = row["by_type"].get(kind)
            cells.append(f"{m['turn R@5']:.3f} / {m['turn R@10']:.3f}" if m else "-")
        lines.append("| " + " | ".join(cells) + " |" if markdown else "  ".join(cells))
    if rows:
        lines.append(f"questions: {rows[0]['n']}")
    return "\n".join(lines)
