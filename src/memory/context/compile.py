"""compile: PromptIR → chat messages under a token budget, with a trace.

Pure logic, no I/O. The steps (seed 000 "compress"):

1. count every section (exactly, see :mod:`memory.context.tokens`);
2. drop duplicates by content hash, keeping the most valuable copy;
3. value = priority weight × relevance × recency factor
   (``recency_decay ** hours_old``, floored at 0.05);
4. critical sections and the observation are always placed;
5. the rest get a share of what is left by the budget's allocation (fixed
   ratios per group, relevance-weighted, or information-weighted) and are
   placed best value first: whole, shrunk toward ``min_tokens`` (truncated or
   summarised), or dropped when even ``min_tokens`` does not fit;
6. space left over regrows shrunk sections and admits dropped ones, best first;
7. the prompt is rendered and counted exactly; while it is over the usable
   budget the lowest-value section is shrunk or dropped. The result never
   exceeds ``budget.usable`` (a property test checks it).

Request size = tokens of the rendered system text + observation + tool
definitions (JSON) + 3 per message + 3 reply priming (OpenAI's documented
chat overhead).
"""

from __future__ import annotations

import json
import math
import time
import zlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from memory.context.summarise import Summariser, shrink_text
from memory.context.tokens import TokenCounter, counter_for
from memory.context.types import (
    PRIORITY_WEIGHTS,
    PromptIR,
    Section,
    SectionTrace,
    TokenBudget,
    ToolDef,
    Trace,
)
from memory.errors import ContextBudgetError

__all__ = [
    "CompiledPrompt", "compile_prompt", "compress", "compress_traced", "render_sections", "section_value",
    "MESSAGE_OVERHEAD", "REPLY_PRIMING",
]  # fmt: skip

MESSAGE_OVERHEAD = 3
REPLY_PRIMING = 3
_ORDER = {"hierarchical": 0, "constraint": 1, "additive": 2, "contextual": 3}
_INSTRUCTIONS = ("hierarchical", "constraint")


class CompiledPrompt(BaseModel):
    """The compiled prompt: the context text, chat messages in two shapes, kept tools, the trace."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    system: str
    observation: str
    tools: tuple[ToolDef, ...]
    sections: tuple[Section, ...]
    trace: Trace

    @property
    def messages(self) -> list[dict[str, Any]]:
        """OpenAI chat messages: the system context (if any) then the user observation."""
        out: list[dict[str, Any]] = []
        if self.system:
            out.append({"role": "system", "content": self.system})
        if self.observation:
            out.append({"role": "user", "content": self.observation})
        return out

    def openai(self) -> dict[str, Any]:
        """Request fields for /v1/chat/completions: ``messages`` and (when any) ``tools``."""
        body: dict[str, Any] = {"messages": self.messages}
        if self.tools:
            body["tools"] = [tool.openai() for tool in self.tools]
        return body

    def anthropic(self) -> dict[str, Any]:
        """Request fields for Anthropic's Messages API: ``system``, ``messages`` and (when any) ``tools``."""
        body: dict[str, Any] = {
            "system": self.system,
            "messages": [{"role": "user", "content": self.observation}] if self.observation else [],
        }
        if self.tools:
            body["tools"] = [tool.anthropic() for tool in self.tools]
        return body


def section_value(section: Section, now: datetime, decay: float) -> float:
    """priority weight × relevance (None counts 1) × recency factor (``decay ** hours``, floor 0.05)."""
    relevance = 1.0 if section.relevance is None else section.relevance
    recency = 1.0
    if section.recency is not None:
        hours = max((now - section.recency).total_seconds(), 0.0) / 3600.0
        recency = max(decay**hours, 0.05) if decay < 1.0 else 1.0
    return PRIORITY_WEIGHTS[section.priority] * relevance * recency


