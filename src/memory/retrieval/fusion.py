"""Weighted reciprocal rank fusion and final scoring (pure functions).

Both SQL backends and the in-memory one feed these the same shape of channel
results, so given the same channel results every backend ranks identically.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol, TypeVar

from memory.backends.base import ChannelHit
from memory.retrieval.config import RetrievalConfig
from memory.types import ChannelScore, ScoreParts

__all__ = [
    "FusedCandidate",
    "Rankable",
    "bounded_ask",
    "decided_hits",
    "decisive_depth",
    "fuse",
    "rank",
    "recency_factor",
    "score_item",
]


class FusedCandidate:
    """An item id with its normalised fused score and per-channel scores.

    ``channels`` (a :class:`~memory.types.ChannelScore` per channel that
    found the item) is built when first read: recall reads it only for the
    hits it returns, not for every fused candidate.
    """

    __slots__ = ("id", "fusion", "_seen", "_channels")

    def __init__(self, id: str, fusion: float, seen: dict[str, tuple[int, float, float]]) -> None:
        """``seen``: channel name -> (rank, raw score, contribution to ``fusion``)."""
        self.id = id
        self.fusion = fusion
        self._seen = seen
        self._channels: dict[str, ChannelScore] | None = None

    @property
    def channels(self) -> dict[str, ChannelScore]:
        """How each channel that found the item saw it."""
        if self._channels is None:
            self._channels = {
                name: ChannelScore(channel=name, rank=rank, raw=raw, contribution=contribution)
                for name, (rank, raw, contribution) in self._seen.items()
            }
        return self._channels

    def __repr__(self) -> str:
        return f"FusedCandidate(id={self.id!r}, fusion={self.fusion!r}, channels={self._seen!r})"


def fuse(
    results: Mapping[str, Sequence[ChannelHit]], weights: Mapping[str, float], rrf_k: float
) -> list[FusedCandidate]:
    """Fuse ranked channel results by weighted RRF; returns candidates best first.

    ``fusion = Σ_c w_c / (rrf_k + rank_c)`` divided by ``Σ_c w_c / (rrf_k + 1)``
    (over the channels queried), so an item ranked first everywhere scores 1.
    Hits with equal scores in a channel share a rank. Equal fused scores
    (common with two channels: ranks 1+2 vs 2+1) break by the sum of each
    channel's raw score relative to that channel's best, then by id, so ties
    are decided by how strongly the channels matched and the order is always
    the same.
    """
    active = {name: float(weights.get(name, 1.0)) for name in results}
    best_possible = sum(w / (rrf_k + 1.0) for w in active.values() if w > 0) or 1.0
    totals: dict[str, float] = {}
    seen_by: dict[str, dict[str, tuple[int, float, float]]] = {}
    strengths: dict[str, float] = {}
    for name, hits in results.items():
        weight = active[name]
        best_raw = max((abs(h.score) for h in hits), default=0.0) or 1.0
        seen: set[str] = set()
        position = rank = 0
        previous: float | None = None
        for hit in hits:
            if hit.id in seen:
                continue
            seen.add(hit.id)
            position += 1
            if hit.score != previous:  # equal channel scores share a rank ("1224" ranking)
                rank, previous = position, hit.score
            contribution = weight / (rrf_k + rank)
            raw = float(hit.score)
            totals[hit.id] = totals.get(hit.id, 0.0) + contribution
            strengths[hit.id] = strengths.get(hit.id, 0.0) + raw / best_raw
            seen_by.setdefault(hit.id, {})[name] = (rank, raw, contribution / best_possible)
    fused = [FusedCandidate(i, t / best_possible, seen_by[i]) for i, t in totals.items()]
    fused.sort(key=lambda c: (-round(c.fusion, 12), -strengths[c.id], c.id))
    return fused


def recency_factor(created_at: datetime, now: datetime, half_life_days: float) -> float:
    """``0.5 ** (age_days / half_life_days)``, 1.0 for items from the future."""
    age_days = max((now - created_at).total_seconds(), 0.0) / 86_400.0
    return math.pow(0.5, age_days / half_life_days)


#: Room left for float rounding when :func:`decisive_depth` compares scores (ranking rounds them to 12 places).
_MARGIN = 1e-9


def decisive_depth(config: RetrievalConfig, limit: int) -> int | None:
    """How many hits of a lone channel decide the best ``limit`` :func:`rank` returns; None when not bounded.

    With one channel (and no second graph hop), the hit ranked ``r`` fuses to
    ``(rrf_k + 1) / (rrf_k + r)``, and its final score adds at most
    ``recency_weight + importance_weight`` to ``relevance · fusion`` (recency
    and importance are at most 1). The first ``limit`` hits have ranks of at
    most ``limit`` (equal scores share the first rank of their run), so a hit
    ranked ``m + 1`` or lower cannot pass any of them once
    ``relevance · (rrf_k + 1) · (1 / (rrf_k + limit) - 1 / (rrf_k + m + 1))``
    exceeds that: the best ``limit`` of the first ``m`` hits are the best
    ``limit`` of all, when no factor scales a final score (speaker, quantity)
    and the hit after the ``m``-th scores below it. The default weights
    (rrf_k 5, recency and importance 0.05 each) give 15 for a limit of 10.
    """
    if len(config.channels) != 1 or (config.graph_hop and config.channels[0] == "graph") or limit < 1:
        return None
    if config.weights.get(config.channels[0], 1.0) <= 0:  # every hit fuses to 0: recency and importance decide
        return None
    relevance = max(1.0 - config.recency_weight - config.importance_weight, 0.0)
    bonus = config.recency_weight + config.importance_weight
    least = relevance * (config.rrf_k + 1.0) / (config.rrf_k + limit)  # fusion part of the limit-th hit, at least
    for m in range(limit, config.candidates):
        if least - relevance * (config.rrf_k + 1.0) / (config.rrf_k + m + 1) > bonus + _MARGIN:
            return m
    return None


def bounded_ask(depth: int, candidates: int) -> int:
    """Hits to ask a lone channel for when ``depth`` of them decide the head: ``2 depth + 1``, at most ``candidates``.

    One more than ``depth`` shows whether the hit after them ties with the
    ``depth``-th (equal scores share a rank, so a tied hit ranks as high as
    it); ``depth`` more see such a run of equal scores to its end, so that
    repeated content across the cut (the same text stored for several users,
    or turns said twice) costs no second search (:func:`decided_hits`).
    """
    return min(2 * depth + 1, candidates)


def decided_hits(scores: Sequence[float], depth: int, asked: int) -> int | None:
    """How many of a lone channel's first hits (``scores``, best first) decide the head, ``depth`` deciding.

    The first ``depth`` (:func:`decisive_depth`) and those after them whose
    score equals the ``depth``-th's (they share its rank); a hit after that
    run ranks at least ``depth + 1``, which cannot reach the head. None when
    the run reaches the last of the ``asked`` hits fetched: it may go on
    beyond them. Fewer hits than ``asked`` are all the channel has.
    """
    if len(scores) <= depth:
        return len(scores)
    last = scores[depth - 1]
    end = depth
    while end < len(scores) and scores[end] == last:
        end += 1
    if end == len(scores) and end >= asked:
        return None
    return end


class Rankable(Protocol):
    """What ranking reads of an item: a MemoryItem, or its :class:`~memory.backends.values.RankFields`."""

    @property
    def created_at(self) -> datetime:
        """When the item was created."""

    @property
    def importance(self) -> float:
        """The item's importance, 0..1."""


