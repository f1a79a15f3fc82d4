"""GraphStore contract and the graph facade, on every backend (skipped where ``backend.graph`` is missing)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import numpy as np
import pytest

from memory import Memory
from memory.backends.base import Backend, NewRecord
from memory.backends.graph import GraphDump, GraphStore, Mention
from memory.errors import ConfigError, GraphUnavailableError, InvalidInputError, NotFoundError
from memory.records import ledger_entry
from memory.retrieval.config import RetrievalConfig


def _graph(backend: Backend) -> GraphStore:
    store = getattr(backend, "graph", None)
    if store is None:
        pytest.skip(f"{backend.name} backend does not expose the GraphStore (backend.graph) yet")
    assert isinstance(store, GraphStore)
    return store


@pytest.fixture
def graph_mem(mem: Memory) -> Memory:
    _graph(mem.backend)
    return mem


def test_entities_merge_by_normalised_name_and_alias(graph_mem: Memory) -> None:
    store, now = graph_mem.graph.store, graph_mem.now()
    alice = store.upsert_entity("default", "Alice", "thing", now)
    again = store.upsert_entity("default", "  the ALICE ", "person", now)
    assert again.id == alice.id and again.type == "person"  # 'thing' takes the specific type
    store.add_alias("default", alice.id, "Ally", now)
    assert [e.id for e in store.find_entities("default", ["ally"])] == [alice.id]
    assert store.upsert_entity("default", "Ally", "person", now).id == alice.id
    assert store.get_entities("default", [alice.id])[0].aliases == ("Ally",)
    assert store.find_entities("other", ["Alice"]) == []
    with pytest.raises(NotFoundError):
        store.add_alias("other", alice.id, "A", now)


def test_entity_vector_search(graph_mem: Memory) -> None:
    store, now = graph_mem.graph.store, graph_mem.now()
    a = store.upsert_entity("default", "A", "thing", now, vector=np.array([1, 0, 0], np.float32), model="m")
    store.upsert_entity("default", "B", "thing", now, vector=np.array([0, 1, 0], np.float32), model="m")
    store.upsert_entity("other", "C", "thing", now, vector=np.array([1, 0, 0], np.float32), model="m")
    ranked = store.search_entities("default", "m", np.array([0.9, 0.1, 0], np.float32), 5)
    assert [e.name for e, _ in ranked] == ["A", "B"] and ranked[0][0].id == a.id
    assert ranked[0][1] == pytest.approx(0.9939, abs=1e-3)


def test_vector_searches_see_every_change_since_the_last_search(
    graph_mem: Memory, open_backend: Callable[[], Backend]
) -> None:
    """Searches keep a namespace's vectors in process while nothing changed them, from any connection."""
    mem = graph_mem
    said, other_said = mem.remember("Alice works at Acme"), mem.remember("Alice visited Lisbon")
    store, now = mem.graph.store, mem.now()
    alice = store.upsert_entity("default", "Alice", "person", now, vector=np.array([1, 0, 0], np.float32), model="m")
    acme = store.upsert_entity("default", "Acme", "organisation", now)  # no vector yet
    lisbon = store.upsert_entity("default", "Lisbon", "place", now)
    query = np.array([0, 1, 0.1], np.float32)
    works = store.upsert_relation(
        "default", alice.id, "works at", acme.id, now, source_id=said, vector=np.array([0, 1, 0], np.float32), model="m"
    )
    assert [r.id for r, _ in store.search_relations("default", "m", query, 5)] == [works.id]
    assert [e.id for e, _ in store.search_entities("default", "m", query, 5)] == [alice.id]
    second = open_backend()  # another connection (another process, for the store) writes
    try:
        other = _graph(second)
        visited = other.upsert_relation(
            "default", alice.id, "visited", lisbon.id, now, source_id=other_said,
            vector=np.array([0, 1, 0.1], np.float32), model="m",
        )  # fmt: skip
        assert [r.id for r, _ in store.search_relations("default", "m", query, 5)] == [visited.id, works.id]
        other.upsert_entity("default", "Acme", "organisation", now, vector=np.array([0, 1, 0], np.float32), model="m")
        assert [e.id for e, _ in store.search_entities("default", "m", query, 5)] == [acme.id, alice.id]
        assert other.invalidate_relations("default", [visited.id], now) == 1
        assert [r.id for r, _ in store.search_relations("default", "m", query, 5)] == [works.id]
        ranked = store.search_relations("default", "m", query, 5, include_invalid=True)
        assert [r.id for r, _ in ranked] == [visited.id, works.id]
    finally:
        second.close()
    mem.forget([said])  # the relation goes with its only source (a trigger deletes it)
    assert [r.id for r, _ in store.search_relations("default", "m", query, 5, include_invalid=True)] == [visited.id]
    assert store.search_relations("default", "m", query, 5) == []


