"""Seed 003's graph data flows (issue 23 item 5): the second hop from the top hits, entity vector search."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from memory import Memory
from memory.backends.graph import GraphStore
from memory.embedders.hashing import HashingEmbedder
from memory.retrieval.config import RetrievalConfig
from memory.retrieval.graph import graph_channel, graph_hop


@pytest.fixture
def mem(tmp_db: str, clock: Any) -> Iterator[Memory]:
    m = Memory(tmp_db, embedder=HashingEmbedder(), clock=clock)
    yield m
    m.close()


def _store(mem: Memory) -> GraphStore:
    store = mem.backend.graph
    assert store is not None
    return store


def _world(mem: Memory) -> dict[str, str]:
    """Alice works at Acme (m1); Acme is in Lyon (m2, never naming Alice); Bob's hobby (m3)."""
    ids = dict(
        zip(
            ("m1", "m2", "m3"),
            mem.remember_batch(
                [
                    {"content": "Alice works at Acme as an engineer"},
                    {"content": "Acme has its headquarters in Lyon"},
                    {"content": "Bob plays the cello on weekends"},
                ]
            ),
            strict=True,
        )
    )
    store, now = _store(mem), mem.now()
    unit = np.zeros(HashingEmbedder().dimension, np.float32)
    unit[0] = 1.0
    alice = store.upsert_entity("default", "Alice", "person", now)
    acme = store.upsert_entity("default", "Acme", "organisation", now, vector=unit, model="m")
    lyon = store.upsert_entity("default", "Lyon", "place", now)
    bob = store.upsert_entity("default", "Bob", "person", now)
    store.upsert_relation("default", alice.id, "works at", acme.id, now, source_id=ids["m1"])
    store.upsert_relation("default", acme.id, "based in", lyon.id, now, source_id=ids["m2"])
    store.add_mentions("default", ids["m1"], [alice.id, acme.id])
    store.add_mentions("default", ids["m2"], [acme.id, lyon.id])
    store.add_mentions("default", ids["m3"], [bob.id])
    return ids


def test_second_hop_follows_the_top_hits_entities(mem: Memory) -> None:
    ids = _world(mem)
    flt = mem.filter()
    hop = [h.id for h in graph_hop(mem.backend, _store(mem), flt, [ids["m1"]], 10)]
    assert hop == [ids["m2"]]  # through Acme; m1 itself left out, Bob's never reached
    assert graph_hop(mem.backend, _store(mem), flt, [], 10) == []
    # the recall filter still applies: another namespace sees nothing
    assert graph_hop(mem.backend, _store(mem), mem.filter("other"), [ids["m1"]], 10) == []


def test_recall_with_graph_hop_brings_the_related_memory(mem: Memory) -> None:
    ids = _world(mem)
    config = RetrievalConfig(channels=("lexical", "graph"), weights={"lexical": 1.0, "graph": 0.5}, graph_hop=1)
    hits = mem.recall("Where does Alice work?", retrieval=config)
    assert hits[0].id == ids["m1"]
    assert ids["m2"] in [h.id for h in hits if "hop" in h.channels]
    off = mem.recall("Where does Alice work?", retrieval=config.model_copy(update={"graph_hop": 0}))
    assert all("hop" not in h.channels for h in off)


def test_entity_vectors_seed_the_graph_channel(mem: Memory) -> None:
    ids = _world(mem)
    store, flt = _store(mem), mem.filter()
    near = np.zeros(HashingEmbedder().dimension, np.float32)
    near[0], near[1] = 0.9, 0.1  # close to Acme's vector, no entity named in the text
    args: dict[str, Any] = {"model": "m", "vector": near}
    assert graph_channel(mem.backend, store, flt, "where is the company", ["company"], 10, **args) == []
    found = graph_channel(mem.backend, store, flt, "where is the company", ["company"], 10, entity_vectors=True, **args)
    assert {h.id for h in found} == {ids["m1"], ids["m2"]}
    far = np.zeros(HashingEmbedder().dimension, np.float32)
    far[2] = 1.0  # orthogonal: below the similarity floor
    assert (
        graph_channel(mem.backend, store, flt, "where", ["where"], 10, model="m", vector=far, entity_vectors=True) == []
    )
