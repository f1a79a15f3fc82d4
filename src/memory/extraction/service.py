"""The extraction and decision services: plain functions over an :class:`~memory.llms.LLM`.

:func:`extract` is what ``remember(..., extract=True)``, ``memory extract``
and the messages pipeline call: it asks the LLM (the heuristic provider when
none is given) for facts, keywords, entities and relations, and cleans the
answer (trimmed, de-duplicated, relations whose ends are empty dropped).
:func:`decide` compares a new fact with its near neighbours.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memory.extraction.decide import Neighbour
from memory.extraction.heuristic import normalise_name
from memory.llms.base import LLM, Usage
from memory.llms.heuristic import HeuristicLLM
from memory.llms.prompts import structured
from memory.llms.schemas import DecisionOut, EntityOut, ExtractionOut, RelationOut

__all__ = ["Extraction", "Decision", "extract", "decide", "clean_extraction"]


@dataclass(frozen=True)
class Extraction:
    """What a text says, who said so (model, prompt version) and what it cost."""

    facts: tuple[str, ...]
    keywords: tuple[str, ...]
    entities: tuple[EntityOut, ...]
    relations: tuple[RelationOut, ...]
    model: str
    prompt_version: str
    usage: Usage

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "facts": list(self.facts),
            "keywords": list(self.keywords),
            "entities": [e.model_dump() for e in self.entities],
            "relations": [r.model_dump() for r in self.relations],
            "model": self.model,
            "prompt_version": self.prompt_version,
            "usage": self.usage.model_dump(),
        }


@dataclass(frozen=True)
class Decision:
    """What a new fact does: action, the neighbour it applies to, merged text, reason, who decided."""

    action: str
    target_id: str | None
    merged: str | None
    reason: str
    model: str
    usage: Usage


def clean_extraction(out: ExtractionOut) -> ExtractionOut:
    """Trim and de-duplicate an extraction; drop empty names and relations with empty ends."""
    facts = list(dict.fromkeys(f.strip() for f in out.facts if f and f.strip()))
    keywords = list(dict.fromkeys(k.strip().lower() for k in out.keywords if k and k.strip()))
    entities: dict[str, EntityOut] = {}
    for entity in out.entities:
        key = normalise_name(entity.name)
        if key and key not in entities:
            entities[key] = EntityOut(name=entity.name.strip(), type=entity.type.strip().lower() or "thing")
    relations: dict[tuple[str, str, str], RelationOut] = {}
    for rel in out.relations:
        s, p, o = normalise_name(rel.subject), " ".join(rel.predicate.lower().split()), normalise_name(rel.object)
        if s and p and o and (s, p, o) not in relations:
            relations[(s, p, o)] = RelationOut(subject=rel.subject.strip(), predicate=p, object=rel.object.strip())
    return ExtractionOut(
        facts=facts, keywords=keywords[:30], entities=list(entities.values()), relations=list(relations.values())
    )


def extract(
    text: str, *, llm: LLM | None = None, known_entities: Sequence[str] = (), speaker: str | None = None
) -> Extraction:
    """Facts, keywords, entities and relations of ``text``, by ``llm`` (default: the heuristic provider).

    Raises LLMError / LLMOutputError when a model provider fails; the
    heuristic provider does not fail on text.
    """
    model = llm or HeuristicLLM()
    inputs = {"text": text, "known_entities": list(known_entities)[:50], "speaker": speaker}
    result = structured(model, "extract", inputs, ExtractionOut)
    out = clean_extraction(result.output)
    return Extraction(
        facts=tuple(out.facts), keywords=tuple(out.keywords), entities=tuple(out.entities),
        relations=tuple(out.relations), model=result.model, prompt_version=result.prompt_version, usage=result.usage,
    )  # fmt: skip


def decide(
    fact: str, neighbours: Sequence[Neighbour], *, llm: LLM | None = None, speaker: str | None = None
) -> Decision:
    """What ``fact`` does to ``neighbours`` (most similar first), by ``llm`` (default heuristic).

    An answer whose target is missing or out of range for an action that
    needs one becomes ADD (nothing is changed on a bad answer), with the
    reason saying so. Raises LLMError / LLMOutputError when the provider fails.
    """
    model = llm or HeuristicLLM()
    inputs = {
        "fact": fact,
        "speaker": speaker,
        "neighbours": [{"id": n.id, "content": n.content, "similarity": n.similarity} for n in neighbours],
    }
    result = structured(model, "decide", inputs, DecisionOut)
    out = result.output
    if out.action == "ADD":
        return Decision("ADD", None, None, out.reason, result.model, result.usage)
    if out.target is None or not 0 <= out.target < len(neighbours):
        reason = f"model answered {out.action} with target {out.target!r} (of {len(neighbours)}); kept as ADD"
        return Decision("ADD", None, None, reason, result.model, result.usage)
    merged = out.merged if out.action == "UPDATE" and out.merged and out.merged.strip() else None
    if out.action == "UPDATE" and merged is None:
        merged = fact
    return Decision(out.action, neighbours[out.target].id, merged, out.reason, result.model, result.usage)
