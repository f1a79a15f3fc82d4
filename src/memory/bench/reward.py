"""Reward sign on labelled conversations: the offline reward (and, with an LLM, the LLM judge) vs human labels.

The data (``memory/bench/data/reward_conversations.jsonl``, one JSON object a
line): ``id``, ``label`` (positive | negative | neutral), ``split`` (dev |
holdout: a fixed third per label, chosen by hash before any reward rule was
written, never looked at while writing them), ``messages`` (role, content),
``rating`` and ``rating_scale`` (stars | thumbs | unit, or null),
``task_completed``, ``feedback``, ``note``. How it was labelled is in
``data/README.md``. The report gives accuracy and a confusion matrix
(rows: label, columns: predicted sign) per split and overall.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory.errors import InvalidInputError, LLMError
from memory.feedback.judge import JudgeInput, Judgement, llm_judge, offline_judge
from memory.feedback.reward import normalise_rating
from memory.llms.base import LLM

__all__ = ["LabelledConversation", "DATA_PATH", "LABELS", "load_labelled", "run_reward_bench", "format_reward_report"]

DATA_PATH = Path(__file__).parent / "data" / "reward_conversations.jsonl"
LABELS = ("positive", "negative", "neutral")


@dataclass(frozen=True)
class LabelledConversation:
    """One labelled conversation and what a judge sees of it."""

    id: str
    label: str
    split: str
    item: JudgeInput
    note: str = ""


def load_labelled(path: str | Path | None = None) -> list[LabelledConversation]:
    """The labelled conversations of ``path`` (default: the packaged set). Raises InvalidInputError."""
    source = Path(path) if path is not None else DATA_PATH
    try:
        lines = source.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InvalidInputError(f"cannot read labelled conversations {source}: {exc.strerror or exc}") from None
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if row["label"] not in LABELS or row.get("split", "dev") not in ("dev", "holdout"):
                raise ValueError(f"label must be one of {LABELS} and split dev or holdout")
            rating = row.get("rating")
            item = JudgeInput(
                messages=tuple((m["role"], m["content"]) for m in row["messages"]),
                rating=None if rating is None else normalise_rating(rating, row.get("rating_scale") or "stars"),
                task_completed=row.get("task_completed"),
                feedback=row.get("feedback"),
            )
            out.append(LabelledConversation(str(row["id"]), row["label"], row.get("split", "dev"), item,
                                            row.get("note", "")))  # fmt: skip
        except (ValueError, KeyError, TypeError, InvalidInputError) as exc:
            raise InvalidInputError(f"{source}:{number}: not a labelled conversation: {exc}") from None
    return out


def _matrix(rows: Sequence[tuple[str, str]]) -> dict[str, Any]:
    matrix = {label: {p: 0 for p in LABELS} for label in LABELS}
    for label, predicted in rows:
        matrix[label][predicted] += 1
    right = sum(matrix[label][label] for label in LABELS)
    return {"n": len(rows), "correct": right, "accuracy": round(right / len(rows), 4) if rows else None,
            "matrix": matrix}  # fmt: skip


def _evaluate(
    data: Sequence[LabelledConversation], judge: Callable[[JudgeInput], Judgement]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    rows: list[tuple[str, str, str]] = []
    wrong = []
    for conv in data:
        judgement = judge(conv.item)
        rows.append((conv.split, conv.label, judgement.sign))
        if judgement.sign != conv.label:
            wrong.append({"id": conv.id, "split": conv.split, "label": conv.label, "predicted": judgement.sign,
                          "reward": judgement.reward})  # fmt: skip
    report = {split: _matrix([(lab, pred) for s, lab, pred in rows if s == split]) for split in ("dev", "holdout")}
    report["overall"] = _matrix([(lab, pred) for _, lab, pred in rows])
    return report, wrong


def run_reward_bench(
    path: str | Path | None = None, *, llm: LLM | None = None, split: str | None = None
) -> dict[str, Any]:
    """Score the labelled set with the offline reward and, given ``llm``, the LLM judge; returns the report.

    ``split`` keeps only dev or holdout conversations. An LLM failure on one
    conversation counts as a neutral answer and is listed under ``llm_errors``.
    Raises InvalidInputError.
    """
    data = load_labelled(path)
    if split is not None:
        if split not in ("dev", "holdout"):
            raise InvalidInputError(f"split must be dev or holdout, got {split!r}")
        data = [c for c in data if c.split == split]
    offline, offline_wrong = _evaluate(data, offline_judge)
    report: dict[str, Any] = {
        "conversations": len(data),
        "labels": {label: sum(1 for c in data if c.label == label) for label in LABELS},
        "offline": offline,
        "offline_wrong": offline_wrong,
    }
    if llm is not None:
        errors: list[str] = []

        def judge(item: JudgeInput) -> Judgement:
            try:
                return llm_judge(llm, item)
            except LLMError as exc:
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
                return Judgement("neutral", None, "llm", {"error": str(exc)[:200]})

        report["llm"], report["llm_wrong"] = _evaluate(data, judge)
        report["llm_errors"] = errors
        report["llm_model"] = getattr(llm, "model", getattr(llm, "provider", "?"))
    return report


def format_reward_report(report: dict[str, Any]) -> str:
    """Plain-text confusion matrices of a :func:`run_reward_bench` report."""
    lines = [f"reward sign on {report['conversations']} labelled conversations {report['labels']}"]
    for judge in ("offline", "llm"):
        if judge not in report:
            continue
        for part in ("dev", "holdout", "overall"):
            m = report[judge][part]
            if not m["n"]:
                continue
            lines.append(f"{judge} {part}: {m['correct']}/{m['n']} right ({m['accuracy']:.1%})")
            lines.append(f"  {'label / predicted':<20}" + "".join(f"{p:>10}" for p in LABELS))
            for label in LABELS:
                lines.append(f"  {label:<20}" + "".join(f"{m['matrix'][label][p]:>10}" for p in LABELS))
        wrong = report.get(f"{judge}_wrong") or []
        if wrong:
            lines.append("  wrong: " + ", ".join(f"{w['id']} ({w['label']}→{w['predicted']})" for w in wrong))
    return "\n".join(lines)
