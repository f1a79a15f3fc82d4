"""The graph recall channel: entities in the query → relations and mentions → memories (seed 003).

Both of seed 003's data flows, as one ranked channel:

* entities named in the query (capitalised spans, known names and aliases,
  and single query words that are entity names) → the memories mentioning
  them and the sources of their relations, each weighted by the entity's
  rarity (``1 / log2(1 + memories mentioning it)``), so a name found in
  every memory counts little;
* the query's embedding → the most similar relation texts ("{x} {rel} {y}")
  → their source memories, weighted by cosine similarity.

Seed 003 as written, both off by default (``RetrievalConfig.graph_hop`` and
``graph_entity_vectors``; measured in the README's "Knowledge graph"):

* data flow 1, :func:`graph_hop`: the entities mentioned by the top fused hits
  (not only the query's) seed a second search of relations and mentions;
* data flow 2: entities whose vector is near the query's (``search_entities``)
  seed the channel beside the ones named in the query.

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

__all__ = ["ENTITY_MIN_SIMILARITY", "RELATION_MIN_SIMILARITY", "graph_channel", "graph_hop"]

#: Relations less similar than this to the query are not followed.
RELATION_MIN_SIMILARITY = 0.5
_RELATIONS_FOLLOWED = 10
#: Entities less similar than this to the query (by their name vector) are not followed.
ENTITY_MIN_SIMILARITY = 0.5
_ENTITIES_FOLLOWED = 5
#: Mentions of one seed entity followed: those of the newest memories. An entity named in more memories than
#: this (the user's own name, a daily place) carries little weight (``1 / log2(1 + n)``) and its memories tie;
#: reading them all cost every recall naming it 100 ms at 20,000 mentions (7 ms without the channel). The
#: entity's relations are bounded the same way (:data:`RELATIONS_OF_A_SEED`).
MENTIONS_FOLLOWED = 1_000
#: Relations of one seed entity followed: its newest live ones.
RELATIONS_OF_A_SEED = 200


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
    entity_vectors: bool = False,
) -> list[ChannelHit]:
    """Memories reached from the query through the graph, best first (at most ``k``).

    With ``entity_vectors`` the entities whose vector is most similar to the query's
    (``search_entities``, at least :data:`ENTITY_MIN_SIMILARITY`) seed it too, weighted by similarity.
    """
    ns = flt.namespace
    if not store.has_entities(ns):  # no extraction ran here: nothing to reach, and no query to parse for names
        return []
    names = [e.name for e in find_entity_spans(text)] + list(terms)
    seeds = {e.id: 1.0 for e in store.find_entities(ns, names)}
    if entity_vectors and vector is not None and model is not None:
        for entity, similarity in store.search_entities(ns, model, vector, _ENTITIES_FOLLOWED):
            if similarity < ENTITY_MIN_SIMILARITY:
                break
            seeds[entity.id] = max(seeds.get(entity.id, 0.0), similarity)
    scores = _reach(store, ns, seeds)
    if vector is not None and model is not None:
        for relation, similarity in store.search_relations(ns, model, vector, _RELATIONS_FOLLOWED):
            if similarity < RELATION_MIN_SIMILARITY:
                break
            for memory_id in relation.source_ids:
                scores[memory_id] = scores.get(memory_id, 0.0) + similarity
    return _allowed(backend, flt, scores, k)


def graph_hop(
    backend: Backend, store: GraphStore, flt: Filter, top: Sequence[str], k: int, *, exclude: Sequence[str] = ()
) -> list[ChannelHit]:
    """Seed 003 data flow 1: memories reached from the entities mentioned in the ``top`` hits, best first.

    The entities of the top-ranked memories (not only the query's) seed a second
    search of relations and mentions, weighted by rarity as in :func:`graph_channel`;
    the ``top`` memories themselves and ``exclude`` are left out.
    """
    ns = flt.namespace
    if not top:
        return []
    seeds = {m.entity_id: 1.0 for m in store.mentions(ns, memory_ids=list(top))}
    scores = _reach(store, ns, seeds)
    for memory_id in (*top, *exclude):
        scores.pop(memory_id, None)
    return _allowed(backend, flt, scores, k)


def _reach(store: GraphStore, ns: str, seeds: dict[str, float]) -> dict[str, float]:
    """Memory id -> score: each seed entity's mentions and relation sources, weighted by rarity × seed weight."""
    scores: dict[str, float] = {}
    for entity_id, seed in seeds.items():
        reached = store.memories_reached(ns, entity_id, mentions=MENTIONS_FOLLOWED, relations=RELATIONS_OF_A_SEED)
        if not reached:
            continue
        weight = seed / math.log2(1.0 + len(reached))
        for memory_id in reached:
            scores[memory_id] = scores.get(memory_id, 0.0) + weight
    return scores


def _allowed(backend: Backend, flt: Filter, scores: dict[str, float], k: int) -> list[ChannelHit]:
    """The best ``k`` of ``scores`` that pass the recall filter (scope, sensitivity, TTL, validity)."""
    if not scores:
        return []
    ranked = sorted(scores, key=lambda i: (-scores[i], i))
    if flt.ids is not None:
        ranked = [i for i in ranked if i in set(flt.ids)]
    ranked = ranked[: k * 4]
    allowed = set(backend.find_ids(flt.model_copy(update={"ids": tuple(ranked)}), limit=len(ranked)))
    return [ChannelHit(i, scores[i]) for i in ranked if i in allowed][:k]
