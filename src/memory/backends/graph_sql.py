"""One SQL implementation of :class:`~memory.backends.graph.GraphStore` for SQLite and PostgreSQL.

Tables ``graph_*`` (SQLite migrations ``0008_graph`` + ``0012_graph_source_namespace``,
PostgreSQL ``0005_graph``): entities and their normalised name/alias keys (one
row per key, so one entity per name), relations and their source memories,
mentions and memory links. Deleting items cleans the graph through the
engines' foreign keys and triggers. The SQL is written once with ``?``; the
:class:`~memory.backends.dialect.Dialect` supplies the rest, including the
locks PostgreSQL needs where SQLite's immediate transactions already
serialise writers (``FOR UPDATE`` on an entity gaining an alias, ``FOR KEY
SHARE`` on memories being linked, a transaction lock per created relation;
the loser of a race to create an entity re-reads the winner's). Vector
similarity is an exact numpy scan of a namespace's vectors, kept in process
while the namespace's ``graph_vector_versions`` row is unchanged
(:mod:`memory.backends.graph_vectors`).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memory.backends.dialect import Dialect
from memory.backends.graph import (
    Entity,
    GraphDump,
    MemoryLink,
    Mention,
    Relation,
    check_dump,
    relation_text,
)
from memory.backends.graph_vectors import GraphVectorCache, VectorRows
from memory.backends.values import Vector
from memory.errors import ConfigError, InvalidInputError, NotFoundError
from memory.ids import new_id
from memory.records import normalise_name

__all__ = ["SQLGraphStore"]

_ENTITY = "SELECT id, namespace, name, type, aliases, created_at, updated_at FROM graph_entities"
_RELATION = (
    "SELECT r.id, r.namespace, r.subject_id, s.name, r.predicate, r.object_id, o.name, r.valid_at, r.invalid_at, "
    "r.created_at FROM graph_relations r JOIN graph_entities s ON s.namespace = r.namespace AND s.id = r.subject_id "
    "JOIN graph_entities o ON o.namespace = r.namespace AND o.id = r.object_id"
)
_TABLES = (("entities", "graph_entities"), ("relations", "graph_relations"),
           ("mentions", "graph_mentions"), ("links", "graph_links"))  # fmt: skip
_NAMESPACES = " UNION ".join(f"SELECT namespace FROM {table}" for _, table in _TABLES)


class SQLGraphStore:
    """Graph storage over a :class:`~memory.backends.dialect.Dialect` (one transaction per call)."""

    def __init__(self, dialect: Dialect, vector_cache: GraphVectorCache | None = None) -> None:
        """Run on ``dialect``'s connections and transactions; keep vectors in ``vector_cache`` (default: 256 MiB)."""
        self._d = dialect
        self._vectors = vector_cache if vector_cache is not None else GraphVectorCache()

    def _graph_vectors(self, conn: Any, kind: str, namespace: str, model: str) -> VectorRows:
        """The ``model`` vectors of a namespace's entities or relations (``kind``), from the copy while it holds."""
        d = self._d
        found = d.rows(
            conn, "SELECT version FROM graph_vector_versions WHERE namespace = ? AND kind = ?", (namespace, kind)
        )
        version = int(found[0][0]) if found else 0  # read before the vectors: a later write only makes it stale
        key = (kind, namespace, model)
        cached = self._vectors.get(key, version)
        if cached is not None:
            return cached
        live = ", invalid_at IS NULL" if kind == "relations" else ""
        rows = d.rows(
            conn,
            f"SELECT id, embedding{live} FROM graph_{kind} WHERE namespace = ? AND model = ? AND embedding IS NOT NULL",
            (namespace, model),
        )
        fresh = VectorRows.read(rows, with_live=bool(live))
        self._vectors.put(key, version, fresh)
        return fresh

    # -- values ----------------------------------------------------------------
    def _text(self, *values: str | None) -> None:
        """Refuse strings the engine cannot store (NUL in PostgreSQL, lone surrogates) before writing."""
        if not self._d.storable(*values):
            raise InvalidInputError("text holds a NUL character or is not valid Unicode")

    def _entity(self, row: Sequence[Any]) -> Entity:
        d = self._d
        return Entity(
            id=row[0], namespace=row[1], name=row[2], type=row[3], aliases=tuple(d.json_value(row[4])),
            created_at=d.time_value(row[5]), updated_at=d.time_value(row[6]),
        )  # fmt: skip

    def _vector(self, model: str | None, raw: Any) -> tuple[str | None, Vector | None]:
        vector = self._d.floats_value(raw)
        return (None, None) if model is None or vector is None else (model, vector)

    def _relations(self, conn: Any, rows: Sequence[Sequence[Any]]) -> builtins.list[Relation]:
        """Relations of ``_RELATION`` rows (of one namespace), with their sources."""
        if not rows:
            return []
        d = self._d
        within, params = d.any_of("relation_id", [str(r[0]) for r in rows])
        sources: dict[str, builtins.list[str]] = {}
        for relation_id, memory_id in d.rows(
            conn, f"SELECT relation_id, memory_id FROM graph_relation_sources WHERE namespace = ? AND {within}",
            [rows[0][1], *params],
        ):  # fmt: skip
            sources.setdefault(str(relation_id), []).append(str(memory_id))
        return [
            Relation(
                id=r[0],
                namespace=r[1],
                subject_id=r[2],
                subject=r[3],
                predicate=r[4],
                object_id=r[5],
                object=r[6],
                text=relation_text(r[3], r[4], r[6]),
                valid_at=d.time_value(r[7]),
                invalid_at=d.time_value(r[8]),
                created_at=d.time_value(r[9]),
                source_ids=tuple(sorted(sources.get(str(r[0]), ()))),
            )  # fmt: skip
            for r in rows
        ]

    def _relation(self, conn: Any, namespace: str, relation_id: str) -> Relation:
        rows = self._d.rows(conn, f"{_RELATION} WHERE r.namespace = ? AND r.id = ?", (namespace, relation_id))
        return self._relations(conn, rows)[0]

    # -- entities ------------------------------------------------------------
    def _entity_by_key(self, conn: Any, namespace: str, key: str) -> Entity | None:
        rows = self._d.rows(
            conn,
            f"{_ENTITY} WHERE namespace = ? AND id = "
            "(SELECT entity_id FROM graph_entity_keys WHERE namespace = ? AND key = ?)",
            (namespace, namespace, key),
        )
        return self._entity(rows[0]) if rows else None

    def _get(self, conn: Any, namespace: str, entity_id: str) -> Entity:
        return self._entity(self._d.rows(conn, f"{_ENTITY} WHERE namespace = ? AND id = ?", (namespace, entity_id))[0])

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
        self._text(namespace, name, type, model)
        d = self._d
        key = normalise_name(name)
        with d.write() as conn:
            entity = self._entity_by_key(conn, namespace, key)
            if entity is None:
                entity_id = new_id()
                d.run(
                    conn, "INSERT INTO graph_entities (namespace, id, name, type, model, embedding, created_at, "
                    "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (namespace, entity_id, name.strip(), type, model if vector is not None else None,
                     d.floats_param(vector), d.time_param(now), d.time_param(now)),
                )  # fmt: skip
                won = d.rows(
                    conn,
                    "INSERT INTO graph_entity_keys (namespace, key, entity_id) VALUES (?, ?, ?) "
                    "ON CONFLICT DO NOTHING RETURNING 1",
                    (namespace, key, entity_id),
                )
                if not won:  # another writer created it meanwhile (PostgreSQL): use theirs
                    d.run(conn, "DELETE FROM graph_entities WHERE namespace = ? AND id = ?", (namespace, entity_id))
                    entity = self._entity_by_key(conn, namespace, key)
                    assert entity is not None
                    entity_id = entity.id
            else:
                entity_id = entity.id
            if entity is not None:
                if entity.type == "thing" and type != "thing":
                    d.run(
                        conn,
                        "UPDATE graph_entities SET type = ?, updated_at = ? WHERE namespace = ? AND id = ?",
                        (type, d.time_param(now), namespace, entity_id),
                    )
                if vector is not None and model is not None:
                    d.run(
                        conn,
                        "UPDATE graph_entities SET model = ?, embedding = ? "
                        "WHERE namespace = ? AND id = ? AND embedding IS NULL",
                        (model, d.floats_param(vector), namespace, entity_id),
                    )
            return self._get(conn, namespace, entity_id)

    def add_alias(self, namespace: str, entity_id: str, alias: str, now: datetime) -> Entity:
        """Add an alias; see GraphStore."""
        self._text(namespace, entity_id, alias)
        d = self._d
        key = normalise_name(alias)
        with d.write() as conn:
            rows = d.rows(conn, f"{_ENTITY} WHERE namespace = ? AND id = ?{d.for_update}", (namespace, entity_id))
            if not rows:
                raise NotFoundError(f"no entity {entity_id!r} in namespace {namespace!r}")
            entity = self._entity(rows[0])
            if key == normalise_name(entity.name) or key in {normalise_name(a) for a in entity.aliases}:
                return entity
            d.run(  # a key another entity holds stays theirs
                conn,
                "INSERT INTO graph_entity_keys (namespace, key, entity_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                (namespace, key, entity_id),
            )
            d.run(
                conn,
                "UPDATE graph_entities SET aliases = ?, updated_at = ? WHERE namespace = ? AND id = ?",
                (d.json_param([*entity.aliases, alias.strip()]), d.time_param(now), namespace, entity_id),
            )
            return self._get(conn, namespace, entity_id)

    def get_entities(self, namespace: str, ids: Sequence[str]) -> builtins.list[Entity]:
        """Entities by id; see GraphStore."""
        d = self._d
        if not ids or not d.storable(namespace):
            return []
        within, params = d.any_of("id", ids)
        with d.read() as conn:
            rows = d.rows(conn, f"{_ENTITY} WHERE {d.not_indexed}namespace = ? AND {within}", [namespace, *params])
        found = {row[0]: self._entity(row) for row in rows}
        return [found[i] for i in ids if i in found]

    def find_entities(self, namespace: str, names: Sequence[str]) -> builtins.list[Entity]:
        """Entities by normalised name or alias; see GraphStore."""
        d = self._d
        keys = sorted({normalise_name(n) for n in names} - {""})
        if not keys or not d.storable(namespace):
            return []
        within, params = d.any_of("key", keys)
        with d.read() as conn:
            rows = d.rows(
                conn,
                f"{_ENTITY} WHERE namespace = ? AND id IN (SELECT entity_id FROM graph_entity_keys "
                f"WHERE namespace = ? AND {within}) ORDER BY id",
                [namespace, namespace, *params],
            )
        return [self._entity(r) for r in rows]

    def has_entities(self, namespace: str) -> bool:
        """Whether the namespace holds an entity (one index probe); see GraphStore."""
        d = self._d
        if not d.storable(namespace):
            return False
        with d.read() as conn:
            return bool(d.rows(conn, "SELECT 1 FROM graph_entities WHERE namespace = ? LIMIT 1", [namespace]))

    def list_entities(self, namespace: str, limit: int, type: str | None = None) -> builtins.list[Entity]:
        """Entities by name; see GraphStore."""
        d = self._d
        if not d.storable(namespace, type):
            return []
        sql = f"{_ENTITY} WHERE namespace = ?" + (" AND type = ?" if type is not None else "")
        params: list[Any] = [namespace] + ([type] if type is not None else [])
        with d.read() as conn:
            rows = d.rows(conn, sql + " ORDER BY lower(name), id LIMIT ?", [*params, max(int(limit), 0)])
        return [self._entity(r) for r in rows]

    def search_entities(
        self, namespace: str, model: str, vector: Vector, k: int
    ) -> builtins.list[tuple[Entity, float]]:
        """Entities by cosine similarity (exact); see GraphStore."""
        d = self._d
        if not d.storable(namespace, model):
            return []
        with d.read() as conn:
            ranked = self._graph_vectors(conn, "entities", namespace, model).best(vector, k)
        entities = {e.id: e for e in self.get_entities(namespace, [i for i, _ in ranked])}
        return [(entities[i], s) for i, s in ranked if i in entities]

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
        self._text(namespace, subject_id, predicate, object_id, source_id, model)
        d = self._d
        with d.write() as conn:
            ends, params = d.any_of("id", [subject_id, object_id])
            found = d.rows(conn, f"SELECT count(*) FROM graph_entities WHERE namespace = ? AND {ends}",
                           [namespace, *params])[0][0]  # fmt: skip
            if found != len({subject_id, object_id}):
                raise NotFoundError(f"relation ends {subject_id!r}, {object_id!r} are not entities of {namespace!r}")
            if source_id:
                self._check_memories(conn, namespace, [source_id])
            # one writer per (subject, predicate, object) at a time, so two processes never both create it
            d.lock(conn, "\x1f".join(("graph", namespace, subject_id, predicate, object_id)))
            row = d.rows(
                conn,
                "SELECT id FROM graph_relations WHERE namespace = ? AND subject_id = ? AND predicate = ? "
                "AND object_id = ? AND invalid_at IS NULL ORDER BY created_at, id LIMIT 1",
                (namespace, subject_id, predicate, object_id),
            )
            if not row:
                relation_id = new_id()
                d.run(
                    conn, "INSERT INTO graph_relations (namespace, id, subject_id, predicate, object_id, model, "
                    "embedding, valid_at, invalid_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)",
                    (namespace, relation_id, subject_id, predicate, object_id, model if vector is not None else None,
                     d.floats_param(vector), d.time_param(valid_at or now), d.time_param(now)),
                )  # fmt: skip
            else:
                relation_id = str(row[0][0])
            if source_id:
                d.run(
                    conn,
                    "INSERT INTO graph_relation_sources (namespace, relation_id, memory_id) VALUES (?, ?, ?) "
                    "ON CONFLICT DO NOTHING",
                    (namespace, relation_id, source_id),
                )
            return self._relation(conn, namespace, relation_id)

    def relations(
        self,
        namespace: str,
        entity_ids: Sequence[str] | None = None,
        *,
        include_invalid: bool = False,
        limit: int = 1000,
    ) -> builtins.list[Relation]:
        """Relations touching entities; see GraphStore."""
        d = self._d
        if not d.storable(namespace):
            return []
        sql = f"{_RELATION} WHERE r.namespace = ?"
        params: list[Any] = [namespace]
        if entity_ids is not None:
            subjects, subject_params = d.any_of("r.subject_id", entity_ids)
            objects, object_params = d.any_of("r.object_id", entity_ids)
            sql += f" AND ({subjects} OR {objects})"
            params += [*subject_params, *object_params]
        if not include_invalid:
            sql += " AND r.invalid_at IS NULL"
        with d.read() as conn:
            rows = d.rows(conn, sql + " ORDER BY r.created_at DESC, r.id DESC LIMIT ?", [*params, max(int(limit), 0)])
            return self._relations(conn, rows)

    def search_relations(
        self, namespace: str, model: str, vector: Vector, k: int, *, include_invalid: bool = False
    ) -> builtins.list[tuple[Relation, float]]:
        """Relations by cosine similarity (exact); see GraphStore."""
        d = self._d
        if not d.storable(namespace, model):
            return []
        with d.read() as conn:
            vectors = self._graph_vectors(conn, "relations", namespace, model)
            ranked = vectors.best(vector, k, live_only=not include_invalid)
            within, params = d.any_of("r.id", [i for i, _ in ranked])
            where = f"{d.not_indexed}r.namespace = ? AND {within}"
            chosen = d.rows(conn, f"{_RELATION} WHERE {where}", [namespace, *params])
            found = {r.id: r for r in self._relations(conn, chosen)}
        return [(found[i], s) for i, s in ranked if i in found]

    def invalidate_relations(self, namespace: str, ids: Sequence[str], at: datetime) -> int:
        """Close live relations; see GraphStore."""
        d = self._d
        if not ids or not d.storable(namespace):
            return 0
        within, params = d.any_of("id", ids)
        with d.write() as conn:
            cursor = d.run(
                conn,
                f"UPDATE graph_relations SET invalid_at = ? WHERE namespace = ? AND {within} AND invalid_at IS NULL",
                (d.time_param(at), namespace, *params),
            )
            return max(int(cursor.rowcount), 0)

    # -- mentions and links --------------------------------------------------------
    def _check_memories(self, conn: Any, namespace: str, ids: Sequence[str]) -> None:
        """NotFoundError unless the namespace holds every memory (held until commit where the engine needs it)."""
        d = self._d
        wanted = sorted(set(ids))
        within, params = d.any_of("id", wanted)
        found = d.rows(
            conn,
            f"SELECT count(*) FROM (SELECT 1 FROM items WHERE namespace = ? AND {within}{d.for_key_share}) AS m",
            [namespace, *params],
        )[0][0]
        if found != len(wanted):
            raise NotFoundError(f"memory {', '.join(wanted)} not found in namespace {namespace!r}")

    def add_mentions(self, namespace: str, memory_id: str, entity_ids: Sequence[str]) -> None:
        """Record mentions; see GraphStore."""
        self._text(namespace, memory_id, *entity_ids)
        d = self._d
        wanted = sorted(set(entity_ids))
        with d.write() as conn:
            self._check_memories(conn, namespace, [memory_id])
            within, params = d.any_of("id", wanted)
            known = d.rows(conn, f"SELECT count(*) FROM graph_entities WHERE namespace = ? AND {within}",
                           [namespace, *params])[0][0]  # fmt: skip
            if known != len(wanted):
                raise NotFoundError(f"some of the entities {list(entity_ids)} are not in namespace {namespace!r}")
            d.many(
                conn,
                "INSERT INTO graph_mentions (namespace, entity_id, memory_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                [(namespace, e, memory_id) for e in wanted],
            )

    def mentions(
        self,
        namespace: str,
        *,
        entity_ids: Sequence[str] | None = None,
        memory_ids: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> builtins.list[Mention]:
        """Mentions of entities or memories; see GraphStore."""
        d = self._d
        if not d.storable(namespace):
            return []
        # Only the lists given: an ``OR 1 = 0`` in their place made SQLite scan every mention of the store.
        wanted = [
            d.any_of(column, list(values))
            for column, values in (("entity_id", entity_ids), ("memory_id", memory_ids))
            if values
        ]
        if not wanted:
            return []
        sql = (
            "SELECT entity_id, memory_id FROM graph_mentions WHERE namespace = ? AND "
            f"({' OR '.join(condition for condition, _ in wanted)})"
        )
        params: list[Any] = [namespace, *(value for _, values in wanted for value in values)]
        if limit is None:
            sql += " ORDER BY 1, 2"
        else:  # the newest memories' mentions (ids grow with time), sorted below as the others are
            sql += " ORDER BY memory_id DESC LIMIT ?"
            params.append(max(int(limit), 0))
        with d.read() as conn:
            rows = d.rows(conn, sql, params)
        if limit is not None:
            rows.sort()
        return [Mention(entity_id=r[0], memory_id=r[1]) for r in rows]

    def memories_reached(self, namespace: str, entity_id: str, *, mentions: int, relations: int) -> builtins.set[str]:
        """Memories mentioning the entity or supporting its relations, as ids only; see GraphStore."""
        d = self._d
        if not d.storable(namespace, entity_id):
            return set()
        with d.read() as conn:
            mentioned = d.rows(
                conn,
                "SELECT memory_id FROM graph_mentions WHERE namespace = ? AND entity_id = ? "
                "ORDER BY memory_id DESC LIMIT ?",
                (namespace, entity_id, max(int(mentions), 0)),
            )
            supporting = d.rows(
                conn,
                "SELECT memory_id FROM graph_relation_sources WHERE namespace = ? AND relation_id IN ("
                "SELECT r.id FROM graph_relations r WHERE r.namespace = ? AND (r.subject_id = ? OR r.object_id = ?) "
                "AND r.invalid_at IS NULL ORDER BY r.created_at DESC, r.id DESC LIMIT ?)",
                (namespace, namespace, entity_id, entity_id, max(int(relations), 0)),
            )
        return {str(row[0]) for row in (*mentioned, *supporting)}

    def link(self, namespace: str, source_id: str, target_id: str, type: str, now: datetime) -> MemoryLink:
        """Link two memories; see GraphStore."""
        self._text(namespace, source_id, target_id, type)
        d = self._d
        with d.write() as conn:
            self._check_memories(conn, namespace, [source_id, target_id])
            d.run(
                conn,
                "INSERT INTO graph_links (namespace, source_id, target_id, type, created_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (namespace, source_id, target_id, type, d.time_param(now)),
            )
            row = d.rows(
                conn,
                "SELECT created_at FROM graph_links WHERE namespace = ? AND source_id = ? AND target_id = ? "
                "AND type = ?",
                (namespace, source_id, target_id, type),
            )[0]
        return MemoryLink(
            namespace=namespace, source_id=source_id, target_id=target_id, type=type, created_at=d.time_value(row[0])
        )

    def unlink(self, namespace: str, source_id: str, target_id: str, type: str | None = None) -> int:
        """Remove links; see GraphStore."""
        d = self._d
        if not d.storable(namespace, source_id, target_id, type):
            return 0
        sql = "DELETE FROM graph_links WHERE namespace = ? AND source_id = ? AND target_id = ?"
        params: list[Any] = [namespace, source_id, target_id]
        if type is not None:
            sql += " AND type = ?"
            params.append(type)
        with d.write() as conn:
            return max(int(conn.execute(d.sql(sql), params).rowcount), 0)

    def _links(self, namespace: str, rows: Sequence[Sequence[Any]]) -> builtins.list[MemoryLink]:
        return [
            MemoryLink(
                namespace=namespace, source_id=r[0], target_id=r[1], type=r[2], created_at=self._d.time_value(r[3])
            )
            for r in rows
        ]

    def links(
        self, namespace: str, memory_ids: Sequence[str], types: Sequence[str] | None = None
    ) -> builtins.list[MemoryLink]:
        """Links from or to memories; see GraphStore."""
        d = self._d
        if not d.storable(namespace):
            return []
        sources, source_params = d.any_of("source_id", memory_ids)
        targets, target_params = d.any_of("target_id", memory_ids)
        sql = (
            f"SELECT source_id, target_id, type, created_at FROM graph_links WHERE namespace = ? "
            f"AND ({sources} OR {targets})"
        )
        params: list[Any] = [namespace, *source_params, *target_params]
        if types is not None:
            kinds, kind_params = d.any_of("type", types)
            sql += f" AND {kinds}"
            params += kind_params
        with d.read() as conn:
            rows = d.rows(conn, sql + " ORDER BY created_at, source_id, target_id, type", params)
        return self._links(namespace, rows)

    def counts(self, namespace: str) -> dict[str, int]:
        """Sizes of the graph of a namespace."""
        d = self._d
        if not d.storable(namespace):
            return {name: 0 for name, _ in _TABLES}
        with d.read() as conn:
            row = d.rows(
                conn,
                "SELECT " + ", ".join(f"(SELECT count(*) FROM {t} WHERE namespace = ?)" for _, t in _TABLES),
                [namespace] * len(_TABLES),
            )[0]
        return {name: int(n) for (name, _), n in zip(_TABLES, row, strict=True)}

    # -- whole namespaces (memory migrate) ------------------------------------------------
    def namespaces(self) -> builtins.list[str]:
        """Namespaces holding any entity, relation, mention or link, sorted."""
        with self._d.read() as conn:
            return sorted(str(r[0]) for r in self._d.rows(conn, _NAMESPACES))

    def export_graph(self, namespace: str) -> GraphDump:
        """Everything of a namespace's graph as stored; see GraphStore."""
        d = self._d
        if not d.storable(namespace):
            return GraphDump()
        with d.read() as conn:

            def rows(sql: str) -> builtins.list[tuple[Any, ...]]:
                return d.rows(conn, sql, (namespace,))

            entities = [
                (self._entity(row), *self._vector(row[7], row[8]))
                for row in rows("SELECT id, namespace, name, type, aliases, created_at, updated_at, model, embedding "
                                "FROM graph_entities WHERE namespace = ? ORDER BY id")
            ]  # fmt: skip
            vectors = {
                str(r[0]): self._vector(r[1], r[2])
                for r in rows("SELECT id, model, embedding FROM graph_relations WHERE namespace = ?")
            }
            chosen = rows(f"{_RELATION} WHERE r.namespace = ? ORDER BY r.id")
            relations = [(relation, *vectors[relation.id]) for relation in self._relations(conn, chosen)]
            mentions = [
                Mention(entity_id=r[0], memory_id=r[1])
                for r in rows("SELECT entity_id, memory_id FROM graph_mentions WHERE namespace = ? ORDER BY 1, 2")
            ]
            links = self._links(namespace, rows("SELECT source_id, target_id, type, created_at FROM graph_links "
                                                "WHERE namespace = ? ORDER BY 1, 2, 3"))  # fmt: skip
        return GraphDump(entities=entities, relations=relations, mentions=mentions, links=links)

    def import_graph(self, namespace: str, dump: GraphDump) -> None:
        """Write a namespace's graph as it is, in one transaction; see GraphStore."""
        check_dump(namespace, dump)
        d = self._d
        texts: list[str | None] = [namespace]
        for e, model, _ in dump.entities:
            texts += [e.id, e.name, e.type, *e.aliases, model]
        for r, model, _ in dump.relations:
            texts += [r.id, r.predicate, *r.source_ids, model]
        texts += [m.memory_id for m in dump.mentions]
        texts += [x for k in dump.links for x in (k.source_id, k.target_id, k.type)]
        self._text(*texts)
        memories = {m.memory_id for m in dump.mentions} | {x for r, _, _ in dump.relations for x in r.source_ids}
        memories |= {x for link in dump.links for x in (link.source_id, link.target_id)}
        t = d.time_param
        with d.write() as conn:
            if namespace in {str(r[0]) for r in d.rows(conn, _NAMESPACES)}:
                raise ConfigError(f"the graph of namespace {namespace!r} is not empty; import writes into empty ones")
            ids = [e.id for e, _, _ in dump.entities] + [r.id for r, _, _ in dump.relations]
            entity_ids, entity_params = d.any_of("id", ids)
            taken = d.rows(
                conn,
                f"SELECT id FROM graph_entities WHERE {entity_ids} UNION SELECT id FROM graph_relations "
                f"WHERE {entity_ids} LIMIT 3",
                [*entity_params, *entity_params],
            )
            if taken:  # SQLite keys graph rows by id alone
                raise InvalidInputError(f"graph ids already used in another namespace: {[r[0] for r in taken]}")
            if memories:
                self._check_memories(conn, namespace, sorted(memories))
            d.many(
                conn,
                "INSERT INTO graph_entities (namespace, id, name, type, aliases, model, embedding, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(namespace, e.id, e.name, e.type, d.json_param(list(e.aliases)), model, d.floats_param(vector),
                  t(e.created_at), t(e.updated_at)) for e, model, vector in dump.entities],
            )  # fmt: skip
            keys = [(namespace, normalise_name(e.name), e.id) for e, _, _ in dump.entities]
            keys += [(namespace, normalise_name(a), e.id) for e, _, _ in dump.entities for a in e.aliases]
            d.many(  # names first, then aliases: an alias never takes another entity's name
                conn,
                "INSERT INTO graph_entity_keys (namespace, key, entity_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                keys,
            )
            d.many(
                conn,
                "INSERT INTO graph_relations (namespace, id, subject_id, predicate, object_id, model, embedding, "
                "valid_at, invalid_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(namespace, r.id, r.subject_id, r.predicate, r.object_id, model, d.floats_param(vector),
                  t(r.valid_at), t(r.invalid_at), t(r.created_at)) for r, model, vector in dump.relations],
            )  # fmt: skip
            d.many(
                conn,
                "INSERT INTO graph_relation_sources (namespace, relation_id, memory_id) VALUES (?, ?, ?)",
                [(namespace, r.id, source) for r, _, _ in dump.relations for source in r.source_ids],
            )
            d.many(
                conn,
                "INSERT INTO graph_mentions (namespace, entity_id, memory_id) VALUES (?, ?, ?)",
                [(namespace, m.entity_id, m.memory_id) for m in dump.mentions],
            )
            d.many(
                conn,
                "INSERT INTO graph_links (namespace, source_id, target_id, type, created_at) VALUES (?, ?, ?, ?, ?)",
                [(namespace, k.source_id, k.target_id, k.type, t(k.created_at)) for k in dump.links],
            )
