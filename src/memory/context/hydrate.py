"""hydrate: ContextRequest → PromptIR, from pluggable context sources.

A source is any object with a ``name`` and ``collect(ctx) -> list[Section] |
Skipped`` (:class:`ContextSource`). The built-in ones, in order:

==============  =============================================================
system          the request's system prompt (critical, hierarchical)
goal            the request's goal (a constraint)
state           one section per ``request.state`` key, plus the clock
static          the request's own sections, as given
blocks          working-memory blocks, via ``mem.blocks`` when the store has it
recent          the thread's last turns, via ``mem.messages.recent(thread, n)``
procedures      learned procedures (``procedural`` memories from self-reflection)
recall          long-term memories, via :meth:`Memory.recall`
history         semantic hits over past messages, via ``mem.messages.search``
graph           facts about entities named in the request, via ``mem.graph``
tiers           MemoryOS tier results, via ``mem.tiers.retrieve``
==============  =============================================================

Sources that need a part of the store that is not there (``mem.blocks``,
``mem.messages``, ``mem.graph``, ``mem.tiers``) are skipped with a note in the
trace. A source that fails with a storage or provider error is noted as
failed and the others still run; bad input (InvalidInputError) is raised.
Register more with :func:`register_source` or pass ``sources=`` to hydrate.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple, Protocol, runtime_checkable

from memory.context.tokens import TokenCounter, counter_for
from memory.context.types import ContextRequest, PromptIR, PromptMeta, Section, SectionSource, SourceNote
from memory.errors import Error, InvalidInputError
from memory.retrieval.contextual import contextual_query
from memory.types import SENSITIVITY_LEVELS

__all__ = [
    "HydrationContext",
    "Skipped",
    "ContextSource",
    "hydrate",
    "register_source",
    "unregister_source",
    "default_sources",
    "recall_query",
    "entity_mentions",
]

_MAX_QUERY = 4000


class Skipped(NamedTuple):
    """A source had nothing to contribute, and why (shown in the trace)."""

    reason: str


@dataclass(frozen=True)
class HydrationContext:
    """What a source sees: the store, the request, the time and the token counter.

    A source may record the time of its store calls in ``timings`` (ms by name,
    e.g. ``recall``); they end up in the trace.
    """

    memory: Any
    request: ContextRequest
    now: datetime
    counter: TokenCounter
    timings: dict[str, float] = field(default_factory=dict)
    #: ids of messages already in the prompt (the recent turns), so later sources skip them
    seen_messages: set[str] = field(default_factory=set)
    #: the recent turns as ``"speaker: text"`` lines, oldest first (filled by the recent source)
    recent_turns: list[str] = field(default_factory=list)

    def scope(self) -> dict[str, str]:
        """The request's namespace/user/agent as keyword arguments (unset ones left out)."""
        req = self.request
        values = {"namespace": req.namespace, "user": req.user, "agent": req.agent}
        return {k: v for k, v in values.items() if v is not None}

    def visible(self, record: Any) -> bool:
        """False for a record whose ``sensitivity`` is above the request's clearance."""
        level = getattr(record, "sensitivity", "normal") or "normal"
        return SENSITIVITY_LEVELS.get(level, 2) <= SENSITIVITY_LEVELS[self.request.clearance]


@runtime_checkable
class ContextSource(Protocol):
    """Something that turns a request into sections."""

    name: str

    def collect(self, ctx: HydrationContext) -> list[Section] | Skipped:
        """Sections for this request, or Skipped(reason)."""
        ...


def recall_query(request: ContextRequest) -> str:
    """The text semantic sources search with: the observation, then the goal; cut to 4000 characters."""
    text = request.observation if not request.goal else f"{request.observation}\n{request.goal}"
    return text.strip()[:_MAX_QUERY]


def contextual_recall_query(ctx: HydrationContext) -> str:
    """:func:`recall_query`, with the recent turns' names added when it points back to them.

    The turns are the thread's (the recent source) or, for an agent keeping them
    in process, the request's temporal sections; off with
    ``strategy.contextual_recall=False`` (see :mod:`memory.retrieval.contextual`).
    """
    query = recall_query(ctx.request)
    if not ctx.request.strategy.contextual_recall:
        return query
    recent = list(ctx.recent_turns)
    if not recent:
        for section in ctx.request.sections:
            if section.source.kind == "temporal":
                recent.extend(line for line in section.content.splitlines() if line.strip())
    return contextual_query(query, recent)[:_MAX_QUERY]