def _normal(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


def render_sections(sections: Sequence[Section]) -> str:
    """Sections in composition order (hierarchical, constraint, additive, contextual), then given order.

    Consecutive sections with one label share a ``## label`` heading; blocks are
    separated by a blank line.
    """
    return _render([(s.composition, s.label, s.content) for s in sections])


def _render(parts: Sequence[tuple[str, str, str]]) -> str:
    """Render (composition, label, content) triples as :func:`render_sections` does."""
    ordered = sorted(range(len(parts)), key=lambda i: (_ORDER[parts[i][0]], i))
    blocks: list[tuple[str, list[str]]] = []
    for i in ordered:
        _, label, content = parts[i]
        text = _normal(content)
        if not text:
            continue
        if blocks and blocks[-1][0] == label:
            blocks[-1][1].append(text)
        else:
            blocks.append((label, [text]))
    return "\n\n".join((f"## {label}\n" if label else "") + "\n".join(texts) for label, texts in blocks)


class _Slot:
    """Working state of one section during compile."""

    __slots__ = ("section", "index", "tokens", "value", "weight", "size", "status", "reason", "content")

    def __init__(self, section: Section, index: int, tokens: int, value: float) -> None:
        self.section = section
        self.index = index
        self.tokens = tokens
        self.value = value
        self.weight = value
        self.size = 0
        self.status = "dropped"
        self.reason = ""
        self.content = ""

    @property
    def minimum(self) -> int:
        if self.section.shrink == "none" or self.section.min_tokens is None:
            return self.tokens
        return min(self.section.min_tokens, self.tokens)


def _heading_cost(label: str, counter: TokenCounter) -> int:
    # heading line plus the blank line before the next block: an upper bound on what a label adds
    return counter.count(f"## {label}\n\n\n") if label else counter.count("\n\n")


def compile_prompt(
    ir: PromptIR,
    *,
    counter: TokenCounter | None = None,
    include_observation: bool = True,
    summariser: Summariser | None = None,
    now: datetime | None = None,
) -> CompiledPrompt:
    """Compile ``ir`` under ``ir.meta.budget``; returns messages, kept tools and a trace.

    The budget fitting is :func:`compress` (steps 1-7 above); compile renders what it kept.
    With ``include_observation=False`` the budget covers the context text alone
    (no messages, no overhead): the form :meth:`Memory.get_memory_context` returns.
    Raises ContextBudgetError when the usable budget cannot hold even the message overhead.
    """
    _, compiled = compress_traced(
        ir.meta.budget, ir, counter=counter, include_observation=include_observation, summariser=summariser, now=now
    )
    return compiled


def compress(
    budget: TokenBudget,
    ir: PromptIR,
    *,
    counter: TokenCounter | None = None,
    include_observation: bool = True,
    summariser: Summariser | None = None,
    now: datetime | None = None,
) -> PromptIR:
    """Fit ``ir`` into ``budget`` (seed 000 ``compress :: TokenBudget -> PromptIR -> IO PromptIR``).

    Returns an IR holding only the sections and tools that fit — shrunk ones with
    their shortened content and token counts — with ``meta.budget = budget``,
    ``meta.total_tokens`` (the request size), ``meta.compression_ratio`` (context
    tokens kept / hydrated) and ``meta.estimated_entropy`` set. Compiling the
    result under the same budget cuts nothing more. Raises ContextBudgetError.
    """
    compressed, _ = compress_traced(
        budget, ir, counter=counter, include_observation=include_observation, summariser=summariser, now=now
    )
    return compressed


def compress_traced(
    budget: TokenBudget,
    ir: PromptIR,
    *,
    counter: TokenCounter | None = None,
    include_observation: bool = True,
    summariser: Summariser | None = None,
    now: datetime | None = None,
) -> tuple[PromptIR, CompiledPrompt]:
    """:func:`compress` and the rendered prompt with its trace, from one fitting pass."""
    from memory.context.entropy import estimated_entropy

    source = (
        ir
        if ir.meta.budget == budget
        else ir.model_copy(update={"meta": ir.meta.model_copy(update={"budget": budget})})
    )
    compiled = _fit(source, counter=counter, include_observation=include_observation, summariser=summariser, now=now)
    entropy = estimated_entropy(compiled.system, compiled.observation)
    compiled = compiled.model_copy(update={"trace": compiled.trace.model_copy(update={"estimated_entropy": entropy})})
    meta = source.meta.model_copy(
        update={
            "total_tokens": compiled.trace.tokens["total"],
            "compression_ratio": compiled.trace.compression_ratio,
            "estimated_entropy": entropy,
        }
    )
    compressed = source.model_copy(update={"sections": compiled.sections, "tools": compiled.tools, "meta": meta})
    return compressed, compiled


def _fit(
    ir: PromptIR,
    *,
    counter: TokenCounter | None,
    include_observation: bool,
    summariser: Summariser | None,
    now: datetime | None,
) -> CompiledPrompt:
    """Steps 1-7 of the module doc: the budget fitting shared by :func:`compress` and :func:`compile_prompt`."""
    started = time.perf_counter()
    counter = counter or counter_for(None)
    budget = ir.meta.budget
    usable = budget.usable
    clock = now or ir.meta.timestamp
    decay = ir.meta.strategy.recency_decay

    overhead = (2 * MESSAGE_OVERHEAD + REPLY_PRIMING) if include_observation else 0
    if usable < overhead + 1:
        raise ContextBudgetError(
            f"a budget of {budget.total} tokens (usable {usable}) cannot hold a chat request "
            f"({overhead} tokens of message overhead alone); raise the budget"
        )
    observation = _normal(ir.observation) if include_observation else ""
    obs_tokens = counter.count(observation)
    obs_trace: list[SectionTrace] = []
    if obs_tokens > usable - overhead:
        cut = shrink_text(observation, usable - overhead, "truncate_start", counter)
        obs_trace.append(
            SectionTrace(
                id="observation", label="observation", source="observation", status="shrunk",
                tokens_before=obs_tokens, tokens_after=counter.count(cut), value=math.inf,
                reason="the observation alone was over the budget; its start was cut",
            )
        )  # fmt: skip
        observation = cut
        obs_tokens = counter.count(cut)
    room = usable - overhead - obs_tokens

    # 1-3: count, value, dedup
    slots: list[_Slot] = []
    for index, section in enumerate(ir.sections):
        content = _normal(section.content)
        tokens = counter.count(content)  # always recounted: a given `tokens` may come from another tokenizer
        slot = _Slot(section, index, tokens, section_value(section, clock, decay))
        slot.content = content
        slots.append(slot)
    tokens_in = sum(s.tokens for s in slots)
    by_value = sorted(slots, key=lambda s: (s.section.priority != "critical", -s.value, s.index))
    seen: dict[str, _Slot] = {}
    live: list[_Slot] = []
    for slot in by_value:
        key = slot.section.content_hash or ""
        if not slot.content:
            slot.status, slot.reason = "dropped", "empty"
        elif key in seen:
            slot.status, slot.reason = "duplicate", f"same content as {seen[key].section.id}"
        else:
            seen[key] = slot
            live.append(slot)

    headings: dict[str, int] = {}
    placed: set[str] = set()  # labels whose heading is already paid for

    def heading_of(slot: _Slot) -> int:
        """What placing this section adds besides its content: its heading once per label, else a line break."""
        label = slot.section.label
        if label in placed:
            return 1
        if label not in headings:
            headings[label] = _heading_cost(label, counter)
        return headings[label]

    def cost(slot: _Slot, size: int) -> int:
        extra = heading_of(slot)
        placed.add(slot.section.label)
        return size + extra

    # 4: critical sections
    critical = [s for s in live if s.section.priority == "critical"]
    others = [s for s in live if s.section.priority != "critical"]
    for slot in critical:
        slot.size, slot.status, slot.reason = slot.tokens, "kept", "critical"
        room -= cost(slot, slot.size)
    for slot in sorted(critical, key=lambda s: (s.value, -s.index)):  # over budget: shrink critical, least first
        if room >= 0:
            break
        target = max(slot.size + room, 0)
        room += slot.size
        if target < 1:
            slot.size, slot.status = 0, "dropped"
            slot.reason = "critical, but the budget cannot hold it"
            room += _heading_cost(slot.section.label, counter)
        else:
            slot.size, slot.status, slot.reason = target, "shrunk", "critical, cut to fit the budget"
            room -= slot.size

    # tools: best priority first, whole or not at all
    tool_trace: list[SectionTrace] = []
    kept_tools: list[ToolDef] = []
    for tool in sorted(ir.tools, key=lambda t: -PRIORITY_WEIGHTS[t.priority]):
        size = counter.count(json.dumps(tool.openai(), separators=(",", ":")))
        fits = include_observation and size <= room
        if fits:
            kept_tools.append(tool)
            room -= size
        tool_trace.append(
            SectionTrace(
                id=tool.name, label="tool", source="tool", status="kept" if fits else "dropped",
                tokens_before=size, tokens_after=size if fits else 0, value=PRIORITY_WEIGHTS[tool.priority],
                reason="tool definition" if fits else (
                    "tools are not part of a context-only compile" if not include_observation
                    else f"needs {size} tokens, {max(room, 0)} left"
                ),
            )
        )  # fmt: skip

    # 5: shares by allocation, then place best value first
    pool = max(room, 0)
    cap: dict[int, float] = {}
    group_left: dict[str, float] = {}
    if budget.allocation == "fixed":
        ratios = budget.ratios
        used_instr = sum(cost(s, s.size) for s in critical if s.section.composition in _INSTRUCTIONS)
        used_ctx = sum(cost(s, s.size) for s in critical if s.section.composition not in _INSTRUCTIONS)
        group_left = {
            "instructions": max(ratios.system * usable - used_instr, 0.0),
            "context": max(ratios.context * usable - used_ctx, 0.0),
        }
    else:
        for slot in others:
            if budget.allocation == "information":
                slot.weight = (
                    float(len(zlib.compress(slot.content.encode("utf-8")))) * PRIORITY_WEIGHTS[slot.section.priority]
                )
        total_weight = sum(s.weight for s in others) or 1.0
        for slot in others:
            cap[slot.index] = pool * slot.weight / total_weight
    needed = sum(cost(s, s.tokens) for s in others)
    everything_fits = needed <= pool

    def group(slot: _Slot) -> str:
        return "instructions" if slot.section.composition in _INSTRUCTIONS else "context"

    for slot in others:  # already in value order
        left = room
        if group_left:
            left = min(left, int(group_left[group(slot)]))
        target = slot.tokens
        if not everything_fits and slot.index in cap:
            target = min(slot.tokens, max(int(cap[slot.index]) - heading_of(slot), slot.minimum))
        heading = heading_of(slot)
        if target + heading <= left:
            slot.size = target
        elif slot.minimum < slot.tokens and left - heading >= slot.minimum:
            slot.size = left - heading
        else:
            slot.reason = f"over budget: needs at least {slot.minimum + heading} tokens, {max(left, 0)} left"
            continue
        slot.status = "kept" if slot.size >= slot.tokens else "shrunk"
        room -= cost(slot, slot.size)
        if group_left:
            group_left[group(slot)] -= cost(slot, slot.size)

    # 6: regrow shrunk sections and admit dropped ones with what is left, best first
    for slot in others:
        if room <= 0:
            break
        heading = heading_of(slot)
        if slot.status == "shrunk":
            grow = min(slot.tokens - slot.size, room)
            slot.size += grow
            room -= grow
            slot.status = "kept" if slot.size >= slot.tokens else "shrunk"
        elif slot.status == "dropped" and slot.reason.startswith("over budget"):
            if slot.tokens + heading <= room:
                slot.size, slot.status = slot.tokens, "kept"
            elif slot.minimum < slot.tokens and room - heading >= slot.minimum:
                slot.size, slot.status = room - heading, "shrunk"
            else:
                continue
            room -= cost(slot, slot.size)

    query = " ".join(filter(None, [ir.observation]))
    for slot in live:
        if slot.status == "shrunk":
            mode = slot.section.shrink if slot.section.shrink != "none" else "truncate"
            slot.content = shrink_text(slot.content, slot.size, mode, counter, query=query, summariser=summariser)
            if not slot.reason:
                slot.reason = f"{'summarised' if mode == 'summarise' else 'truncated'} to fit its share"
        elif slot.status == "kept" and not slot.reason:
            slot.reason = "fits"

    # 7: render, count exactly, cut the least valuable until it fits
    tool_tokens = sum(t.tokens_after for t in tool_trace)
    order_cut = sorted(live, key=lambda s: (s.section.priority == "critical", s.value, -s.index))
    while True:
        kept = sorted((s for s in live if s.status in ("kept", "shrunk") and s.content), key=lambda s: s.index)
        system = _render([(s.section.composition, s.section.label, s.content) for s in kept])
        system_tokens = counter.count(system)
        messages = (1 if system else 0) + (1 if observation else 0)
        extra = (MESSAGE_OVERHEAD * messages + REPLY_PRIMING) if include_observation else 0
        total = system_tokens + obs_tokens + tool_tokens + extra
        excess = total - usable
        if excess <= 0:
            break
        victim = next((s for s in order_cut if s.status in ("kept", "shrunk") and s.content), None)
        if victim is None:  # pragma: no cover - overhead was checked up front
            raise ContextBudgetError(f"cannot fit the prompt into {usable} tokens")
        current = counter.count(victim.content)
        floor = victim.minimum if victim.section.priority != "critical" else 1
        shrinkable = victim.section.shrink != "none" or victim.section.priority == "critical"
        if shrinkable and current - excess >= max(floor, 1):
            mode = victim.section.shrink if victim.section.shrink != "none" else "truncate"
            victim.content = shrink_text(
                victim.content, current - excess, mode, counter, query=query, summariser=summariser
            )
            victim.status = "shrunk"
            victim.reason = "cut after rendering to fit the budget"
        else:
            victim.status, victim.content = "dropped", ""
            victim.reason = "dropped after rendering to fit the budget"

    traces = []
    for slot in sorted(slots, key=lambda s: s.index):
        after = counter.count(slot.content) if slot.status in ("kept", "shrunk") else 0
        traces.append(
            SectionTrace(
                id=slot.section.id, label=slot.section.label, source=slot.section.source.kind,
                status=slot.status, tokens_before=slot.tokens, tokens_after=after,
                value=round(slot.value, 6), reason=slot.reason,
            )
        )  # fmt: skip
    kept_sections = tuple(
        s.section
        if s.content == s.section.content and s.section.tokens == s.tokens
        else s.section.model_copy(update={"content": s.content, "tokens": counter.count(s.content)})
        for s in sorted(live, key=lambda s: s.index)
        if s.status in ("kept", "shrunk") and s.content
    )
    kept_tokens = sum(t.tokens_after for t in traces)
    trace = Trace(
        sections=tuple(obs_trace + traces),
        tools=tuple(tool_trace),
        sources=ir.sources,
        budget_total=budget.total,
        budget_usable=usable,
        allocation=budget.allocation,
        tokens={
            "system": system_tokens,
            "observation": obs_tokens,
            "tools": tool_tokens,
            "overhead": extra,
            "total": total,
        },
        tokens_in=tokens_in,
        compression_ratio=round(kept_tokens / tokens_in, 6) if tokens_in else 1.0,
        tokenizer=counter.name,
        tokenizer_exact=counter.exact,
        timings_ms={"compile": round((time.perf_counter() - started) * 1000.0, 3)},
    )
    return CompiledPrompt(
        system=system, observation=observation, tools=tuple(kept_tools), sections=kept_sections, trace=trace
    )
