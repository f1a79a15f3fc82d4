"""Records of the tiers (STM pages, MTM segments, LPM personas, system memory), their configuration and results.

All are frozen pydantic models; storage keeps them as JSON documents
(:mod:`memory.backends.tiers`). Vectors are plain float lists so a record
round-trips through JSON unchanged.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, PlainValidator

from memory.types import Sensitivity

__all__ = [
    "TierConfig",
    "DialoguePage",
    "Segment",
    "ObjectPersona",
    "AgentPersona",
    "SystemEntry",
    "PageHit",
    "SegmentHit",
    "TierContext",
    "TierRecord",
    "ConsolidationReport",
    "TierSnapshot",
    "CONFIG_FIELDS",
    "page_text",
]


def _decode_vector(value: Any) -> tuple[float, ...]:
    """A base64 string of little-endian float32 (the stored form) or a sequence of finite numbers, as a tuple."""
    if isinstance(value, str):
        try:
            raw = base64.b64decode(value.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError) as exc:
            raise ValueError(f"not a base64 float32 vector: {exc}") from None
        if len(raw) % 4:
            raise ValueError("a base64 float32 vector must hold a multiple of 4 bytes")
        array = np.frombuffer(raw, dtype="<f4")
    elif isinstance(value, (tuple, list, np.ndarray)):
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"a vector holds numbers only: {exc}") from None
        if array.ndim != 1:
            raise ValueError("a vector is one-dimensional")
    else:
        raise ValueError(f"a vector is a list of numbers, got {type(value).__name__}")
    if not np.all(np.isfinite(array)):
        raise ValueError("a vector holds finite numbers only")
    return tuple(array.tolist())


def _encode_vector(value: tuple[float, ...]) -> str:
    return base64.b64encode(np.asarray(value, dtype="<f4").tobytes()).decode("ascii")


#: An embedding: a float tuple in Python, base64 float32 in JSON (4x smaller, fast to parse).
Vector = Annotated[
    tuple[float, ...],
    PlainValidator(_decode_vector),
    PlainSerializer(_encode_vector, return_type=str, when_used="json"),
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TierConfig(_Frozen):
    """Every constant of the tiers, per agent (and per agent type). Defaults from seed 002 / MemoryOS.

    ``stm_capacity`` pages per (agent, user) queue (seed: 7); ``mtm_capacity``
    segments per (agent, user) (seed: 200); a page joins the best segment
    when its Fscore ≥ ``fscore_threshold`` (MemoryOS: 0.6); heat uses
    ``heat_alpha``/``heat_beta``/``heat_gamma`` (MemoryOS: 1, 1, 1) and
    ``recency_mu`` seconds (seed: 1e7); a segment whose heat reaches
    ``heat_threshold`` (MemoryOS: 5) is analysed into personas. Persona
    queues hold ``kb_capacity`` knowledge entries (seed: 100) and
    ``traits_capacity`` traits. Retrieval visits the ``top_m_segments``
    segments by Fscore and returns ``top_k_pages`` pages ranked over the
    pages of the segments in Fscore order up to ``candidate_pages`` (every
    page at usual sizes), the segment's Fscore weighted ``segment_prior`` in
    the ranking (0: none), plus ``system_top_k`` system
    entries and ``lpm_top_k`` persona entries (knowledge, traits, profile
    fields), each ranked by relevance to the query. System memory keeps
    ``system_capacity`` entries per namespace; knowledge is promoted when its
    importance ≥ ``system_importance_threshold`` and — with
    ``system_promotion`` ``general`` (the default) — it is not about a
    particular person (:mod:`memory.tiers.privacy`); ``any`` is the explicit
    per-namespace policy that allows personal facts (set it on the agent type
    or agent). ``auto_pages`` turns the agent's tiers on by themselves: every
    user message followed by an assistant message of the agent
    (``mem.messages.append``, :class:`~memory.agent.MemoryAgent`, the servers)
    becomes a page. ``fscore_function`` and ``heat_function`` replace the seed's
    formulas with a ``"module:function"`` callable (:mod:`memory.tiers.scoring`).
    """

    stm_capacity: int = Field(7, ge=1, le=10_000)
    mtm_capacity: int = Field(200, ge=1, le=1_000_000)
    fscore_threshold: float = Field(0.6, ge=-1.0, le=2.0)
    heat_alpha: float = Field(1.0, ge=0.0)
    heat_beta: float = Field(1.0, ge=0.0)
    heat_gamma: float = Field(1.0, ge=0.0)
    recency_mu: float = Field(1e7, gt=0.0)
    heat_threshold: float = Field(5.0, gt=0.0)
    kb_capacity: int = Field(100, ge=1, le=100_000)
    traits_capacity: int = Field(50, ge=1, le=100_000)
    segment_keywords: int = Field(10, ge=1, le=100)
    top_m_segments: int = Field(5, ge=1, le=1000)
    top_k_pages: int = Field(7, ge=1, le=1000)
    candidate_pages: int = Field(1000, ge=0, le=100_000)
    segment_prior: float = Field(0.0, ge=0.0, le=10.0)
    system_capacity: int = Field(100, ge=1, le=1_000_000)
    system_importance_threshold: float = Field(0.6, ge=0.0, le=1.0)
    system_top_k: int = Field(5, ge=0, le=1000)
    lpm_top_k: int = Field(10, ge=0, le=1000)
    auto_pages: bool = False
    system_promotion: Literal["general", "any"] = "general"
    fscore_function: str | None = Field(None, max_length=300)
    heat_function: str | None = Field(None, max_length=300)


#: Names of the configurable constants.
CONFIG_FIELDS: tuple[str, ...] = tuple(TierConfig.model_fields)


class DialoguePage(_Frozen):
    """One exchange: the query, the agent's response, when, and the meta-chain linking it to earlier pages."""

    id: str
    namespace: str
    agent: str
    user: str
    query: str
    response: str
    created_at: datetime
    meta_chain: str = ""
    keywords: tuple[str, ...] = ()
    vector: Vector = ()
    #: One vector per non-empty turn (query, response), for ranking turns on their own (:mod:`memory.tiers.search`).
    turn_vectors: tuple[Vector, ...] = ()
    message_ids: tuple[str, ...] = ()
    thread: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    sensitivity: Sensitivity = "normal"
    analyzed: bool = False

    @property
    def text(self) -> str:
        """Query and response as one text (what is embedded and keyword-extracted)."""
        return f"{self.query}\n{self.response}".strip()


