"""Read (and two write) operations the web inspector needs, in the one operation registry.

They are ordinary operations — :func:`memory.server.ops.invoke` applies the
caller's namespace scope, read-only flag and clearance before ``run`` — with
REST routes and no MCP tools (``mcp=False``): they show what a person looks
at (a memory with its links, sources and extracted facts; a thread's
timeline; the graph as of a date; tiers; prompt versions with rewards),
not what an agent calls. Secrets stay hidden exactly as in the other
operations: everything a caller sees is read at the caller's clearance.
"""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memory import limits as lim
from memory.backends.graph import Entity, GraphStore, MemoryLink, Relation
from memory.episodic.types import BlockChange, Message
from memory.errors import Error, GraphUnavailableError, NotFoundError
from memory.feedback.types import PromptVersion, VersionStats
from memory.memory import Memory
from memory.server import models as m
from memory.server.ops import Call, Operation, Rest, _query_graph, register
from memory.tiers.types import AgentPersona, ObjectPersona, TierConfig
from memory.types import SENSITIVITY_LEVELS, MemoryItem

__all__ = ["MEDIA_INLINE_LIMIT"]

#: Largest media file returned inline (base64) to the inspector.
MEDIA_INLINE_LIMIT = 4 * 1024 * 1024

_TAGS = ("inspector",)
_USER = Field(None, description="Only this user's (exact match).", **m.NAME_RULES)
_AGENT = Field(None, description="Only this agent's (exact match).", **m.NAME_RULES)
_CLEARANCE: Any = Field("private", description="Highest sensitivity to show; 'secret' needs secret clearance.")


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- who am I -------------------------------------------------------------------------------


class WhoamiOut(_Out):
    """What the caller's key allows: namespaces (None = all), read-only, clearance."""

    namespaces: list[str] | None
    default_namespace: str
    read_only: bool
    clearance: str
    key_id: str | None = None


def _whoami(mem: Memory, a: m.NoArgs, call: Call) -> WhoamiOut:
    caller = call.caller
    namespaces = sorted(caller.namespaces) if caller.namespaces is not None else None
    return WhoamiOut(
        namespaces=namespaces, default_namespace=caller.default_namespace, read_only=caller.read_only,
        clearance=caller.clearance, key_id=caller.key_id,
    )  # fmt: skip


register(Operation(
    name="whoami",
    description="What the caller's API key may do: its namespaces, whether it is read-only, its clearance.",
    params=m.NoArgs, result=WhoamiOut, run=_whoami, scoped=False, mcp=False, tags=_TAGS,
    rest=Rest("GET", "/whoami"),
))  # fmt: skip


# -- one memory, with everything around it ----------------------------------------------------


class MemoryDetailIn(_In):
    """One memory by id."""

    id: str = Field(..., **m.NAME_RULES)
    clearance: m.Clearance = _CLEARANCE


class SourceRef(_Out):
    """A provenance id and, when visible, the message or memory it names."""

    id: str
    message: Message | None = None
    memory: MemoryItem | None = None


class MemoryDetailOut(_Out):
    """A memory with its links, sources, mentioned entities and the graph facts extracted from it."""

    item: MemoryItem
    links: list[MemoryLink]
    sources: list[SourceRef]
    entities: list[Entity]
    facts: list[Relation]


def _visible_ids(mem: Memory, namespace: str, ids: list[str], clearance: str) -> set[str]:
    if not ids:
        return set()
    flt = mem.filter(namespace, clearance=clearance, include_invalid=True)
    return set(mem.backend.find_ids(flt.model_copy(update={"ids": tuple(ids)})))


def _memory_detail(mem: Memory, a: MemoryDetailIn, call: Call) -> MemoryDetailOut:
    ns = call.namespace
    item = mem.get(a.id, namespace=ns, clearance=a.clearance)
    links: list[MemoryLink] = []
    entities: list[Entity] = []
    facts: list[Relation] = []
    try:
        store: GraphStore | None = mem.graph.store
    except GraphUnavailableError:
        store = None  # a backend without a graph: no links, entities or facts to show
    if store is not None:
        found = store.links(ns, [item.id])
        others = [lk.target_id if lk.source_id == item.id else lk.source_id for lk in found]
        visible = _visible_ids(mem, ns, others, a.clearance)
        links = [lk for lk, other in zip(found, others, strict=True) if other in visible]
        entity_ids = [mention.entity_id for mention in store.mentions(ns, memory_ids=[item.id])]
        entities = store.get_entities(ns, entity_ids)
        if entity_ids:
            facts = [r for r in store.relations(ns, entity_ids, include_invalid=True) if item.id in r.source_ids]
    sources: list[SourceRef] = []
    for source_id in item.source_ids[:50]:
        ref = SourceRef(id=source_id)
        try:
            ref.message = mem.messages.get(source_id, namespace=ns, clearance=a.clearance)
        except NotFoundError:
            try:
                ref.memory = mem.get(source_id, namespace=ns, clearance=a.clearance)
            except NotFoundError:
                pass  # gone, or above the caller's clearance: only the id (which the memory carries) is shown
        except Error:
            pass
        sources.append(ref)
    return MemoryDetailOut(item=item, links=links, sources=sources, entities=entities, facts=facts)


