"""The Prompt IR as data (seed 000): requests, sections, budgets, the IR and its trace.

Every model here is a frozen pydantic model and serialises to JSON
(``model_dump(mode="json")``), so a request, an IR or a trace can be logged,
stored and replayed. The flow::

    ContextRequest --hydrate--> PromptIR --compile--> CompiledPrompt (+ Trace)
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from memory.limits import MAX_CONTENT_CHARS

__all__ = [
    "CompositionMode",
    "Priority",
    "ShrinkMode",
    "SourceKind",
    "PRIORITY_WEIGHTS",
    "SectionSource",
    "Section",
    "ToolDef",
    "FixedRatios",
    "TokenBudget",
    "ContextStrategy",
    "ContextRequest",
    "PromptMeta",
    "PromptIR",
    "SectionTrace",
    "SourceNote",
    "Trace",
    "section_hash",
]

#: How a section composes with others (seed 000): hyperprior, product of experts,
#: mixture, Bayesian update. Also the order sections are rendered in.
CompositionMode = Literal["hierarchical", "constraint", "additive", "contextual"]
Priority = Literal["critical", "high", "medium", "low"]
#: How a section is shrunk toward ``min_tokens``: keep the start, keep the end
#: (newest lines of a transcript), or pick sentences (extractive summary).
ShrinkMode = Literal["truncate", "truncate_start", "summarise", "none"]
SourceKind = Literal["static", "temporal", "semantic", "knowledge", "state", "conditional", "graph", "tier", "block"]

#: Weight of a priority in the value ``priority × relevance × recency``.
#: Critical sections are never ranked: they are always kept (shrunk only as a last resort).
PRIORITY_WEIGHTS: dict[str, float] = {"critical": 4.0, "high": 1.0, "medium": 0.6, "low": 0.3}


class _Data(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def section_hash(content: str) -> str:
    """The dedup key of a section: sha256 of its whitespace-normalised, case-folded content."""
    normal = " ".join(content.split()).casefold()
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()[:32]


class SectionSource(_Data):
    """Provenance of a section: what produced it, with a reference and a score where known."""

    kind: SourceKind
    name: str = Field("", description="file name, state key, source name ('clock', 'recall', 'blocks', …)")
    ref: str | None = Field(None, description="id of the record it came from (memory id, message id, block label)")
    score: float | None = Field(None, description="retrieval score, for semantic sources")


class Section(_Data):
    """One labelled, budget-aware piece of the prompt."""

    id: str
    label: str = Field(description="heading it is rendered under; consecutive sections with one label share it")
    source: SectionSource
    content: str
    tokens: int | None = Field(None, ge=0, description="token count; filled by compile when unset")
    min_tokens: int | None = Field(None, ge=0, description="smallest useful size when shrunk; None: keep whole or drop")
    priority: Priority = "medium"
    relevance: float | None = Field(None, ge=0.0, le=1.0, description="0..1 task relevance; None counts as 1")
    recency: datetime | None = Field(None, description="when this information was current")
    composition: CompositionMode = "additive"
    shrink: ShrinkMode = "summarise"
    content_hash: str | None = None
    embedding: tuple[float, ...] | None = None

    @field_validator("recency")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value

    @model_validator(mode="after")
    def _fill_hash(self) -> Section:
        if self.content_hash is None:
            object.__setattr__(self, "content_hash", section_hash(self.content))
        return self


class ToolDef(_Data):
    """A tool the model may call: name, description and a JSON schema of its arguments."""

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    priority: Priority = "high"
    embedding: tuple[float, ...] | None = None

    def openai(self) -> dict[str, Any]:
        """OpenAI function-calling form: ``{"type": "function", "function": {...}}``."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def anthropic(self) -> dict[str, Any]:
        """Anthropic tool-use form: ``{"name", "description", "input_schema"}``."""
        return {"name": self.name, "description": self.description, "input_schema": self.parameters}


class FixedRatios(_Data):
    """Fixed shares of the usable budget: instructions (hierarchical + constraint), context, observation."""

    system: float = Field(0.25, ge=0.0, le=1.0)
    context: float = Field(0.65, ge=0.0, le=1.0)
    observation: float = Field(0.10, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _sum_to_one(self) -> FixedRatios:
        total = self.system + self.context + self.observation
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"fixed ratios must sum to 1, got {total:.3f}")
        return self


class TokenBudget(_Data):
    """How many tokens the compiled prompt may use and how they are shared.

    ``usable = floor(total × (1 − reserve_ratio))``; the reserve is headroom
    left for the reply. ``allocation`` decides how space is shared when not
    everything fits: ``fixed`` (ratios per group), ``relevance`` (in proportion
    to priority × relevance × recency) or ``information`` (in proportion to an
    estimate of information content: compressed size).
    """

    total: int = Field(4000, ge=1, le=10_000_000)
    reserve_ratio: float = Field(0.0, ge=0.0, lt=1.0)
    allocation: Literal["fixed", "relevance", "information"] = "relevance"
    ratios: FixedRatios = FixedRatios()

    @property
    def usable(self) -> int:
        """Tokens the prompt may use after the reserve."""
        return int(self.total * (1.0 - self.reserve_ratio))


