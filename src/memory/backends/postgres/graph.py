"""The PostgreSQL :class:`~memory.backends.graph.GraphStore`: tables ``graph_*`` (migration ``0005_graph``).

Runs on its backend's pool, one transaction per write. Entity lookup goes
through ``graph_entity_keys`` (one row per normalised name or alias, primary
key ``(namespace, key)``, so two processes creating the same entity at once
end up with one: the loser of the insert race re-reads the winner's). Deletes
of items cascade through composite foreign keys and triggers (see
:mod:`.schema_graph`). Vector similarity over entities and relations is an
exact scan of a namespace's vectors, as in the SQLite store.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from memory.backends.base import Vector
from memory.backends.graph import (
    Entity,
    GraphDump,
    MemoryLink,
    Mention,
    Relation,
    check_dump,
    cosine_rank,
    relation_text,
)
from memory.backends.postgres.sql import storable, text_list
from memory.errors import ConfigError, InvalidInputError, NotFoundError
from memory.extraction.heuristic import normalise_name
from memory.ids import new_id

if TYPE_CHECKING:
    from memory.backends.postgres.backend import PostgresBackend

__all__ = ["PostgresGraph"]

_ENTITY = "SELECT id, namespace, name, type, aliases, created_at, updated_at FROM graph_entities"
_RELATION = (
    "SELECT r.id, r.namespace, r.subject_id, s.name, r.predicate, r.object_id, o.name, r.valid_at, r.invalid_at, "
    "r.created_at, ARRAY(SELECT memory_id FROM graph_relation_sources x WHERE x.namespace = r.namespace "
    "AND x.relation_id = r.id ORDER BY memory_id) "
    "FROM graph_relations r JOIN graph_entities s ON s.namespace = r.namespace AND s.id = r.subject_id "
    "JOIN graph_entities o ON o.namespace = r.namespace AND o.id = r.object_id"
)


def _array(vector: Vector | None) -> list[float] | None:
    return None if vector is None else [float(x) for x in np.asarray(vector, dtype=np.float32)]


def _vector(model: str | None, values: Any) -> tuple[str | None, Vector | None]:
    if model is None or values is None:
        return None, None
    return model, np.asarray(values, dtype=np.float32)


def _entity(row: Any) -> Entity:
    return Entity(
        id=row[0], namespace=row[1], name=row[2], type=row[3], aliases=tuple(row[4]),
        created_at=row[5], updated_at=row[6],
    )  # fmt: skip


def _relation(row: Any) -> Relation:
    return Relation(
        id=row[0], namespace=row[1], subject_id=row[2], subject=row[3], predicate=row[4], object_id=row[5],
        object=row[6], text=relation_text(row[3], row[4], row[6]), valid_at=row[7], invalid_at=row[8],
        created_at=row[9], source_ids=tuple(row[10] or ()),
    )  # fmt: skip


def _text(*values: str) -> None:
    """Refuse strings PostgreSQL cannot store (NUL, lone surrogates) before anything is written."""
    if not all(storable(v) for v in values):
        raise InvalidInputError("text holds a NUL character or is not valid Unicode")


class PostgresGraph:
    """Graph store over a :class:`PostgresBackend`'s pool."""

    def __init__(self, backend: PostgresBackend) -> None:
        """Bind to ``backend`` (its pool and error mapping)."""
        self._b = backend

    # -- entities ------------------------------------------------------------
    @staticmethod
    def _entity_by_key(conn: Any, namespace: str, key: str) -> Entity | None:
        row = conn.execute(
            f"{_ENTITY} WHERE namespace = %s AND id = "
            "(SELECT entity_id FROM graph_entity_keys WHERE namespace = %s AND key = %s)",
            (namespace, namespace, key),
        ).fetchone()
        return _entity(row) if row else None

    @staticmethod
    def _get(conn: Any, namespace: str, entity_id: str) -> Entity:
        return _entity(conn.execute(f"{_ENTITY} WHERE namespace = %s AND id = %s", (namespace, entity_id)).fetchone())

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
        _text(namespace, name, type, model or "")
        key = normalise_name(name)
        with self._b._tx() as conn:
            entity = self._entity_by_key(conn, namespace, key)
            if entity is None:
                entity_id = new_id()
                conn.execute(
                    "INSERT INTO graph_entities (namespace, id, name, type, model, embedding, created_at, updated_at) "
                    "VALUES (%s, %s, %s, %s, %s, %s::real[], %s, %s)",
                    (namespace, entity_id, name.strip(), type, model if vector is not None else None, _array(vector),
                     now, now),
                )  # fmt: skip
                won = conn.execute(
                    "INSERT INTO graph_entity_keys (namespace, key, entity_id) VALUES (%s, %s, %s) "
                    "ON CONFLICT DO NOTHING RETURNING 1",
                    (namespace, key, entity_id),
                ).fetchone()
                if won is None:  # another writer created it meanwhile: use theirs
                    conn.execute("DELETE FROM graph_entities WHERE namespace = %s AND id = %s", (namespace, entity_id))
                    entity = self._entity_by_key(conn, namespace, key)
                    assert entity is not None
                    entity_id = entity.id
            else:
                entity_id = entity.id
            if entity is not None:
                if entity.type == "thing" and type != "thing":
                    conn.execute(
                        "UPDATE graph_entities SET type = %s, updated_at = %s WHERE namespace = %s AND id = %s",
                        (type, now, namespace, entity_id),
                    )
                if vector is not None and model is not None:
                    conn.execute(
                        "UPDATE graph_entities SET model = %s, embedding = %s::real[] "
                        "WHERE namespace = %s AND id = %s AND embedding IS NULL",
                        (model, _array(vector), namespace, entity_id),
                    )
            return self._get(conn, namespace, entity_id)

    def add_alias(self, namespace: str, entity_id: str, alias: str, now: datetime) -> Entity:
        """Add an alias; see GraphStore."""
        _text(namespace, entity_id, alias)
        key = normalise_name(alias)
        with self._b._tx() as conn:
            row = conn.execute(
                f"{_ENTITY} WHERE namespace = %s AND id = %s FOR UPDATE", (namespace, entity_id)
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no entity {entity_id!r} in namespace {namespace!r}")
            entity = _entity(row)
            if key == normalise_name(entity.name) or key in {normalise_name(a) for a in entity.aliases}:
                return entity
            conn.execute(
                "INSERT INTO graph_entity_keys (namespace, key, entity_id) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (namespace, key, entity_id),
            )
            from psycopg.types.json import Jsonb

            conn.execute(
                "UPDATE graph_entities SET aliases = %s, updated_at = %s WHERE namespace = %s AND id = %s",
                (Jsonb([*entity.aliases, alias.strip()]), now, namespace, entity_id),
            )
            return self._get(conn, namespace, entity_id)

    def get_entities(self, namespace: str, ids: Sequence[str]) -> builtins.list[Entity]:
        """Entities by id; see GraphStore."""
        if not ids or not storable(namespace):
            return []
        with self._b._read() as conn:
            rows = conn.execute(
                f"{_ENTITY} WHERE namespace = %s AND id = ANY(%s::text[])", (namespace, text_list(ids))
            ).fetchall()
        found = {row[0]: _entity(row) for row in rows}
        return [found[i] for i in ids if i in found]

    def find_entities(self, namespace: str, names: Sequence[str]) -> builtins.list[Entity]:
        """Entities by normalised name or alias; see GraphStore."""
        keys = sorted({normalise_name(n) for n in names} - {""})
        if not keys or not storable(namespace):
            return []
        with self._b._read() as conn:
            rows = conn.execute(
                f"{_ENTITY} WHERE namespace = %s AND id IN (SELECT entity_id FROM graph_entity_keys "
                "WHERE namespace = %s AND key = ANY(%s::text[])) ORDER BY id",
                (namespace, namespace, text_list(keys)),
            ).fetchall()
        return [_entity(r) for r in rows]

    def list_entities(self, namespace: str, limit: int, type: str | None = None) -> builtins.list[Entity]:
        """Entities by name; see GraphStore."""
        if not storable(namespace) or (type is not None and not storable(type)):
            return []
        sql = f"{_ENTITY} WHERE namespace = %s" + (" AND type = %s" if type is not None else "")
        params: list[Any] = [namespace] + ([type] if type is not None else [])
        with self._b._read() as conn:
            rows = conn.execute(sql + " ORDER BY lower(name), id LIMIT %s", [*params, max(int(limit), 0)]).fetchall()
        return [_entity(r) for r in rows]

    def search_entities(
        self, namespace: str, model: str, vector: Vector, k: int
    ) -> builtins.list[tuple[Entity, float]]:
        """Entities by cosine similarity (exact); see GraphStore."""
        if not storable(namespace) or not storable(model):
            return []
        with self._b._read() as conn:
            rows = conn.execute(
                "SELECT id, embedding FROM graph_entities WHERE namespace = %s AND model = %s "
                "AND embedding IS NOT NULL",
                (namespace, model),
            ).fetchall()
        ranked = cosine_rank({r[0]: np.asarray(r[1], dtype=np.float32) for r in rows}, vector, k)
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
        _text(namespace, subject_id, predicate, object_id, source_id or "", model or "")
        with self._b._tx() as conn:
            found = conn.execute(
                "SELECT count(*) FROM graph_entities WHERE namespace = %s AND id = ANY(%s::text[])",
                (namespace, [subject_id, object_id]),
            ).fetchone()[0]
            if found != len({subject_id, object_id}):
                raise NotFoundError(f"relation ends {subject_id!r}, {object_id!r} are not entities of {namespace!r}")
            if source_id:
                self._check_memories(conn, namespace, [source_id])
            # one writer per (subject, predicate, object) at a time, so two processes never both create it
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                         ("\x1f".join(("graph", namespace, subject_id, predicate, object_id)),))  # fmt: skip
            row = conn.execute(
                "SELECT id FROM graph_relations WHERE namespace = %s AND subject_id = %s AND predicate = %s "
                "AND object_id = %s AND invalid_at IS NULL ORDER BY created_at, id LIMIT 1",
                (namespace, subject_id, predicate, object_id),
            ).fetchone()
            if row is None:
                relation_id = new_id()
                conn.execute(
                    "INSERT INTO graph_relations (namespace, id, subject_id, predicate, object_id, model, embedding, "
                    "valid_at, invalid_at, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s::real[], %s, NULL, %s)",
                    (namespace, relation_id, subject_id, predicate, object_id, model if vector is not None else None,
                     _array(vector), valid_at or now, now),
                )  # fmt: skip
            else:
                relation_id = row[0]
            if source_id:
                conn.execute(
                    "INSERT INTO graph_relation_sources (namespace, relation_id, memory_id) VALUES (%s, %s, %s) "
                    "ON CONFLICT DO NOTHING",
                    (namespace, relation_id, source_id),
                )
            return _relation(
                conn.execute(f"{_RELATION} WHERE r.namespace = %s AND r.id = %s", (namespace, relation_id)).fetchone()
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
        if not storable(namespace):
            return []
        sql = f"{_RELATION} WHERE r.namespace = %s"
        params: list[Any] = [namespace]
        if entity_ids is not None:
            sql += " AND (r.subject_id = ANY(%s::text[]) OR r.object_id = ANY(%s::text[]))"
            params += [text_list(entity_ids), text_list(entity_ids)]
        if not include_invalid:
            sql += " AND r.invalid_at IS NULL"
        with self._b._read() as conn:
            rows = conn.execute(
                sql + " ORDER BY r.created_at DESC, r.id DESC LIMIT %s", [*params, max(int(limit), 0)]
            ).fetchall()
        return [_relation(r) for r in rows]

    def search_relations(
        self, namespace: str, model: str, vector: Vector, k: int, *, include_invalid: bool = False
    ) -> builtins.list[tuple[Relation, float]]:
        """Relations by cosine similarity (exact); see GraphStore."""
        if not storable(namespace) or not storable(model):
            return []
        live = "" if include_invalid else " AND invalid_at IS NULL"
        with self._b._read() as conn:
            rows = conn.execute(
                "SELECT id, embedding FROM graph_relations WHERE namespace = %s AND model = %s "
                "AND embedding IS NOT NULL" + live,
                (namespace, model),
            ).fetchall()
            ranked = cosine_rank({r[0]: np.asarray(r[1], dtype=np.float32) for r in rows}, vector, k)
            found = {
                row[0]: _relation(row)
                for row in conn.execute(
                    f"{_RELATION} WHERE r.namespace = %s AND r.id = ANY(%s::text[])",
                    (namespace, [i for i, _ in ranked]),
                )
            }
        return [(found[i], s) for i, s in ranked if i in found]

    def invalidate_relations(self, namespace: str, ids: Sequence[str], at: datetime) -> int:
        """Close live relations; see GraphStore."""
        if not ids or not storable(namespace):
            return 0
        with self._b._tx() as conn:
            cur = conn.execute(
                "UPDATE graph_relations SET invalid_at = %s WHERE namespace = %s AND id = ANY(%s::text[]) "
                "AND invalid_at IS NULL",
                (at, namespace, text_list(ids)),
            )
            return max(int(cur.rowcount), 0)

    # -- mentions and links --------------------------------------------------------
    @staticmethod
    def _check_memories(conn: Any, namespace: str, ids: Sequence[str]) -> None:
        wanted = sorted(set(ids))
        found = conn.execute(
            # FOR KEY SHARE: the memories cannot be deleted before this transaction commits
            "SELECT count(*) FROM (SELECT 1 FROM items WHERE namespace = %s AND id = ANY(%s::text[]) "
            "FOR KEY SHARE) AS m",
            (namespace, text_list(wanted)),
        ).fetchone()[0]
        if found != len(wanted):
            raise NotFoundError(f"memory {', '.join(wanted)} not found in namespace {namespace!r}")

    def add_mentions(self, namespace: str, memory_id: str, entity_ids: Sequence[str]) -> None:
        """Record mentions; see GraphStore."""
        _text(namespace, memory_id, *entity_ids)
        with self._b._tx() as conn:
            self._check_memories(conn, namespace, [memory_id])
            wanted = sorted(set(entity_ids))
            known = conn.execute(
                "SELECT count(*) FROM graph_entities WHERE namespace = %s AND id = ANY(%s::text[])",
                (namespace, wanted),
            ).fetchone()[0]
            if known != len(wanted):
                raise NotFoundError(f"some of the entities {list(entity_ids)} are not in namespace {namespace!r}")
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO graph_mentions (namespace, entity_id, memory_id) VALUES (%s, %s, %s) "
                    "ON CONFLICT DO NOTHING",
                    [(namespace, e, memory_id) for e in wanted],
                )

    def mentions(
        self, namespace: str, *, entity_ids: Sequence[str] | None = None, memory_ids: Sequence[str] | None = None
    ) -> builtins.list[Mention]:
        """Mentions of entities or memories; see GraphStore."""
        if not storable(namespace):
            return []
        with self._b._read() as conn:
            rows = conn.execute(
                "SELECT entity_id, memory_id FROM graph_mentions WHERE namespace = %s "
                "AND (entity_id = ANY(%s::text[]) OR memory_id = ANY(%s::text[])) ORDER BY 1, 2",
                (namespace, text_list(entity_ids or []), text_list(memory_ids or [])),
            ).fetchall()
        return [Mention(entity_id=r[0], memory_id=r[1]) for r in rows]

    def link(self, namespace: str, source_id: str, target_id: str, type: str, now: datetime) -> MemoryLink:
        """Link two memories; see GraphStore."""
        _text(namespace, source_id, target_id, type)
        with self._b._tx() as conn:
            self._check_memories(conn, namespace, [source_id, target_id])
            conn.execute(
                "INSERT INTO graph_links (namespace, source_id, target_id, type, created_at) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (namespace, source_id, target_id, type, now),
            )
            row = conn.execute(
                "SELECT created_at FROM graph_links WHERE namespace = %s AND source_id = %s AND target_id = %s "
                "AND type = %s",
                (namespace, source_id, target_id, type),
            ).fetchone()
        return MemoryLink(namespace=namespace, source_id=source_id, target_id=target_id, type=type, created_at=row[0])

    def unlink(self, namespace: str, source_id: str, target_id: str, type: str | None = None) -> int:
        """Remove links; see GraphStore."""
        if not all(storable(v) for v in (namespace, source_id, target_id, type or "")):
            return 0
        sql = "DELETE FROM graph_links WHERE namespace = %s AND source_id = %s AND target_id = %s"
        params: list[Any] = [namespace, source_id, target_id]
        if type is not None:
            sql += " AND type = %s"
            params.append(type)
        with self._b._tx() as conn:
            return max(int(conn.execute(sql, params).rowcount), 0)

    def links(
        self, namespace: str, memory_ids: Sequence[str], types: Sequence[str] | None = None
    ) -> builtins.list[MemoryLink]:
        """Links from or to memories; see GraphStore."""
        if not storable(namespace):
            return []
        sql = (
            "SELECT source_id, target_id, type, created_at FROM graph_links WHERE namespace = %s "
            "AND (source_id = ANY(%s::text[]) OR target_id = ANY(%s::text[]))"
        )
        params: list[Any] = [namespace, text_list(memory_ids), text_list(memory_ids)]
        if types is not None:
            sql += " AND type = ANY(%s::text[])"
            params.append(text_list(types))
        with self._b._read() as conn:
            rows = conn.execute(sql + " ORDER BY created_at, source_id, target_id, type", params).fetchall()
        return [
            MemoryLink(namespace=namespace, source_id=r[0], target_id=r[1], type=r[2], created_at=r[3]) for r in rows
        ]

    def counts(self, namespace: str) -> dict[str, int]:
        """Sizes of the graph of a namespace."""
        tables = (("entities", "graph_entities"), ("relations", "graph_relations"),
                  ("mentions", "graph_mentions"), ("links", "graph_links"))  # fmt: skip
        if not storable(namespace):
            return {name: 0 for name, _ in tables}
        with self._b._read() as conn:
            row = conn.execute(
                "SELECT " + ", ".join(f"(SELECT count(*) FROM {t} WHERE namespace = %s)" for _, t in tables),
                [namespace] * len(tables),
            ).fetchone()
        return {name: int(n) for (name, _), n in zip(tables, row, strict=True)}

    # -- whole namespaces (memory migrate) ------------------------------------------------
    _NAMESPACES = (
        "SELECT namespace FROM graph_entities UNION SELECT namespace FROM graph_relations "
        "UNION SELECT namespace FROM graph_mentions UNION SELECT namespace FROM graph_links"
    )

    def namespaces(self) -> builtins.list[str]:
        """Namespaces holding any entity, relation, mention or link, sorted."""
        with self._b._read() as conn:
            return sorted(str(r[0]) for r in conn.execute(self._NAMESPACES))

    def export_graph(self, namespace: str) -> GraphDump:
        """Everything of a namespace's graph as stored; see GraphStore."""
        if not storable(namespace):
            return GraphDump()
        with self._b._read() as conn:
            entities = [
                (_entity(row), *_vector(row[7], row[8]))
                for row in conn.execute(
                    "SELECT id, namespace, name, type, aliases, created_at, updated_at, model, embedding "
                    "FROM graph_entities WHERE namespace = %s ORDER BY id",
                    (namespace,),
                )
            ]
            vectors = {
                str(r[0]): _vector(r[1], r[2])
                for r in conn.execute(
                    "SELECT id, model, embedding FROM graph_relations WHERE namespace = %s", (namespace,)
                )
            }
            relations = [
                (relation, *vectors[relation.id])
                for relation in map(
                    _relation, conn.execute(f"{_RELATION} WHERE r.namespace = %s ORDER BY r.id", (namespace,))
                )
            ]
            mentions = [
                Mention(entity_id=r[0], memory_id=r[1])
                for r in conn.execute(
                    "SELECT entity_id, memory_id FROM graph_mentions WHERE namespace = %s ORDER BY 1, 2", (namespace,)
                )
            ]
            links = [
                MemoryLink(namespace=namespace, source_id=r[0], target_id=r[1], type=r[2], created_at=r[3])
                for r in conn.execute(
                    "SELECT source_id, target_id, type, created_at FROM graph_links WHERE namespace = %s "
                    "ORDER BY 1, 2, 3",
                    (namespace,),
                )
            ]
        return GraphDump(entities=entities, relations=relations, mentions=mentions, links=links)

    def import_graph(self, namespace: str, dump: GraphDump) -> None:
        """Write a namespace's graph as it is, in one transaction; see GraphStore."""
        check_dump(namespace, dump)
        from psycopg.types.json import Jsonb

        texts = [namespace]
        for e, model, _ in dump.entities:
            texts += [e.id, e.name, e.type, *e.aliases, model or ""]
        for r, model, _ in dump.relations:
            texts += [r.id, r.predicate, *r.source_ids, model or ""]
        texts += [m.memory_id for m in dump.mentions]
        texts += [x for k in dump.links for x in (k.source_id, k.target_id, k.type)]
        _text(*texts)
        memories = {m.memory_id for m in dump.mentions} | {x for r, _, _ in dump.relations for x in r.source_ids}
        memories |= {x for link in dump.links for x in (link.source_id, link.target_id)}
        with self._b._tx() as conn, conn.cursor() as cur:
            if namespace in {str(r[0]) for r in cur.execute(self._NAMESPACES).fetchall()}:
                raise ConfigError(f"the graph of namespace {namespace!r} is not empty; import writes into empty ones")
            if memories:
                self._check_memories(conn, namespace, sorted(memories))
            cur.executemany(
                "INSERT INTO graph_entities (namespace, id, name, type, aliases, model, embedding, created_at, "
                "updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s::real[], %s, %s)",
                [(namespace, e.id, e.name, e.type, Jsonb(list(e.aliases)), model, _array(vector), e.created_at,
                  e.updated_at) for e, model, vector in dump.entities],
            )  # fmt: skip
            keys = [(namespace, normalise_name(e.name), e.id) for e, _, _ in dump.entities]
            keys += [(namespace, normalise_name(a), e.id) for e, _, _ in dump.entities for a in e.aliases]
            cur.executemany(  # names first, then aliases: an alias never takes another entity's name
                "INSERT INTO graph_entity_keys (namespace, key, entity_id) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                keys,
            )
            cur.executemany(
                "INSERT INTO graph_relations (namespace, id, subject_id, predicate, object_id, model, embedding, "
                "valid_at, invalid_at, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s::real[], %s, %s, %s)",
                [(namespace, r.id, r.subject_id, r.predicate, r.object_id, model, _array(vector), r.valid_at,
                  r.invalid_at, r.created_at) for r, model, vector in dump.relations],
            )  # fmt: skip
            cur.executemany(
                "INSERT INTO graph_relation_sources (namespace, relation_id, memory_id) VALUES (%s, %s, %s)",
                [(namespace, r.id, source) for r, _, _ in dump.relations for source in r.source_ids],
            )
            cur.executemany(
                "INSERT INTO graph_mentions (namespace, entity_id, memory_id) VALUES (%s, %s, %s)",
                [(namespace, m.entity_id, m.memory_id) for m in dump.mentions],
            )
            cur.executemany(
                "INSERT INTO graph_links (namespace, source_id, target_id, type, created_at) "
                "VALUES (%s, %s, %s, %s, %s)",
                [(namespace, k.source_id, k.target_id, k.type, k.created_at) for k in dump.links],
            )