register(Operation(
    name="memory_detail",
    description="One memory with its links, its sources (messages or memories), the entities it mentions and "
                "the graph facts extracted from it.",
    params=MemoryDetailIn, result=MemoryDetailOut, run=_memory_detail, mcp=False, tags=_TAGS,
    rest=Rest("GET", "/memories/{id}/detail"),
))  # fmt: skip


# -- conversations ---------------------------------------------------------------------------------


class TimelineIn(_In):
    """A window of a thread's timeline: the latest ``limit`` messages, or those after ``after_turn``."""

    thread: str = Field(..., **m.NAME_RULES)
    after_turn: int | None = Field(
        None, ge=0, le=lim.MAX_TURN, description="Only messages after this turn (for live updates)."
    )
    before_turn: int | None = Field(
        None, ge=1, le=lim.MAX_TURN, description="Only messages before this turn (older pages)."
    )
    limit: int = Field(100, ge=1, le=500)
    clearance: m.Clearance = _CLEARANCE


class TimelineOut(_Out):
    """Messages in turn order and the thread's last visible turn."""

    messages: list[Message]
    last_turn: int
    has_older: bool


def _timeline(mem: Memory, a: TimelineIn, call: Call) -> TimelineOut:
    ns = call.namespace
    if a.after_turn is not None:
        found = mem.messages.get_thread(
            a.thread, namespace=ns, after_turn=a.after_turn, limit=a.limit, clearance=a.clearance
        )
        has_older = a.after_turn > 0
    else:
        query = mem.messages.query(namespace=ns, thread=a.thread, clearance=a.clearance)
        if a.before_turn is not None:
            query = query.model_copy(update={"before_turn": a.before_turn})
        newest = mem.messages.store.list_messages(query, a.limit + 1, newest_first=True)
        has_older = len(newest) > a.limit
        found = list(reversed(newest[: a.limit]))
    last = found[-1].turn if found else (a.after_turn or 0)
    return TimelineOut(messages=found, last_turn=last, has_older=has_older)


class ArchiveIn(_In):
    """Archive a thread's older messages, keeping the newest ``keep_last``."""

    thread: str = Field(..., **m.NAME_RULES)
    keep_last: int = Field(20, ge=0, le=1_000_000)


class ArchiveOut(_Out):
    """How many messages were moved to the archive."""

    archived: int


def _archive(mem: Memory, a: ArchiveIn, call: Call) -> ArchiveOut:
    return ArchiveOut(archived=mem.messages.archive(a.thread, keep_last=a.keep_last, namespace=call.namespace))


class MediaIn(_In):
    """The media file of one message."""

    id: str = Field(..., description="The message id.", **m.NAME_RULES)
    clearance: m.Clearance = _CLEARANCE


class MediaOut(_Out):
    """A message's media, inline as base64 (when stored and small enough) or as its external URI."""

    mime: str | None
    name: str | None
    size: int | None
    uri: str | None = None
    data_base64: str | None = None


def _media(mem: Memory, a: MediaIn, call: Call) -> MediaOut:
    message = mem.messages.get(a.id, namespace=call.namespace, clearance=a.clearance)
    ref = message.media
    if ref is None:
        raise NotFoundError(f"message {a.id} has no media")
    out = MediaOut(mime=ref.mime, name=ref.name, size=ref.size, uri=ref.uri)
    if ref.sha256 is not None and (ref.size or 0) <= MEDIA_INLINE_LIMIT:
        out.data_base64 = base64.b64encode(mem.messages.media(message)).decode("ascii")
    return out


register(Operation(
    name="thread_timeline",
    description="A thread's messages in turn order: the latest page, an older page (before_turn) or the new "
                "ones (after_turn), with embedding status and media references.",
    params=TimelineIn, result=TimelineOut, run=_timeline, mcp=False, tags=_TAGS,
    rest=Rest("GET", "/threads/{thread}/timeline"),
))  # fmt: skip
register(Operation(
    name="archive_thread",
    description="Move a thread's older messages to the archive (kept for export), keeping the newest keep_last.",
    params=ArchiveIn, result=ArchiveOut, run=_archive, write=True, mcp=False, tags=_TAGS,
    rest=Rest("POST", "/threads/{thread}/archive"),
))  # fmt: skip
register(Operation(
    name="message_media",
    description="The media file of a message (image, audio, file), base64 when stored here and small enough.",
    params=MediaIn, result=MediaOut, run=_media, mcp=False, tags=_TAGS,
    rest=Rest("GET", "/messages/{id}/media"),
))  # fmt: skip