class Segment(_Frozen):
    """A topic of MTM: summary, keywords, embedding, pages and the heat counters."""

    id: str
    namespace: str
    agent: str
    user: str
    summary: str
    keywords: tuple[str, ...]
    vector: Vector
    pages: tuple[DialoguePage, ...]
    visits: int = 0
    interactions: int = 0
    created_at: datetime
    last_accessed: datetime


class ObjectPersona(_Frozen):
    """Anything the agent knows about (a user, product, place, domain): profile map, knowledge and traits queues."""

    namespace: str
    agent: str
    type: str
    identifier: str
    profile: dict[str, str] = Field(default_factory=dict)
    knowledge: tuple[str, ...] = ()
    traits: tuple[str, ...] = ()
    updated_at: datetime


class AgentPersona(_Frozen):
    """The agent's own profile and evolving traits."""

    namespace: str
    agent: str
    profile: dict[str, str] = Field(default_factory=dict)
    traits: tuple[str, ...] = ()
    updated_at: datetime


class SystemEntry(_Frozen):
    """Knowledge shared by every agent of a namespace, with its importance and contributing agent."""

    id: str
    namespace: str
    content: str
    importance: float = Field(ge=0.0, le=1.0)
    source_agent: str
    vector: Vector = ()
    created_at: datetime


class PageHit(_Frozen):
    """A page retrieved from MTM with its score against the query and its segment."""

    page: DialoguePage
    segment_id: str
    score: float


class SegmentHit(_Frozen):
    """A segment chosen for a query: its Fscore with the query and its heat after the visit."""

    segment_id: str
    summary: str
    keywords: tuple[str, ...]
    fscore: float
    heat: float


class TierRecord(_Frozen):
    """One piece of a :class:`TierContext` flattened for a context assembler: which tier, a label, the text."""

    id: str
    tier: Literal["stm", "mtm", "lpm", "system"]
    label: str
    content: str
    score: float | None = None
    created_at: datetime | None = None
    sensitivity: Sensitivity = "normal"


