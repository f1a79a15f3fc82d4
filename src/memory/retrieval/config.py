"""Retrieval settings as data, with named presets."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memory.errors import InvalidInputError

__all__ = ["RetrievalConfig", "PRESETS", "CHANNELS", "preset"]

#: Retrieval channels recall knows ("graph": entities in the query → relations → memories, see retrieval/graph.py).
CHANNELS = ("vector", "lexical", "graph")


class RetrievalConfig(BaseModel):
    """How recall finds and ranks memories.

    Channels are fused by weighted reciprocal rank fusion:
    ``fusion = Σ weight_c / (rrf_k + rank_c)``, normalised to 0..1 by its
    maximum. The final score blends it with recency and importance:
    ``final = (1 - recency_weight - importance_weight) · fusion
    + recency_weight · recency + importance_weight · importance``,
    where ``recency = 0.5 ** (age_days / recency_half_life_days)``.
    Equal scores break by channel strength, then item id, so equal inputs
    always rank the same.

    ``rrf_k`` defaults to 5, not the customary 60: with 60 the RRF curve is
    nearly flat over the top ranks, so an item ranked ~20th by both channels
    outranks one that a single channel ranks first. On the LoCoMo dev split
    (MiniLM + SQLite) evidence recall@10 goes 0.598 (k=60) → 0.631 (20) →
    0.644 (10) → 0.655 (5) → 0.651 (2); see docs/retrieval.md.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    # "graph" finds nothing (and is left out of fusion) until extraction has built a graph; with one it
    # helped on LoCoMo dev (R@10 0.651 -> 0.661, every category up; README "Knowledge graph").
    channels: tuple[str, ...] = ("vector", "lexical", "graph")
    weights: dict[str, float] = Field(default_factory=lambda: {"vector": 1.0, "lexical": 1.0, "graph": 0.5})
    rrf_k: float = Field(5.0, gt=0)
    candidates: int = Field(50, ge=1, le=1000, description="candidates fetched per channel")
    recency_half_life_days: float = Field(30.0, gt=0)
    recency_weight: float = Field(0.05, ge=0, le=1)
    importance_weight: float = Field(0.05, ge=0, le=1)
    min_score: float = Field(0.0, ge=0, le=1)

    @field_validator("channels")
    @classmethod
    def _known_channels(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = set(value) - set(CHANNELS)
        if unknown or not value:
            raise ValueError(f"channels must be a non-empty subset of {CHANNELS}, got {value}")
        return value


PRESETS: dict[str, RetrievalConfig] = {
    "balanced": RetrievalConfig(),
    "fast": RetrievalConfig(candidates=20),
    "lexical": RetrievalConfig(channels=("lexical",)),
    "vector": RetrievalConfig(channels=("vector",)),
    # The customary RRF constant, kept for comparison (`memory bench locomo --preset rrf60`).
    "rrf60": RetrievalConfig(rrf_k=60.0),
    # Without the graph channel, for comparison (`memory bench locomo --extract --preset nograph`).
    "nograph": RetrievalConfig(channels=("vector", "lexical"), weights={"vector": 1.0, "lexical": 1.0}),
}


def preset(name: str) -> RetrievalConfig:
    """Return the named preset; raises InvalidInputError naming the known presets."""
    try:
        return PRESETS[name]
    except (KeyError, TypeError):
        raise InvalidInputError(f"unknown retrieval preset {name!r}; known: {', '.join(sorted(PRESETS))}") from None
