"""The in-process :class:`~memory.backends.graph.GraphStore` of :class:`InMemoryBackend`."""

from __future__ import annotations

import builtins
import threading
from collections.abc import Sequence
from datetime import datetime

import numpy as np

from memory.backends.base import Vector
from memory.backends.graph import Entity, GraphDump, MemoryLink, Mention, Relation, check_dump
from memory.errors import ConfigError, InvalidInputError, NotFoundError
from memory.extraction.heuristic import normalise_name
from memory.ids import new_id

__all__ = ["InMemoryGraph", "relation_text"]


def relation_text(subject: str, predicate: str, obj: str) -> str:
    """The text of a relation: "{subject} {predicate} {object}"."""
    return f"{subject} {predicate} {obj}"


def _cosine_rank(vectors: dict[str, Vector], query: Vector, k: int) -> list[tuple[str, float]]:
    if not vectors:
        return []
    ids = list(vectors)
    matrix = np.vstack([vectors[i] for i in ids]).astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1) * (float(np.linalg.norm(query)) or 1.0)
    scores = matrix @ query.astype(np.float32) / np.where(norms == 0, 1.0, norms)
    order = sorted(range(len(ids)), key=lambda i: (-float(scores[i]), ids[i]))[:k]
    return [(ids[i], float(scores[i])) for i in order]


