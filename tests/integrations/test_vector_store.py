"""Seed 001's API as its ADR wrote it: store_memory, search_memories, get_memory_context over the default store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory import InvalidInputError, Memory, NotFoundError
from memory import vector_store as vs
from memory.vector_store import get_memory_context, search_memories, store_memory


@pytest.fixture
def default_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The default store is the configured one: MEMORY_DATABASE points it at a file here."""
    db = tmp_path / "seed001.db"
    monkeypatch.setenv("MEMORY_DATABASE", f"sqlite:///{db}")
    monkeypatch.setenv("MEMORY_EMBEDDER", "hashing")
    vs.use(None)
    yield db
    vs.default_memory().close()
    vs.use(None)


def test_the_adr_example_runs_as_written(default_store: Path) -> None:
    entry = store_memory(content="User prefers dark mode", source="user", context_type="fact", agent_id="echo")
    assert (entry.content, entry.source, entry.context_type, entry.agent_id) == (
        "User prefers dark mode", "user", "fact", "echo",
    )  # fmt: skip
    assert entry.id and entry.timestamp and entry.task_id is None and entry.session_id is None
    store_memory("We talked about the Lisbon trip", source="agent", session_id="s1", task_id="t9",
                 metadata={"mood": "happy"})  # fmt: skip
    results = search_memories(query="user preferences", agent_id="echo", limit=5)
    assert [r.content for r in results] == ["User prefers dark mode"]
    assert results[0].relevance_score is not None and results[0].relevance_score > 0
    context = get_memory_context(query="what does user like?", max_tokens=1000)
    assert "User prefers dark mode" in context
    similar = search_memories(query="Lisbon trip", context_type="conversation", limit=3)
    assert similar[0].session_id == "s1" and similar[0].task_id == "t9" and similar[0].metadata == {"mood": "happy"}
    assert similar[0].source == "agent"
    # the same store the library and CLI see
    with Memory(f"sqlite:///{default_store}", embedder="hashing") as mem:
        assert mem.stats().total == 2
        assert mem.get(entry.id).kind == "fact"


def test_filters_budget_and_min_relevance(default_store: Path) -> None:
    for i in range(20):
        store_memory(f"fact number {i} about gardening and tomatoes", source="user", context_type="fact")
    store_memory("conversation about tomatoes", source="user", session_id="s2")
    assert {r.context_type for r in search_memories("tomatoes", context_type="fact", limit=50)} == {"fact"}
    assert [r.session_id for r in search_memories("tomatoes", session_id="s2")] == ["s2"]
    everything = search_memories("tomatoes", limit=50)
    top = everything[0].relevance_score
    assert top is not None
    assert search_memories("tomatoes", limit=50, min_relevance=top + 1) == []
    assert all(
        (r.relevance_score or 0) >= top / 2 for r in search_memories("tomatoes", limit=50, min_relevance=top / 2)
    )
    small = get_memory_context("tomatoes", max_tokens=40)
    large = get_memory_context("tomatoes", max_tokens=2000)
    assert 0 < len(small) < len(large)
    from memory.context.tokens import counter_for

    assert counter_for(None).count(small) <= 40
    assert get_memory_context("tomatoes", max_tokens=2000, session_id="s2").count("\n- ") == 1
    assert "conversation about tomatoes" in get_memory_context("tomatoes", max_tokens=2000, session_id="s2")
    assert get_memory_context("zebra quantum", max_tokens=100, context_type="document") == ""


def test_bad_input_is_refused_and_stores_nothing(default_store: Path) -> None:
    with pytest.raises(InvalidInputError):
        store_memory("", source="user")
    with pytest.raises(InvalidInputError):
        store_memory("x", source="")
    with pytest.raises(InvalidInputError):
        store_memory("x", source="user", metadata={"source": "clash"})
    with pytest.raises(InvalidInputError):
        store_memory("x", source="user", context_type="Not A Kind")
    with pytest.raises(InvalidInputError):
        search_memories("")
    with pytest.raises(InvalidInputError):
        get_memory_context("x", max_tokens=0)
    with pytest.raises(InvalidInputError):
        get_memory_context("x", user="nobody")
    with pytest.raises(NotFoundError):
        vs.get_memory("00000000-0000-7000-8000-000000000000")
    assert vs.default_memory().stats().total == 0


def test_use_points_the_functions_at_another_store() -> None:
    with Memory("memory://", embedder="hashing") as mem:
        vs.use(mem)
        try:
            entry = store_memory("in the given store", source="test")
            assert mem.get(entry.id).content == "in the given store"
            assert vs.get_memory(entry.id).to_dict()["source"] == "test"
        finally:
            vs.use(None)
