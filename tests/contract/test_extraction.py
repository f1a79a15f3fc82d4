"""remember(..., extract=...) end to end on every backend: graph writes and update decisions in the ledger."""

from __future__ import annotations

import pytest

from memory import Memory
from memory.errors import InvalidInputError, NotFoundError


@pytest.fixture
def emem(mem: Memory) -> Memory:
    if getattr(mem.backend, "graph", None) is None:
        pytest.skip(f"{mem.backend.name} backend does not expose the GraphStore (backend.graph) yet")
    return mem


def test_inline_extraction_fills_keywords_entities_and_graph(emem: Memory) -> None:
    memory_id = emem.remember("Alice moved to Berlin in 2021.", user="alice", extract=True)
    item = emem.get(memory_id)
    assert item.metadata["_extraction"] == "done"
    assert {"Alice", "Berlin", "2021"} <= set(item.entities) and "berlin" in item.keywords
    (relation,) = emem.graph.facts_about("Berlin")
    assert relation.text == "Alice moved to Berlin" and relation.source_ids == (memory_id,)
    entry = emem.history(memory_id)[-1]
    assert entry.op == "update" and entry.reason and "decision ADD" in entry.reason and "heuristic:v1" in entry.reason


def test_supersede_closes_the_old_fact_and_keeps_it_in_history(emem: Memory) -> None:
    paris = emem.remember("Alice lives in Paris", user="alice", extract=True)
    berlin = emem.remember("Alice lives in Berlin", user="alice", extract=True)
    assert berlin != paris
    assert [h.id for h in emem.recall("where does Alice live", user="alice")] == [berlin]
    old = emem.get(paris)
    assert old.valid_to == emem.now()
    last = emem.history(paris)[-1]
    assert last.op == "supersede" and last.reason and f"SUPERSEDE by {berlin}" in last.reason
    assert "object changed from 'Paris' to 'Berlin'" in last.reason
    facts = {r.text: r.invalid_at for r in emem.graph.facts_about("Alice", include_invalid=True)}
    assert facts["Alice lives in Paris"] == emem.now() and facts["Alice lives in Berlin"] is None
    listed = emem.list(include_invalid=True)
    assert {i.id for i in listed.items} == {paris, berlin}


def test_noop_returns_the_existing_memory_and_records_why(emem: Memory) -> None:
    first = emem.remember("Bob likes green tea", extract=True)
    again = emem.remember("Bob likes green tea!", extract=True)
    assert again == first
    assert emem.stats().total == 1
    deleted = [e for e in emem.backend.history("default", emem.backend.history("default", first)[0].item_id)]
    assert deleted  # the kept memory's history is intact
    assert len(emem.list().items) == 1


def test_update_merges_into_the_neighbour(emem: Memory) -> None:
    short = emem.remember("Carol plays the piano", extract=True)
    merged = emem.remember("Carol plays the piano every Sunday evening", extract=True)
    assert merged == short
    item = emem.get(short)
    assert item.content == "Carol plays the piano every Sunday evening"
    entry = emem.history(short)[-1]
    assert entry.op == "update" and entry.reason and entry.reason.startswith("decision UPDATE, merged")


def test_delete_when_the_new_fact_negates_an_old_one(emem: Memory) -> None:
    old = emem.remember("Dave lives in Madrid", extract=True)
    new = emem.remember("Dave no longer lives in Madrid", extract=True)
    assert new != old
    with pytest.raises(NotFoundError):
        emem.get(old)
    entry = emem.history(old)[-1]
    assert entry.op == "delete" and entry.reason and f"negated by {new}" in entry.reason
    assert all(r.text != "Dave lives in Madrid" for r in emem.graph.facts_about("Dave"))


def test_other_kinds_and_other_users_are_not_decided_against(emem: Memory) -> None:
    a = emem.remember("Erin lives in Lyon", user="u1", extract=True)
    b = emem.remember("Erin lives in Nice", user="u2", extract=True)
    c = emem.remember("Erin lives in Nice now", user="u1", kind="conversation", extract=True)
    assert len({a, b, c}) == 3
    assert emem.get(a).valid_to is None and emem.get(b).valid_to is None


def test_background_extraction_queues_and_processes(emem: Memory) -> None:
    memory_id = emem.remember("Frank works at Globex.", extract="background")
    assert emem.get(memory_id).metadata["_extraction"] == "pending"
    assert emem.graph.counts()["relations"] == 0
    (report,) = emem.extract_pending()
    assert report.status == "done" and report.memory_id == memory_id and report.relation_ids
    assert emem.extract_pending() == []
    assert [r.text for r in emem.graph.facts_about("Globex")] == ["Frank works at Globex"]


def test_secret_memories_are_not_extracted(emem: Memory) -> None:
    memory_id = emem.remember("Grace works at Initech.", sensitivity="secret", extract=True)
    item = emem.get(memory_id, clearance="secret")
    assert item.metadata["_extraction"] == "skipped" and item.entities == ()
    with pytest.raises(NotFoundError):
        emem.graph.entity("Initech")


def test_bad_extract_value_changes_nothing(emem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="extract must be"):
        emem.remember("Heidi likes jazz", extract="sometimes")
    assert emem.stats().total == 0


def test_extract_preview_writes_nothing(emem: Memory) -> None:
    result = emem.extract("Ivan moved to Oslo.")
    assert [r.model_dump() for r in result.relations] == [
        {"subject": "Ivan", "predicate": "moved to", "object": "Oslo"}
    ]
    assert emem.stats().total == 0 and emem.graph.counts()["entities"] == 0
    assert result.usage.estimated and result.usage.total_tokens > 0


def test_entities_merge_by_embedding_similarity_as_aliases(make_memory: object) -> None:
    from memory.config import ExtractionSettings, Settings

    settings = Settings(database="memory://", extraction=ExtractionSettings(entity_merge_similarity=0.7))
    mem = make_memory(settings=settings)  # type: ignore[operator]
    if getattr(mem.backend, "graph", None) is None:
        pytest.skip(f"{mem.backend.name} backend does not expose the GraphStore (backend.graph) yet")
    mem.remember("Jonathan Smithers moved to Oslo.", kind="conversation", extract=True)
    mem.remember("Jonathon Smithers moved to Berlin.", kind="conversation", extract=True)
    (entity,) = [e for e in mem.graph.entities() if "Smithers" in e.name]
    assert entity.name == "Jonathan Smithers" and entity.aliases == ("Jonathon Smithers",)
    assert {r.object for r in mem.graph.facts_about("Jonathon Smithers")} == {"Oslo", "Berlin"}
    assert {e.name for e in mem.graph.entities()} == {"Jonathan Smithers", "Oslo", "Berlin"}  # Oslo/Berlin not merged
