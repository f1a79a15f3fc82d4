"""Records of the feedback loop: conversation records, prompt versions and the results built on them.

Frozen pydantic models (like :mod:`memory.tiers.types`); storage keeps them
as JSON documents plus a few indexed columns (:mod:`memory.backends.feedback`).
Validation of what may be stored lives in the models' field constraints and
in :func:`memory.backends.feedback.check_record` / ``check_prompt``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ConversationRecord",
    "PromptVersion",
    "VersionAggregate",
    "VersionStats",
    "PromptSuggestion",
    "PromotionDecision",
    "ReflectionReport",
    "FeedbackSummary",
    "PromptOrigin",
    "PromptStatus",
    "MAX_TEXT_CHARS",
    "MAX_PROMPT_CHARS",
]

#: Longest feedback, example, suggestion or summary text a record holds.
MAX_TEXT_CHARS = 20_000
#: Longest prompt text a version holds.
MAX_PROMPT_CHARS = 50_000

PromptOrigin = Literal["manual", "suggested", "llm"]
PromptStatus = Literal["active", "candidate", "retired"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ConversationRecord(_Frozen):
    """One conversation's outcome (seed 003 §2.4): summary, feedback, prompt version used, reward.

    One record per (namespace, thread); writing it again replaces it.
    ``reward`` is None until some signal scored it; ``reward_components``
    says which signal gave what (:mod:`memory.feedback.reward`).
    ``reflected_at`` is set by the reflection job (its cursor).
    """

    namespace: str
    thread: str
    user: str | None = None
    agent: str | None = None
    prompt_name: str | None = None
    prompt_version: int | None = Field(None, ge=1)
    summary: str | None = None
    feedback: str | None = None
    example: str | None = None
    suggestion: str | None = None
    rating: float | None = Field(None, ge=0.0, le=1.0, description="explicit rating, normalised to [0, 1]")
    task_completed: bool | None = None
    corrections: int = Field(0, ge=0)
    reward: float | None = Field(None, ge=0.0, le=1.0)
    reward_components: dict[str, Any] = Field(default_factory=dict)
    explicit_reward: bool = Field(False, description="the reward was given by the caller, not computed")
    message_ids: tuple[str, ...] = ()
    created_at: datetime
    updated_at: datetime
    reflected_at: datetime | None = None
    revision: int = Field(0, ge=0, description="bumped by every conditional save (optimistic concurrency)")


class PromptVersion(_Frozen):
    """One version of a named prompt; (namespace, name, version) is unique, one version per name is active."""

    namespace: str
    name: str
    version: int = Field(ge=1)
    text: str
    origin: PromptOrigin = "manual"
    parent: int | None = Field(None, ge=1)
    status: PromptStatus = "candidate"
    note: str = ""
    created_at: datetime
    promoted_at: datetime | None = None


class VersionAggregate(_Frozen):
    """Scored conversations of one prompt version: count, sum and sum of squares of their rewards."""

    version: int
    count: int = 0
    total: float = 0.0
    total_squares: float = 0.0


class VersionStats(_Frozen):
    """Measured performance of a prompt version (see :mod:`memory.feedback.stats`)."""

    name: str
    version: int
    status: PromptStatus
    origin: PromptOrigin
    count: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    conversations: int = Field(0, description="conversations attributed to it, scored or not")


class PromptSuggestion(_Frozen):
    """What ``prompts.suggest(name)`` made: the new (candidate) version and how."""

    version: PromptVersion
    path: Literal["llm", "rules"]
    based_on: tuple[str, ...] = Field((), description="threads of the low-reward conversations used")
    rationale: str = ""
    fallback_reason: str | None = None


class PromotionDecision(_Frozen):
    """Whether a candidate version was (or would be) promoted over the active one, and why."""

    name: str
    promoted: bool
    candidate: int | None = None
    active: int | None = None
    reason: str


class ReflectionReport(_Frozen):
    """What one reflection pass did."""

    examined: int = 0
    written: int = 0
    replaced: int = 0
    skipped: int = 0
    memory_ids: tuple[str, ...] = ()
    path: Literal["llm", "rules", "none"] = "none"
    fallback_reason: str | None = None
    dry_run: bool = False
    seconds: float = 0.0
    lessons: tuple[str, ...] = Field((), description="the reflections (written, or would be with dry_run)")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (for the worker and ``--json``)."""
        data: dict[str, Any] = self.model_dump(mode="json")
        return data


class FeedbackSummary(_Frozen):
    """An overview of a namespace's conversation records (seed 003 §6: analyse regularly)."""

    namespace: str
    records: int
    scored: int
    mean_reward: float | None
    low_reward: int
    unreflected: int
    threshold: float
    prompts: tuple[VersionStats, ...] = ()
    recent_feedback: tuple[str, ...] = ()