def test_relations_collect_sources_and_close(graph_mem: Memory) -> None:
    mem = graph_mem
    m1, m2 = mem.remember("Alice works at Acme"), mem.remember("Alice is employed by Acme")
    store, now = mem.graph.store, mem.now()
    alice = store.upsert_entity("default", "Alice", "person", now)
    acme = store.upsert_entity("default", "Acme", "organisation", now)
    first = store.upsert_relation("default", alice.id, "works at", acme.id, now, source_id=m1)
    second = store.upsert_relation("default", alice.id, "works at", acme.id, now, source_id=m2)
    assert first.id == second.id and set(second.source_ids) == {m1, m2}
    assert second.text == "Alice works at Acme"
    assert store.invalidate_relations("default", [first.id], now) == 1
    assert store.relations("default", [alice.id]) == []
    (closed,) = store.relations("default", [alice.id], include_invalid=True)
    assert closed.invalid_at == now
    third = store.upsert_relation("default", alice.id, "works at", acme.id, now, source_id=m1)
    assert third.id != first.id  # a closed relation is history; the fact holds again as a new one
    with pytest.raises(NotFoundError):
        store.upsert_relation("other", alice.id, "works at", acme.id, now)


def test_delete_cascades_to_what_the_memory_alone_supports(graph_mem: Memory) -> None:
    mem = graph_mem
    only = mem.remember("Alice moved to Berlin")
    shared_a = mem.remember("Alice works at Acme")
    shared_b = mem.remember("Acme employs Alice")
    other = mem.remember("Bob likes tea")
    store, now = mem.graph.store, mem.now()
    alice = store.upsert_entity("default", "Alice", "person", now)
    berlin = store.upsert_entity("default", "Berlin", "place", now)
    acme = store.upsert_entity("default", "Acme", "organisation", now)
    bob = store.upsert_entity("default", "Bob", "person", now)
    moved = store.upsert_relation("default", alice.id, "moved to", berlin.id, now, source_id=only)
    works = store.upsert_relation("default", alice.id, "works at", acme.id, now, source_id=shared_a)
    store.upsert_relation("default", alice.id, "works at", acme.id, now, source_id=shared_b)
    store.add_mentions("default", only, [alice.id, berlin.id])
    store.add_mentions("default", other, [bob.id])
    mem.link(only, other, "relates_to")
    mem.link(shared_a, only, "follows")
    assert store.counts("default") == {"entities": 4, "relations": 2, "mentions": 3, "links": 2}

    mem.forget([only, shared_a])

    remaining = {r.id: r for r in store.relations("default", include_invalid=True)}
    assert moved.id not in remaining  # supported by the deleted memory alone
    assert remaining[works.id].source_ids == (shared_b,)  # kept, minus the deleted source
    assert store.find_entities("default", ["Berlin"]) == []  # nothing mentions or relates it any more
    assert {e.name for e in store.list_entities("default", 10)} == {"Alice", "Acme", "Bob"}
    assert store.links("default", [only, other, shared_a]) == []
    assert store.mentions("default", memory_ids=[only]) == []
    assert store.counts("default") == {"entities": 3, "relations": 1, "mentions": 1, "links": 0}