# -- the knowledge graph, as of a date ---------------------------------------------------------


class GraphViewIn(m.QueryGraphIn):
    """A subgraph around ``start``, optionally as it stood at ``as_of`` (closed relations included)."""

    as_of: datetime | None = Field(None, description="Show the relations valid at this time.")


def _valid_at(relation: Relation, when: datetime) -> bool:
    """True when ``relation`` held at ``when`` (an unknown start counts as always)."""
    if relation.valid_at is not None and relation.valid_at > when:
        return False
    return relation.invalid_at is None or relation.invalid_at > when


def _graph_view(mem: Memory, a: GraphViewIn, call: Call) -> m.GraphOut:
    include_invalid = a.include_invalid or a.as_of is not None
    query = m.QueryGraphIn.model_validate(a.model_dump(exclude={"as_of"}) | {"include_invalid": include_invalid})
    found = _query_graph(mem, query, call)
    if a.as_of is None:
        return found
    when = a.as_of if a.as_of.tzinfo is not None else a.as_of.astimezone()
    relations = [r for r in found.relations if _valid_at(r, when)]
    ends = {e for r in relations for e in (r.subject_id, r.object_id)}
    entities = [e for i, e in enumerate(found.entities) if e.id in ends or (i == 0 and a.start is not None)]
    supported = {s for r in relations for s in r.source_ids}
    return m.GraphOut(
        entities=entities, relations=relations, memory_ids=[i for i in found.memory_ids if i in supported]
    )


class EntitiesIn(_In):
    """Entities of the namespace by name."""

    type: str | None = Field(None, max_length=64)
    limit: int = Field(200, ge=1, le=1000)
    clearance: m.Clearance = _CLEARANCE


class EntitiesOut(_Out):
    """Entities by name."""

    entities: list[Entity]


def _entities(mem: Memory, a: EntitiesIn, call: Call) -> EntitiesOut:
    """Entities the caller may know of (the library's rule: see ``GraphView.entities``)."""
    return EntitiesOut(
        entities=mem.graph.entities(namespace=call.namespace, type=a.type, limit=a.limit, clearance=a.clearance)
    )


register(Operation(
    name="graph_view",
    description="The knowledge graph around an entity (depth, predicates), optionally as it stood at a date: "
                "closed relations carry their validity dates.",
    params=GraphViewIn, result=m.GraphOut, run=_graph_view, mcp=False, tags=_TAGS,
    rest=Rest("POST", "/graph/view"),
))  # fmt: skip
register(Operation(
    name="graph_entities",
    description="Entities of the namespace by name (to pick a start for the graph).",
    params=EntitiesIn, result=EntitiesOut, run=_entities, mcp=False, tags=_TAGS,
    rest=Rest("GET", "/graph/entities"),
))  # fmt: skip


# -- working memory and tiers ------------------------------------------------------------------


class BlockHistoryIn(_In):
    """The changes of one block."""

    label: m.Label = Field(...)
    user: str | None = _USER
    agent: str | None = _AGENT


class BlockHistoryOut(_Out):
    """Every change of the block, oldest first."""

    changes: list[BlockChange]


def _block_history(mem: Memory, a: BlockHistoryIn, call: Call) -> BlockHistoryOut:
    changes = mem.blocks.history(a.label, user=a.user, agent=a.agent, namespace=call.namespace)
    return BlockHistoryOut(changes=changes)


class TierOwnersOut(_Out):
    """The (agent, user) pairs that have tiers."""

    # Pairs as two-item lists: OpenAPI 3.1 tools reject the tuple form (`items` as an array).
    owners: list[list[str]] = Field(..., description="[agent, user] pairs that hold tier records.")


def _tier_owners(mem: Memory, a: m.NoArgs, call: Call) -> TierOwnersOut:
    return TierOwnersOut(owners=[list(pair) for pair in mem.tiers.owners(namespace=call.namespace)])


class TiersShowIn(_In):
    """Every tier of one agent and user."""

    agent: str = Field(..., **m.NAME_RULES)
    user: str = Field(..., **m.NAME_RULES)
    clearance: m.Clearance = _CLEARANCE


class PageView(_Out):
    """A dialogue page without its vector."""

    id: str
    query: str
    response: str
    created_at: datetime
    keywords: list[str]
    thread: str | None
    sensitivity: str
    analyzed: bool


