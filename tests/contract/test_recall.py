"""Recall behaviour every backend must give: hybrid channels, policy filters, access stats."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory import Memory, NotFoundError

FACTS = [
    "Alice prefers dark mode in every editor",
    "Bob is allergic to peanuts",
    "Carol moved to Berlin last spring",
    "The team standup is at nine thirty",
    "Dave's favourite programming language is Haskell",
]


def test_hits_carry_channel_scores(mem: Memory) -> None:
    ids = mem.remember(FACTS)
    hits = mem.recall("peanuts allergy", limit=3)
    assert hits[0].id == ids[1]
    top = hits[0]
    # feedback joins where the top hits are short texts (as these are): it expands from "peanuts allergy"'s hits
    assert set(top.channels) <= {"vector", "lexical", "feedback"} and "lexical" in top.channels
    assert top.channels["lexical"].rank == 1
    assert 0 < top.parts.fusion <= 1
    assert top.score == pytest.approx(top.parts.final)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_recall_is_deterministic(mem: Memory) -> None:
    mem.remember(FACTS)
    first = [(h.id, h.score) for h in mem.recall("who lives where", limit=5)]
    second = [(h.id, h.score) for h in mem.recall("who lives where", limit=5)]
    assert [i for i, _ in first] == [i for i, _ in second]


def test_scope_filters(mem: Memory) -> None:
    alice = mem.remember("likes green tea", user="alice")
    bob = mem.remember("likes green tea very much", user="bob")
    assert [h.id for h in mem.recall("green tea", user="alice")] == [alice]
    assert {h.id for h in mem.recall("green tea")} == {alice, bob}
    mem.remember("likes green tea", user="alice", kind="trait", tags=["drinks"])
    assert all(h.item.kind == "trait" for h in mem.recall("green tea", kinds=["trait"]))
    assert all("drinks" in h.item.tags for h in mem.recall("green tea", tags=["drinks"]))


def test_namespaces_never_leak(mem: Memory) -> None:
    mem.remember("the launch code is ORANGE", namespace="tenant-a")
    inside = mem.remember("the launch code is BLUE", namespace="tenant-b")
    hits = mem.recall("launch code", namespace="tenant-b", limit=10)
    assert [h.id for h in hits] == [inside]
    assert mem.recall("launch code", limit=10) == []
    assert mem.list(namespace="tenant-b").items[0].id == inside
    assert set(mem.namespaces()) == {"tenant-a", "tenant-b"}
    with pytest.raises(NotFoundError):
        mem.get(inside, namespace="tenant-a")


def test_secret_items_need_clearance(mem: Memory) -> None:
    secret = mem.remember("bank pin is 4321", sensitivity="secret")
    private = mem.remember("bank is on main street", sensitivity="private")
    visible = {h.id for h in mem.recall("bank pin", limit=10)}
    assert secret not in visible and private in visible
    assert secret in {h.id for h in mem.recall("bank pin", limit=10, clearance="secret")}
    assert secret not in {i.id for i in mem.list().items}
    assert mem.get(secret, clearance="secret").content == "bank pin is 4321"
    assert mem.get(secret, clearance="secret").embedding_status == "skipped"
    assert mem.vector_of(secret) is None
    assert {h.id for h in mem.recall("bank pin", limit=10, clearance="normal")} == set()


def test_expired_items_never_come_back(mem: Memory, clock: Callable[[], object]) -> None:
    short = mem.remember("temporary door code 1111", ttl=60)
    keep = mem.remember("permanent door code 2222")
    assert {h.id for h in mem.recall("door code")} == {short, keep}
    clock.advance(seconds=61)  # type: ignore[attr-defined]
    assert {h.id for h in mem.recall("door code")} == {keep}
    assert short not in {i.id for i in mem.list().items}
    assert short in {i.id for i in mem.list(include_expired=True).items}


def test_closed_facts_are_excluded(mem: Memory, clock: Callable[[], object]) -> None:
    now = clock()  # type: ignore[operator]
    old = mem.remember("Erin works at Acme", valid_from=now.replace(year=2020), valid_to=now)
    new = mem.remember("Erin works at Globex", valid_from=now)
    assert {h.id for h in mem.recall("where does Erin work")} == {new}
    assert old in {i.id for i in mem.list(include_invalid=True).items}
    assert {h.id for h in mem.recall("where does Erin work", include_invalid=True)} == {old, new}


def test_access_statistics_update(mem: Memory, clock: Callable[[], object]) -> None:
    memory_id = mem.remember("Frank collects stamps")
    assert mem.get(memory_id).access_count == 0
    clock.advance(minutes=5)  # type: ignore[attr-defined]
    mem.recall("stamps")
    mem.recall("stamps collection")
    item = mem.get(memory_id)
    assert item.access_count == 2
    assert item.accessed_at == clock()  # type: ignore[operator]


def test_recency_and_importance_break_otherwise_equal_scores(mem: Memory, clock: Callable[[], object]) -> None:
    low = mem.remember("project kickoff meeting notes alpha", importance=0.1)
    high = mem.remember("project kickoff meeting notes beta", importance=0.9)
    hits = mem.recall("project kickoff meeting notes", limit=2, retrieval="lexical")
    assert hits[0].id == high and hits[1].id == low


def test_lexical_only_and_vector_only_presets(mem: Memory) -> None:
    mem.remember(FACTS)
    assert all(set(h.channels) == {"lexical"} for h in mem.recall("Berlin", retrieval="lexical"))
    assert all(set(h.channels) == {"vector"} for h in mem.recall("Berlin", retrieval="vector"))
