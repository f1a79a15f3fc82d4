"""The graph recall channel: entities in the query → relations and mentions → memories (seed 003).

Both of seed 003's data flows, as one ranked channel:

* entities named in the query (capitalised spans, known names and aliases,
  and single query words that are entity names) → the memories mentioning
  them and the sources of their relations, each weighted by the entity's
  rarity (``1 / log2(1 + memories mentioning it)``), so a name found in
  every memory counts little;
* the query's embedding → the most similar relation texts ("{x} {rel} {y}")
  → their source memories, weighted by cosine similarity.

Scores add up per memory; the candidates are then narrowed by the recall
filter in the backend (scope, sensitivity, TTL, validity), so the channel can
never return what the other channels could not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from memory.backends.base import Backend, ChannelHit, Vector
from memory.backends.graph import GraphStore
from memory.extraction.heuristic import entities as find_entity_spans
from memory.filters import Filter

__all__ = ["graph_channel", "RELATION_MIN_SIMILARITY"]

#: Relations less similar than this to the query are not followed.
RELATION_MIN_SIMILARITY = 0.5
_RELATIONS_FOLLOWED = 10


def graph_channel(
    backend: Backend,
    store: GraphStore,
    flt: Filter,
    text: str,
    terms: Sequence[str],
    k: int,
    *,
    model: str | None = None,
    vector: Vector | None = None,
) -> list[ChannelHit]:
    """Memories reached from the query through the graph, best first (at most ``k``)."""
    ns = flt.namespace
    names = [e.name for e in find_entity_spans(text)] + list(terms)
    scores: dict[str, float] = {}
    for entity in store.find_entities(ns, names):
        mentioned = [m.memory_id for m in store.mentions(ns, entity_ids=[entity.id])]
        sources = [s for r in store.relations(ns, [entity.id], limit=200) for s in r.source_ids]
        reached = set(mentioned) | set(sources)
        if not reached:
            continue
        weight = 1.0 / math.log2(1.0 + len(reached))
        for memory_id in reached:
            scores[memory_id] = scores.get(memory_id, 0.0) + weight
    if vector is not None and model is not None:
        for relation, similarity in store.search_relations(ns, model, vector, _RELATIONS_FOLLOWED):
            if similarity < RELATION_MIN_SIMILARITY:
                break
            for memory_id in relation.source_ids:
                scores[memory_id] = scores.get(memory_id, 0.0) + similarity
    if not scores:
        return []
    ranked = sorted(scores, key=lambda i: (-scores[i], i))
    if flt.ids is not None:
        ranked = [i for i in ranked if i in set(flt.ids)]
    ranked = ranked[: k * 4]
    allowed = set(backend.find_ids(flt.model_copy(update={"ids": tuple(ranked)}), limit=len(ranked)))
    return [ChannelHit(i, scores[i]) for i in ranked if i in allowed][:k]
