"""compose: combine two PromptIRs by the composition mode of their sections (seed 000).

* hierarchical — hyperpriors: the first IR's come first and stay as they are;
  the second's (new content only) follow, capped at ``high`` priority, so the
  outer prior always outranks the inner one;
* constraint — product of experts: both sets are kept (all must hold); a
  constraint present in both keeps the higher priority;
* additive — mixture: the union; a duplicate keeps the higher relevance;
* contextual — Bayesian updates, in sequence: the first IR's, then the
  second's; a second-IR section with the same id replaces the first's (the
  later observation wins).

Tools are the union by name (the first IR's definition wins); the observation
is the second's (the latest); budget and strategy are the first's (the outer).
"""

from __future__ import annotations

from memory.context.types import PRIORITY_WEIGHTS, PromptIR, Section, SourceNote, ToolDef

__all__ = ["compose"]


def _higher(a: str, b: str) -> str:
    return a if PRIORITY_WEIGHTS[a] >= PRIORITY_WEIGHTS[b] else b


def compose(first: PromptIR, second: PromptIR) -> PromptIR:
    """The IR that holds both priors, combined per composition mode (see the module docs)."""
    out: list[Section] = []
    index: dict[str, int] = {}  # content hash -> position in out
    ids: set[str] = set()

    def unique_id(section: Section) -> Section:
        if section.id not in ids:
            ids.add(section.id)
            return section
        n = 2
        while f"{section.id}~{n}" in ids:
            n += 1
        ids.add(f"{section.id}~{n}")
        return section.model_copy(update={"id": f"{section.id}~{n}"})

    for section in first.sections:
        if section.composition == "contextual":
            continue
        index.setdefault(section.content_hash or "", len(out))
        out.append(unique_id(section))
    for section in second.sections:
        mode = section.composition
        if mode == "contextual":
            continue
        key = section.content_hash or ""
        if key in index:
            existing = out[index[key]]
            if mode == "constraint" and existing.composition == "constraint":
                out[index[key]] = existing.model_copy(update={"priority": _higher(existing.priority, section.priority)})
            elif mode == "additive" and existing.composition == "additive":
                if (section.relevance or 0.0) > (existing.relevance or 0.0):
                    out[index[key]] = existing.model_copy(update={"relevance": section.relevance})
            continue
        if mode == "hierarchical" and PRIORITY_WEIGHTS[section.priority] > PRIORITY_WEIGHTS["high"]:
            section = section.model_copy(update={"priority": "high"})
        index[key] = len(out)
        out.append(unique_id(section))

    contextual: dict[str, Section] = {}
    for section in first.sections:
        if section.composition == "contextual":
            contextual[section.id] = section
    for section in second.sections:
        if section.composition == "contextual":
            contextual.pop(section.id, None)  # re-insert at the end: the later update comes last
            contextual[section.id] = section
    out.extend(unique_id(s) for s in contextual.values())

    tools: dict[str, ToolDef] = {t.name: t for t in first.tools}
    for tool in second.tools:
        tools.setdefault(tool.name, tool)
    notes: tuple[SourceNote, ...] = first.sources + second.sources
    return PromptIR(
        sections=tuple(out),
        tools=tuple(tools.values()),
        observation=second.observation,
        meta=first.meta.model_copy(update={"total_tokens": 0, "compression_ratio": None}),
        sources=notes,
    )