def test_namespaces_are_isolated(graph_mem: Memory) -> None:
    mem = graph_mem
    a = mem.remember("Alice moved to Berlin", namespace="ns1", extract="inline")
    mem.remember("Alice moved to Paris", namespace="ns2", extract="inline")
    assert [r.text for r in mem.graph.facts_about("Alice", namespace="ns1")] == ["Alice moved to Berlin"]
    assert [r.text for r in mem.graph.facts_about("Alice", namespace="ns2")] == ["Alice moved to Paris"]
    assert mem.graph.facts_about("Alice") == []  # the default namespace has no graph
    with pytest.raises(NotFoundError):
        mem.graph.entity("Alice")
    with pytest.raises(NotFoundError):
        mem.link(a, a, namespace="ns2")
    mem.forget_all(namespace="ns1")
    assert mem.graph.counts(namespace="ns1") == {"entities": 0, "relations": 0, "mentions": 0, "links": 0}
    assert mem.graph.counts(namespace="ns2")["relations"] == 1


def test_facts_about_is_scoped_to_the_user_asking(graph_mem: Memory) -> None:
    mem = graph_mem
    mem.remember("Alice moved to Berlin.", user="u1", kind="conversation", extract=True)
    mem.remember("Alice moved to Paris.", user="u2", kind="conversation", extract=True)
    assert {r.object for r in mem.graph.facts_about("Alice")} == {"Berlin", "Paris"}
    assert [r.object for r in mem.graph.facts_about("Alice", user="u1")] == ["Berlin"]
    assert [r.object for r in mem.graph.facts_about("Alice", user="u2")] == ["Paris"]
    assert mem.graph.facts_about("Alice", user="u3") == []
    assert mem.graph.facts_about("Nobody", user="u1") == []


