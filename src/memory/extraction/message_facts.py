"""Facts of one chat message, by whichever extractor is configured, never lost.

:func:`facts_of_message` is the one entry point the message pipeline and
``memory bench extract`` call:

* with an LLM provider (not ``heuristic``), the ``extract_facts`` task asks for
  a :class:`~memory.llms.schemas.FactsOut` JSON answer (schema-constrained and
  validated by the provider); answers that still say "I"/"you" or are about
  nobody are rejected. A failing or invalid answer falls back to the offline
  extractor for that message, and the result says why (``fallback_reason``);
* offline, spaCy's parse (:mod:`memory.extraction.facts`) when the ``nlp``
  extra is installed, else the pattern rules (sentences with the pronouns
  resolved, relations from :mod:`memory.extraction.heuristic`);
* every fact's ``when`` ("last week") is resolved against the message's time
  by :mod:`memory.temporal` when that module is present.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from typing import Any

from memory.errors import LLMError
from memory.extraction import nlp as nlp_model
from memory.extraction.facts import CanonicalFact, MessageFacts, extract_offline
from memory.extraction.heuristic import entities as pattern_entities
from memory.extraction.heuristic import relations as pattern_relations
from memory.extraction.heuristic import sentences
from memory.extraction.slots import closes_slots, slot_of
from memory.llms.base import LLM
from memory.llms.prompts import structured
from memory.llms.schemas import FactsOut, RelationOut

__all__ = ["facts_of_message", "offline_facts", "from_llm_answer", "resolve_when"]

_PRONOUN = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|myself|you|your|yours)\b")
_QUESTION_OR_GREETING = re.compile(
    r"\?\s*$|^(?:hi|hey|hello|thanks|thank you|bye|good (?:morning|night|evening))\b", re.IGNORECASE
)
_PATTERN_SUBS = (
    (re.compile(r"\bI am\b|\bI'm\b"), "{s} is"),
    (re.compile(r"\bI've\b|\bI have\b"), "{s} has"),
    (re.compile(r"\bI was\b"), "{s} was"),
    (re.compile(r"\bI\b|\bme\b|\bmyself\b"), "{s}"),
    (re.compile(r"\b[Mm]y\b|\bmine\b"), "{s}'s"),
)


def resolve_when(when: str | None, at: datetime | None) -> tuple[datetime, datetime, str] | None:
    """``when`` ("last week") as a (start, end, granularity) interval around ``at``, or None."""
    if not when or at is None:
        return None
    from memory.temporal import resolve_time_expressions

    mentions = resolve_time_expressions(when, at)
    if not mentions:
        return None
    first = mentions[0]
    return (first.start, first.end, str(first.granularity))


def _pattern_facts(text: str, speaker: str) -> MessageFacts:
    """Without spaCy: the message's statements with "I"/"my" resolved, relations from the pattern rules."""
    out = MessageFacts(model="patterns")
    for sentence in sentences(text):
        if _QUESTION_OR_GREETING.search(sentence) or len(sentence.split()) < 4:
            continue
        if not re.search(r"\b(?:I|I'm|I've|my|me|we|our)\b", sentence):
            continue
        if re.search(r"\byou\b|\byour\b", sentence, re.IGNORECASE):
            continue
        statement = sentence
        for pattern, repl in _PATTERN_SUBS:
            statement = pattern.sub(repl.format(s=speaker), statement)
        statement = statement.rstrip(".!") + "."
        rels = tuple(r for r in pattern_relations(sentence, speaker) if r.subject == speaker)
        slots = {}
        for rel in rels:
            slot = slot_of(rel.predicate)
            if slot and slot not in slots and not rel.predicate.startswith(("no longer", "not", "never")):
                slots[slot] = rel.object
        negated = bool(re.search(r"\b(?:not|n't|no longer|never)\b", sentence))
        ends = tuple(s for r in rels for s in closes_slots(r.predicate))
        out.facts.append(CanonicalFact(statement, speaker, rels, negated, None, slots, ends))
    out.entities = pattern_entities(text)
    return out


def offline_facts(text: str, *, speaker: str, listener: str | None = None, aliases: Iterable[str] = ()) -> MessageFacts:
    """The offline extractor: spaCy when installed, else the pattern rules."""
    if nlp_model.available():
        return extract_offline(text, speaker=speaker, listener=listener, aliases=aliases)
    return _pattern_facts(text, speaker)


def from_llm_answer(answer: FactsOut, speaker: str, model: str) -> MessageFacts:
    """Turn a validated LLM answer into facts; raises LLMError when it is not usable as canonical facts."""
    facts: list[CanonicalFact] = []
    for item in answer.facts:
        statement = " ".join(item.statement.split())
        if _PRONOUN.search(statement):
            raise LLMError(f"the model's fact is not in the third person: {statement!r}")
        predicate = " ".join(item.predicate.lower().split())
        relations: tuple[RelationOut, ...] = ()
        if predicate:
            relations = (RelationOut(subject=item.subject, predicate=predicate, object=item.object or "-"),)
        slot = slot_of(predicate) if predicate else None
        slots = {slot: item.object} if slot and item.object and not item.negated else {}
        ends = closes_slots(predicate) if predicate and not item.negated else ()
        if not statement.endswith((".", "!")):
            statement += "."
        facts.append(CanonicalFact(statement, item.subject.strip(), relations, item.negated, item.when, slots, ends))
    return MessageFacts(
        facts=facts, entities=list(answer.entities), correction=answer.correction, model=model, aliases=[]
    )


def facts_of_message(
    text: str,
    *,
    speaker: str,
    listener: str | None = None,
    at: datetime | None = None,
    llm: LLM | None = None,
    aliases: Iterable[str] = (),
) -> MessageFacts:
    """Canonical facts of one message (see the module docstring); never raises for a failing LLM."""
    result: MessageFacts | None = None
    reason: str | None = None
    if llm is not None and getattr(llm, "provider", "heuristic") != "heuristic":
        inputs: dict[str, Any] = {
            "text": text, "speaker": speaker, "listener": listener,
            "date": at.date().isoformat() if at is not None else None,
        }  # fmt: skip
        try:
            answer = structured(llm, "extract_facts", inputs, FactsOut)
            result = from_llm_answer(answer.output, speaker, answer.model)
        except LLMError as exc:
            reason = f"{type(exc).__name__}: {exc}"[:500]
    if result is None:
        result = offline_facts(text, speaker=speaker, listener=listener, aliases=aliases)
        result.fallback_reason = reason
    if at is not None:
        result.facts = [replace(f, time=resolve_when(f.when, at)) if f.when else f for f in result.facts]
    return result
