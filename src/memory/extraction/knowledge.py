"""Storing a message's canonical facts: fact memories, updates that close old truths, and the graph.

:func:`store_facts` writes what :func:`~memory.extraction.message_facts.facts_of_message`
found in one message:

1. each fact becomes a ``fact`` memory of the message's scope, citing the
   message (``source_ids``), valid from the resolved event time (or the
   message's time), with its subject, slots, relations and time in metadata
   (keys ``fact_*``);
2. updates, against the live facts of the same scope and subject:
   a new value in a single-valued slot (:mod:`memory.extraction.slots`)
   *supersedes* the old fact (``valid_to`` set, ledger entry ``supersede``:
   kept in history, gone from recall and the profile); a slot-ending fact
   ("we broke up") and a negated fact ("no longer works at X", "doesn't eat
   meat any more") close the facts they contradict the same way; a
   correction ("sorry, I meant Tuesday") rewrites the speaker's previous
   fact with the new value and closes the old one;
3. the graph: entities (typed by the model, merged by name and alias),
   mentions, relations with the fact as their source; the relations of a
   closed fact are invalidated.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from memory.backends.base import ListOrder
from memory.extraction.facts import CanonicalFact, MessageFacts
from memory.extraction.heuristic import normalise_name
from memory.extraction.slots import normalise_predicate, same_value
from memory.items import Items
from memory.records import ledger_entry
from memory.windows import Windows

if TYPE_CHECKING:
    from memory.episodic.types import Message
    from memory.services import Core
    from memory.types import MemoryItem

__all__ = ["store_facts", "close_fact", "live_facts", "SUBJECT_KEY"]

#: Metadata key holding the normalised subject of a fact memory.
SUBJECT_KEY = "fact_subject"
_NEGATION_WORDS = re.compile(r"^(?:no longer|not|never|don't|doesn't|didn't|stopped)\s+")


def live_facts(core: Core, item: MemoryItem, subject_key: str, limit: int = 500) -> list[MemoryItem]:
    """The valid fact memories of ``item``'s scope about ``subject_key``, newest first."""
    flt = core.filter(
        item.namespace, user=item.user, agent=item.agent, kinds=["fact"], metadata={SUBJECT_KEY: subject_key},
        clearance="secret",
    )  # fmt: skip
    return core.backend.list(flt, limit, ListOrder(newest_first=True))


def close_fact(core: Core, old: MemoryItem, by: str, reason: str) -> None:
    """Close ``old`` (``valid_to`` = now, ledger ``supersede``) and invalidate the relations it supports."""
    now = core.now()
    closed = old.model_copy(update={"valid_to": now, "updated_at": now})
    entry = ledger_entry("supersede", old.id, old.namespace, now, before=old, after=closed, reason=f"{reason} ({by})")
    core.backend.replace(closed, None, entry)
    graph = core.backend.graph
    if graph is not None:
        stale = [r.id for r in graph.relations(old.namespace, None, limit=10_000) if old.id in r.source_ids]
        if stale:
            graph.invalidate_relations(old.namespace, stale, now)


def _relation_key(predicate: str) -> str:
    return _NEGATION_WORDS.sub("", normalise_predicate(predicate))


def _contradicted(fact: CanonicalFact, old: MemoryItem) -> str | None:
    """Why the new ``fact`` closes ``old`` (a fact about the same subject), or None."""
    meta = old.metadata
    old_slots: dict[str, str] = dict(meta.get("fact_slots") or {})
    for slot, value in fact.slots.items():
        if slot in old_slots and not same_value(old_slots[slot], value):
            return f"{slot} is now {value!r} (was {old_slots[slot]!r})"
    for slot in fact.ends:
        if slot in old_slots:
            return f"{slot} ended ({fact.statement!r})"
    if fact.negated and not meta.get("fact_negated"):
        for new in fact.relations:
            for old_rel in meta.get("fact_relations") or []:
                if len(old_rel) != 3 or _relation_key(new.predicate) != _relation_key(str(old_rel[1])):
                    continue
                if new.object == "-" or same_value(new.object, str(old_rel[2])):
                    return f"negated: {fact.statement!r}"
    return None


def _corrected(previous: MemoryItem, value: str) -> str | None:
    """``previous``'s statement with its time expression or value replaced by ``value`` (None if none)."""
    meta = previous.metadata
    text = previous.content
    candidates = [str(meta.get("fact_when") or "")] + [str(v) for v in (meta.get("fact_slots") or {}).values()]
    candidates += [str(r[2]) for r in meta.get("fact_relations") or [] if len(r) == 3 and r[2] != "-"]
    for old in candidates:
        if old and old.lower() in text.lower() and not same_value(old, value):
            start = text.lower().index(old.lower())
            return text[:start] + value + text[start + len(old) :]
    return None


