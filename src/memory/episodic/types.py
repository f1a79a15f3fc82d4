"""The episodic data model: messages, threads, media references, blocks, job state.

Frozen pydantic models like :mod:`memory.types`; times are aware UTC datetimes.
Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memory.types import ChannelScore, EmbeddingStatus, Sensitivity

__all__ = [
    "MessageExtraction",
    "ContentType",
    "CONTENT_TYPES",
    "MediaRef",
    "Message",
    "MessageQuery",
    "ThreadInfo",
    "Block",
    "BlockChange",
    "JobState",
    "MessageHit",
]

ContentType = Literal["text", "image", "audio", "file", "snapshot"]
CONTENT_TYPES: tuple[str, ...] = ("text", "image", "audio", "file", "snapshot")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MediaRef(_Frozen):
    """A file kept in the media directory by content hash (``sha256``), or an external reference (``uri``)."""

    sha256: str | None = None
    size: int | None = None
    mime: str | None = None
    name: str | None = None
    uri: str | None = Field(None, description="external/durable reference (snapshots, cloud storage)")


class Message(_Frozen):
    """One turn of a conversation (DESIGN §2, episodic).

    ``turn`` numbers are assigned by the store, 1, 2, 3… per (namespace,
    thread), never reused, also when several processes append at once.
    """

    id: str
    namespace: str
    thread: str
    turn: int = 0
    role: str
    speaker: str | None = None
    user: str | None = None
    agent: str | None = None
    content: str
    content_type: ContentType = "text"
    media: MediaRef | None = None
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)
    sensitivity: Sensitivity = "normal"
    created_at: datetime
    expires_at: datetime | None = None
    embedding_status: EmbeddingStatus = "pending"
    embedding_model: str | None = None
    embedding_error: str | None = None


class MessageQuery(_Frozen):
    """Which messages a read may see: scope, turn window and policy (safe defaults)."""

    namespace: str
    thread: str | None = None
    user: str | None = None
    agent: str | None = None
    roles: tuple[str, ...] | None = None
    after_turn: int | None = None
    before_turn: int | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    clearance: Sensitivity = "private"
    include_expired: bool = False
    now: datetime


class ThreadInfo(_Frozen):
    """A thread with its message count and turn range (hot messages only)."""

    namespace: str
    thread: str
    messages: int
    last_turn: int
    first_at: datetime | None = None
    last_at: datetime | None = None
    archived: int = 0


class MessageHit(_Frozen):
    """A message found by :meth:`Messages.search`, with its fused score and channel scores."""

    message: Message
    score: float
    channels: dict[str, ChannelScore]


class Block(_Frozen):
    """A labelled working-memory block of one scope (namespace, user, agent) with a size limit."""

    namespace: str
    user: str | None = None
    agent: str | None = None
    label: str
    value: str = ""
    limit: int
    version: int = 0
    updated_at: datetime | None = None


class BlockChange(_Frozen):
    """One recorded change of a block: the value before and after."""

    namespace: str
    user: str | None = None
    agent: str | None = None
    label: str
    version: int
    op: Literal["replace", "append", "summary", "import"]
    before: str
    after: str
    at: datetime
    reason: str | None = None


class JobState(_Frozen):
    """What a job left behind: cursor, totals, last error (``memory sync --status`` shows it)."""

    name: str
    cursor: str | None = None
    runs: int = 0
    processed: int = 0
    failed: int = 0
    skipped: int = 0
    last_started_at: datetime | None = None
    last_finished_at: datetime | None = None
    last_error: str | None = None
    last_error_at: datetime | None = None
    worker: str | None = None


@dataclass
class MessageExtraction:
    """What extraction did for one message: the fact memories stored (ids), or why not."""

    message_id: str
    status: str  # done | skipped | failed
    memory_ids: list[str] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    error: str | None = None
    #: fact memories closed by this message (superseded, negated, corrected)
    closed_ids: list[str] = field(default_factory=list)
    #: why the LLM's answer was not used (the offline extractor was), or None
    fallback: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "message_id": self.message_id, "status": self.status, "memory_ids": self.memory_ids,
            "facts": self.facts, "error": self.error, "closed_ids": self.closed_ids, "fallback": self.fallback,
        }  # fmt: skip