class InMemoryGraph:
    """Entities, relations, mentions and links in dicts; guarded by the backend's lock."""

    def __init__(self, lock: threading.RLock) -> None:
        """Create an empty graph sharing ``lock`` with its item backend."""
        self._lock = lock
        self._entities: dict[str, Entity] = {}
        self._entity_vectors: dict[str, tuple[str, Vector]] = {}
        self._relations: dict[str, Relation] = {}
        self._relation_vectors: dict[str, tuple[str, Vector]] = {}
        self._mentions: set[tuple[str, str, str]] = set()  # (namespace, entity_id, memory_id)
        self._links: dict[tuple[str, str, str, str], MemoryLink] = {}

    # -- entities ------------------------------------------------------------
    def _by_key(self, namespace: str, key: str) -> Entity | None:
        for entity in self._entities.values():
            if entity.namespace == namespace and (
                normalise_name(entity.name) == key or key in {normalise_name(a) for a in entity.aliases}
            ):
                return entity
        return None

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
        """Find by normalised name/alias or create; see GraphStore."""
        with self._lock:
            entity = self._by_key(namespace, normalise_name(name))
            if entity is None:
                entity = Entity(
                    id=new_id(), namespace=namespace, name=name.strip(), type=type, created_at=now, updated_at=now
                )
            elif entity.type == "thing" and type != "thing":
                entity = entity.model_copy(update={"type": type, "updated_at": now})
            self._entities[entity.id] = entity
            if vector is not None and model is not None and entity.id not in self._entity_vectors:
                self._entity_vectors[entity.id] = (model, np.asarray(vector, dtype=np.float32))
            return entity

    def add_alias(self, namespace: str, entity_id: str, alias: str, now: datetime) -> Entity:
        """Add an alias; see GraphStore."""
        with self._lock:
            entity = self._entities.get(entity_id)
            if entity is None or entity.namespace != namespace:
                raise NotFoundError(f"no entity {entity_id!r} in namespace {namespace!r}")
            key = normalise_name(alias)
            if key == normalise_name(entity.name) or key in {normalise_name(a) for a in entity.aliases}:
                return entity
            entity = entity.model_copy(update={"aliases": (*entity.aliases, alias.strip()), "updated_at": now})
            self._entities[entity_id] = entity
            return entity

    def get_entities(self, namespace: str, ids: Sequence[str]) -> builtins.list[Entity]:
        """Entities by id; see GraphStore."""
        with self._lock:
            found = [self._entities.get(i) for i in ids]
            return [e for e in found if e is not None and e.namespace == namespace]

    def find_entities(self, namespace: str, names: Sequence[str]) -> builtins.list[Entity]:
        """Entities by normalised name or alias; see GraphStore."""
        keys = {normalise_name(n) for n in names} - {""}
        with self._lock:
            return [
                e
                for e in sorted(self._entities.values(), key=lambda e: e.id)
                if e.namespace == namespace
                and (normalise_name(e.name) in keys or keys & {normalise_name(a) for a in e.aliases})
            ]

    def list_entities(self, namespace: str, limit: int, type: str | None = None) -> builtins.list[Entity]:
        """Entities by name; see GraphStore."""
        with self._lock:
            rows = [e for e in self._entities.values() if e.namespace == namespace and (type is None or e.type == type)]
            return sorted(rows, key=lambda e: (e.name.lower(), e.id))[:limit]

    def search_entities(
        self, namespace: str, model: str, vector: Vector, k: int
    ) -> builtins.list[tuple[Entity, float]]:
        """Entities by cosine similarity; see GraphStore."""
        with self._lock:
            vectors = {
                i: v for i, (m, v) in self._entity_vectors.items()
                if m == model and i in self._entities and self._entities[i].namespace == namespace
            }  # fmt: skip
            return [(self._entities[i], s) for i, s in _cosine_rank(vectors, vector, k)]

    # -- relations -------------------------------------------------------------
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
        """Find the live (s, p, o) relation and add the source, or create it; see GraphStore."""
        with self._lock:
            ends = self.get_entities(namespace, [subject_id, object_id])
            if len({e.id for e in ends}) != len({subject_id, object_id}):
                raise NotFoundError(f"relation ends {subject_id!r}, {object_id!r} are not entities of {namespace!r}")
            subject = self._entities[subject_id]
            obj = self._entities[object_id]
            for relation in self._relations.values():
                same = (relation.subject_id, relation.predicate, relation.object_id) == (
                    subject_id,
                    predicate,
                    object_id,
                )
                if relation.namespace == namespace and relation.invalid_at is None and same:
                    if source_id and source_id not in relation.source_ids:
                        relation = relation.model_copy(update={"source_ids": (*relation.source_ids, source_id)})
                        self._relations[relation.id] = relation
                    return relation
            relation = Relation(
                id=new_id(), namespace=namespace, subject_id=subject_id, subject=subject.name, predicate=predicate,
                object_id=object_id, object=obj.name, text=relation_text(subject.name, predicate, obj.name),
                source_ids=(source_id,) if source_id else (), valid_at=valid_at or now, created_at=now,
            )  # fmt: skip
            self._relations[relation.id] = relation
            if vector is not None and model is not None:
                self._relation_vectors[relation.id] = (model, np.asarray(vector, dtype=np.float32))
            return relation

    def _fresh(self, relation: Relation) -> Relation:
        subject = self._entities[relation.subject_id].name
        obj = self._entities[relation.object_id].name
        return relation.model_copy(
            update={"subject": subject, "object": obj, "text": relation_text(subject, relation.predicate, obj)}
        )

    def relations(
        self,
        namespace: str,
        entity_ids: Sequence[str] | None = None,
        *,
        include_invalid: bool = False,
        limit: int = 1000,
    ) -> builtins.list[Relation]:
        """Relations touching entities; see GraphStore."""
        wanted = set(entity_ids) if entity_ids is not None else None
        with self._lock:
            rows = [
                self._fresh(r) for r in self._relations.values()
                if r.namespace == namespace and (include_invalid or r.invalid_at is None)
                and (wanted is None or r.subject_id in wanted or r.object_id in wanted)
            ]  # fmt: skip
            return sorted(rows, key=lambda r: (r.created_at, r.id), reverse=True)[:limit]

    def search_relations(
        self, namespace: str, model: str, vector: Vector, k: int, *, include_invalid: bool = False
    ) -> builtins.list[tuple[Relation, float]]:
        """Relations by cosine similarity; see GraphStore."""
        with self._lock:
            vectors = {
                i: v for i, (m, v) in self._relation_vectors.items()
                if m == model and i in self._relations and self._relations[i].namespace == namespace
                and (include_invalid or self._relations[i].invalid_at is None)
            }  # fmt: skip
            return [(self._fresh(self._relations[i]), s) for i, s in _cosine_rank(vectors, vector, k)]

    def invalidate_relations(self, namespace: str, ids: Sequence[str], at: datetime) -> int:
        """Close live relations; see GraphStore."""
        changed = 0
        with self._lock:
            for rid in ids:
                relation = self._relations.get(rid)
                if relation is not None and relation.namespace == namespace and relation.invalid_at is None:
                    self._relations[rid] = relation.model_copy(update={"invalid_at": at})
                    changed += 1
        return changed

    # -- mentions and links --------------------------------------------------------
    def add_mentions(self, namespace: str, memory_id: str, entity_ids: Sequence[str]) -> None:
        """Record mentions; see GraphStore."""
        with self._lock:
            for entity_id in entity_ids:
                entity = self._entities.get(entity_id)
                if entity is None or entity.namespace != namespace:
                    raise NotFoundError(f"no entity {entity_id!r} in namespace {namespace!r}")
                self._mentions.add((namespace, entity_id, memory_id))

    def mentions(
        self, namespace: str, *, entity_ids: Sequence[str] | None = None, memory_ids: Sequence[str] | None = None
    ) -> builtins.list[Mention]:
        """Mentions of entities or memories; see GraphStore."""
        entities = set(entity_ids or ())
        memories = set(memory_ids or ())
        with self._lock:
            rows = [
                Mention(entity_id=e, memory_id=m) for ns, e, m in self._mentions
                if ns == namespace and (e in entities or m in memories)
            ]  # fmt: skip
        return sorted(rows, key=lambda m: (m.entity_id, m.memory_id))

    def link(self, namespace: str, source_id: str, target_id: str, type: str, now: datetime) -> MemoryLink:
        """Link two memories; see GraphStore."""
        key = (namespace, source_id, target_id, type)
        with self._lock:
            if key not in self._links:
                self._links[key] = MemoryLink(
                    namespace=namespace, source_id=source_id, target_id=target_id, type=type, created_at=now
                )
            return self._links[key]

    def unlink(self, namespace: str, source_id: str, target_id: str, type: str | None = None) -> int:
        """Remove links; see GraphStore."""
        with self._lock:
            keys = [k for k in self._links if k[:3] == (namespace, source_id, target_id) and type in (None, k[3])]
            for key in keys:
                del self._links[key]
            return len(keys)

    def links(
        self, namespace: str, memory_ids: Sequence[str], types: Sequence[str] | None = None
    ) -> builtins.list[MemoryLink]:
        """Links from or to memories; see GraphStore."""
        wanted = set(memory_ids)
        with self._lock:
            rows = [
                link for (ns, s, t, ty), link in self._links.items()
                if ns == namespace and (s in wanted or t in wanted) and (types is None or ty in types)
            ]  # fmt: skip
        return sorted(rows, key=lambda link: (link.created_at, link.source_id, link.target_id, link.type))

    def counts(self, namespace: str) -> dict[str, int]:
        """Sizes of the graph of a namespace."""
        with self._lock:
            return {
                "entities": sum(e.namespace == namespace for e in self._entities.values()),
                "relations": sum(r.namespace == namespace for r in self._relations.values()),
                "mentions": sum(ns == namespace for ns, _, _ in self._mentions),
                "links": sum(k[0] == namespace for k in self._links),
            }

    # -- whole namespaces (memory migrate) ------------------------------------------------
    def namespaces(self) -> builtins.list[str]:
        """Namespaces holding any entity, relation, mention or link, sorted."""
        with self._lock:
            found = {e.namespace for e in self._entities.values()} | {r.namespace for r in self._relations.values()}
            found |= {ns for ns, _, _ in self._mentions} | {k[0] for k in self._links}
        return sorted(found)

    def export_graph(self, namespace: str) -> GraphDump:
        """Everything of a namespace's graph as stored; see GraphStore."""
        with self._lock:
            entities = sorted((e for e in self._entities.values() if e.namespace == namespace), key=lambda e: e.id)
            relations = sorted((r for r in self._relations.values() if r.namespace == namespace), key=lambda r: r.id)
            return GraphDump(
                entities=[(e, *self._vector_of(self._entity_vectors, e.id)) for e in entities],
                relations=[(self._fresh(r), *self._vector_of(self._relation_vectors, r.id)) for r in relations],
                mentions=sorted(
                    (Mention(entity_id=e, memory_id=m) for ns, e, m in self._mentions if ns == namespace),
                    key=lambda m: (m.entity_id, m.memory_id),
                ),
                links=sorted(
                    (link for k, link in self._links.items() if k[0] == namespace),
                    key=lambda link: (link.source_id, link.target_id, link.type),
                ),
            )

    @staticmethod
    def _vector_of(vectors: dict[str, tuple[str, Vector]], key: str) -> tuple[str | None, Vector | None]:
        found = vectors.get(key)
        return (found[0], found[1].copy()) if found is not None else (None, None)

    def import_graph(self, namespace: str, dump: GraphDump) -> None:
        """Write a namespace's graph as it is; see GraphStore."""
        check_dump(namespace, dump)
        with self._lock:
            if namespace in self.namespaces():
                raise ConfigError(f"the graph of namespace {namespace!r} is not empty; import writes into empty ones")
            taken = {e.id for e, _, _ in dump.entities} & set(self._entities)
            taken |= {r.id for r, _, _ in dump.relations} & set(self._relations)
            if taken:
                raise InvalidInputError(f"graph ids already used in another namespace: {sorted(taken)[:3]}")
            for entity, model, vector in dump.entities:
                self._entities[entity.id] = entity
                if model is not None and vector is not None:
                    self._entity_vectors[entity.id] = (model, np.asarray(vector, dtype=np.float32).copy())
            for relation, model, vector in dump.relations:
                self._relations[relation.id] = relation
                if model is not None and vector is not None:
                    self._relation_vectors[relation.id] = (model, np.asarray(vector, dtype=np.float32).copy())
            self._mentions |= {(namespace, m.entity_id, m.memory_id) for m in dump.mentions}
            for link in dump.links:
                self._links[(namespace, link.source_id, link.target_id, link.type)] = link

    # -- cascade (called by the item backend inside its lock) ------------------------------
    def forget_memories(self, namespace: str, ids: Sequence[str]) -> None:
        """Drop what hangs off deleted memories (see the GraphStore rules)."""
        gone = set(ids)
        with self._lock:
            self._mentions = {m for m in self._mentions if not (m[0] == namespace and m[2] in gone)}
            for key in [k for k in self._links if k[0] == namespace and (k[1] in gone or k[2] in gone)]:
                del self._links[key]
            for rid, relation in list(self._relations.items()):
                if relation.namespace != namespace or not gone & set(relation.source_ids):
                    continue
                remaining = tuple(s for s in relation.source_ids if s not in gone)
                if remaining:
                    self._relations[rid] = relation.model_copy(update={"source_ids": remaining})
                else:
                    del self._relations[rid]
                    self._relation_vectors.pop(rid, None)
            used = {e for ns, e, _ in self._mentions if ns == namespace}
            for relation in self._relations.values():
                if relation.namespace == namespace:
                    used |= {relation.subject_id, relation.object_id}
            for eid, entity in list(self._entities.items()):
                if entity.namespace == namespace and eid not in used:
                    del self._entities[eid]
                    self._entity_vectors.pop(eid, None)
