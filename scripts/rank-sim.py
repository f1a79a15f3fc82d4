"""Re-rank recall's own candidates under another fusion or prior, on both development sets (not a test).

    .venv/bin/python scripts/rank-sim.py capture locomo    # once per set: ~30 s (LoCoMo), ~45 s (LongMemEval)
    .venv/bin/python scripts/rank-sim.py capture lme
    .venv/bin/python scripts/rank-sim.py sweep             # the variants below, on both sets

``capture`` runs the benchmark's own stores and questions (``memory.bench.locomo`` /
``memory.bench.longmemeval``, default preset, MiniLM with the benchmark's vector cache) and keeps,
per question, what recall fused and ranked: every channel's hits (id, raw score), the rank fields,
the speaker and amount factors, the clock and each candidate's text. ``sweep`` fuses and ranks
those candidates again with the library's own :func:`memory.retrieval.fusion.fuse` and
:func:`~memory.retrieval.fusion.rank`, changing one thing at a time, and prints R@5 / R@10 (turn
level for LongMemEval). The first row re-ranks with the default and must equal the benchmark's
figures (it checks that the top 20 are the benchmark's, question by question). What it cannot
show: a change to what the channels find (their candidates are fixed).
"""

from __future__ import annotations

import math
import pickle
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory.backends.base import ChannelHit
from memory.retrieval.config import preset
from memory.retrieval.fusion import FusedCandidate, fuse, rank
from memory.retrieval.text import content_words

OUT = Path("/tmp/memory-rank-sim")
DEFAULT = preset("balanced")


def capture(which: str) -> None:
    """Run one benchmark and pickle each question's candidates to ``OUT/<which>.pkl``."""
    import memory.retrieval.recall as recall_module
    from memory.bench.vector_cache import DiskCachedEmbedder
    from memory.config import Settings
    from memory.embedders import create_embedder

    last: dict[str, Any] = {}
    real_fuse, real_rank = recall_module.fuse, recall_module.rank

    def spy_fuse(results: Any, weights: Any, rrf_k: float) -> Any:
        last["results"] = {name: [(h.id, h.score) for h in hits] for name, hits in results.items()}
        return real_fuse(results, weights, rrf_k)

    def spy_rank(
        fused: Any, fields: Any, now: Any, config: Any, speakers: Any, quantities: Any, limit: Any = None
    ) -> Any:
        last.update(fields=fields, now=now, speakers=dict(speakers or {}), quantities=dict(quantities or {}))
        return real_rank(fused, fields, now, config, speakers, quantities, limit=limit)

    recall_module.fuse, recall_module.rank = spy_fuse, spy_rank  # type: ignore[assignment]
    model = DiskCachedEmbedder(create_embedder("minilm"))
    rows: list[dict[str, Any]] = []

    def keep(mem: Any, namespace: str, turn_key: str, ranked: list[str], **extra: Any) -> None:
        ids = sorted({i for hits in last["results"].values() for i, _ in hits})
        texts = {item.id: (item.content, item.metadata.get(turn_key)) for item in mem.backend.get(namespace, ids)}
        rows.append({**last, "texts": texts, "ranked": ranked, **extra})

    if which == "locomo":
        from memory.bench import locomo

        def ask(mem: Any, conv: Any, namespace: str, turns_of: Any, runs: Any) -> None:
            for q in conv.questions:
                if q.category in locomo.CATEGORIES and q.evidence:
                    hits = mem.recall(q.question, limit=20, namespace=namespace)
                    ranked = [h.item.metadata.get("dia_id") for h in hits]
                    keep(mem, namespace, "dia_id", ranked, evidence=list(q.evidence), group=conv.sample_id)

        locomo._ask = ask  # type: ignore[assignment]
        conversations = locomo.load_conversations("../shared/bench/locomo_dev.json")
        settings = Settings(database="memory://", retrieval=DEFAULT)
        result = locomo.LocomoResult(config={})
        locomo.evaluate_conversations(conversations, model, "sqlite", settings, {"run": (DEFAULT, result)})
    else:
        from memory.bench import longmemeval

        real_ingest, real_record = longmemeval._ingest, longmemeval._record
        current: dict[str, Any] = {}

        def ingest(mem: Any, interface: str, entries: Any) -> Any:
            search = real_ingest(mem, interface, entries)
            current["mem"] = mem
            return search

        def record(result: Any, question: Any, ranked: Any) -> None:
            real_record(result, question, ranked)
            mem = current["mem"]
            keep(mem, mem.namespace, "turn", list(ranked), evidence=list(question.answer_turns), group=question.type)

        longmemeval._ingest, longmemeval._record = ingest, record  # type: ignore[assignment]
        questions = longmemeval.load_questions("../shared/bench/longmemeval_dev.json")
        longmemeval.run_longmemeval(questions, embedder=model, presets=("balanced",), interfaces=("memories",))
    OUT.mkdir(exist_ok=True)
    with (OUT / f"{which}.pkl").open("wb") as f:
        pickle.dump(rows, f)
    print(f"{which}: {len(rows)} questions -> {OUT / (which + '.pkl')}")


Fuser = Callable[[dict[str, Any]], list[FusedCandidate]]
Factors = Callable[[dict[str, Any]], dict[str, float]]


def rrf(rrf_k: float = DEFAULT.rrf_k) -> Fuser:
    """The default's weighted RRF with another constant."""

    def fused(row: dict[str, Any]) -> list[FusedCandidate]:
        hits = {name: [ChannelHit(id=i, score=s) for i, s in found] for name, found in row["results"].items()}
        return fuse(hits, DEFAULT.weights, rrf_k)

    return fused


def no_prior(row: dict[str, Any]) -> dict[str, float]:
    return dict(row["quantities"])


