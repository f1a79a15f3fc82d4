"""Output models the LLM tasks must answer with (validated; their JSON schemas go to the server)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "EntityOut",
    "RelationOut",
    "ExtractionOut",
    "DecisionOut",
    "FactOut",
    "FactsOut",
    "Action",
    "ACTIONS",
    "PromptRefinementOut",
    "ReflectionOut",
    "json_schema",
]

Action = Literal["ADD", "UPDATE", "SUPERSEDE", "DELETE", "NOOP"]
ACTIONS: tuple[str, ...] = ("ADD", "UPDATE", "SUPERSEDE", "DELETE", "NOOP")


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class EntityOut(_Out):
    """A named thing mentioned in the text."""

    name: str = Field(min_length=1, max_length=200)
    type: str = Field("thing", min_length=1, max_length=40, description="person, place, organisation, date, thing")


class RelationOut(_Out):
    """A (subject, predicate, object) statement."""

    subject: str = Field(min_length=1, max_length=200)
    predicate: str = Field(min_length=1, max_length=100)
    object: str = Field(min_length=1, max_length=200)


class ExtractionOut(_Out):
    """What a text says: standalone facts, keywords, entities and relations."""

    facts: list[str] = Field(default_factory=list, max_length=50)
    keywords: list[str] = Field(default_factory=list, max_length=30)
    entities: list[EntityOut] = Field(default_factory=list, max_length=50)
    relations: list[RelationOut] = Field(default_factory=list, max_length=50)


class FactOut(_Out):
    """One canonical fact from a message: a third-person statement and its parts."""

    statement: str = Field(min_length=3, max_length=500, description="self-contained, third person, no 'I'/'you'")
    subject: str = Field(min_length=1, max_length=200, description="who or what the fact is about (a name)")
    predicate: str = Field("", max_length=100, description="short verb phrase in lower case, e.g. 'lives in'")
    object: str = Field("", max_length=200, description="the value, e.g. 'Porto'; empty when there is none")
    negated: bool = Field(False, description="true when the message says this is no longer / not true")
    when: str | None = Field(None, max_length=100, description="the time expression as said, e.g. 'last week'")


class FactsOut(_Out):
    """What one message says about the people in it (task ``extract_facts``)."""

    facts: list[FactOut] = Field(default_factory=list, max_length=20)
    entities: list[EntityOut] = Field(default_factory=list, max_length=50)
    correction: str | None = Field(
        None, max_length=200, description="the corrected value when the message corrects the speaker's last fact"
    )


class DecisionOut(_Out):
    """What to do with a new fact given numbered existing memories."""

    action: Action
    target: int | None = Field(None, ge=0, description="index of the existing memory the action applies to")
    merged: str | None = Field(None, max_length=4000, description="merged text for UPDATE")
    reason: str = Field("", max_length=500)


class PromptRefinementOut(_Out):
    """A refined prompt (task ``refine_prompt``) and why it changed."""

    prompt: str = Field(min_length=1, max_length=50_000)
    rationale: str = Field("", max_length=2000)


class ReflectionOut(_Out):
    """Lessons from one conversation (task ``reflect_conversation``)."""

    outcome: Literal["went_well", "went_badly", "mixed"]
    lessons: list[str] = Field(default_factory=list, max_length=5)


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _inline(defs[ref.split("/")[-1]], defs)
        return {k: _inline(v, defs) for k, v in node.items() if k not in ("$defs", "title")}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of ``model`` with ``$ref``s inlined (llama.cpp and Ollama grammars need no refs)."""
    schema = model.model_json_schema()
    inlined: dict[str, Any] = _inline(schema, schema.get("$defs", {}))
    return inlined
