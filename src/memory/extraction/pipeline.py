"""Extraction on write: turn a stored memory into keywords, entities, relations and an update decision.

:func:`process` runs for one stored memory (inline from ``remember`` or from
:meth:`Memory.extract_pending`). In order:

1. extract (LLM or heuristic) — a failure marks the memory
   ``metadata["_extraction"] = "failed"`` with the error and changes nothing
   else: the write is never lost, and ``extract_pending(retry_failed=True)``
   tries again;
2. decide (kinds ``fact`` and ``trait``): compare with near neighbours in the
   same scope and apply ADD / NOOP / UPDATE / SUPERSEDE / DELETE, each
   recorded in the ledger with its reason;
3. write the graph: entities (merged by normalised name, then by embedding
   similarity as aliases), mentions, relations with the surviving memory as
   their source; a SUPERSEDE closes the old memory's conflicting relations;
4. store keywords and entity names on the memory and mark it ``done``.

Secret memories are never extracted (their content would leak through the
graph); they are marked ``skipped``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memory.backends.base import ListOrder
from memory.embedders.base import embed_query, embed_texts
from memory.errors import InvalidInputError, LLMError, NotFoundError, ProviderError
from memory.extraction.decide import Neighbour
from memory.extraction.heuristic import normalise_name
from memory.extraction.service import Decision, Extraction, decide, extract
from memory.graph import GraphView
from memory.items import Items
from memory.llms.base import Usage
from memory.records import check_limit, check_metadata, ledger_entry, normalise_content
from memory.retrieval.fusion import fuse
from memory.retrieval.text import query_terms
from memory.services import Core
from memory.types import MemoryItem
from memory.windows import Windows

if TYPE_CHECKING:
    from memory.backends.graph import Entity, GraphStore

__all__ = [
    "ExtractionReport",
    "extract_pending",
    "preview",
    "process",
    "remember_extracting",
    "MARKER",
    "DECIDED_KINDS",
]

#: Metadata key holding the extraction state: pending | done | failed | skipped.
MARKER = "_extraction"
#: Kinds whose memories are compared with their neighbours (update decisions).
DECIDED_KINDS = frozenset({"fact", "trait"})


@dataclass
class ExtractionReport:
    """What processing one memory did. ``result_id`` is the memory that holds the fact afterwards."""

    memory_id: str
    result_id: str
    status: str
    extraction: Extraction | None = None
    decision: Decision | None = None
    entity_ids: list[str] = field(default_factory=list)
    relation_ids: list[str] = field(default_factory=list)
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "memory_id": self.memory_id,
            "result_id": self.result_id,
            "status": self.status,
            "extraction": self.extraction.to_json() if self.extraction else None,
            "decision": None if self.decision is None else {
                "action": self.decision.action, "target_id": self.decision.target_id,
                "merged": self.decision.merged, "reason": self.decision.reason, "model": self.decision.model,
            },
            "entity_ids": self.entity_ids,
            "relation_ids": self.relation_ids,
            "error": self.error,
        }  # fmt: skip


def _items(core: Core) -> Items:
    return Items(core, Windows(core))


def _mark(core: Core, item: MemoryItem, state: str, reason: str, **extra: Any) -> None:
    metadata = {**item.metadata, MARKER: state, **extra}
    if state != "failed":
        metadata.pop("_extraction_error", None)
    _items(core).update(item.id, namespace=item.namespace, metadata=metadata, reason=reason)


def _neighbours(core: Core, item: MemoryItem, k: int) -> list[Neighbour]:
    """Live memories of the same scope closest to ``item`` (vector + lexical), excluding it."""
    flt = core.filter(item.namespace, user=item.user, agent=item.agent, kinds=sorted(DECIDED_KINDS))
    results = {"lexical": core.backend.search_lexical(flt, query_terms(item.content), k + 1)}
    try:
        if core.ensure_space(strict=True):
            vector = core.backend.get_vectors(item.namespace, core.embedder.model_name, [item.id]).get(item.id)
            if vector is None:
                vector = embed_query(core.embedder, item.content)
            results["vector"] = core.backend.search_vector(flt, core.embedder.model_name, vector, k + 1)
    except ProviderError:
        pass
    fused = [c for c in fuse(results, {"vector": 1.0, "lexical": 1.0}, 5.0) if c.id != item.id][:k]
    items = {i.id: i for i in core.backend.get(item.namespace, [c.id for c in fused])}
    out = []
    for candidate in fused:
        other = items.get(candidate.id)
        if other is None or other.sensitivity == "secret":
            continue
        vector_score = candidate.channels.get("vector")
        out.append(Neighbour(other.id, other.content, vector_score.raw if vector_score else 0.0))
    return out


def _entity_vectors(core: Core, names: list[str]) -> dict[str, Any]:
    if not names:
        return {}
    try:
        if not core.ensure_space(strict=True):
            return {}
        matrix = embed_texts(core.embedder, names)
    except ProviderError:
        return {}
    return {name: matrix[i] for i, name in enumerate(names)}


def _resolve_entity(core: Core, graph: GraphStore, namespace: str, name: str, type: str, vector: Any) -> Entity:
    """An entity for ``name``: same normalised name/alias, else a similar embedding (alias), else new."""
    now = core.now()
    model = core.embedder.model_name if vector is not None else None
    found = graph.find_entities(namespace, [name])
    if found:
        return graph.upsert_entity(namespace, name, type, now, vector=vector, model=model)
    if vector is not None:
        threshold = core.settings.extraction.entity_merge_similarity
        for entity, score in graph.search_entities(namespace, core.embedder.model_name, vector, 1):
            if score >= threshold and (type == entity.type or "thing" in (type, entity.type)):
                return graph.add_alias(namespace, entity.id, name, now)
    return graph.upsert_entity(namespace, name, type, now, vector=vector, model=model)


def _apply_decision(core: Core, item: MemoryItem, decision: Decision, tag: str) -> str:
    """Carry out a decision; returns the id of the memory that holds the fact afterwards."""
    target = decision.target_id
    note = f"{tag}: {decision.reason}"
    if decision.action == "NOOP" and target:
        _items(core).forget(item.id, namespace=item.namespace, reason=f"decision NOOP, duplicate of {target} ({note})")
        return target
    if decision.action == "UPDATE" and target:
        _items(core).update(
            target, namespace=item.namespace, content=decision.merged or item.content,
            reason=f"decision UPDATE, merged {item.id} into it ({note})",
        )  # fmt: skip
        _items(core).forget(item.id, namespace=item.namespace, reason=f"decision UPDATE, merged into {target} ({note})")
        return target
    if decision.action == "SUPERSEDE" and target:
        old = core.backend.get(item.namespace, [target])
        if old:
            now = core.now()
            closed = old[0].model_copy(update={"valid_to": now, "updated_at": now})
            reason = f"decision SUPERSEDE by {item.id} ({note})"
            core.backend.replace(closed, None, ledger_entry("supersede", target, item.namespace, now,
                                                           before=old[0], after=closed, reason=reason))  # fmt: skip
        return item.id
    if decision.action == "DELETE" and target:
        _items(core).forget(target, namespace=item.namespace, reason=f"decision DELETE, negated by {item.id} ({note})")
        return item.id
    return item.id


def process(core: Core, item: MemoryItem) -> ExtractionReport:
    """Extract, decide and write the graph for one stored memory (see the module docstring)."""
    if item.sensitivity == "secret":
        _mark(core, item, "skipped", "extraction skipped: secret memories are not extracted")
        return ExtractionReport(item.id, item.id, "skipped")
    graph = GraphView(core).store
    llm = core.llm
    known = [e.name for e in graph.list_entities(item.namespace, 200)]
    try:
        extraction = extract(item.content, llm=llm, known_entities=known, speaker=item.user)
    except LLMError as exc:
        _mark(core, item, "failed", f"extraction failed: {exc}", _extraction_error=str(exc)[:500])
        return ExtractionReport(item.id, item.id, "failed", error=str(exc))
    tag = f"{extraction.model}, {extraction.prompt_version}"
    decision: Decision | None = None
    result_id = item.id
    if core.settings.extraction.decide and item.kind in DECIDED_KINDS:
        neighbours = _neighbours(core, item, core.settings.extraction.neighbours)
        try:
            if neighbours:
                decision = decide(item.content, neighbours, llm=llm, speaker=item.user)
            else:
                decision = Decision("ADD", None, None, "no neighbour in scope", extraction.model, Usage())
        except LLMError as exc:
            decision = Decision("ADD", None, None, f"decider failed ({exc}); kept as ADD", "none", extraction.usage)
        result_id = _apply_decision(core, item, decision, tag)
    report = ExtractionReport(item.id, result_id, "done", extraction=extraction, decision=decision)
    names = [e.name for e in extraction.entities]
    for rel in extraction.relations:
        names += [rel.subject, rel.object]
    names = list(dict.fromkeys(names))
    vectors = _entity_vectors(core, names + [f"{r.subject} {r.predicate} {r.object}" for r in extraction.relations])
    types = {normalise_name(e.name): e.type for e in extraction.entities}
    resolved: dict[str, Entity] = {}
    for name in names:
        resolved[name] = _resolve_entity(
            core, graph, item.namespace, name, types.get(normalise_name(name), "thing"), vectors.get(name)
        )
    report.entity_ids = list(dict.fromkeys(e.id for e in resolved.values()))
    target_item = core.backend.get(item.namespace, [result_id])
    if target_item:
        graph.add_mentions(item.namespace, result_id, report.entity_ids)
        for rel in extraction.relations:
            text = f"{rel.subject} {rel.predicate} {rel.object}"
            subject, obj = resolved[rel.subject], resolved[rel.object]
            if decision is not None and decision.action == "SUPERSEDE" and decision.target_id:
                stale = [
                    r.id for r in graph.relations(item.namespace, [subject.id])
                    if r.subject_id == subject.id and r.predicate == rel.predicate and r.object_id != obj.id
                    and decision.target_id in r.source_ids
                ]  # fmt: skip
                graph.invalidate_relations(item.namespace, stale, core.now())
            relation = graph.upsert_relation(
                item.namespace, subject.id, rel.predicate, obj.id, core.now(), source_id=result_id,
                vector=vectors.get(text), model=core.embedder.model_name if text in vectors else None,
                valid_at=item.valid_from or item.created_at,
            )  # fmt: skip
            report.relation_ids.append(relation.id)
    if result_id == item.id:
        current = core.backend.get(item.namespace, [item.id])[0]
        keywords = tuple(dict.fromkeys((*current.keywords, *extraction.keywords)))[:64]
        entity_names = tuple(dict.fromkeys((*current.entities, *(e.name for e in extraction.entities))))[:64]
        reason = f"extraction ({tag}): {len(extraction.entities)} entities, {len(extraction.relations)} relations"
        if decision is not None:
            reason += f"; decision {decision.action}: {decision.reason}"
        _items(core).update(
            item.id, namespace=item.namespace, keywords=keywords, entities=entity_names,
            metadata={**{k: v for k, v in current.metadata.items() if k != "_extraction_error"}, MARKER: "done"},
            reason=reason,
        )  # fmt: skip
    return report


def pending(core: Core, namespace: str | None, limit: int, retry_failed: bool) -> list[MemoryItem]:
    """Memories waiting for extraction (oldest first), in one namespace or all."""
    namespaces = [namespace] if namespace else _items(core).namespaces()
    states = ["pending", "failed"] if retry_failed else ["pending"]

    found: list[MemoryItem] = []
    for ns in namespaces:
        for state in states:
            flt = core.filter(ns, metadata={MARKER: state}, clearance="secret", include_invalid=True)
            found += core.backend.list(flt, limit, ListOrder(newest_first=False))
    found.sort(key=lambda i: (i.created_at, i.id))
    return found[:limit]


def safe_process(core: Core, item: MemoryItem) -> ExtractionReport:
    """:func:`process`, turning a vanished memory (deleted meanwhile) into a 'gone' report."""
    try:
        return process(core, item)
    except NotFoundError as exc:
        return ExtractionReport(item.id, item.id, "gone", error=str(exc))


def extract_mode(core: Core, value: object) -> str | None:
    """The extraction mode ``remember(..., extract=value)`` asks for (None: none); checked before any write."""
    if value is False or value is None:
        return None
    GraphView(core).store  # noqa: B018 - raises GraphUnavailableError before anything is written
    if value is True:
        mode = core.settings.extraction.mode
        if mode == "auto":
            return "inline" if getattr(core.llm, "provider", "") == "heuristic" else "background"
        return mode
    if value in ("inline", "background"):
        return str(value)
    raise InvalidInputError(f"extract must be True, False, 'inline' or 'background', got {value!r}")


def remember_extracting(
    core: Core, items: Items, entries: Sequence[str | Mapping[str, Any]], defaults: dict[str, Any], extract: object
) -> list[str]:
    """``Memory.remember_batch`` with ``extract``: store the batch marked pending, then extract inline or later.

    Inline, the id returned for an entry is the memory that holds the fact
    afterwards (an existing one after NOOP or UPDATE).
    """
    mode = extract_mode(core, extract)
    if mode is not None:
        defaults["metadata"] = {**check_metadata(defaults.get("metadata")), "_extraction": "pending"}
        entries = [
            {**e, "metadata": {**check_metadata(e.get("metadata")), "_extraction": "pending"}}
            if isinstance(e, Mapping) and e.get("metadata") is not None
            else e
            for e in entries
        ]
    stored = items.add(entries, defaults)
    ids = [result.id for _, result in stored]
    if mode == "inline":
        for position, (record, result) in enumerate(stored):
            if result.created:
                found = core.backend.get(record.item.namespace, [result.id])
                if found:
                    ids[position] = safe_process(core, found[0]).result_id
    return ids


def extract_pending(
    core: Core, *, namespace: str | None = None, limit: int = 100, retry_failed: bool = False
) -> list[ExtractionReport]:
    """``Memory.extract_pending``: extract the memories queued for it, oldest first; one report each."""
    limit = check_limit(limit)
    ns = core.ns(namespace) if namespace is not None else None
    return [safe_process(core, item) for item in pending(core, ns, limit, retry_failed)]


def preview(core: Core, text: str, *, speaker: str | None = None, namespace: str | None = None) -> Extraction:
    """``Memory.extract``: what extraction would store for ``text``, helped by the namespace's entity names."""
    content = normalise_content(text, max_chars=core.settings.limits.max_content_chars)
    store = core.backend.graph
    known = [e.name for e in store.list_entities(core.ns(namespace), 200)] if store is not None else []
    return extract(content, llm=core.llm, known_entities=known, speaker=speaker)
