"""Retrieval settings as data, with named presets."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memory.errors import InvalidInputError
from memory.retrieval.window import CONTEXT_WORDS, LEXICAL_FIELDS

__all__ = ["RetrievalConfig", "PRESETS", "CHANNELS", "preset"]

#: Retrieval channels recall knows. ``feedback`` is a second lexical search with the
#: query expanded by pseudo-relevance feedback from the lexical channel's top hits;
#: ``graph``: entities in the query → relations → memories (retrieval/graph.py).
#: ``context``: the window vectors searched as a channel of their own (the ``vector`` channel then
#: searches the memories' own vectors).
CHANNELS = ("vector", "lexical", "feedback", "graph", "context")
#: Field weights of the lexical channel; window 0.3 measured on LoCoMo dev (docs/retrieval.md).
DEFAULT_FIELDS: dict[str, float] = {"content": 1.0, "window": 0.3, "time": 1.0}
#: The lexical channel on the memory's own words only (no window, no time words).
CONTENT_ONLY: dict[str, float] = {"content": 1.0}


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
    # "feedback" runs only where the top lexical hits are short texts (``feedback_max_words``).
    channels: tuple[str, ...] = ("vector", "lexical", "feedback", "graph")
    weights: dict[str, float] = Field(
        default_factory=lambda: {"vector": 1.0, "lexical": 1.0, "feedback": 0.5, "graph": 0.5}
    )
    rrf_k: float = Field(5.0, gt=0)
    candidates: int = Field(50, ge=1, le=1000, description="candidates fetched per channel")
    recency_half_life_days: float = Field(30.0, gt=0)
    recency_weight: float = Field(0.05, ge=0, le=1)
    importance_weight: float = Field(0.05, ge=0, le=1)
    min_score: float = Field(0.0, ge=0, le=1)
    #: BM25 weight of each indexed field: the memory's own ``content``, its context
    #: ``window`` (neighbouring memories in its thread) and ``time`` (words of created_at).
    fields: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_FIELDS))
    #: The vector channel searches window vectors (own vector blended with its context
    #: window's) instead of the bare content vectors, when the store has them.
    window_vectors: bool = True
    #: Seed 003 data flow 1: the entities of the top ``graph_hop`` fused hits seed a second graph
    #: search (their relations' and mentions' memories join the graph channel); 0: off (no gain on
    #: LoCoMo dev, README "Knowledge graph").
    graph_hop: int = Field(0, ge=0, le=20)
    #: Seed 003 data flow 2: entities whose vector is near the query's (``search_entities``) seed the
    #: graph channel beside the ones named in the query; off by default (README "Knowledge graph").
    graph_entity_vectors: bool = False
    #: Pseudo-relevance feedback (the ``feedback`` channel): top lexical hits read, terms added.
    feedback_docs: int = Field(3, ge=1, le=20)
    feedback_terms: int = Field(5, ge=1, le=32)
    #: ... but only while those hits are short: their mean content words (stopwords left out) at
    #: most this (the window rule's ``CONTEXT_WORDS``); from long texts the added terms drift off
    #: the question (docs/retrieval.md, "Feedback where the turns are short"). None: always.
    feedback_max_words: int | None = Field(CONTEXT_WORDS, ge=1)
    #: A chat turn of the other side than the one the question asks about (the assistant's turns
    #: for a question about the user in the first person, the user's for one about what the
    #: assistant said; a message's role, a memory's ``metadata["role"]``) has its final score
    #: multiplied by ``1 - speaker_penalty`` (``retrieval/speaker.py``); 0: off.
    speaker_penalty: float = Field(0.8, ge=0, le=1)
    #: A third-person question that names one of the chat's named speakers ("What did Caroline
    #: research?") mostly asks for that speaker's words: another named speaker's turns (a message's
    #: ``speaker``, a memory's ``metadata["speaker"]``) have their final score multiplied by
    #: ``1 - named_speaker_penalty``. Milder than ``speaker_penalty``: a name is weaker evidence
    #: than "I" or "you said" (the other speaker may report it); 0: off.
    named_speaker_penalty: float = Field(0.3, ge=0, le=1)
    #: A question that asks for an amount ("how many", "how much", "how old", "what
    #: percentage", …) is answered by a text that states one: while some candidate states one,
    #: the others have their final score multiplied by ``1 - quantity_penalty``
    #: (``retrieval/quantity.py``); 0: off.
    quantity_penalty: float = Field(0.2, ge=0, le=1)

    @field_validator("fields")
    @classmethod
    def _known_fields(cls, value: dict[str, float]) -> dict[str, float]:
        unknown = set(value) - set(LEXICAL_FIELDS)
        if unknown:
            raise ValueError(f"fields must be among {LEXICAL_FIELDS}, got {sorted(unknown)}")
        if any(not (w >= 0) or w == float("inf") for w in value.values()) or not any(value.values()):
            raise ValueError(f"field weights must be finite, >= 0 and not all 0, got {value}")
        return value

    @field_validator("channels")
    @classmethod
    def _known_channels(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = set(value) - set(CHANNELS)
        if unknown or not value:
            raise ValueError(f"channels must be a non-empty subset of {CHANNELS}, got {value}")
        if "feedback" in value and "lexical" not in value:
            raise ValueError("the feedback channel expands the lexical channel's hits: add 'lexical' too")
        return value


PRESETS: dict[str, RetrievalConfig] = {
    # Hybrid over the memories' index keys: content, context window, time words (the default).
    "balanced": RetrievalConfig(),
    # Without the feedback channel's second lexical search.
    "fast": RetrievalConfig(
        candidates=20, channels=("vector", "lexical", "graph"), weights={"vector": 1.0, "lexical": 1.0, "graph": 0.5}
    ),
    # More candidates per channel: a little better, a little slower.
    "best": RetrievalConfig(candidates=100),
    "lexical": RetrievalConfig(channels=("lexical",)),
    "vector": RetrievalConfig(channels=("vector",)),
    # Each memory on its own words and vector only (the default before context windows).
    "plain": RetrievalConfig(
        channels=("vector", "lexical"),
        weights={"vector": 1.0, "lexical": 1.0},
        fields=CONTENT_ONLY,
        window_vectors=False,
    ),
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