def length_prior(words: int, penalty: float) -> Factors:
    """Turns with fewer than ``words`` content words (after a "Speaker: " label) scaled by up to ``1 - penalty``."""

    def factors(row: dict[str, Any]) -> dict[str, float]:
        out = dict(row["quantities"])
        for item_id, (text, _) in row["texts"].items():
            n = content_words(_body(text))
            if n < words:
                out[item_id] = out.get(item_id, 1.0) * (1.0 - penalty * (1.0 - n / words))
        return out

    return factors


def _body(text: str) -> str:
    """A turn's text after its "Speaker: " label."""
    return text.split(": ", 1)[1] if ": " in text[:40] else text


Scores = dict[str, float]


def score(rows: list[dict[str, Any]], fuser: Fuser, factors: Factors) -> tuple[Scores, list[Scores], list[list[str]]]:
    """Mean R@1, R@5, R@10, NDCG@10 and MRR of ``rows`` re-ranked, each question's figures and ranking."""
    totals = dict.fromkeys(("R@1", "R@5", "R@10", "NDCG@10", "MRR"), 0.0)
    per_question: list[Scores] = []
    rankings = []
    for row in rows:
        ranked = rank(fuser(row), row["fields"], row["now"], DEFAULT, row["speakers"], factors(row))
        turns = [row["texts"][c.id][1] for c, _, _ in ranked]
        evidence = set(row["evidence"])
        figures = {f"R@{k}": len(evidence & set(turns[:k])) / len(evidence) for k in (1, 5, 10)}
        gain = sum(1 / math.log2(i + 2) for i, turn in enumerate(turns[:10]) if turn in evidence)
        figures["NDCG@10"] = gain / sum(1 / math.log2(i + 2) for i in range(min(len(evidence), 10)))
        figures["MRR"] = next((1 / (i + 1) for i, turn in enumerate(turns) if turn in evidence), 0.0)
        for name, value in figures.items():
            totals[name] += value
        per_question.append(figures)
        rankings.append(turns)
    return {name: total / len(rows) for name, total in totals.items()}, per_question, rankings


def _groups(rows: list[dict[str, Any]], figures: list[Scores], name: str) -> dict[str, float]:
    """The mean of figure ``name`` per group (LoCoMo conversation, LongMemEval question type)."""
    sums: dict[str, list[float]] = {}
    for row, question in zip(rows, figures, strict=True):
        sums.setdefault(row["group"], []).append(question[name])
    return {group: sum(values) / len(values) for group, values in sums.items()}


def short_turn_shares(rows: list[dict[str, Any]], words: int = 8) -> str:
    """How often the default's top-10 turns of fewer than ``words`` content words, and of more, are evidence."""
    _, _, rankings = score(rows, rrf(), no_prior)
    hits = {True: [0, 0], False: [0, 0]}
    for row, turns in zip(rows, rankings, strict=True):
        by_turn = {turn: text for text, turn in row["texts"].values()}
        for turn in turns[:10]:
            count = hits[content_words(_body(by_turn[turn])) < words]
            count[0] += 1
            count[1] += turn in set(row["evidence"])
    short, long = hits[True], hits[False]
    return (
        f"short (< {words} content words) {short[1]}/{short[0]} = {short[1] / max(short[0], 1):.3f}, "
        f"longer {long[1]}/{long[0]} = {long[1] / max(long[0], 1):.3f}"
    )


def sweep() -> None:
    """Print every variant on both sets; the first row is the default and is checked against the benchmark."""
    sets = {}
    for which in ("locomo", "lme"):
        with (OUT / f"{which}.pkl").open("rb") as f:
            sets[which] = pickle.load(f)
    variants: list[tuple[str, Fuser, Factors]] = [("default (rrf_k 5)", rrf(), no_prior)]
    variants += [(f"rrf_k {k}", rrf(k), no_prior) for k in (8, 10, 15)]
    variants += [(f"length prior <{w} words, {p}", rrf(), length_prior(w, p)) for w in (6, 8, 12) for p in (0.2, 0.4)]
    head = "R@1 / R@5 / R@10 / NDCG@10 / MRR"
    print(f"{'variant':32s} {'LoCoMo ' + head:>46s} {'LongMemEval turn ' + head:>52s}   groups R@1 down, R@10 up")
    base: dict[str, list[Scores]] = {}
    for label, fuser, factors in variants:
        cells, moved = [], []
        for which, rows in sets.items():
            figures, questions, rankings = score(rows, fuser, factors)
            if label.startswith("default"):
                same = sum(r[:20] == row["ranked"][:20] for r, row in zip(rankings, rows, strict=True))
                assert same == len(rows), f"{which}: the default re-ranked differs on {len(rows) - same} questions"
                base[which] = questions
            cells.append(" / ".join(f"{v:.4f}" for v in figures.values()))
            before_1, after_1 = _groups(rows, base[which], "R@1"), _groups(rows, questions, "R@1")
            before_10, after_10 = _groups(rows, base[which], "R@10"), _groups(rows, questions, "R@10")
            down = sum(after_1[g] < before_1[g] for g in before_1)
            up = sum(after_10[g] > before_10[g] for g in before_10)
            moved.append(f"{which} {down}/{up} of {len(before_1)}")
        print(f"{label:32s} {cells[0]:>46s} {cells[1]:>52s}   {', '.join(moved)}")
    for which, rows in sets.items():
        print(f"{which}: the default's top 10, evidence share: {short_turn_shares(rows)}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "capture" and sys.argv[2] in ("locomo", "lme"):
        capture(sys.argv[2])
    elif sys.argv[1:] == ["sweep"]:
        sweep()
    else:
        sys.exit(__doc__)