R = TypeVar("R", bound=Rankable)


def score_item(
    fusion: float,
    item: Rankable,
    now: datetime,
    config: RetrievalConfig,
    speaker: float | None = None,
    quantity: float | None = None,
) -> ScoreParts:
    """Blend fused relevance with recency and importance into the final score.

    ``speaker`` and ``quantity``: factors the blend is multiplied by (see
    :mod:`memory.retrieval.speaker` and :mod:`memory.retrieval.quantity`).
    """
    final, recency = _blend(fusion, item, now, config, speaker, quantity)
    return ScoreParts(
        fusion=fusion, recency=recency, importance=item.importance, final=final, speaker=speaker, quantity=quantity
    )


def _blend(
    fusion: float,
    item: Rankable,
    now: datetime,
    config: RetrievalConfig,
    speaker: float | None,
    quantity: float | None,
) -> tuple[float, float]:
    """The final score of :func:`score_item`, and its recency factor."""
    recency = recency_factor(item.created_at, now, config.recency_half_life_days)
    relevance_weight = max(1.0 - config.recency_weight - config.importance_weight, 0.0)
    final = relevance_weight * fusion + config.recency_weight * recency + config.importance_weight * item.importance
    if speaker is not None:
        final *= speaker
    if quantity is not None:
        final *= quantity
    return final, recency


def rank(
    candidates: Sequence[FusedCandidate],
    items: Mapping[str, R],
    now: datetime,
    config: RetrievalConfig,
    speakers: Mapping[str, float] | None = None,
    quantities: Mapping[str, float] | None = None,
    limit: int | None = None,
) -> list[tuple[FusedCandidate, R, ScoreParts]]:
    """Score candidates whose items are known; returns them best first (the best ``limit`` when given).

    ``speakers`` and ``quantities``: factors for some candidates' final scores, by id (see
    :mod:`memory.retrieval.speaker` and :mod:`memory.retrieval.quantity`). Equal final
    scores keep the fused order (see :func:`fuse`). Score parts are built only for
    the candidates returned.
    """
    scored: list[tuple[float, int, FusedCandidate, R, float, float, float | None, float | None]] = []
    factors = speakers or {}
    amounts = quantities or {}
    for position, candidate in enumerate(candidates):
        item = items.get(candidate.id)
        if item is None:
            continue
        speaker, quantity = factors.get(candidate.id), amounts.get(candidate.id)
        final, recency = _blend(candidate.fusion, item, now, config, speaker, quantity)
        if final < config.min_score:
            continue
        scored.append((-round(final, 12), position, candidate, item, final, recency, speaker, quantity))
    scored.sort(key=lambda entry: (entry[0], entry[1]))
    kept = scored if limit is None else scored[: max(limit, 0)]
    return [
        (
            candidate,
            item,
            ScoreParts(
                fusion=candidate.fusion,
                recency=recency,
                importance=item.importance,
                final=final,
                speaker=speaker,
                quantity=quantity,
            ),  # fmt: skip
        )
        for _, _, candidate, item, final, recency, speaker, quantity in kept
    ]
