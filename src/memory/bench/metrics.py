"""Pure retrieval metrics and evidence-id parsing for the benchmarks.

Definitions follow ``shared/bench/README.md``: per question, ``ranked`` is the
list of returned turn ids best first and ``relevant`` the evidence turn ids.

* recall@k = |relevant ∩ top-k| / |relevant|
* NDCG@k with binary relevance; the ideal DCG places min(|relevant|, k) hits first
* reciprocal rank of the first relevant turn (0 when none is returned)

A turn id returned twice counts once, at its first rank.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "RECALL_KS",
    "METRIC_KEYS",
    "recall_at_k",
    "ndcg_at_k",
    "reciprocal_rank",
    "question_metrics",
    "mean_metrics",
    "percentile",
    "ParsedEvidence",
    "parse_evidence",
]

RECALL_KS: tuple[int, ...] = (1, 5, 10, 20)
METRIC_KEYS: tuple[str, ...] = tuple(f"recall@{k}" for k in RECALL_KS) + ("ndcg@10", "mrr")

_TURN_ID = re.compile(r"D(\d+):(\d+)")
_SEPARATORS = re.compile(r"[;,\s]+")


def _unique(ranked: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for turn in ranked:
        seen.setdefault(turn, None)
    return list(seen)


def recall_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Fraction of ``relevant`` found in the first ``k`` of ``ranked``; 0.0 when nothing is relevant."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    wanted = set(relevant)
    if not wanted:
        return 0.0
    return len(wanted.intersection(_unique(ranked)[:k])) / len(wanted)


def ndcg_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """NDCG@k with binary relevance (gain 1 / log2(rank + 1)); 0.0 when nothing is relevant."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    wanted = set(relevant)
    if not wanted:
        return 0.0
    dcg = sum(1.0 / math.log2(rank + 1) for rank, turn in enumerate(_unique(ranked)[:k], 1) if turn in wanted)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(wanted), k) + 1))
    return dcg / ideal


def reciprocal_rank(ranked: Sequence[str], relevant: Collection[str]) -> float:
    """1 / rank of the first relevant turn in ``ranked``; 0.0 when none is there."""
    wanted = set(relevant)
    for rank, turn in enumerate(_unique(ranked), 1):
        if turn in wanted:
            return 1.0 / rank
    return 0.0


def question_metrics(ranked: Sequence[str], relevant: Collection[str]) -> dict[str, float]:
    """All metrics of one question, keyed as :data:`METRIC_KEYS`."""
    scores = {f"recall@{k}": recall_at_k(ranked, relevant, k) for k in RECALL_KS}
    scores["ndcg@10"] = ndcg_at_k(ranked, relevant, 10)
    scores["mrr"] = reciprocal_rank(ranked, relevant)
    return scores


def mean_metrics(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Average each metric over ``rows`` (per-question metric dicts); zeros for no rows."""
    if not rows:
        return {key: 0.0 for key in METRIC_KEYS}
    return {key: sum(row[key] for row in rows) / len(rows) for key in METRIC_KEYS}


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) by linear interpolation, as numpy's default; 0.0 if empty."""
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile must be between 0 and 100, got {q}")
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True, slots=True)
class ParsedEvidence:
    """Evidence of one question: valid turn ids (in order, distinct) and the pieces dropped."""

    turns: tuple[str, ...]
    dropped: tuple[str, ...]


def parse_evidence(raw: Iterable[object], known_turns: Collection[str] | None = None) -> ParsedEvidence:
    """Normalise LoCoMo evidence ids.

    Each entry must be ``D<session>:<turn>``; an entry holding several such ids
    separated by ``;``, ``,`` or spaces (``"D8:6; D9:17"``) is split. Anything
    else (``"D"``, ``"D:11:26"``, non-strings) is dropped, as is an id not in
    ``known_turns`` when that is given. Leading zeros are removed
    (``D01:3`` → ``D1:3``). Returns the kept ids and the dropped pieces.
    """
    turns: dict[str, None] = {}
    dropped: list[str] = []
    for entry in raw:
        if not isinstance(entry, str):
            dropped.append(repr(entry))
            continue
        pieces = [p for p in _SEPARATORS.split(entry.strip()) if p] or [entry]
        for piece in pieces:
            match = _TURN_ID.fullmatch(piece)
            if match is None:
                dropped.append(piece)
                continue
            turn = f"D{int(match[1])}:{int(match[2])}"
            if known_turns is not None and turn not in known_turns:
                dropped.append(piece)
                continue
            turns.setdefault(turn, None)
    return ParsedEvidence(turns=tuple(turns), dropped=tuple(dropped))
