"""The public data model: scopes, memory items, hits, ledger entries, pages.

All models are frozen pydantic models, serialisable to JSON. Times are
timezone-aware UTC datetimes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Sensitivity",
    "EmbeddingStatus",
    "LedgerOp",
    "Scope",
    "MemoryItem",
    "ChannelScore",
    "ScoreParts",
    "Hit",
    "LedgerEntry",
    "Page",
    "Stats",
    "SENSITIVITY_LEVELS",
]

Sensitivity = Literal["normal", "private", "secret"]
EmbeddingStatus = Literal["done", "pending", "failed", "skipped"]
#: ``embed``: an audit entry of the sync job (memory.episodic.audit); it records no state of the item.
LedgerOp = Literal["add", "update", "supersede", "delete", "expire", "embed"]

#: Order of sensitivity levels; a caller with clearance ``c`` sees levels <= c.
SENSITIVITY_LEVELS: dict[str, int] = {"normal": 0, "private": 1, "secret": 2}

JSONValue = Any


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Scope(_Frozen):
    """Who a record belongs to: a namespace (tenant) and optional user, agent, thread.

    ``None`` for user/agent/thread means "not set" on a record, and "any" in a
    filter.
    """

    namespace: str = "default"
    user: str | None = None
    agent: str | None = None
    thread: str | None = None


class MemoryItem(_Frozen):
    """One long-term memory (DESIGN §2)."""

    id: str
    namespace: str
    user: str | None = None
    agent: str | None = None
    thread: str | None = None
    kind: str = "fact"
    content: str
    context: str | None = None
    tags: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    metadata: dict[str, JSONValue] = Field(default_factory=dict)
    source_ids: tuple[str, ...] = ()
    importance: float = 0.5
    created_at: datetime
    updated_at: datetime
    accessed_at: datetime | None = None
    access_count: int = 0
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    sensitivity: Sensitivity = "normal"
    expires_at: datetime | None = None
    content_hash: str
    embedding_model: str | None = None
    embedding_status: EmbeddingStatus = "pending"
    embedding_error: str | None = None

    @property
    def scope(self) -> Scope:
        """The scope this item belongs to."""
        return Scope(namespace=self.namespace, user=self.user, agent=self.agent, thread=self.thread)


class ChannelScore(_Frozen):
    """How one retrieval channel saw a hit."""

    channel: str
    rank: int = Field(description="1-based rank within the channel")
    raw: float = Field(description="channel score: cosine similarity, or BM25 (higher is better)")
    contribution: float = Field(description="weighted reciprocal-rank contribution to the fused score")


class ScoreParts(_Frozen):
    """The parts of a hit's final score."""

    fusion: float = Field(description="weighted RRF, normalised to 0..1")
    recency: float = Field(description="recency decay factor, 0..1")
    importance: float
    final: float
    rerank: float | None = Field(
        None, description="the reranker's score when a reranker reordered this hit (final is then its blend)"
    )
    speaker: float | None = Field(
        None,
        description=(
            "the factor final was multiplied by: a chat turn of the other side than the one the question asks "
            "about (retrieval.speaker_penalty), or of another named speaker than the one it names "
            "(retrieval.named_speaker_penalty)"
        ),
    )
    quantity: float | None = Field(
        None,
        description=(
            "the factor final was multiplied by: the question asks for an amount and this text states none "
            "(retrieval.quantity_penalty)"
        ),
    )


class Hit(_Frozen):
    """A recalled memory with its score and where the score came from."""

    item: MemoryItem
    score: float
    channels: dict[str, ChannelScore]
    parts: ScoreParts

    @property
    def id(self) -> str:
        """The memory's id."""
        return self.item.id

    @property
    def content(self) -> str:
        """The memory's content."""
        return self.item.content


class LedgerEntry(_Frozen):
    """One recorded change to a memory, with its state before and after."""

    id: str
    namespace: str
    item_id: str
    op: LedgerOp
    at: datetime
    before: dict[str, JSONValue] | None = None
    after: dict[str, JSONValue] | None = None
    reason: str | None = None


class Page(_Frozen):
    """One page of a listing; pass ``next_cursor`` back to get the next one."""

    items: tuple[MemoryItem, ...]
    next_cursor: str | None = None


class Stats(_Frozen):
    """Counts for a scope."""

    namespace: str
    total: int
    by_kind: dict[str, int]
    by_sensitivity: dict[str, int]
    by_embedding_status: dict[str, int]
    ledger_entries: int | None
    embedding_model: str | None = None
    embedding_dim: int | None = None
    backend: str
