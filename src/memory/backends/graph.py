"""The graph storage contract: entities with aliases, relations, mentions and typed memory links.

A backend that stores a knowledge graph exposes a :class:`GraphStore` as
``backend.graph`` (the facade finds it with ``getattr(backend, "graph",
None)``). It keeps, per namespace:

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
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from memory.backends.base import Vector

__all__ = ["GraphStore", "Entity", "Relation", "MemoryLink", "Mention"]


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
        self, namespace: str, *, entity_ids: Sequence[str] | None = None, memory_ids: Sequence[str] | None = None
    ) -> builtins.list[Mention]:
        """Mentions of the given entities or memories."""
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
