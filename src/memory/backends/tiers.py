"""The tiers storage contract (MemoryOS STM/MTM/LPM/system memory) and a document-store base.

A backend that stores tiers exposes a :class:`TierStore` as ``backend.tiers``
(typed on :class:`~memory.backends.base.Backend`; None without tiers). Records are
the frozen models of :mod:`memory.tiers.types`, kept per namespace:

* STM pages, a queue per (agent, user), oldest first;
* MTM segments per (agent, user), each holding its pages;
* object personas per (agent, type, identifier) and one agent persona per agent;
* system memory entries per namespace (shared by its agents);
* configuration overrides by key (``agent:<name>`` or ``type:<name>``).

Rules (``tests/contract/test_tiers.py`` checks them): nothing crosses a
namespace; :meth:`TierStore.write` applies all of a :class:`TierChanges` or
nothing; reading returns what was written, in insertion order (a record
rewritten keeps its place).

:class:`DocumentTierStore` implements the whole protocol over five
primitives (get, list, owners, namespaces, apply) so a backend only stores
JSON documents keyed by (namespace, kind, owner, id); :class:`SQLTierStore`
is those primitives once in SQL for every engine (over its dialect).

For ``memory migrate`` a store also reads and writes a namespace's records
whole, as stored (:meth:`TierStore.export_records` /
:meth:`TierStore.import_records`): the documents of every kind, each kind in
insertion order, configuration overrides included.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from memory.backends.dialect import Dialect
from memory.errors import ConfigError, InvalidInputError
from memory.tiers.types import AgentPersona, DialoguePage, ObjectPersona, Segment, SystemEntry

__all__ = ["TierStore", "TierChanges", "DocumentTierStore", "SQLTierStore", "Doc", "KINDS", "owner_key"]

_SEP = "\x1f"


def owner_key(agent: str, user: str) -> str:
    """The storage owner of an (agent, user) pair."""
    return f"{agent}{_SEP}{user}"


@dataclass
class TierChanges:
    """Records to write and delete together in one transaction."""

    pages: list[DialoguePage] = field(default_factory=list)
    delete_pages: list[DialoguePage] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    delete_segments: list[Segment] = field(default_factory=list)
    objects: list[ObjectPersona] = field(default_factory=list)
    delete_objects: list[ObjectPersona] = field(default_factory=list)
    agents: list[AgentPersona] = field(default_factory=list)
    system: list[SystemEntry] = field(default_factory=list)
    delete_system: list[SystemEntry] = field(default_factory=list)

    def __bool__(self) -> bool:
        return any(getattr(self, name) for name in self.__dataclass_fields__)


@runtime_checkable
class TierStore(Protocol):
    """Storage of the tiers of one backend."""

    def stm(self, namespace: str, agent: str, user: str) -> builtins.list[DialoguePage]:
        """STM pages of (agent, user), oldest first."""
        ...

    def segments(self, namespace: str, agent: str, user: str) -> builtins.list[Segment]:
        """MTM segments of (agent, user), oldest first."""
        ...

    def owners(self, namespace: str) -> builtins.list[tuple[str, str]]:
        """(agent, user) pairs holding STM pages or segments."""
        ...

    def object_personas(self, namespace: str, agent: str) -> builtins.list[ObjectPersona]:
        """Object personas of ``agent``."""
        ...

    def object_persona(self, namespace: str, agent: str, type: str, identifier: str) -> ObjectPersona | None:
        """One object persona, or None."""
        ...

    def agent_persona(self, namespace: str, agent: str) -> AgentPersona | None:
        """The agent persona, or None."""
        ...

    def system_entries(self, namespace: str) -> builtins.list[SystemEntry]:
        """System memory of a namespace."""
        ...

    def write(self, namespace: str, changes: TierChanges) -> None:
        """Apply ``changes`` atomically (records of another namespace are an error)."""
        ...

    def get_config(self, namespace: str, key: str) -> dict[str, Any] | None:
        """Stored configuration overrides under ``key``, or None."""
        ...

    def set_config(self, namespace: str, key: str, values: dict[str, Any]) -> None:
        """Store configuration overrides under ``key`` (replacing earlier ones)."""
        ...

    def configs(self, namespace: str) -> dict[str, dict[str, Any]]:
        """Every stored configuration record of a namespace, by key."""
        ...

    def namespaces(self) -> builtins.list[str]:
        """Namespaces holding any tier record, sorted."""
        ...

    def export_records(self, namespace: str) -> builtins.list[Doc]:
        """Every record of a namespace as stored (kind, owner, id, JSON), each kind in insertion order."""
        ...

    def import_records(self, namespace: str, records: Sequence[Doc]) -> int:
        """Write exported records as they are, in one transaction; returns how many.

        The namespace must hold no tier records (ConfigError otherwise); an
        unknown kind, a document that does not parse as its kind, or a record
        of another namespace raise InvalidInputError, and nothing is written.
        """
        ...


#: A stored document: (kind, owner, id, JSON text).
Doc = tuple[str, str, str, str]

#: The kinds of tier documents and the record model of each (config documents are plain JSON objects).
KINDS: dict[str, type[Any] | None] = {
    "page": DialoguePage, "segment": Segment, "object": ObjectPersona, "agent": AgentPersona,
    "system": SystemEntry, "config": None,
}  # fmt: skip


class DocumentTierStore:
    """:class:`TierStore` over JSON documents; subclasses implement ``_get``, ``_list``, ``_owners``, ``_apply``."""

    # -- primitives (backend-specific) --------------------------------------
    def _get(self, namespace: str, kind: str, owner: str, id: str) -> str | None:
        raise NotImplementedError

    def _list(self, namespace: str, kind: str, owner: str | None) -> builtins.list[tuple[str, str, str]]:
        """(owner, id, data) of a kind, in insertion order; every owner when ``owner`` is None."""
        raise NotImplementedError

    def _owners(self, namespace: str, kinds: Sequence[str]) -> builtins.list[str]:
        raise NotImplementedError

    def _namespaces(self) -> builtins.list[str]:
        """Namespaces holding any document, sorted."""
        raise NotImplementedError

    def _apply(self, namespace: str, puts: Sequence[Doc], deletes: Sequence[tuple[str, str, str]]) -> None:
        raise NotImplementedError

    # -- the protocol ------------------------------------------------------
    def stm(self, namespace: str, agent: str, user: str) -> builtins.list[DialoguePage]:
        """STM pages of (agent, user), oldest first."""
        rows = self._list(namespace, "page", owner_key(agent, user))
        return [DialoguePage.model_validate_json(data) for _, _, data in rows]

    def segments(self, namespace: str, agent: str, user: str) -> builtins.list[Segment]:
        """MTM segments of (agent, user), oldest first."""
        rows = self._list(namespace, "segment", owner_key(agent, user))
        return [Segment.model_validate_json(data) for _, _, data in rows]

    def owners(self, namespace: str) -> builtins.list[tuple[str, str]]:
        """(agent, user) pairs holding STM pages or segments, sorted."""
        pairs = {tuple(o.split(_SEP, 1)) for o in self._owners(namespace, ("page", "segment"))}
        return sorted((a, u) for a, u in pairs)

    def object_personas(self, namespace: str, agent: str) -> builtins.list[ObjectPersona]:
        """Object personas of ``agent``, in creation order."""
        return [ObjectPersona.model_validate_json(d) for _, _, d in self._list(namespace, "object", agent)]

    def object_persona(self, namespace: str, agent: str, type: str, identifier: str) -> ObjectPersona | None:
        """One object persona, or None."""
        data = self._get(namespace, "object", agent, f"{type}{_SEP}{identifier}")
        return ObjectPersona.model_validate_json(data) if data is not None else None

    def agent_persona(self, namespace: str, agent: str) -> AgentPersona | None:
        """The agent persona, or None."""
        data = self._get(namespace, "agent", agent, agent)
        return AgentPersona.model_validate_json(data) if data is not None else None

    def system_entries(self, namespace: str) -> builtins.list[SystemEntry]:
        """System memory of a namespace, in insertion order."""
        return [SystemEntry.model_validate_json(d) for _, _, d in self._list(namespace, "system", "")]

    def write(self, namespace: str, changes: TierChanges) -> None:
        """Apply ``changes`` in one transaction. Raises ValueError for a record of another namespace."""
        records: list[Any] = [
            *changes.pages, *changes.delete_pages, *changes.segments, *changes.delete_segments,
            *changes.objects, *changes.delete_objects, *changes.agents, *changes.system, *changes.delete_system,
        ]  # fmt: skip
        strays = [r for r in records if r.namespace != namespace]
        if strays:
            raise ValueError(f"tier records of namespace {strays[0].namespace!r} written to {namespace!r}")
        puts: list[Doc] = []
        puts += [("page", owner_key(p.agent, p.user), p.id, p.model_dump_json()) for p in changes.pages]
        puts += [("segment", owner_key(s.agent, s.user), s.id, s.model_dump_json()) for s in changes.segments]
        puts += [("object", o.agent, f"{o.type}{_SEP}{o.identifier}", o.model_dump_json()) for o in changes.objects]
        puts += [("agent", a.agent, a.agent, a.model_dump_json()) for a in changes.agents]
        puts += [("system", "", e.id, e.model_dump_json()) for e in changes.system]
        deletes = [("page", owner_key(p.agent, p.user), p.id) for p in changes.delete_pages]
        deletes += [("segment", owner_key(s.agent, s.user), s.id) for s in changes.delete_segments]
        deletes += [("object", o.agent, f"{o.type}{_SEP}{o.identifier}") for o in changes.delete_objects]
        deletes += [("system", "", e.id) for e in changes.delete_system]
        self._apply(namespace, puts, deletes)

    def get_config(self, namespace: str, key: str) -> dict[str, Any] | None:
        """Stored configuration overrides under ``key``, or None."""
        data = self._get(namespace, "config", "", key)
        return json.loads(data) if data is not None else None

    def set_config(self, namespace: str, key: str, values: dict[str, Any]) -> None:
        """Store configuration overrides under ``key`` (replacing earlier ones)."""
        self._apply(namespace, [("config", "", key, json.dumps(values, sort_keys=True))], [])

    def configs(self, namespace: str) -> dict[str, dict[str, Any]]:
        """Every stored configuration record of a namespace, by key."""
        return {key: json.loads(data) for _, key, data in self._list(namespace, "config", "")}

    def namespaces(self) -> builtins.list[str]:
        """Namespaces holding any tier record, sorted."""
        return self._namespaces()

    def export_records(self, namespace: str) -> builtins.list[Doc]:
        """Every record of a namespace as stored, kind by kind, each kind in insertion order."""
        return [(kind, owner, id, data) for kind in KINDS for owner, id, data in self._list(namespace, kind, None)]

    def import_records(self, namespace: str, records: Sequence[Doc]) -> int:
        """Write exported records as they are, in one transaction (see TierStore); returns how many."""
        for kind, owner, id, data in records:
            if kind not in KINDS:
                raise InvalidInputError(f"unknown tier record kind {kind!r}; known: {', '.join(KINDS)}")
            if not all(isinstance(v, str) for v in (owner, id, data)):
                raise InvalidInputError("a tier record is (kind, owner, id, JSON text), all strings")
            model = KINDS[kind]
            try:
                parsed = model.model_validate_json(data) if model is not None else json.loads(data)
            except ValueError as exc:
                raise InvalidInputError(f"tier record {kind} {id!r} does not parse: {exc}") from None
            if model is None and not isinstance(parsed, dict):
                raise InvalidInputError(f"tier configuration {id!r} is not a JSON object")
            if model is not None and parsed.namespace != namespace:
                raise InvalidInputError(f"tier records of namespace {parsed.namespace!r} imported into {namespace!r}")
        if namespace in self._namespaces():
            raise ConfigError(f"namespace {namespace!r} already holds tier records; import writes into empty ones")
        self._apply(namespace, list(records), [])
        return len(records)


class SQLTierStore(DocumentTierStore):
    """Tier documents in one SQL table ``tier_records`` keyed by (namespace, kind, owner, id), any engine.

    Namespace first in the key, like every key of the SQL stores; ``seq`` keeps
    insertion order (SQLite migration ``0010_tiers``, PostgreSQL ``0008_tiers``).
    """

    def __init__(self, dialect: Dialect) -> None:
        """Run on ``dialect``'s transactions."""
        self._d = dialect

    def _get(self, namespace: str, kind: str, owner: str, id: str) -> str | None:
        if not self._d.storable(namespace, kind, owner, id):
            return None
        with self._d.read() as conn:
            rows = self._d.rows(
                conn,
                "SELECT data FROM tier_records WHERE namespace = ? AND kind = ? AND owner = ? AND id = ?",
                (namespace, kind, owner, id),
            )
        return str(rows[0][0]) if rows else None

    def _list(self, namespace: str, kind: str, owner: str | None) -> builtins.list[tuple[str, str, str]]:
        if not self._d.storable(namespace, kind, owner):
            return []
        sql = "SELECT owner, id, data FROM tier_records WHERE namespace = ? AND kind = ?"
        params: list[str] = [namespace, kind]
        if owner is not None:
            sql += " AND owner = ?"
            params.append(owner)
        with self._d.read() as conn:
            rows = self._d.rows(conn, sql + " ORDER BY seq", params)
        return [(str(o), str(i), str(d)) for o, i, d in rows]

    def _owners(self, namespace: str, kinds: Sequence[str]) -> builtins.list[str]:
        if not self._d.storable(namespace):
            return []
        condition, params = self._d.in_list("kind", [k for k in kinds if self._d.storable(k)])
        with self._d.read() as conn:
            rows = self._d.rows(
                conn,
                f"SELECT DISTINCT owner FROM tier_records WHERE namespace = ? AND {condition} ORDER BY owner",
                (namespace, *params),
            )
        return [str(r[0]) for r in rows]

    def _namespaces(self) -> builtins.list[str]:
        with self._d.read() as conn:
            rows = self._d.rows(conn, "SELECT DISTINCT namespace FROM tier_records")
        return sorted(str(r[0]) for r in rows)

    def _apply(self, namespace: str, puts: Sequence[Doc], deletes: Sequence[tuple[str, str, str]]) -> None:
        if not all(self._d.storable(namespace, *doc) for doc in puts):
            raise InvalidInputError("tier records cannot hold NUL characters or unpaired surrogates")
        with self._d.write() as conn, closing(conn.cursor()) as cur:
            if deletes:
                cur.executemany(
                    self._d.sql("DELETE FROM tier_records WHERE namespace = ? AND kind = ? AND owner = ? AND id = ?"),
                    [(namespace, kind, owner, id) for kind, owner, id in deletes],
                )
            if puts:
                cur.executemany(
                    self._d.sql(
                        "INSERT INTO tier_records (namespace, kind, owner, id, data) VALUES (?, ?, ?, ?, ?) "
                        "ON CONFLICT (namespace, kind, owner, id) DO UPDATE SET data = excluded.data"
                    ),
                    [(namespace, kind, owner, id, data) for kind, owner, id, data in puts],
                )
