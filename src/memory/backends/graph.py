"""The graph storage contract: entities with aliases, relations, mentions and typed memory links.

A backend that stores a knowledge graph exposes a :class:`GraphStore` as
``backend.graph`` (typed on :class:`~memory.backends.base.Backend`; None
when the backend has no graph). It keeps, per namespace:

* **entities** — name, type, aliases, optional embedding; one entity per
  normalised name or alias (:func:`memory.extraction.heuristic.normalise_name`);
* **relations** — ``subject –predicate→ object`` between entities, with the
  text "{subject} {predicate} {object}", optional embedding, the ids of the
  memories that support it, and ``valid_at``/``invalid_at``;
* **mentions** — which memories mention which entities;
* **links** — typed edges between two memories (``relates_to``, ...).

Rules (the contract suite in ``tests/contract/test_graph.py`` checks them):
nothing crosses a namespace; deleting memory items through the item backend
removes, in the same transaction, their mentions and links, removes them from
the sources of relations, deletes relations left without any source, and
deletes entities left with no mention and no relation. Relations created
without a source memory are kept until deleted explicitly.

For ``memory migrate`` a store also reads and writes a namespace's graph
whole, as stored (:meth:`GraphStore.export_graph` /
:meth:`GraphStore.import_graph`, a :class:`GraphDump`): same ids, times,
validity and vectors, invalidated relations included.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from memory.backends.values import Vector
from memory.errors import InvalidInputError

__all__ = [
    "GraphStore", "Entity", "Relation", "MemoryLink", "Mention", "GraphDump", "check_dump", "relation_text",
]  # fmt: skip


def relation_text(subject: str, predicate: str, obj: str) -> str:
    """The text of a relation: "{subject} {predicate} {object}"."""
    return f"{subject} {predicate} {obj}"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Entity(_Frozen):
    """A named thing: person, place, organisation, date, thing."""

    id: str
    namespace: str
    name: str
    type: str = "thing"
    aliases: tuple[str, ...] = ()
    created_at: datetime
    updated_at: datetime


class Relation(_Frozen):
    """``subject --predicate--> object`` with provenance and validity."""

    id: str
    namespace: str
    subject_id: str
    subject: str
    predicate: str
    object_id: str
    object: str
    text: str
    source_ids: tuple[str, ...] = ()
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    created_at: datetime


class MemoryLink(_Frozen):
    """A typed edge from one memory to another."""

    namespace: str
    source_id: str
    target_id: str
    type: str
    created_at: datetime


class Mention(_Frozen):
    """A memory mentions an entity."""

    entity_id: str
    memory_id: str


@dataclass
class GraphDump:
    """One namespace's whole graph as stored, for copying it between backends.

    ``entities`` and ``relations`` carry their vector as ``(model, vector)``
    (``(None, None)`` when they have none); relations include invalidated ones
    and their ``source_ids``; entities are in id order (creation order), so
    an importing store gives each normalised name or alias to the same entity.
    """

    entities: builtins.list[tuple[Entity, str | None, Vector | None]] = field(default_factory=builtins.list)
    relations: builtins.list[tuple[Relation, str | None, Vector | None]] = field(default_factory=builtins.list)
    mentions: builtins.list[Mention] = field(default_factory=builtins.list)
    links: builtins.list[MemoryLink] = field(default_factory=builtins.list)

    def __len__(self) -> int:
        return len(self.entities) + len(self.relations) + len(self.mentions) + len(self.links)


def check_dump(namespace: str, dump: GraphDump) -> None:
    """Raise InvalidInputError unless ``dump`` is whole and of ``namespace`` only.

    Every record must be of ``namespace``, relation ends and mentions must
    name entities of the dump, and a vector comes with its model.
    """
    records: builtins.list[Entity | Relation | MemoryLink] = [e for e, _, _ in dump.entities]
    records += [r for r, _, _ in dump.relations]
    records += dump.links
    strays = [r for r in records if r.namespace != namespace]
    if strays:
        raise InvalidInputError(f"graph records of namespace {strays[0].namespace!r} imported into {namespace!r}")
    known = {e.id for e, _, _ in dump.entities}
    if len(known) != len(dump.entities):
        raise InvalidInputError("a graph dump names an entity id twice")
    ends = {r.subject_id for r, _, _ in dump.relations} | {r.object_id for r, _, _ in dump.relations}
    missing = (ends | {m.entity_id for m in dump.mentions}) - known
    if missing:
        raise InvalidInputError(f"graph records refer to entities not in the dump: {sorted(missing)[:3]}")
    for _, model, vector in [*dump.entities, *dump.relations]:
        if (model is None) != (vector is None):
            raise InvalidInputError("a graph vector needs its model, and a model its vector")


@runtime_checkable
class GraphStore(Protocol):
    """Graph storage of one backend. See the module docstring for the rules."""

    def upsert_entity(
        self,
        namespace: str,
        name: str,
        type: str,
        now: datetime,
        *,
        vector: Vector | None = None,
        model: str | None = None,
    ) -> Entity:
        """The entity whose normalised name or alias equals ``name``'s, else a new one.

        An existing entity of type 'thing' takes the more specific ``type``; a
        missing vector is filled in.
        """
        ...

    def add_alias(self, namespace: str, entity_id: str, alias: str, now: datetime) -> Entity:
        """Add ``alias`` to an entity (a no-op when it already has it). Raises NotFoundError."""
        ...

    def get_entities(self, namespace: str, ids: Sequence[str]) -> builtins.list[Entity]:
        """Entities by id, in the order asked; unknown ids omitted."""
        ...

    def find_entities(self, namespace: str, names: Sequence[str]) -> builtins.list[Entity]:
        """Entities whose normalised name or alias equals one of ``names`` normalised."""
        ...

    def has_entities(self, namespace: str) -> bool:
        """Whether the namespace holds any entity (without one it has no relation or mention either)."""
        ...

    def list_entities(self, namespace: str, limit: int, type: str | None = None) -> builtins.list[Entity]:
        """Entities of a namespace by name, optionally of one type."""
        ...

    def search_entities(
        self, namespace: str, model: str, vector: Vector, k: int
    ) -> builtins.list[tuple[Entity, float]]:
        """Entities with a ``model`` vector, most cosine-similar first."""
        ...

    def upsert_relation(
        self,
        namespace: str,
        subject_id: str,
        predicate: str,
        object_id: str,
        now: datetime,
        *,
        source_id: str | None = None,
        vector: Vector | None = None,
        model: str | None = None,
        valid_at: datetime | None = None,
    ) -> Relation:
        """The live relation (subject, predicate, object) with ``source_id`` added, else a new one."""
        ...

    def relations(
        self,
        namespace: str,
        entity_ids: Sequence[str] | None = None,
        *,
        include_invalid: bool = False,
        limit: int = 1000,
    ) -> builtins.list[Relation]:
        """Relations touching any of ``entity_ids`` (all if None), newest first."""
        ...

    def search_relations(
        self, namespace: str, model: str, vector: Vector, k: int, *, include_invalid: bool = False
    ) -> builtins.list[tuple[Relation, float]]:
        """Relations with a ``model`` vector, most cosine-similar first."""
        ...

    def invalidate_relations(self, namespace: str, ids: Sequence[str], at: datetime) -> int:
        """Set ``invalid_at`` on live relations; returns how many changed."""
        ...

    def add_mentions(self, namespace: str, memory_id: str, entity_ids: Sequence[str]) -> None:
        """Record that memory ``memory_id`` mentions the entities (idempotent)."""
        ...

    def mentions(
        self,
        namespace: str,
        *,
        entity_ids: Sequence[str] | None = None,
        memory_ids: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> builtins.list[Mention]:
        """Mentions of the given entities or memories (by entity, then memory id).

        With ``limit``, at most that many: those of the greatest memory ids
        (a new memory's id is greater than older ones'), still returned by
        entity, then memory id.
        """
        ...

    def memories_reached(self, namespace: str, entity_id: str, *, mentions: int, relations: int) -> builtins.set[str]:
        """Ids of the memories that mention the entity or support one of its live relations (the graph channel).

        At most the newest ``mentions`` mentions (the greatest memory ids, as
        :meth:`mentions` with ``limit``) and the sources of the newest
        ``relations`` live relations (as :meth:`relations` with ``limit``).
        """
        ...

    def link(self, namespace: str, source_id: str, target_id: str, type: str, now: datetime) -> MemoryLink:
        """Link two memories with a typed edge (idempotent; returns the link)."""
        ...

    def unlink(self, namespace: str, source_id: str, target_id: str, type: str | None = None) -> int:
        """Remove links from ``source_id`` to ``target_id`` (of ``type``, or all); returns how many."""
        ...

    def links(
        self, namespace: str, memory_ids: Sequence[str], types: Sequence[str] | None = None
    ) -> builtins.list[MemoryLink]:
        """Links from or to any of ``memory_ids``, optionally of some types."""
        ...

    def counts(self, namespace: str) -> dict[str, int]:
        """Numbers of entities, relations, mentions and links in a namespace."""
        ...

    def namespaces(self) -> builtins.list[str]:
        """Namespaces holding any entity, relation, mention or link, sorted."""
        ...

    def export_graph(self, namespace: str) -> GraphDump:
        """Everything of a namespace's graph as stored (invalidated relations and vectors included)."""
        ...

    def import_graph(self, namespace: str, dump: GraphDump) -> None:
        """Write ``dump`` as it is (same ids, times, validity, vectors) in one transaction.

        The namespace's graph must be empty (ConfigError otherwise); records of
        another namespace or dangling entity references raise InvalidInputError;
        mentions, links or sources naming memories the namespace does not hold
        raise NotFoundError on backends that check memories. Nothing is written
        when it raises.
        """
        ...