class ContextStrategy(_Data):
    """How to hydrate: which sources, how many results, how fast old information fades."""

    temporal_window: int = Field(10, ge=0, le=1000, description="recent messages of the thread")
    semantic_limit: int = Field(10, ge=0, le=1000, description="max recalled memories")
    semantic_threshold: float = Field(
        0.0, ge=0.0, le=1.0, description="min fused relevance (0..1) of a recalled memory"
    )
    recency_decay: float = Field(0.995, gt=0.0, le=1.0, description="value factor per hour of age")
    include_knowledge: bool = Field(True, description="recall long-term memories")
    include_graph: bool = True
    include_tiers: bool = True
    include_blocks: bool = True
    include_recent: bool = True
    include_time: bool = Field(True, description="a 'current date and time' state section")
    include_procedures: bool = Field(True, description="learned procedures (procedural memories, self-reflection)")
    procedure_limit: int = Field(5, ge=0, le=100, description="max procedural memories")
    contextual_recall: bool = Field(
        False,
        description="a query that points back to the recent turns (she, they, 'and …?') gets their names "
        "(off: no gain on LoCoMo dev, see README)",
    )
    history_search_limit: int = Field(0, ge=0, le=1000, description="semantic hits over past messages (0: off)")
    embed_sections: bool = Field(
        False, description="fill section and tool embeddings with the store's embedder (memory.context.analysis)"
    )


class ContextRequest(_Data):
    """What the agent wants context for (its intent), the scope to draw from, and the budget."""

    observation: str = Field(min_length=1, max_length=MAX_CONTENT_CHARS, description="the current user input")
    goal: str | None = Field(None, max_length=MAX_CONTENT_CHARS)
    namespace: str | None = None
    user: str | None = None
    agent: str | None = None
    thread: str | None = None
    system: str | None = Field(
        None, max_length=MAX_CONTENT_CHARS, description="the system prompt (a critical, hierarchical section)"
    )
    sections: tuple[Section, ...] = Field((), description="caller-supplied static or state sections")
    state: dict[str, str] = Field(default_factory=dict, description="runtime state, one section per key")
    tools: tuple[ToolDef, ...] = ()
    strategy: ContextStrategy = ContextStrategy()
    budget: TokenBudget = TokenBudget()
    model: str | None = Field(None, description="model name; picks the tokenizer (see memory.context.tokens)")
    clearance: Literal["normal", "private", "secret"] = "private"


class PromptMeta(_Data):
    """Metadata of an IR: sizes, budget, strategy, when it was built."""

    total_tokens: int = 0
    budget: TokenBudget = TokenBudget()
    strategy: ContextStrategy = ContextStrategy()
    timestamp: datetime
    compression_ratio: float | None = None
    estimated_entropy: float | None = None
    cache_hit: bool = False
    tokenizer: str = ""


class SourceNote(_Data):
    """What a hydration source did: used, skipped (and why) or failed, with its time."""

    source: str
    status: Literal["used", "skipped", "failed"]
    sections: int = 0
    ms: float = 0.0
    note: str = ""


class PromptIR(_Data):
    """The hydrated prompt: labelled sections, tools, the observation, metadata and source notes."""

    sections: tuple[Section, ...]
    tools: tuple[ToolDef, ...] = ()
    observation: str
    meta: PromptMeta
    sources: tuple[SourceNote, ...] = ()
    timings_ms: dict[str, float] = Field(default_factory=dict, description="store calls made by sources (e.g. recall)")


class SectionTrace(_Data):
    """What compile did with one section."""

    id: str
    label: str
    source: str
    status: Literal["kept", "shrunk", "dropped", "duplicate"]
    tokens_before: int
    tokens_after: int
    value: float
    reason: str


class Trace(_Data):
    """The record of one compile: what went in, what was cut and why, tokens per part."""

    sections: tuple[SectionTrace, ...]
    tools: tuple[SectionTrace, ...] = ()
    sources: tuple[SourceNote, ...] = ()
    budget_total: int
    budget_usable: int
    allocation: str
    tokens: dict[str, int] = Field(description="system, observation, tools, overhead, total")
    tokens_in: int = Field(description="tokens of all hydrated sections before compile")
    compression_ratio: float = Field(description="context tokens kept / tokens hydrated (1.0: nothing cut)")
    tokenizer: str
    tokenizer_exact: bool
    timings_ms: dict[str, float] = Field(default_factory=dict)
    estimated_entropy: float | None = Field(None, description="bits per character of the prompt (zlib estimate)")
    cache_hit: bool = Field(False, description="served from the compiled-prompt cache (memory.context.cache)")