def _metadata(fact: CanonicalFact, found: MessageFacts) -> dict[str, Any]:
    meta: dict[str, Any] = {
        SUBJECT_KEY: normalise_name(fact.subject),
        "fact_slots": dict(fact.slots),
        "fact_relations": [[r.subject, r.predicate, r.object] for r in fact.relations],
        "fact_negated": fact.negated,
        "fact_extractor": found.model,
    }
    if fact.when:
        meta["fact_when"] = fact.when
    if fact.time is not None:
        meta["fact_time"] = {
            "start": fact.time[0].isoformat(), "end": fact.time[1].isoformat(), "granularity": fact.time[2],
        }  # fmt: skip
    if found.fallback_reason:
        meta["fact_llm_fallback"] = found.fallback_reason[:300]
    return meta


def store_facts(core: Core, message: Message, found: MessageFacts) -> tuple[list[str], list[str]]:
    """Write ``found`` for ``message`` (see the module docstring); returns (fact memory ids, closed ids)."""
    facts = list(found.facts)
    closed: list[str] = []
    base: dict[str, Any] = {
        "namespace": message.namespace, "user": message.user, "agent": message.agent, "thread": message.thread,
        "kind": "fact", "sensitivity": message.sensitivity, "source_ids": [message.id],
        "context": f"said in thread {message.thread}, turn {message.turn}",
    }  # fmt: skip
    speaker = message.speaker or (message.user if message.role == "user" else message.agent) or message.role
    correction_of: MemoryItem | None = None
    if found.correction and not facts:
        previous = _previous_fact(core, message, speaker)
        if previous is not None:
            text = _corrected(previous, found.correction)
            if text is not None:
                correction_of = previous
                base_fact = CanonicalFact(previous.content, speaker)
                facts = [replace(base_fact, statement=text, slots=_corrected_slots(previous, found.correction))]
    ids: list[str] = []
    _write_aliases(core, message, found)
    for fact in facts:
        valid_from = message.created_at
        if fact.time is not None and fact.time[0] <= message.created_at:
            valid_from = fact.time[0]
        fact_id = Items(core, Windows(core)).remember(
            fact.statement, **base, valid_from=valid_from, metadata=_metadata(fact, found)
        )
        ids.append(fact_id)
        item = core.backend.get(message.namespace, [fact_id])[0]
        if correction_of is not None and correction_of.id != fact_id:
            close_fact(core, correction_of, f"corrected by {fact_id}", "correction")
            closed.append(correction_of.id)
        for old in live_facts(core, item, normalise_name(fact.subject)):
            if old.id == fact_id or old.id in closed:
                continue
            why = _contradicted(fact, old)
            if why is not None:
                close_fact(core, old, f"by {fact_id}", why)
                closed.append(old.id)
        _write_graph(core, item, fact, found)
    return ids, closed


def _corrected_slots(previous: MemoryItem, value: str) -> dict[str, str]:
    slots = dict(previous.metadata.get("fact_slots") or {})
    return {slot: value for slot in slots} if slots else {}


def _previous_fact(core: Core, message: Message, speaker: str) -> MemoryItem | None:
    """The speaker's newest live fact in the message's thread."""
    flt = core.filter(
        message.namespace, user=message.user, agent=message.agent, thread=message.thread, kinds=["fact"],
        metadata={SUBJECT_KEY: normalise_name(speaker)}, clearance="secret",
    )  # fmt: skip
    found = core.backend.list(flt, 1, ListOrder(newest_first=True))
    return found[0] if found else None


def _write_aliases(core: Core, message: Message, found: MessageFacts) -> None:
    graph = core.backend.graph
    if graph is None or message.sensitivity == "secret" or not found.aliases:
        return
    now = core.now()
    for alias, canonical in found.aliases:
        target = graph.upsert_entity(message.namespace, canonical, "person", now)
        graph.add_alias(message.namespace, target.id, alias, now)


def _write_graph(core: Core, item: MemoryItem, fact: CanonicalFact, found: MessageFacts) -> None:
    graph = core.backend.graph
    if graph is None or item.sensitivity == "secret":
        return
    ns, now = item.namespace, core.now()
    types = {normalise_name(e.name): e.type for e in found.entities}
    names: list[str] = [fact.subject]
    for rel in fact.relations:
        names += [rel.subject] + ([rel.object] if rel.object != "-" else [])
    text = item.content.lower()
    names += [e.name for e in found.entities if e.name.lower() in text]
    resolved = {}
    for name in dict.fromkeys(n for n in names if normalise_name(n)):
        kind = types.get(normalise_name(name), "person" if name == fact.subject else "thing")
        resolved[name] = graph.upsert_entity(ns, name, kind, now)
    graph.add_mentions(ns, item.id, list(dict.fromkeys(e.id for e in resolved.values())))
    if fact.negated:
        return  # a negation closes relations; it asserts none
    for rel in fact.relations:
        if rel.object == "-" or rel.subject not in resolved or rel.object not in resolved:
            continue
        graph.upsert_relation(
            ns, resolved[rel.subject].id, rel.predicate, resolved[rel.object].id, now, source_id=item.id,
            valid_at=item.valid_from or item.created_at,
        )  # fmt: skip
