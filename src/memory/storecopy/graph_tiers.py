"""Copy the knowledge graph (``backend.graph``) and the tiers (``backend.tiers``) — part of ``memory migrate``.

Both go namespace by namespace through the protocols' whole-namespace
transfer methods (:meth:`~memory.backends.graph.GraphStore.export_graph` /
``import_graph`` and :meth:`~memory.backends.tiers.TierStore.export_records` /
``import_records``), so any pair of backends copies them with the same ids,
times, validity (invalidated relations too), aliases and vectors. The graph
refers to memories, so it is copied after the items.

:func:`plan_stores` runs before anything is written: a source without the
store is skipped (and the report says so), a destination that lacks a store
the source fills, or that already holds records, is a ConfigError.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memory.backends.base import Backend
from memory.backends.graph import GraphStore
from memory.backends.tiers import TierStore
from memory.errors import ConfigError

__all__ = ["StorePair", "plan_stores", "copy_graph", "copy_tiers", "GraphCounts"]

_LABELS = {"graph": "knowledge graph", "tiers": "tier store"}


@dataclass(frozen=True, slots=True)
class StorePair:
    """The source and destination stores of one kind (``graph`` or ``tiers``) to copy."""

    source: Any
    target: Any
    namespaces: list[str]


@dataclass(frozen=True, slots=True)
class GraphCounts:
    """What a graph copy wrote."""

    entities: int = 0
    relations: int = 0
    mentions: int = 0
    links: int = 0


def plan_stores(src: Backend, dst: Backend, attribute: str, skipped: list[str]) -> StorePair | None:
    """The ``attribute`` stores (``graph`` or ``tiers``) of both backends, or None when there is nothing to copy.

    Appends a note to ``skipped`` when the source has no such store. Raises
    ConfigError when the source holds records and the destination has no
    such store, or already holds records of its own (a copy never merges).
    """
    label = _LABELS[attribute]
    source = src.graph if attribute == "graph" else src.tiers
    if source is None:
        skipped.append(f"{attribute}: the source backend {src.name!r} has no {label}")
        return None
    namespaces = source.namespaces()
    if not namespaces:
        return None
    target = dst.graph if attribute == "graph" else dst.tiers
    if target is None:
        raise ConfigError(f"the source holds a {label} but the destination backend {dst.name!r} has none")
    if target.namespaces():
        raise ConfigError(f"the destination already holds a {label}; migrate copies into an empty store only")
    return StorePair(source, target, namespaces)


def copy_graph(pair: StorePair) -> GraphCounts:
    """Copy every namespace's graph: entities, relations (invalidated too), mentions, links, vectors."""
    source: GraphStore = pair.source
    target: GraphStore = pair.target
    entities = relations = mentions = links = 0
    for namespace in pair.namespaces:
        dump = source.export_graph(namespace)
        target.import_graph(namespace, dump)
        entities += len(dump.entities)
        relations += len(dump.relations)
        mentions += len(dump.mentions)
        links += len(dump.links)
    return GraphCounts(entities, relations, mentions, links)


def copy_tiers(pair: StorePair) -> int:
    """Copy every namespace's tier records (pages, segments, personas, system entries, configs); returns how many."""
    source: TierStore = pair.source
    target: TierStore = pair.target
    return sum(target.import_records(ns, source.export_records(ns)) for ns in pair.namespaces)
