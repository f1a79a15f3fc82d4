"""Contextual recall on LoCoMo (issue 23 item 4): questions with and without recent turns.

LoCoMo's questions are self-contained, so a fair test must not hand recall the
turns around the evidence. For each question the "recent turns" are the last
``K`` turns of the session *before* the session of its first evidence turn
(none when the evidence is in the first session): what a conversation would
have just been about, without the answer. Four runs over the same stores:

- ``plain``: the question alone (``recall(question)``);
- ``plain+recent``: the same question with the recent turns (the control: a
  self-contained question must not get worse);
- ``pronoun``: questions naming a speaker, with that name replaced by
  "they"/"their" (what a user says mid-conversation), without recent turns;
- ``pronoun+recent``: the same with the recent turns.

Run: ``python -m memory.bench.contextual [--data PATH] [--embedder NAME] [--turns K]``.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memory import Memory
from memory.bench.locomo import (
    CATEGORIES,
    RECALL_LIMIT,
    Conversation,
    Question,
    _hit_turns,
    _store_conversation,
    fresh_store,
    load_conversations,
)
from memory.bench.metrics import question_metrics
from memory.config import Settings
from memory.embedders.base import Embedder

__all__ = ["pronoun_variant", "recent_turns", "run_contextual"]

RUNS = ("plain", "plain+recent", "pronoun", "pronoun+recent")


def recent_turns(conv: Conversation, question: Question, k: int) -> list[str]:
    """The last ``k`` turns of the session before the one holding the question's first evidence turn."""
    session_of = {t.dia_id: t.session for t in conv.turns}
    sessions = [session_of[e] for e in question.evidence if e in session_of]
    if not sessions:
        return []
    before = [t for t in conv.turns if t.session < min(sessions)]
    if not before:
        return []
    last = max(t.session for t in before)
    return [t.content for t in before if t.session == last][-k:]


def pronoun_variant(question: str, speakers: Sequence[str]) -> str | None:
    """``question`` with its first speaker name made a pronoun ("Caroline's" -> "their"); None if it names none."""
    for name in speakers:
        pattern = re.compile(rf"\b{re.escape(name)}(?:'s|’s)?\b")
        match = pattern.search(question)
        if match is not None:
            pronoun = "their" if match[0] != name else "they"
            return question[: match.start()] + pronoun + question[match.end() :]
    return None


def run_contextual(
    conversations: Sequence[Conversation], model: Embedder, *, k: int = 4
) -> dict[str, list[dict[str, Any]]]:
    """Per-question metric rows for each of :data:`RUNS` (sqlite stores in a temp dir)."""
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in RUNS}
    settings = Settings(database="memory://")
    with tempfile.TemporaryDirectory(prefix="memory-contextual-") as tmp:
        for conv in conversations:
            namespace = f"locomo-{conv.sample_id}"
            speakers = sorted({t.speaker for t in conv.turns}, key=len, reverse=True)
            with (
                fresh_store("sqlite", Path(tmp), conv.sample_id) as url,
                Memory(url, embedder=model, settings=settings.model_copy(update={"database": url})) as mem,
            ):
                turns_of = _store_conversation(mem, conv, namespace)
                for question in conv.questions:
                    if question.category not in CATEGORIES or not question.evidence:
                        continue
                    recent = recent_turns(conv, question, k)
                    variant = pronoun_variant(question.question, speakers)
                    asks: dict[str, tuple[str, list[str] | None]] = {
                        "plain": (question.question, None),
                        "plain+recent": (question.question, recent),
                    }
                    if variant is not None:
                        asks["pronoun"] = (variant, None)
                        asks["pronoun+recent"] = (variant, recent)
                    for name, (text, turns) in asks.items():
                        hits = mem.recall(text, limit=RECALL_LIMIT, namespace=namespace, recent=turns)
                        ranked = [t for h in hits for t in _hit_turns(h.item.metadata, turns_of.get(h.id))]
                        rows[name].append(
                            {"category": question.category, **question_metrics(ranked, question.evidence)}
                        )
    return rows


def format_rows(rows: dict[str, list[dict[str, Any]]]) -> str:
    """R@5 / R@10 per category and overall for each run."""
    lines = [f"{'run':<16}{'category':<13}{'n':>5}{'R@5':>8}{'R@10':>8}"]
    for name, items in rows.items():
        groups: dict[str, list[dict[str, Any]]] = {"all": items}
        for number, label in CATEGORIES.items():
            groups[label] = [r for r in items if r["category"] == number]
        for label, group in groups.items():
            if not group:
                continue
            r5 = sum(r["recall@5"] for r in group) / len(group)
            r10 = sum(r["recall@10"] for r in group) / len(group)
            lines.append(f"{name:<16}{label:<13}{len(group):>5}{r5:>8.3f}{r10:>8.3f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: print the table."""
    from memory.bench.vector_cache import DiskCachedEmbedder
    from memory.embedders import create_embedder

    parser = argparse.ArgumentParser(prog="python -m memory.bench.contextual", description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="../shared/bench/locomo_dev.json")
    parser.add_argument("--embedder", default="auto")
    parser.add_argument("--turns", type=int, default=4, help="recent turns K (default 4)")
    args = parser.parse_args(argv)
    model = DiskCachedEmbedder(create_embedder(args.embedder))
    rows = run_contextual(load_conversations(args.data), model, k=args.turns)
    model.flush()
    sys.stdout.write(format_rows(rows) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