def _min_tokens(tokens: int, floor: int = 48) -> int | None:
    """A shrink floor for a long text: a quarter of it, at least ``floor``; None for short texts."""
    return None if tokens <= floor else max(tokens // 4, floor)


class SystemSource:
    """The request's system prompt: critical, hierarchical, never shrunk unless nothing else fits."""

    name = "system"

    def collect(self, ctx: HydrationContext) -> list[Section] | Skipped:
        """One section, or Skipped when the request has no system prompt."""
        if not ctx.request.system or not ctx.request.system.strip():
            return Skipped("no system prompt in the request")
        return [
            Section(
                id="system", label="", source=SectionSource(kind="static", name="request.system"),
                content=ctx.request.system, priority="critical", composition="hierarchical", shrink="none",
            )
        ]  # fmt: skip


class GoalSource:
    """The request's goal, as a constraint the answer must serve."""

    name = "goal"

    def collect(self, ctx: HydrationContext) -> list[Section] | Skipped:
        """One section, or Skipped when no goal is given."""
        if not ctx.request.goal:
            return Skipped("no goal in the request")
        return [
            Section(
                id="goal", label="Current goal", source=SectionSource(kind="state", name="goal"),
                content=ctx.request.goal, priority="high", composition="constraint", shrink="truncate",
            )
        ]  # fmt: skip


class StateSource:
    """Runtime state: the clock (strategy.include_time) and one section per ``request.state`` key."""

    name = "state"

    def collect(self, ctx: HydrationContext) -> list[Section] | Skipped:
        """The state sections, or Skipped when there are none."""
        out: list[Section] = []
        if ctx.request.strategy.include_time:
            out.append(
                Section(
                    id="time", label="Current date and time", source=SectionSource(kind="state", name="clock"),
                    content=ctx.now.strftime("%A, %d %B %Y, %H:%M %Z").strip(), priority="high",
                    recency=ctx.now, composition="contextual", shrink="none",
                )
            )  # fmt: skip
        for key, value in ctx.request.state.items():
            if value.strip():
                out.append(
                    Section(
                        id=f"state:{key}", label=key.replace("_", " ").capitalize(),
                        source=SectionSource(kind="state", name=key), content=value, priority="high",
                        recency=ctx.now, composition="contextual", shrink="truncate",
                        min_tokens=_min_tokens(ctx.counter.count(value)),
                    )
                )  # fmt: skip
        return out or Skipped("no state given and the clock is off")


class StaticSource:
    """The caller's own sections (``request.sections``), unchanged."""

    name = "static"

    def collect(self, ctx: HydrationContext) -> list[Section] | Skipped:
        """The request's sections, or Skipped when there are none."""
        return list(ctx.request.sections) or Skipped("no sections in the request")


def _text_of(record: Any) -> str:
    for attr in ("content", "text", "value"):
        value = getattr(record, attr, None)
        if isinstance(value, str):
            return value
    item = getattr(record, "item", None) or getattr(record, "message", None)
    if item is not None:
        return _text_of(item)
    return record if isinstance(record, str) else ""


def _when(record: Any) -> datetime | None:
    for attr in ("created_at", "at", "valid_at", "updated_at"):
        value = getattr(record, attr, None)
        if isinstance(value, datetime):
            return value
    item = getattr(record, "item", None) or getattr(record, "message", None)
    return _when(item) if item is not None else None


class BlocksSource:
    """Working-memory blocks (user_info, goals_and_status, …) of the scope, via ``mem.blocks.all(**scope)``."""

    name = "blocks"

    def collect(self, ctx: HydrationContext) -> list[Section] | Skipped:
        """One contextual section per non-empty block."""
        if not ctx.request.strategy.include_blocks:
            return Skipped("strategy.include_blocks is off")
        blocks = getattr(ctx.memory, "blocks", None)
        read = getattr(blocks, "all", None) or getattr(blocks, "list", None)
        if not callable(read):
            return Skipped("this store has no working-memory blocks (mem.blocks)")
        out = []
        for block in read(**ctx.scope()):
            text = _text_of(block)
            label = str(getattr(block, "label", "block"))
            if not text.strip() or not ctx.visible(block):
                continue
            out.append(
                Section(
                    id=f"block:{label}", label=label.replace("_", " ").capitalize(),
                    source=SectionSource(kind="block", name="blocks", ref=label), content=text, priority="high",
                    recency=_when(block), composition="contextual", shrink="truncate",
                    min_tokens=_min_tokens(ctx.counter.count(text)),
                )
            )  # fmt: skip
        return out or Skipped("no blocks in this scope")


class RecentSource:
    """The thread's last ``strategy.temporal_window`` turns, via ``mem.messages.recent(thread, n)``."""

    name = "recent"

    def collect(self, ctx: HydrationContext) -> list[Section] | Skipped:
        """One temporal section holding the transcript, newest last; shrinks by dropping the oldest lines."""
        req = ctx.request
        if not req.strategy.include_recent or req.strategy.temporal_window == 0:
            return Skipped("strategy.include_recent is off")
        messages = getattr(ctx.memory, "messages", None)
        if messages is None or not callable(getattr(messages, "recent", None)):
            return Skipped("this store has no message log (mem.messages)")
        if req.thread is None:
            return Skipped("no thread in the request")
        kwargs: dict[str, Any] = {"clearance": req.clearance}
        if req.namespace:
            kwargs["namespace"] = req.namespace
        turns = [m for m in messages.recent(req.thread, req.strategy.temporal_window, **kwargs) if ctx.visible(m)]
        if turns and _text_of(turns[-1]).strip() == req.observation.strip():
            turns = turns[:-1]  # the observation itself is sent as the user message
        if not turns:
            return Skipped("the thread has no earlier turns")
        ctx.seen_messages.update(str(getattr(t, "id", "")) for t in turns)
        lines = []
        for turn in turns:
            when = _when(turn)
            who = getattr(turn, "role", None) or getattr(turn, "speaker", None) or "message"
            stamp = f"[{when:%Y-%m-%d %H:%M}] " if when else ""
            lines.append(f"{stamp}{who}: {' '.join(_text_of(turn).split())}")
            ctx.recent_turns.append(f"{who}: {_text_of(turn)}")
        content = "\n".join(lines)
        return [
            Section(
                id=f"recent:{req.thread}", label="Recent conversation",
                source=SectionSource(kind="temporal", name="messages", ref=req.thread), content=content,
                priority="high", recency=_when(turns[-1]), composition="contextual", shrink="truncate_start",
                min_tokens=_min_tokens(ctx.counter.count(content), 64),
            )
        ]  # fmt: skip


_KNOWLEDGE_KINDS = {"fact", "knowledge", "trait", "preference", "profile"}


def _memory_label(kind: str) -> str:
    if kind in _KNOWLEDGE_KINDS:
        return "What you know"
    if kind == "conversation":
        return "Related past messages"
    return "Relevant memories"


class ProceduresSource:
    """Learned procedures: the scope's ``procedural`` memories relevant to the request (self-reflection lessons).

    Runs before ``recall`` and uses the same section ids (``memory:<id>``), so
    a procedural memory appears once, under "Learned procedures", as an
    instruction-like (constraint) section. Skipped cheaply when the scope
    holds no procedural memory.
    """

    name = "procedures"

    def collect(self, ctx: HydrationContext) -> list[Section] | Skipped:
        """One constraint section per relevant procedural memory, best first."""
        strategy = ctx.request.strategy
        if not strategy.include_procedures or strategy.procedure_limit == 0:
            return Skipped("strategy.include_procedures is off")
        if not callable(getattr(ctx.memory, "recall", None)) or not callable(getattr(ctx.memory, "filter", None)):
            return Skipped("this store has no long-term memory (mem.recall)")
        scope = ctx.scope()
        backend = getattr(ctx.memory, "backend", None)
        if backend is not None:  # one cheap count spares the recall when there is nothing to find
            flt = ctx.memory.filter(kinds=["procedural"], clearance=ctx.request.clearance, **scope)
            if backend.count(flt) == 0:
                return Skipped("no procedural memories in this scope")
        hits = ctx.memory.recall(
            recall_query(ctx.request), limit=strategy.procedure_limit, kinds=["procedural"],
            clearance=ctx.request.clearance, **scope,
        )  # fmt: skip
        out = []
        for hit in hits:
            item = hit.item
            if not ctx.visible(item):
                continue
            content = f"- {' '.join(item.content.split())}"
            out.append(
                Section(
                    id=f"memory:{item.id}", label="Learned procedures",
                    source=SectionSource(kind="knowledge", name="procedures", ref=item.id, score=round(hit.score, 6)),
                    content=content, priority="high", relevance=min(max(hit.score, 0.0), 1.0),
                    recency=item.created_at, composition="constraint", shrink="truncate",
                    content_hash=item.content_hash,
                )
            )  # fmt: skip
        return out or Skipped("no procedural memory matched")


class RecallSource:
    """Long-term memories relevant to the request, via :meth:`Memory.recall` (one section per hit)."""

    name = "recall"

    def collect(self, ctx: HydrationContext) -> list[Section] | Skipped:
        """Hits at or above ``strategy.semantic_threshold`` (fused relevance), best first."""
        strategy = ctx.request.strategy
        if not strategy.include_knowledge or strategy.semantic_limit == 0:
            return Skipped("strategy.include_knowledge is off")
        started, cpu = time.perf_counter(), time.thread_time()
        hits = ctx.memory.recall(
            contextual_recall_query(ctx), limit=strategy.semantic_limit, clearance=ctx.request.clearance, **ctx.scope()
        )
        ctx.timings["recall"] = round((time.perf_counter() - started) * 1000.0, 3)
        ctx.timings["recall_cpu"] = round((time.thread_time() - cpu) * 1000.0, 3)
        out = []
        for hit in hits:
            if hit.parts.fusion < strategy.semantic_threshold:
                continue
            item = hit.item
            when = item.valid_from or item.created_at
            content = f"- [{when:%Y-%m-%d}] {' '.join(item.content.split())}"
            tokens = ctx.counter.count(content)
            out.append(
                Section(
                    id=f"memory:{item.id}", label=_memory_label(item.kind),
                    source=SectionSource(
                        kind="knowledge" if item.kind in _KNOWLEDGE_KINDS else "semantic", name="recall",
                        ref=item.id, score=round(hit.score, 6),
                    ),
                    content=content, tokens=tokens, min_tokens=_min_tokens(tokens, 64), priority="medium",
                    relevance=min(max(hit.score, 0.0), 1.0), recency=when, composition="additive",
                    shrink="summarise", content_hash=item.content_hash,  # dedup by the memory's own text
                )
            )  # fmt: skip
        return out or Skipped("no memory passed the threshold" if hits else "no memories matched")


class HistorySource:
    """Semantic hits over past messages, via ``mem.messages.search(query, limit=n, clearance=…, **scope)``."""

    name = "history"

    def collect(self, ctx: HydrationContext) -> list[Section] | Skipped:
        """One additive section per hit."""
        limit = ctx.request.strategy.history_search_limit
        if limit == 0:
            return Skipped("strategy.history_search_limit is 0")
        messages = getattr(ctx.memory, "messages", None)
        if messages is None or not callable(getattr(messages, "search", None)):
            return Skipped("this store has no message log (mem.messages)")
        out = []
        found = messages.search(recall_query(ctx.request), limit=limit, clearance=ctx.request.clearance, **ctx.scope())
        for n, hit in enumerate(found):
            message = getattr(hit, "item", None) or getattr(hit, "message", None) or hit
            if not ctx.visible(message) or str(getattr(message, "id", "")) in ctx.seen_messages:
                continue
            if _text_of(message).strip() == ctx.request.observation.strip():
                continue  # the current message itself
            score = getattr(hit, "score", None)
            when = _when(message)
            who = getattr(message, "role", None) or getattr(message, "speaker", None) or "message"
            stamp = f"[{when:%Y-%m-%d}] " if when else ""
            out.append(
                Section(
                    id=f"message:{getattr(message, 'id', n)}", label="Related past messages",
                    source=SectionSource(kind="semantic", name="messages.search", ref=str(getattr(message, "id", n)),
                                         score=score if isinstance(score, float) else None),
                    content=f"- {stamp}{who}: {' '.join(_text_of(message).split())}", priority="medium",
                    relevance=min(max(score, 0.0), 1.0) if isinstance(score, float) else None, recency=when,
                    composition="additive", shrink="truncate",
                )
            )  # fmt: skip
        return out or Skipped("no past messages matched")


_ENTITY = re.compile(r"\b[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)*")
_NOT_ENTITIES = frozenset("I What Who Where When Why How Which Did Does Do Is Are Was Were Can Could The A An".split())


def entity_mentions(text: str, limit: int = 5) -> list[str]:
    """Capitalised spans of ``text`` that may name entities (question words left out), first ``limit``."""
    found: list[str] = []
    for match in _ENTITY.findall(text):
        words = [w for w in match.split() if w not in _NOT_ENTITIES]
        name = " ".join(words).removesuffix("'s")
        if name and name not in found:
            found.append(name)
    return found[:limit]


class GraphSource:
    """Facts about entities named in the request, via ``mem.graph.facts_about(name)``."""

    name = "graph"

    def collect(self, ctx: HydrationContext) -> list[Section] | Skipped:
        """One additive section per fact (relation text), deduplicated."""
        if not ctx.request.strategy.include_graph:
            return Skipped("strategy.include_graph is off")
        graph = ctx.memory.graph
        if graph is None or not callable(getattr(graph, "facts_about", None)):
            return Skipped("this store has no knowledge graph (mem.graph)")
        names = entity_mentions(recall_query(ctx.request))
        if not names:
            return Skipped("no entity names in the request")
        out: list[Section] = []
        seen: set[str] = set()
        for name in names:
            for fact in graph.facts_about(name, clearance=ctx.request.clearance, **ctx.scope()):
                text = _text_of(fact)
                if not text.strip() or text in seen or not ctx.visible(fact):
                    continue
                seen.add(text)
                out.append(
                    Section(
                        id=f"fact:{getattr(fact, 'id', len(out))}", label="Known facts",
                        source=SectionSource(kind="graph", name="graph", ref=str(getattr(fact, "id", name))),
                        content=f"- {text}", priority="medium", relevance=0.7, recency=_when(fact),
                        composition="additive", shrink="truncate",
                    )
                )  # fmt: skip
        return out or Skipped(f"no facts about {', '.join(names)}")


class TiersSource:
    """MemoryOS tier results (STM pages, MTM segments, personas), via ``mem.tiers.retrieve(query, **scope)``."""

    name = "tiers"

    def collect(self, ctx: HydrationContext) -> list[Section] | Skipped:
        """One section per returned record; its ``label`` attribute (if any) is the heading."""
        if not ctx.request.strategy.include_tiers:
            return Skipped("strategy.include_tiers is off")
        tiers = ctx.memory.tiers
        if tiers is None or not callable(getattr(tiers, "retrieve", None)):
            return Skipped("this store has no memory tiers (mem.tiers)")
        scope = ctx.scope()
        if "agent" not in scope or "user" not in scope:
            return Skipped("memory tiers are per agent and user: the request names no agent or no user")
        if ctx.memory.backend.tiers is None:
            return Skipped("this store has no memory tiers (backend.tiers)")
        result = tiers.retrieve(recall_query(ctx.request), clearance=ctx.request.clearance, **scope)
        records = result.records() if callable(getattr(result, "records", None)) else result
        out = []
        for n, record in enumerate(records):
            text = _text_of(record)
            if not text.strip() or not ctx.visible(record):
                continue
            score = getattr(record, "score", None)
            out.append(
                Section(
                    id=f"tier:{getattr(record, 'id', n)}", label=str(getattr(record, "label", "From memory tiers")),
                    source=SectionSource(kind="tier", name=str(getattr(record, "tier", "tiers"))), content=text,
                    priority="medium", relevance=min(max(score, 0.0), 1.0) if isinstance(score, float) else None,
                    recency=_when(record), composition="additive", shrink="summarise",
                    min_tokens=_min_tokens(ctx.counter.count(text)),
                )
            )  # fmt: skip
        return out or Skipped("the tiers returned nothing")


_REGISTRY: dict[str, ContextSource] = {}
_LOCK = threading.Lock()
for _source in (
    SystemSource(), GoalSource(), StateSource(), StaticSource(), BlocksSource(), RecentSource(),
    ProceduresSource(), RecallSource(), HistorySource(), GraphSource(), TiersSource(),
):  # fmt: skip
    _REGISTRY[_source.name] = _source


def register_source(source: ContextSource, *, replace: bool = False) -> None:
    """Add a source to the default set (run after the built-ins). Raises InvalidInputError on a name clash."""
    if not isinstance(source, ContextSource):
        raise InvalidInputError("a context source needs a `name` and a `collect(ctx)` method")
    with _LOCK:
        if source.name in _REGISTRY and not replace:
            raise InvalidInputError(f"a context source named {source.name!r} exists; pass replace=True")
        _REGISTRY[source.name] = source


def unregister_source(name: str) -> None:
    """Remove a source from the default set. Raises InvalidInputError for an unknown name."""
    with _LOCK:
        if _REGISTRY.pop(name, None) is None:
            raise InvalidInputError(f"no context source named {name!r}")


def default_sources() -> list[ContextSource]:
    """The registered sources, in order."""
    with _LOCK:
        return list(_REGISTRY.values())


def hydrate(
    memory: Any,
    request: ContextRequest,
    *,
    sources: Sequence[ContextSource] | None = None,
    now: datetime | None = None,
    counter: TokenCounter | None = None,
) -> PromptIR:
    """Run the sources for ``request`` and collect their sections into a PromptIR.

    Every source gets a note (used, skipped with the reason, failed with the
    error, and its time in ms). Raises InvalidInputError for bad input; other
    library errors inside a source are noted and the rest still run.
    """
    if not isinstance(request, ContextRequest):
        raise InvalidInputError(f"hydrate needs a ContextRequest, got {type(request).__name__}")
    clock = now or (memory.now() if callable(getattr(memory, "now", None)) else datetime.now(UTC))
    counter = counter or counter_for(request.model)
    ctx = HydrationContext(memory=memory, request=request, now=clock, counter=counter)
    sections: list[Section] = []
    notes: list[SourceNote] = []
    ids: set[str] = set()
    for source in sources if sources is not None else default_sources():
        started = time.perf_counter()
        try:
            result = source.collect(ctx)
        except InvalidInputError:
            raise
        except Error as exc:
            ms = (time.perf_counter() - started) * 1000.0
            notes.append(SourceNote(source=source.name, status="failed", ms=round(ms, 3), note=str(exc)))
            continue
        ms = round((time.perf_counter() - started) * 1000.0, 3)
        if isinstance(result, Skipped):
            notes.append(SourceNote(source=source.name, status="skipped", ms=ms, note=result.reason))
            continue
        added = 0
        for section in _as_sections(result, source.name):
            if section.id in ids:
                continue
            ids.add(section.id)
            if section.tokens is None:
                section = section.model_copy(update={"tokens": counter.count(section.content)})
            sections.append(section)
            added += 1
        notes.append(SourceNote(source=source.name, status="used", sections=added, ms=ms))
    total = sum(s.tokens or 0 for s in sections)
    meta = PromptMeta(
        total_tokens=total, budget=request.budget, strategy=request.strategy, timestamp=clock, tokenizer=counter.name
    )
    return PromptIR(sections=tuple(sections), tools=request.tools, observation=request.observation, meta=meta,
                    sources=tuple(notes), timings_ms=dict(ctx.timings))  # fmt: skip


def _as_sections(result: Iterable[Any], name: str) -> list[Section]:
    out = list(result)
    for section in out:
        if not isinstance(section, Section):
            raise InvalidInputError(f"context source {name!r} returned a {type(section).__name__}, not a Section")
    return out
