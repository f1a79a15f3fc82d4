"""Weighted reciprocal rank fusion and final scoring (pure functions).

Both SQL backends and the in-memory one feed these the same shape of channel
results, so given the same channel results every backend ranks identically.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar

from memory.backends.base import ChannelHit
from memory.retrieval.config import RetrievalConfig
from memory.types import ChannelScore, ScoreParts

__all__ = ["FusedCandidate", "Rankable", "fuse", "recency_factor", "score_item", "rank"]


@dataclass(frozen=True, slots=True)
class FusedCandidate:
    """An item id with its normalised fused score and per-channel scores."""

    id: str
    fusion: float
    channels: dict[str, ChannelScore]


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
    channels: dict[str, dict[str, ChannelScore]] = {}
    for name, hits in results.items():
        weight = active[name]
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
            totals[hit.id] = totals.get(hit.id, 0.0) + contribution
            channels.setdefault(hit.id, {})[name] = ChannelScore(
                channel=name, rank=rank, raw=float(hit.score), contribution=contribution / best_possible
            )
    best_raw = {name: max((abs(h.score) for h in hits), default=0.0) or 1.0 for name, hits in results.items()}
    fused = [FusedCandidate(id=i, fusion=t / best_possible, channels=channels[i]) for i, t in totals.items()]

    def strength(candidate: FusedCandidate) -> float:
        return sum(ch.raw / best_raw[name] for name, ch in candidate.channels.items())

    fused.sort(key=lambda c: (-round(c.fusion, 12), -strength(c), c.id))
    return fused


def recency_factor(created_at: datetime, now: datetime, half_life_days: float) -> float:
    """``0.5 ** (age_days / half_life_days)``, 1.0 for items from the future."""
    age_days = max((now - created_at).total_seconds(), 0.0) / 86_400.0
    return math.pow(0.5, age_days / half_life_days)


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
    recency = recency_factor(item.created_at, now, config.recency_half_life_days)
    relevance_weight = max(1.0 - config.recency_weight - config.importance_weight, 0.0)
    final = relevance_weight * fusion + config.recency_weight * recency + config.importance_weight * item.importance
    if speaker is not None:
        final *= speaker
    if quantity is not None:
        final *= quantity
    return ScoreParts(
        fusion=fusion, recency=recency, importance=item.importance, final=final, speaker=speaker, quantity=quantity
    )


def rank(
    candidates: Sequence[FusedCandidate],
    items: Mapping[str, R],
    now: datetime,
    config: RetrievalConfig,
    speakers: Mapping[str, float] | None = None,
    quantities: Mapping[str, float] | None = None,
) -> list[tuple[FusedCandidate, R, ScoreParts]]:
    """Score candidates whose items are known; returns them best first.

    ``speakers`` and ``quantities``: factors for some candidates' final scores, by id (see
    :mod:`memory.retrieval.speaker` and :mod:`memory.retrieval.quantity`). Equal final
    scores keep the fused order (see :func:`fuse`).
    """
    scored = []
    factors = speakers or {}
    amounts = quantities or {}
    for candidate in candidates:
        item = items.get(candidate.id)
        if item is None:
            continue
        parts = score_item(candidate.fusion, item, now, config, factors.get(candidate.id), amounts.get(candidate.id))
        if parts.final < config.min_score:
            continue
        scored.append((candidate, item, parts))
    order = {candidate.id: position for position, candidate in enumerate(candidates)}
    scored.sort(key=lambda entry: (-round(entry[2].final, 12), order[entry[0].id]))
    return scored