class SegmentView(_Out):
    """An MTM segment without vectors, with its heat now."""

    id: str
    summary: str
    keywords: list[str]
    heat: float
    visits: int
    interactions: int
    created_at: datetime
    last_accessed: datetime
    pages: list[PageView]
    hidden_pages: int = Field(0, description="pages above the caller's clearance, left out")


class SystemView(_Out):
    """A system-memory entry without its vector."""

    id: str
    content: str
    importance: float
    source_agent: str
    created_at: datetime


class TiersShowOut(_Out):
    """STM pages, MTM segments with heat, personas and system memory of one agent and user."""

    agent: str
    user: str
    agent_type: str | None
    config: TierConfig
    stm: list[PageView]
    segments: list[SegmentView]
    user_persona: ObjectPersona | None
    objects: list[ObjectPersona]
    agent_persona: AgentPersona | None
    system: list[SystemView]


def _page(page: Any) -> PageView:
    return PageView(
        id=page.id, query=page.query, response=page.response, created_at=page.created_at,
        keywords=list(page.keywords), thread=page.thread, sensitivity=page.sensitivity, analyzed=page.analyzed,
    )  # fmt: skip


def _tiers_show(mem: Memory, a: TiersShowIn, call: Call) -> TiersShowOut:
    snap = mem.tiers.show(agent=a.agent, user=a.user, namespace=call.namespace)
    level = SENSITIVITY_LEVELS[a.clearance]

    def ok(page: Any) -> bool:
        return SENSITIVITY_LEVELS[page.sensitivity] <= level

    segments = [
        SegmentView(
            id=s.id,
            summary=s.summary,
            keywords=list(s.keywords),
            heat=heat,
            visits=s.visits,
            interactions=s.interactions,
            created_at=s.created_at,
            last_accessed=s.last_accessed,
            pages=[_page(p) for p in s.pages if ok(p)],
            hidden_pages=sum(1 for p in s.pages if not ok(p)),
        )  # fmt: skip
        for s, heat in sorted(snap.segments, key=lambda sh: -sh[1])
    ]
    system = [
        SystemView(
            id=e.id, content=e.content, importance=e.importance, source_agent=e.source_agent, created_at=e.created_at
        )  # fmt: skip
        for e in snap.system
    ]
    return TiersShowOut(
        agent=snap.agent, user=snap.user, agent_type=snap.agent_type, config=snap.config,
        stm=[_page(p) for p in snap.stm if ok(p)], segments=segments, user_persona=snap.user_persona,
        objects=list(snap.objects), agent_persona=snap.agent_persona, system=system,
    )  # fmt: skip


register(Operation(
    name="block_history",
    description="Every change of a working-memory block, oldest first (before and after).",
    params=BlockHistoryIn, result=BlockHistoryOut, run=_block_history, mcp=False, tags=_TAGS,
    rest=Rest("GET", "/blocks/{label}/history"),
))  # fmt: skip
register(Operation(
    name="tier_owners",
    description="The (agent, user) pairs that have short- or mid-term memory pages.",
    params=m.NoArgs, result=TierOwnersOut, run=_tier_owners, mcp=False, tags=_TAGS,
    rest=Rest("GET", "/tiers/owners"),
))  # fmt: skip
register(Operation(
    name="tiers_show",
    description="Every tier of an agent and user: STM pages, MTM segments with their heat, personas, system "
                "memory (pages above the caller's clearance left out). Reading does not count as a visit.",
    params=TiersShowIn, result=TiersShowOut, run=_tiers_show, mcp=False, tags=_TAGS,
    rest=Rest("GET", "/tiers/snapshot"),
))  # fmt: skip


# -- prompt versions with their rewards ----------------------------------------------------------


class PromptRow(_Out):
    """A prompt version and its measured performance."""

    version: PromptVersion
    stats: VersionStats | None


class PromptsOut(_Out):
    """Every prompt version of the namespace with its reward statistics."""

    prompts: list[PromptRow]


def _prompts(mem: Memory, a: m.NoArgs, call: Call) -> PromptsOut:
    rows: list[PromptRow] = []
    for active in mem.prompts.list(namespace=call.namespace):
        stats = {s.version: s for s in mem.prompts.stats(active.name, namespace=call.namespace)}
        for v in mem.prompts.versions(active.name, namespace=call.namespace):
            rows.append(PromptRow(version=v, stats=stats.get(v.version)))
    return PromptsOut(prompts=rows)


register(Operation(
    name="prompt_versions",
    description="Every prompt version of the namespace with its measured reward (mean and confidence interval).",
    params=m.NoArgs, result=PromptsOut, run=_prompts, mcp=False, tags=_TAGS,
    rest=Rest("GET", "/prompts"),
))  # fmt: skip
