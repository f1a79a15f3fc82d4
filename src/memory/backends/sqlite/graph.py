"""The SQLite :class:`~memory.backends.graph.GraphStore`: tables ``graph_*`` (migration 0005_graph).

Runs on its backend's connection, lock and transactions. Entity lookup goes
through ``graph_entity_keys`` (one row per normalised name or alias);
deletes of items cascade through foreign keys and triggers (see the
migration). Vector similarity over entities and relations is an exact
numpy scan of a namespace's vectors.
"""

from __future__ import annotations

import builtins
import json
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
from memory.backends.sqlite.sql import json_list
from memory.errors import ConfigError, InvalidInputError, NotFoundError
from memory.extraction.heuristic import normalise_name
from memory.ids import from_epoch, new_id, to_epoch

if TYPE_CHECKING:
    from memory.backends.sqlite.backend import SQLiteBackend

__all__ = ["SQLiteGraph"]

_IDS = "(SELECT value FROM json_each(?))"
_ENTITY = "SELECT id, namespace, name, type, aliases, created_at, updated_at FROM graph_entities"
_RELATION = (
    "SELECT r.id, r.namespace, r.subject_id, s.name, r.predicate, r.object_id, o.name, r.valid_at, r.invalid_at, "
    "r.created_at, (SELECT json_group_array(memory_id) FROM graph_relation_sources WHERE relation_id = r.id) "
    "FROM graph_relations r JOIN graph_entities s ON s.id = r.subject_id JOIN graph_entities o ON o.id = r.object_id"
)


def _blob(vector: Vector | None) -> bytes | None:
    return None if vector is None else np.asarray(vector, dtype=np.float32).tobytes()


def _vector(model: str | None, blob: bytes | None) -> tuple[str | None, Vector | None]:
    if model is None or blob is None:
        return None, None
    return model, np.frombuffer(blob, dtype=np.float32).copy()


def _entity(row: Any) -> Entity:
    return Entity(
        id=row[0], namespace=row[1], name=row[2], type=row[3], aliases=tuple(json.loads(row[4])),
        created_at=from_epoch(row[5]), updated_at=from_epoch(row[6]),
    )  # fmt: skip


def _relation(row: Any) -> Relation:
    return Relation(
        id=row[0], namespace=row[1], subject_id=row[2], subject=row[3], predicate=row[4], object_id=row[5],
        object=row[6], text=relation_text(row[3], row[4], row[6]),
        valid_at=from_epoch(row[7]) if row[7] is not None else None,
        invalid_at=from_epoch(row[8]) if row[8] is not None else None,
        created_at=from_epoch(row[9]), source_ids=tuple(sorted(json.loads(row[10] or "[]"))),
    )  # fmt: skip