class TierContext(_Frozen):
    """Everything retrieval across tiers found, ready for a context assembler."""

    query: str
    agent: str
    user: str
    stm: tuple[DialoguePage, ...] = ()
    segments: tuple[SegmentHit, ...] = ()
    pages: tuple[PageHit, ...] = ()
    user_persona: ObjectPersona | None = None
    objects: tuple[ObjectPersona, ...] = ()
    agent_persona: AgentPersona | None = None
    system: tuple[SystemEntry, ...] = ()

    def records(self) -> list[TierRecord]:
        """The result as records, most durable first: user persona, object personas, agent persona,
        system memory, relevant MTM pages (with their scores), recent STM pages (oldest first).

        Pages are rendered as MemoryOS's prompt does: the exchange, its time and
        its meta-chain ("Conversation chain overview"); persona and system
        entries carry the time they were recorded."""
        out: list[TierRecord] = []
        for persona in ((self.user_persona,) if self.user_persona else ()) + self.objects:
            text = _persona_text(persona.profile, persona.traits, persona.knowledge, persona.updated_at)
            if text:
                out.append(TierRecord(id=f"persona:{persona.type}:{persona.identifier}", tier="lpm",
                                      label=f"About {persona.identifier} ({persona.type})", content=text,
                                      created_at=persona.updated_at))  # fmt: skip
        if self.agent_persona is not None:
            a = self.agent_persona
            text = _persona_text(a.profile, a.traits, (), a.updated_at)
            if text:
                out.append(TierRecord(id=f"agent:{self.agent}", tier="lpm", label=f"Agent {self.agent}",
                                      content=text, created_at=a.updated_at))  # fmt: skip
        for entry in self.system:
            out.append(
                TierRecord(
                    id=f"system:{entry.id}",
                    tier="system",
                    label="Shared knowledge",
                    content=f"{entry.content} (Recorded: {_stamp(entry.created_at)})",
                    score=entry.importance,
                    created_at=entry.created_at,
                )
            )
        for hit in self.pages:
            out.append(TierRecord(id=f"page:{hit.page.id}", tier="mtm", label="Relevant past exchange",
                                  content=page_text(hit.page), score=max(0.0, min(1.0, hit.score / 2)),
                                  created_at=hit.page.created_at, sensitivity=hit.page.sensitivity))  # fmt: skip
        for page in self.stm:
            out.append(TierRecord(id=f"page:{page.id}", tier="stm", label="Recent exchange", content=page_text(page),
                                  created_at=page.created_at, sensitivity=page.sensitivity))  # fmt: skip
        return out

    def to_text(self) -> str:
        """A plain-text rendering in MemoryOS's order: recent exchanges (<CONTEXT>), relevant past exchanges with
        time and meta-chain (<MEMORY>), what is known about the user and others (<USER TRAITS>), the agent, and
        shared knowledge."""
        blocks: list[str] = []
        if self.stm:
            blocks.append("## Recent exchanges\n" + "\n".join(page_text(p) for p in self.stm))
        if self.pages:
            blocks.append("## Relevant past exchanges\n" + "\n\n".join(page_text(h.page) for h in self.pages))
        for persona in ((self.user_persona,) if self.user_persona else ()) + self.objects:
            text = _persona_text(persona.profile, persona.traits, persona.knowledge, persona.updated_at)
            if text:
                blocks.append(f"## About {persona.identifier} ({persona.type})\n{text}")
        if self.agent_persona is not None:
            a = self.agent_persona
            text = _persona_text(a.profile, a.traits, (), a.updated_at)
            if text:
                blocks.append(f"## Agent {self.agent}\n{text}")
        if self.system:
            blocks.append(
                "## Shared knowledge\n"
                + "\n".join(f"- {e.content} (Recorded: {_stamp(e.created_at)})" for e in self.system)
            )
        return "\n\n".join(blocks)


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M")


def page_text(page: DialoguePage) -> str:
    """One page as MemoryOS renders it: ``User: …`` / ``Assistant: …`` / ``Time: …`` / ``Conversation chain
    overview: …`` (the meta-chain, when there is one)."""
    lines = []
    if page.query.strip():
        lines.append(f"User: {page.query.strip()}")
    if page.response.strip():
        lines.append(f"Assistant: {page.response.strip()}")
    lines.append(f"Time: {_stamp(page.created_at)}")
    if page.meta_chain.strip():
        lines.append(f"Conversation chain overview: {page.meta_chain.strip()}")
    return "\n".join(lines)


def _persona_text(
    profile: dict[str, str], traits: Sequence[str], knowledge: Sequence[str], updated_at: datetime
) -> str:
    lines = [f"- {k}: {v}" for k, v in sorted(profile.items())]
    lines += [f"- {t}" for t in traits] + [f"- {k}" for k in knowledge]
    if not lines:
        return ""
    return "\n".join(lines) + f"\n(Recorded: up to {_stamp(updated_at)})"


class ConsolidationReport(_Frozen):
    """What one consolidation pass did."""

    pages_moved: int = 0
    segments_created: int = 0
    segments_joined: int = 0
    segments_evicted: int = 0
    segments_analysed: int = 0
    persona_updates: int = 0
    system_promoted: int = 0
    system_refused: int = 0
    system_evicted: int = 0
    llm_fallbacks: int = 0

    def to_dict(self) -> dict[str, int]:
        """The counters as a dict (the worker sums them)."""
        return self.model_dump()


class TierSnapshot(_Frozen):
    """Every tier of one (agent, user) for display: config, STM, segments with heat, personas, system memory."""

    namespace: str
    agent: str
    user: str
    config: TierConfig
    agent_type: str | None = None
    stm: tuple[DialoguePage, ...] = ()
    segments: tuple[tuple[Segment, float], ...] = ()
    user_persona: ObjectPersona | None = None
    objects: tuple[ObjectPersona, ...] = ()
    agent_persona: AgentPersona | None = None
    system: tuple[SystemEntry, ...] = ()
    kind: Literal["snapshot"] = "snapshot"