def test_link_validates_its_input(graph_mem: Memory) -> None:
    mem = graph_mem
    a, b = mem.remember("first"), mem.remember("second")
    link = mem.link(a, b, "relates_to")
    assert (link.source_id, link.target_id, link.type) == (a, b, "relates_to")
    assert mem.link(a, b, "relates_to") == link  # idempotent
    with pytest.raises(NotFoundError):
        mem.link(a, "missing")
    for bad in ("", " ", "\x85", "a\x00b", "a\nb", "x" * 65, 5):  # blank, control characters (PostgreSQL: NUL), long
        with pytest.raises(InvalidInputError, match="link type"):
            mem.link(a, b, bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        mem.link(a, a)
    assert [link.type for link in mem.graph.links(b)] == ["relates_to"]
    assert mem.graph.unlink(a, b) == 1 and mem.graph.links(b) == []


def test_paths_neighbors_and_query_graph(graph_mem: Memory) -> None:
    mem = graph_mem
    mem.graph.store.upsert_entity("default", "Acme", "organisation", mem.now())  # typed before extraction
    for text in ["Alice works at Acme.", "Bob works at Acme.", "Bob lives in Paris.", "Carol lives in Rome."]:
        mem.remember(text, extract="inline")
    (path,) = mem.graph.paths("Alice", "Paris")
    assert [r.text for r in path] == ["Alice works at Acme", "Bob works at Acme", "Bob lives in Paris"]
    assert mem.graph.paths("Alice", "Paris", max_depth=2) == []
    assert mem.graph.paths("Alice", "Rome") == []
    assert {e.name for e in mem.graph.neighbors("Alice")} == {"Acme"}
    assert {e.name for e in mem.graph.neighbors("Alice", depth=2)} == {"Acme", "Bob"}
    result = mem.graph.query_graph("Bob", depth=1, predicates=["lives in"])
    assert [r.text for r in result.relations] == ["Bob lives in Paris"] and len(result.memory_ids) == 1
    typed = mem.graph.query_graph("Alice", depth=3, entity_types=["person", "organisation"])
    assert "Paris" not in {e.name for e in typed.entities} and "Bob" in {e.name for e in typed.entities}
    everything = mem.graph.query_graph(depth=1)
    assert len(everything.relations) == 4
    with pytest.raises(InvalidInputError):
        mem.graph.query_graph("Alice", depth=9)
    with pytest.raises(NotFoundError):
        mem.graph.neighbors("Nobody")


def test_has_entities_answers_per_namespace_until_the_last_entity_goes(graph_mem: Memory) -> None:
    mem = graph_mem
    store = mem.graph.store
    assert not store.has_entities("default") and not store.has_entities("ns1")
    only = mem.remember("Alice moved to Berlin", namespace="ns1", extract="inline")
    assert store.has_entities("ns1") and not store.has_entities("default")
    mem.forget([only], namespace="ns1")  # nothing mentions or relates its entities any more
    assert not store.has_entities("ns1")


def test_a_namespace_without_entities_skips_the_graph_lookups(
    graph_mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = graph_mem
    plain = mem.remember("Alice moved to Berlin.", namespace="plain")
    berlin = mem.remember("Alice moved to Berlin.", namespace="graph", extract="inline")
    store = mem.graph.store
    looked_up: list[str] = []
    for name in ("find_entities", "search_relations"):
        original = getattr(type(store), name)

        def spy(self: GraphStore, namespace: str, *args: object, _original: object = original) -> object:
            looked_up.append(namespace)
            return _original(self, namespace, *args)  # type: ignore[operator]

        monkeypatch.setattr(type(store), name, spy)
    assert [h.id for h in mem.recall("Alice", namespace="plain")] == [plain]
    assert looked_up == []  # no entity: the channel read nothing but the one probe
    hits = mem.recall("Alice", namespace="graph")
    assert [h.id for h in hits] == [berlin] and "graph" in hits[0].channels
    assert set(looked_up) == {"graph"}


def test_graph_channel_finds_memories_through_entities_and_respects_the_filter(graph_mem: Memory) -> None:
    mem = graph_mem
    berlin = mem.remember("Alice moved to Berlin.", user="u1", extract="inline")
    mem.remember("Alice secretly moved to Oslo.", user="u1", sensitivity="secret", extract="inline")
    mem.remember("Alice moved to Paris.", user="u2", extract="inline", namespace="elsewhere")
    hits = mem.recall("Alice", user="u1")  # the graph channel is on by default
    assert [h.id for h in hits] == [berlin]
    assert "graph" in hits[0].channels
    assert "graph" not in mem.recall("Alice", user="u1", retrieval="nograph")[0].channels
    assert all("Oslo" not in h.content for h in mem.recall("where did Alice go"))


def test_an_entity_named_everywhere_is_followed_through_its_newest_mentions(
    graph_mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.retrieval import graph as graph_channel

    mem = graph_mem
    store, now = mem.graph.store, mem.now()
    alice = store.upsert_entity("default", "Alice", "person", now)
    said = [mem.remember(f"Alice noted item {n}") for n in range(6)]
    for memory_id in said:
        store.add_mentions("default", memory_id, [alice.id])
    everything = store.mentions("default", entity_ids=[alice.id])
    assert [m.memory_id for m in everything] == sorted(said)
    newest = store.mentions("default", entity_ids=[alice.id], limit=3)
    assert [m.memory_id for m in newest] == sorted(said)[-3:]  # the greatest ids: the newest memories
    assert store.mentions("default", entity_ids=[alice.id], limit=0) == []
    monkeypatch.setattr(graph_channel, "MENTIONS_FOLLOWED", 3)
    hits = mem.recall("Alice", retrieval=RetrievalConfig(channels=("graph",)))
    assert sorted(h.id for h in hits) == sorted(said)[-3:]


def test_memories_reached_from_an_entity_are_its_newest_mentions_and_live_relation_sources(graph_mem: Memory) -> None:
    mem = graph_mem
    store, now = mem.graph.store, mem.now()
    alice = store.upsert_entity("default", "Alice", "person", now)
    acme = store.upsert_entity("default", "Acme", "organisation", now)
    berlin = store.upsert_entity("default", "Berlin", "place", now)
    said = [mem.remember(f"Alice fact {n}") for n in range(5)]
    for memory_id in said[:3]:
        store.add_mentions("default", memory_id, [alice.id])
    works = store.upsert_relation("default", alice.id, "works at", acme.id, now, source_id=said[3])
    moved = store.upsert_relation(
        "default", berlin.id, "home of", alice.id, now + timedelta(seconds=1), source_id=said[4]
    )
    reached = store.memories_reached("default", alice.id, mentions=10, relations=10)
    assert reached == set(said)
    assert store.memories_reached("default", alice.id, mentions=2, relations=1) == {*sorted(said[:3])[-2:], said[4]}
    store.invalidate_relations("default", [moved.id], now)
    assert store.memories_reached("default", alice.id, mentions=0, relations=10) == {said[3]}
    assert works.id and store.memories_reached("other", alice.id, mentions=10, relations=10) == set()


def test_facade_without_graph_store_says_so(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()

    class NoGraph:
        def __init__(self, inner: Backend) -> None:
            self._inner = inner
            self.name = "nograph"

        graph = None  # a backend without a graph store says so in its typed attribute

        def __getattr__(self, name: str) -> object:
            return getattr(self._inner, name)

    bare = Memory(backend=NoGraph(mem.backend), embedder=mem.embedder)  # type: ignore[arg-type]
    with pytest.raises(GraphUnavailableError, match="no graph store"):
        bare.graph.entities()
    item = bare.remember("Alice moved to Berlin")
    assert bare.recall("Alice")[0].id == item  # the channel is skipped, recall still works
    with pytest.raises(GraphUnavailableError):
        bare.remember("Bob moved to Rome", extract=True)
    assert bare.stats().total == 1  # refused before anything was written


def test_context_hydrates_the_users_graph_facts(graph_mem: Memory) -> None:
    mem = graph_mem
    mem.remember("Alice moved to Berlin.", user="u1", kind="conversation", extract=True)
    mem.remember("Alice moved to Paris.", user="u2", kind="conversation", extract=True)
    out = mem.context("Where did Alice go?", user="u1")
    notes = {n.source: n for n in out.trace.sources}
    assert notes["graph"].status == "used" and notes["graph"].sections == 1
    assert "- Alice moved to Berlin" in out.system and "Paris" not in out.system


# -- whole namespaces (memory migrate) ------------------------------------------


def _plain(dump: GraphDump) -> tuple[object, ...]:
    """A dump with vectors as lists, comparable with ==."""

    def vec(v: object) -> object:
        return None if v is None else np.asarray(v, dtype=np.float32).tolist()

    return (
        [(e, m, vec(v)) for e, m, v in dump.entities],
        [(r, m, vec(v)) for r, m, v in dump.relations],
        dump.mentions,
        dump.links,
    )


def test_export_import_graph_keeps_ids_times_validity_aliases_and_vectors(
    graph_mem: Memory, twin_backend: Backend, backend_name: str
) -> None:
    mem = graph_mem
    m1, m2 = mem.remember("Alice works at Acme"), mem.remember("Alice lives in Berlin")
    mem.remember("Bob is elsewhere", namespace="other")
    store, now = mem.graph.store, mem.now()
    later = now + timedelta(days=3)
    alice = store.upsert_entity("default", "Alice", "person", now, vector=np.array([1, 0, 0], np.float32), model="m")
    alice = store.add_alias("default", alice.id, "Ally", later)
    acme = store.upsert_entity("default", "Acme", "organisation", now)
    berlin = store.upsert_entity("default", "Berlin", "place", now)
    old = store.upsert_relation(
        "default", alice.id, "works at", acme.id, now, source_id=m1,
        vector=np.array([0, 1, 0], np.float32), model="m", valid_at=now - timedelta(days=400),
    )  # fmt: skip
    assert store.invalidate_relations("default", [old.id], later) == 1
    store.upsert_relation("default", alice.id, "lives in", berlin.id, now, source_id=m2)
    store.upsert_relation("default", acme.id, "is based in", berlin.id, now)  # no source memory
    store.add_mentions("default", m1, [alice.id, acme.id])
    store.link("default", m1, m2, "relates_to", now)
    store.upsert_entity("other", "Bob", "person", now)
    assert store.namespaces() == ["default", "other"]

    dump = store.export_graph("default")
    assert (len(dump.entities), len(dump.relations), len(dump.mentions), len(dump.links)) == (3, 3, 2, 1)
    assert [r.invalid_at for r, _, _ in dump.relations if r.id == old.id] == [later]
    items = [i for i in mem.list(namespace="default", clearance="secret", limit=10).items]
    twin_backend.add([NewRecord(i, None, ledger_entry("add", i.id, i.namespace, i.created_at, after=i)) for i in items])
    target = twin_backend.graph  # type: ignore[attr-defined]
    assert isinstance(target, GraphStore) and target.namespaces() == []
    target.import_graph("default", dump)
    assert _plain(target.export_graph("default")) == _plain(dump)
    assert target.namespaces() == ["default"]  # nothing of "other" came along
    # the copy works like the original: aliases resolve, closed relations stay closed, vectors rank
    assert [e.id for e in target.find_entities("default", ["ally"])] == [alice.id]
    assert target.upsert_entity("default", "ALLY", "thing", later).id == alice.id
    assert {r.id for r in target.relations("default", [alice.id])} == {
        r.id for r in store.relations("default", [alice.id])
    }
    ranked = target.search_relations("default", "m", np.array([0, 1, 0], np.float32), 3, include_invalid=True)
    assert [r.id for r, _ in ranked] == [old.id]
    assert [e.id for e, _ in target.search_entities("default", "m", np.array([1, 0, 0], np.float32), 1)] == [alice.id]
    # a copy never merges, strays and dangling references are refused, and nothing is written then
    with pytest.raises(ConfigError):
        target.import_graph("default", dump)
    with pytest.raises(InvalidInputError):
        target.import_graph("elsewhere", dump)
    with pytest.raises(InvalidInputError):
        target.import_graph("default2", GraphDump(mentions=[Mention(entity_id="nope", memory_id=m1)]))
    lone = GraphDump(entities=[(alice.model_copy(update={"id": "e-new", "namespace": "default3"}), None, None)],
                     mentions=[Mention(entity_id="e-new", memory_id=m1)])  # fmt: skip
    with pytest.raises(NotFoundError):  # a mention of a memory the store does not hold
        target.import_graph("default3", lone)
    assert target.namespaces() == ["default"]


def test_the_library_enforces_clearance_on_links_and_graph_queries(make_memory: Callable[..., Memory]) -> None:
    """Memory.link and GraphView.query_graph hide secrets themselves, not only the servers."""
    mem = make_memory()
    alice = mem.remember("Alice moved to Berlin", extract=True)
    bob = mem.remember("Bob moved to Rome", extract=True)
    mem.update(bob, sensitivity="secret")  # its relation stays, supported by a secret only
    with pytest.raises(NotFoundError):
        mem.link(alice, bob)  # as if the secret did not exist
    assert mem.graph.links(alice) == []
    assert mem.link(alice, bob, clearance="secret").target_id == bob

    seen = mem.graph.query_graph()
    assert [r.subject for r in seen.relations] == ["Alice"] and seen.memory_ids == [alice]
    assert {e.name for e in seen.entities} == {"Alice", "Berlin"}
    with pytest.raises(NotFoundError):  # a name only the secret holds is as unknown as a made-up one
        mem.graph.query_graph("Bob")
    around_bob = mem.graph.query_graph("Bob", clearance="secret")
    assert [e.name for e in around_bob.entities][0] == "Bob" and around_bob.memory_ids == [bob]
    everything = mem.graph.query_graph(clearance="secret")
    assert {r.subject for r in everything.relations} == {"Alice", "Bob"} and set(everything.memory_ids) == {alice, bob}