class SQLiteGraph:
    """Graph store over a :class:`SQLiteBackend`'s connection."""

    def __init__(self, backend: SQLiteBackend) -> None:
        """Bind to ``backend`` (its lock, connection and error mapping)."""
        self._backend = backend

    # -- entities ------------------------------------------------------------
    def _entity_by_key(self, conn: Any, namespace: str, key: str) -> Entity | None:
        row = conn.execute(
            f"{_ENTITY} WHERE id = (SELECT entity_id FROM graph_entity_keys WHERE namespace = ? AND key = ?)",
            (namespace, key),
        ).fetchone()
        return _entity(row) if row else None

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
        key = normalise_name(name)
        with self._backend._write() as conn:
            entity = self._entity_by_key(conn, namespace, key)
            if entity is None:
                entity_id = new_id()
                conn.execute(
                    "INSERT INTO graph_entities (id, namespace, name, type, aliases, model, embedding, created_at, "
                    "updated_at) VALUES (?, ?, ?, ?, '[]', ?, ?, ?, ?)",
                    (entity_id, namespace, name.strip(), type, model if vector is not None else None, _blob(vector),
                     to_epoch(now), to_epoch(now)),
                )  # fmt: skip
                conn.execute(
                    "INSERT INTO graph_entity_keys (namespace, key, entity_id) VALUES (?, ?, ?)",
                    (namespace, key, entity_id),
                )
            else:
                entity_id = entity.id
                if entity.type == "thing" and type != "thing":
                    conn.execute(
                        "UPDATE graph_entities SET type = ?, updated_at = ? WHERE id = ?",
                        (type, to_epoch(now), entity_id),
                    )
                if vector is not None and model is not None:
                    conn.execute(
                        "UPDATE graph_entities SET model = ?, embedding = ? WHERE id = ? AND embedding IS NULL",
                        (model, _blob(vector), entity_id),
                    )
            return _entity(conn.execute(f"{_ENTITY} WHERE id = ?", (entity_id,)).fetchone())

    def add_alias(self, namespace: str, entity_id: str, alias: str, now: datetime) -> Entity:
        """Add an alias; see GraphStore."""
        key = normalise_name(alias)
        with self._backend._write() as conn:
            row = conn.execute(f"{_ENTITY} WHERE id = ? AND namespace = ?", (entity_id, namespace)).fetchone()
            if row is None:
                raise NotFoundError(f"no entity {entity_id!r} in namespace {namespace!r}")
            entity = _entity(row)
            if key == normalise_name(entity.name) or key in {normalise_name(a) for a in entity.aliases}:
                return entity
            holder = conn.execute(
                "SELECT entity_id FROM graph_entity_keys WHERE namespace = ? AND key = ?", (namespace, key)
            ).fetchone()
            if holder is None:
                conn.execute(
                    "INSERT INTO graph_entity_keys (namespace, key, entity_id) VALUES (?, ?, ?)",
                    (namespace, key, entity_id),
                )
            conn.execute(
                "UPDATE graph_entities SET aliases = ?, updated_at = ? WHERE id = ?",
                (json.dumps([*entity.aliases, alias.strip()]), to_epoch(now), entity_id),
            )
            return _entity(conn.execute(f"{_ENTITY} WHERE id = ?", (entity_id,)).fetchone())

    def get_entities(self, namespace: str, ids: Sequence[str]) -> builtins.list[Entity]:
        """Entities by id; see GraphStore."""
        with self._backend._read() as conn:
            rows = conn.execute(
                f"{_ENTITY} WHERE namespace = ? AND id IN {_IDS}", (namespace, json_list(ids))
            ).fetchall()
        found = {row[0]: _entity(row) for row in rows}
        return [found[i] for i in ids if i in found]

    def find_entities(self, namespace: str, names: Sequence[str]) -> builtins.list[Entity]:
        """Entities by normalised name or alias; see GraphStore."""
        keys = sorted({normalise_name(n) for n in names} - {""})
        with self._backend._read() as conn:
            rows = conn.execute(
                f"{_ENTITY} WHERE id IN "
                f"(SELECT entity_id FROM graph_entity_keys WHERE namespace = ? AND key IN {_IDS}) "
                "ORDER BY id",
                (namespace, json_list(keys)),
            ).fetchall()
        return [_entity(r) for r in rows]

    def list_entities(self, namespace: str, limit: int, type: str | None = None) -> builtins.list[Entity]:
        """Entities by name; see GraphStore."""
        sql = f"{_ENTITY} WHERE namespace = ?" + (" AND type = ?" if type is not None else "")
        params: tuple[Any, ...] = (namespace, type) if type is not None else (namespace,)
        with self._backend._read() as conn:
            rows = conn.execute(sql + " ORDER BY lower(name), id LIMIT ?", (*params, limit)).fetchall()
        return [_entity(r) for r in rows]

    def search_entities(
        self, namespace: str, model: str, vector: Vector, k: int
    ) -> builtins.list[tuple[Entity, float]]:
        """Entities by cosine similarity; see GraphStore."""
        with self._backend._read() as conn:
            rows = conn.execute(
                "SELECT id, embedding FROM graph_entities WHERE namespace = ? AND model = ? AND embedding IS NOT NULL",
                (namespace, model),
            ).fetchall()
        ranked = cosine_rank({r[0]: np.frombuffer(r[1], dtype=np.float32) for r in rows}, vector, k)
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
        with self._backend._write() as conn:
            found = conn.execute(
                "SELECT count(*) FROM graph_entities WHERE namespace = ? AND id IN (?, ?)",
                (namespace, subject_id, object_id),
            ).fetchone()[0]
            if found != len({subject_id, object_id}):
                raise NotFoundError(f"relation ends {subject_id!r}, {object_id!r} are not entities of {namespace!r}")
            row = conn.execute(
                "SELECT id FROM graph_relations WHERE namespace = ? AND subject_id = ? AND predicate = ? "
                "AND object_id = ? AND invalid_at IS NULL",
                (namespace, subject_id, predicate, object_id),
            ).fetchone()
            if row is None:
                relation_id = new_id()
                conn.execute(
                    "INSERT INTO graph_relations (id, namespace, subject_id, predicate, object_id, model, embedding, "
                    "valid_at, invalid_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)",
                    (relation_id, namespace, subject_id, predicate, object_id, model if vector is not None else None,
                     _blob(vector), to_epoch(valid_at or now), to_epoch(now)),
                )  # fmt: skip
            else:
                relation_id = row[0]
            if source_id:
                conn.execute(
                    "INSERT OR IGNORE INTO graph_relation_sources (relation_id, memory_id) VALUES (?, ?)",
                    (relation_id, source_id),
                )
            return _relation(conn.execute(f"{_RELATION} WHERE r.id = ?", (relation_id,)).fetchone())

    def relations(
        self,
        namespace: str,
        entity_ids: Sequence[str] | None = None,
        *,
        include_invalid: bool = False,
        limit: int = 1000,
    ) -> builtins.list[Relation]:
        """Relations touching entities; see GraphStore."""
        sql = f"{_RELATION} WHERE r.namespace = ?"
        params: list[Any] = [namespace]
        if entity_ids is not None:
            sql += f" AND (r.subject_id IN {_IDS} OR r.object_id IN {_IDS})"
            params += [json_list(entity_ids), json_list(entity_ids)]
        if not include_invalid:
            sql += " AND r.invalid_at IS NULL"
        with self._backend._read() as conn:
            rows = conn.execute(sql + " ORDER BY r.created_at DESC, r.id DESC LIMIT ?", (*params, limit)).fetchall()
        return [_relation(r) for r in rows]

    def search_relations(
        self, namespace: str, model: str, vector: Vector, k: int, *, include_invalid: bool = False
    ) -> builtins.list[tuple[Relation, float]]:
        """Relations by cosine similarity; see GraphStore."""
        live = "" if include_invalid else " AND invalid_at IS NULL"
        with self._backend._read() as conn:
            rows = conn.execute(
                "SELECT id, embedding FROM graph_relations WHERE namespace = ? AND model = ? AND embedding IS NOT NULL"
                + live,
                (namespace, model),
            ).fetchall()
            ranked = cosine_rank({r[0]: np.frombuffer(r[1], dtype=np.float32) for r in rows}, vector, k)
            found = {
                row[0]: _relation(row)
                for row in conn.execute(f"{_RELATION} WHERE r.id IN {_IDS}", (json_list([i for i, _ in ranked]),))
            }
        return [(found[i], s) for i, s in ranked if i in found]

    def invalidate_relations(self, namespace: str, ids: Sequence[str], at: datetime) -> int:
        """Close live relations; see GraphStore."""
        with self._backend._write() as conn:
            cursor = conn.execute(
                f"UPDATE graph_relations SET invalid_at = ? "
                f"WHERE namespace = ? AND id IN {_IDS} AND invalid_at IS NULL",
                (to_epoch(at), namespace, json_list(ids)),
            )
            return max(int(cursor.rowcount), 0)

    # -- mentions and links --------------------------------------------------------
    def _check_memories(self, conn: Any, namespace: str, ids: Sequence[str]) -> None:
        wanted = sorted(set(ids))
        found = conn.execute(
            f"SELECT count(*) FROM items WHERE namespace = ? AND id IN {_IDS}", (namespace, json_list(wanted))
        ).fetchone()[0]
        if found != len(wanted):
            raise NotFoundError(f"memory {', '.join(wanted)} not found in namespace {namespace!r}")

    def add_mentions(self, namespace: str, memory_id: str, entity_ids: Sequence[str]) -> None:
        """Record mentions; see GraphStore."""
        with self._backend._write() as conn:
            self._check_memories(conn, namespace, [memory_id])
            known = conn.execute(
                f"SELECT count(*) FROM graph_entities WHERE namespace = ? AND id IN {_IDS}",
                (namespace, json_list(sorted(set(entity_ids)))),
            ).fetchone()[0]
            if known != len(set(entity_ids)):
                raise NotFoundError(f"some of the entities {list(entity_ids)} are not in namespace {namespace!r}")
            conn.executemany(
                "INSERT OR IGNORE INTO graph_mentions (namespace, entity_id, memory_id) VALUES (?, ?, ?)",
                [(namespace, e, memory_id) for e in entity_ids],
            )

    def mentions(
        self, namespace: str, *, entity_ids: Sequence[str] | None = None, memory_ids: Sequence[str] | None = None
    ) -> builtins.list[Mention]:
        """Mentions of entities or memories; see GraphStore."""
        with self._backend._read() as conn:
            rows = conn.execute(
                f"SELECT entity_id, memory_id FROM graph_mentions WHERE namespace = ? AND entity_id IN {_IDS} "
                f"UNION SELECT entity_id, memory_id FROM graph_mentions WHERE namespace = ? AND memory_id IN {_IDS} "
                "ORDER BY 1, 2",
                (namespace, json_list(entity_ids or []), namespace, json_list(memory_ids or [])),
            ).fetchall()
        return [Mention(entity_id=r[0], memory_id=r[1]) for r in rows]

    def link(self, namespace: str, source_id: str, target_id: str, type: str, now: datetime) -> MemoryLink:
        """Link two memories; see GraphStore."""
        with self._backend._write() as conn:
            self._check_memories(conn, namespace, [source_id, target_id])
            conn.execute(
                "INSERT OR IGNORE INTO graph_links (namespace, source_id, target_id, type, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (namespace, source_id, target_id, type, to_epoch(now)),
            )
            row = conn.execute(
                "SELECT created_at FROM graph_links WHERE source_id = ? AND target_id = ? AND type = ?",
                (source_id, target_id, type),
            ).fetchone()
        return MemoryLink(
            namespace=namespace, source_id=source_id, target_id=target_id, type=type, created_at=from_epoch(row[0])
        )

    def unlink(self, namespace: str, source_id: str, target_id: str, type: str | None = None) -> int:
        """Remove links; see GraphStore."""
        sql = "DELETE FROM graph_links WHERE namespace = ? AND source_id = ? AND target_id = ?"
        params: tuple[Any, ...] = (namespace, source_id, target_id)
        if type is not None:
            sql, params = sql + " AND type = ?", (*params, type)
        with self._backend._write() as conn:
            return max(int(conn.execute(sql, params).rowcount), 0)

    def links(
        self, namespace: str, memory_ids: Sequence[str], types: Sequence[str] | None = None
    ) -> builtins.list[MemoryLink]:
        """Links from or to memories; see GraphStore."""
        sql = (
            f"SELECT source_id, target_id, type, created_at FROM graph_links WHERE namespace = ? "
            f"AND (source_id IN {_IDS} OR target_id IN {_IDS})"
        )
        params: list[Any] = [namespace, json_list(memory_ids), json_list(memory_ids)]
        if types is not None:
            sql += f" AND type IN {_IDS}"
            params.append(json_list(types))
        with self._backend._read() as conn:
            rows = conn.execute(sql + " ORDER BY created_at, source_id, target_id, type", params).fetchall()
        return [
            MemoryLink(namespace=namespace, source_id=r[0], target_id=r[1], type=r[2], created_at=from_epoch(r[3]))
            for r in rows
        ]

    def counts(self, namespace: str) -> dict[str, int]:
        """Sizes of the graph of a namespace."""
        with self._backend._read() as conn:
            return {
                name: int(conn.execute(f"SELECT count(*) FROM {table} WHERE namespace = ?", (namespace,)).fetchone()[0])
                for name, table in (
                    ("entities", "graph_entities"), ("relations", "graph_relations"),
                    ("mentions", "graph_mentions"), ("links", "graph_links"),
                )
            }  # fmt: skip

    # -- whole namespaces (memory migrate) ------------------------------------------------
    def namespaces(self) -> builtins.list[str]:
        """Namespaces holding any entity, relation, mention or link, sorted."""
        with self._backend._read() as conn:
            return sorted(self._namespaces_in(conn))

    def export_graph(self, namespace: str) -> GraphDump:
        """Everything of a namespace's graph as stored; see GraphStore."""
        with self._backend._read() as conn:
            entities = [
                (_entity(row), *_vector(row[7], row[8]))
                for row in conn.execute(
                    "SELECT id, namespace, name, type, aliases, created_at, updated_at, model, embedding "
                    "FROM graph_entities WHERE namespace = ? ORDER BY id",
                    (namespace,),
                )
            ]
            vectors = {
                str(r[0]): _vector(r[1], r[2])
                for r in conn.execute(
                    "SELECT id, model, embedding FROM graph_relations WHERE namespace = ?", (namespace,)
                )
            }
            relations = [
                (relation, *vectors[relation.id])
                for relation in map(
                    _relation, conn.execute(f"{_RELATION} WHERE r.namespace = ? ORDER BY r.id", (namespace,))
                )
            ]
            mentions = [
                Mention(entity_id=r[0], memory_id=r[1])
                for r in conn.execute(
                    "SELECT entity_id, memory_id FROM graph_mentions WHERE namespace = ? ORDER BY 1, 2", (namespace,)
                )
            ]
            links = [
                MemoryLink(namespace=namespace, source_id=r[0], target_id=r[1], type=r[2], created_at=from_epoch(r[3]))
                for r in conn.execute(
                    "SELECT source_id, target_id, type, created_at FROM graph_links WHERE namespace = ? "
                    "ORDER BY 1, 2, 3",
                    (namespace,),
                )
            ]
        return GraphDump(entities=entities, relations=relations, mentions=mentions, links=links)

    def import_graph(self, namespace: str, dump: GraphDump) -> None:
        """Write a namespace's graph as it is, in one transaction; see GraphStore."""
        check_dump(namespace, dump)
        memories = {m.memory_id for m in dump.mentions} | {x for r, _, _ in dump.relations for x in r.source_ids}
        memories |= {x for link in dump.links for x in (link.source_id, link.target_id)}
        with self._backend._write() as conn:
            if namespace in self._namespaces_in(conn):
                raise ConfigError(f"the graph of namespace {namespace!r} is not empty; import writes into empty ones")
            ids = [e.id for e, _, _ in dump.entities] + [r.id for r, _, _ in dump.relations]
            taken = conn.execute(
                f"SELECT id FROM graph_entities WHERE id IN {_IDS} UNION SELECT id FROM graph_relations "
                f"WHERE id IN {_IDS} LIMIT 3",
                (json_list(ids), json_list(ids)),
            ).fetchall()
            if taken:
                raise InvalidInputError(f"graph ids already used in another namespace: {[r[0] for r in taken]}")
            if memories:
                self._check_memories(conn, namespace, sorted(memories))
            conn.executemany(
                "INSERT INTO graph_entities (id, namespace, name, type, aliases, model, embedding, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(e.id, namespace, e.name, e.type, json.dumps(list(e.aliases)), model, _blob(vector),
                  to_epoch(e.created_at), to_epoch(e.updated_at)) for e, model, vector in dump.entities],
            )  # fmt: skip
            keys = [(namespace, normalise_name(e.name), e.id) for e, _, _ in dump.entities]
            keys += [(namespace, normalise_name(a), e.id) for e, _, _ in dump.entities for a in e.aliases]
            conn.executemany(  # names first, then aliases: an alias never takes another entity's name
                "INSERT OR IGNORE INTO graph_entity_keys (namespace, key, entity_id) VALUES (?, ?, ?)", keys
            )
            conn.executemany(
                "INSERT INTO graph_relations (id, namespace, subject_id, predicate, object_id, model, embedding, "
                "valid_at, invalid_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(r.id, namespace, r.subject_id, r.predicate, r.object_id, model, _blob(vector),
                  to_epoch(r.valid_at) if r.valid_at is not None else None,
                  to_epoch(r.invalid_at) if r.invalid_at is not None else None, to_epoch(r.created_at))
                 for r, model, vector in dump.relations],
            )  # fmt: skip
            conn.executemany(
                "INSERT INTO graph_relation_sources (relation_id, memory_id) VALUES (?, ?)",
                [(r.id, source) for r, _, _ in dump.relations for source in r.source_ids],
            )
            conn.executemany(
                "INSERT INTO graph_mentions (namespace, entity_id, memory_id) VALUES (?, ?, ?)",
                [(namespace, m.entity_id, m.memory_id) for m in dump.mentions],
            )
            conn.executemany(
                "INSERT INTO graph_links (namespace, source_id, target_id, type, created_at) VALUES (?, ?, ?, ?, ?)",
                [(namespace, k.source_id, k.target_id, k.type, to_epoch(k.created_at)) for k in dump.links],
            )

    @staticmethod
    def _namespaces_in(conn: Any) -> set[str]:
        rows = conn.execute(
            "SELECT namespace FROM graph_entities UNION SELECT namespace FROM graph_relations "
            "UNION SELECT namespace FROM graph_mentions UNION SELECT namespace FROM graph_links"
        ).fetchall()
        return {str(r[0]) for r in rows}
