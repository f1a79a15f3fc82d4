"""``mem.graph``: the knowledge graph of a store — entities, relations, paths, memory links.

A thin view over the backend's :class:`~memory.backends.graph.GraphStore`
(``backend.graph``); every call is scoped to one namespace (the store's
default unless given). Entities are named by their name or any alias
(case and articles ignored).
"""

from __future__ import annotations

import builtins
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memory.backends.graph import Entity, GraphStore, MemoryLink, Relation
from memory.errors import GraphUnavailableError, InvalidInputError, NotFoundError
from memory.records import check_sensitivity

if TYPE_CHECKING:
    from memory.services import Core

__all__ = ["GraphView", "GraphResult", "MAX_DEPTH"]

#: Deepest traversal ``paths``/``query_graph``/``neighbors`` accept.
MAX_DEPTH = 4
#: Mentions of each entity checked first for one its caller may read (see ``GraphView._known``).
KNOWN_PROBE = 16


@dataclass
class GraphResult:
    """A subgraph: entities, the relations between them, and the memories that support them."""

    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    memory_ids: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "entities": [e.model_dump(mode="json") for e in self.entities],
            "relations": [r.model_dump(mode="json") for r in self.relations],
            "memory_ids": self.memory_ids,
        }


def _depth(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DEPTH:
        raise InvalidInputError(f"depth must be an integer from 1 to {MAX_DEPTH}, got {value!r}")
    return value


class GraphView:
    """Graph queries of a :class:`~memory.Memory`."""

    def __init__(self, core: Core) -> None:
        """Bind to the store's backend, default namespace and clock."""
        self._core = core

    @property
    def store(self) -> GraphStore:
        """The backend's graph store. Raises GraphUnavailableError when the backend has none."""
        store = self._core.backend.graph
        if store is None:
            raise GraphUnavailableError(
                f"the {self._core.backend.name} backend has no graph store; use sqlite or inmemory for graph features"
            )
        return store

    def entity(self, name: str, *, namespace: str | None = None) -> Entity:
        """The entity named ``name`` (or with that alias). Raises NotFoundError."""
        if not isinstance(name, str) or not name.strip():
            raise InvalidInputError("entity name must be a non-empty string")
        ns = self._core.ns(namespace)
        found = self.store.find_entities(ns, [name])
        if not found:
            raise NotFoundError(f"no entity {name!r} in namespace {ns!r}")
        return found[0]

    def entities(
        self, *, namespace: str | None = None, type: str | None = None, limit: int = 100, clearance: str = "private"
    ) -> list[Entity]:
        """Entities of a namespace by name, optionally of one type, that a caller with ``clearance`` may know of.

        An entity is known when a memory visible at ``clearance`` mentions it or it is an end of a
        relation visible at ``clearance``: a name extracted only from secrets is not listed without
        secret clearance (it is the secret's text).
        """
        ns = self._core.ns(namespace)
        found = self.store.list_entities(ns, limit, type)
        known = self._known(ns, [e.id for e in found], clearance)
        return [e for e in found if e.id in known]

    def _known(self, namespace: str, ids: Sequence[str], clearance: str) -> set[str]:
        """The entities of ``ids`` a caller with ``clearance`` may know of (see :meth:`entities`).

        One visible mention is enough: each entity's newest :data:`KNOWN_PROBE`
        mentions are checked first, and only an entity none of them shows is
        checked through all of its mentions (one named in 20,000 memories made
        the entity list take 116 ms, reading them all).
        """
        if not ids or check_sensitivity(clearance) == "secret":
            return set(ids)
        known: set[str] = set()
        for probe in (KNOWN_PROBE, None):
            left = [i for i in ids if i not in known]
            if not left:
                break
            if probe is None:
                mentions = self.store.mentions(namespace, entity_ids=left)
            else:
                mentions = [m for i in left for m in self.store.mentions(namespace, entity_ids=[i], limit=probe)]
            readable = self._visible_ids(namespace, sorted({m.memory_id for m in mentions}), clearance)
            known |= {m.entity_id for m in mentions if m.memory_id in readable}
        relations = self.store.relations(namespace, list(ids), include_invalid=True, limit=20 * len(ids))
        for relation in self.visible(relations, namespace=namespace, clearance=clearance):
            known.update((relation.subject_id, relation.object_id))
        return known

    def _visible_ids(self, namespace: str, ids: Sequence[str], clearance: str) -> set[str]:
        if not ids:
            return set()
        flt = self._core.filter(namespace, clearance=clearance, include_invalid=True)
        return set(self._core.backend.find_ids(flt.model_copy(update={"ids": tuple(ids)})))

    def facts_about(
        self,
        name: str,
        *,
        namespace: str | None = None,
        user: str | None = None,
        agent: str | None = None,
        include_invalid: bool = False,
        clearance: str = "private",
    ) -> builtins.list[Relation]:
        """Relations whose subject or object is the entity, newest first ([] for an unknown name).

        With ``user``/``agent``, only relations supported by at least one memory
        of that scope (visible with ``clearance``) are returned, so one user's
        facts never show up in another's context; relations created without a
        source memory are returned only when no user/agent is given. Either way
        a fact whose source memories are all above ``clearance`` (secrets) stays hidden.
        """
        if not isinstance(name, str) or not name.strip():
            raise InvalidInputError("entity name must be a non-empty string")
        ns = self._core.ns(namespace)
        found = self.store.find_entities(ns, [name])
        if not found:
            return []
        relations = self.store.relations(ns, [found[0].id], include_invalid=include_invalid)
        if user is None and agent is None:  # still no fact that only memories above ``clearance`` support
            return self.visible(relations, namespace=ns, clearance=clearance)
        sources = sorted({s for r in relations for s in r.source_ids})
        flt = self._core.filter(ns, user=user, agent=agent, clearance=clearance, include_invalid=include_invalid)
        allowed = set(self._core.backend.find_ids(flt.model_copy(update={"ids": tuple(sources)}))) if sources else set()
        return [r for r in relations if allowed & set(r.source_ids)]

    def memories_about(self, name: str, *, namespace: str | None = None) -> builtins.list[str]:
        """Ids of the memories that mention the entity or support a relation about it."""
        entity = self.entity(name, namespace=namespace)
        ids = [m.memory_id for m in self.store.mentions(entity.namespace, entity_ids=[entity.id])]
        for relation in self.store.relations(entity.namespace, [entity.id]):
            ids += relation.source_ids
        return list(dict.fromkeys(ids))

    def neighbors(
        self, name: str, *, depth: int = 1, namespace: str | None = None, include_invalid: bool = False
    ) -> builtins.list[Entity]:
        """Entities reachable from ``name`` over at most ``depth`` relations (either direction), nearest first."""
        return self.query_graph(name, depth=depth, namespace=namespace, include_invalid=include_invalid).entities[1:]

    def paths(
        self, source: str, target: str, *, max_depth: int = 3, namespace: str | None = None, limit: int = 10
    ) -> builtins.list[builtins.list[Relation]]:
        """Shortest relation paths from ``source`` to ``target`` (either direction), at most ``limit``."""
        max_depth = _depth(max_depth)
        start = self.entity(source, namespace=namespace)
        goal = self.entity(target, namespace=namespace)
        if start.id == goal.id:
            return [[]]
        found: list[list[Relation]] = []
        queue: deque[tuple[str, list[Relation]]] = deque([(start.id, [])])
        best: dict[str, int] = {start.id: 0}
        while queue and len(found) < limit:
            node, path = queue.popleft()
            if len(path) >= max_depth or (found and len(path) >= len(found[0])):
                continue
            for relation in self.store.relations(start.namespace, [node]):
                nxt = relation.object_id if relation.subject_id == node else relation.subject_id
                if any(nxt in (r.subject_id, r.object_id) for r in path) or nxt == start.id:
                    continue
                if nxt == goal.id:
                    found.append([*path, relation])
                elif best.get(nxt, MAX_DEPTH + 1) >= len(path) + 1:
                    best[nxt] = len(path) + 1
                    queue.append((nxt, [*path, relation]))
        return found[:limit]

    def query_graph(
        self,
        start: str | None = None,
        *,
        depth: int = 1,
        namespace: str | None = None,
        predicates: Sequence[str] | None = None,
        entity_types: Sequence[str] | None = None,
        include_invalid: bool = False,
        limit: int = 200,
        clearance: str = "private",
    ) -> GraphResult:
        """The subgraph within ``depth`` relations of ``start`` (or all of it), filtered.

        ``predicates`` keeps only relations with those predicates;
        ``entity_types`` keeps only entities of those types (the start is
        always kept). Returns entities (start first, then by distance),
        relations and the ids of the memories supporting them — only what a
        caller with ``clearance`` may see (see :meth:`visible`): a relation
        only secret memories support, and the entities only it reaches, stay hidden.
        """
        depth = _depth(depth)
        ns = self._core.ns(namespace)
        store = self.store
        wanted_predicates = {p.lower() for p in predicates} if predicates else None
        wanted_types = set(entity_types) if entity_types else None

        def keep(relation: Relation) -> bool:
            return wanted_predicates is None or relation.predicate.lower() in wanted_predicates

        if start is None:
            relations = [r for r in store.relations(ns, None, include_invalid=include_invalid, limit=limit) if keep(r)]
            ids = list(dict.fromkeys(i for r in relations for i in (r.subject_id, r.object_id)))
            entities = [e for e in store.get_entities(ns, ids) if wanted_types is None or e.type in wanted_types]
            allowed = {e.id for e in entities}
            relations = [r for r in relations if r.subject_id in allowed and r.object_id in allowed]
        else:
            origin = self.entity(start, namespace=ns)
            if origin.id not in self._known(ns, [origin.id], clearance):
                # a name only secrets hold: answered exactly as an unknown name (its existence is the secret's)
                raise NotFoundError(f"no entity {start!r} in namespace {ns!r}")
            order = [origin.id]
            seen_relations: dict[str, Relation] = {}
            frontier = [origin.id]
            for _ in range(depth):
                nxt: list[str] = []
                for relation in store.relations(ns, frontier, include_invalid=include_invalid, limit=limit):
                    if not keep(relation) or relation.id in seen_relations:
                        continue
                    ends = [end for end in (relation.subject_id, relation.object_id) if end not in order]
                    found = store.get_entities(ns, ends)
                    if len(found) != len(ends) or (
                        wanted_types is not None and any(e.type not in wanted_types for e in found)
                    ):
                        continue
                    seen_relations[relation.id] = relation
                    for end in ends:
                        if end not in order:
                            order.append(end)
                            nxt.append(end)
                frontier = nxt
                if not frontier or len(order) >= limit:
                    break
            entities = store.get_entities(ns, order[:limit])
            relations = list(seen_relations.values())[:limit]
        relations = self.visible(relations, namespace=ns, clearance=clearance)
        reached = {e for r in relations for e in (r.subject_id, r.object_id)}
        entities = [e for i, e in enumerate(entities) if e.id in reached or (i == 0 and start is not None)]
        supporting = list(dict.fromkeys(m for r in relations for m in r.source_ids))
        visible_sources: set[str] = set()
        if supporting:
            flt = self._core.filter(ns, clearance=clearance, include_invalid=True)
            visible_sources = set(self._core.backend.find_ids(flt.model_copy(update={"ids": tuple(supporting)})))
        memory_ids = [i for i in supporting if i in visible_sources]
        return GraphResult(entities=entities, relations=relations, memory_ids=memory_ids)

    def visible(
        self, relations: Sequence[Relation], *, namespace: str | None = None, clearance: str = "private"
    ) -> builtins.list[Relation]:
        """The relations a caller with ``clearance`` may see: those without source memories, or with at least
        one source memory visible at that clearance (a fact only secret memories support stays hidden)."""
        sources = sorted({s for r in relations for s in r.source_ids})
        if not sources:
            return list(relations)
        flt = self._core.filter(self._core.ns(namespace), clearance=clearance, include_invalid=True)
        allowed = set(self._core.backend.find_ids(flt.model_copy(update={"ids": tuple(sources)})))
        return [r for r in relations if not r.source_ids or allowed & set(r.source_ids)]

    # -- memory links ------------------------------------------------------------
    def links(
        self, memory_id: str, *, namespace: str | None = None, types: Sequence[str] | None = None
    ) -> builtins.list[MemoryLink]:
        """Links from or to a memory."""
        return self.store.links(self._core.ns(namespace), [memory_id], list(types) if types else None)

    def unlink(self, source_id: str, target_id: str, type: str | None = None, *, namespace: str | None = None) -> int:
        """Remove links from ``source_id`` to ``target_id`` (of ``type``, or all); returns how many."""
        return self.store.unlink(self._core.ns(namespace), source_id, target_id, type)

    def counts(self, *, namespace: str | None = None) -> dict[str, int]:
        """Numbers of entities, relations, mentions and links in a namespace."""
        return self.store.counts(self._core.ns(namespace))
