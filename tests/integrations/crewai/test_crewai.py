"""The CrewAI storage, driven through CrewAI's own unified Memory and a Crew (runs in .venv-crewai, see Makefile)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from frameworks import framework
from llm_server import CrewLLMServer

from memory import Memory

framework("crewai.memory", "it runs in .venv-crewai: `make test-crewai`, or scripts/crewai-env.sh")

from crewai import LLM, Agent, Crew, Task  # noqa: E402
from crewai.memory import Memory as CrewMemory  # noqa: E402

from memory.integrations.crewai import MemoryEmbedder, MemoryStorage  # noqa: E402

ANALYSIS = {
    "suggested_scope": "/preferences/editor",
    "categories": ["preference", "tools"],
    "importance": 0.8,
    "extracted_metadata": {"entities": ["Alice"], "dates": [], "topics": ["editor"]},
}
QUERY = {
    "keywords": ["alice", "editor"],
    "suggested_scopes": ["/"],
    "complexity": "simple",
    "recall_queries": ["alice editor theme"],
    "time_filter": None,
}
EXTRACTED = {"memories": ["The quarterly report is due on the 14th of March", "Bob owns the quarterly report"]}
CONSOLIDATION = {"actions": [], "insert_new": True, "insert_content": None}


@pytest.fixture
def llm_server() -> Iterator[CrewLLMServer]:
    """A loopback LLM that answers CrewAI's memory analyses with fixed JSON and tasks with a final answer."""
    structured = {
        "MemoryAnalysis": ANALYSIS,
        "QueryAnalysis": QUERY,
        "ExtractedMemories": EXTRACTED,
        "ConsolidationPlan": CONSOLIDATION,
    }
    server = CrewLLMServer(structured, lambda body: "Final Answer: the report is due on the 14th of March.")
    with server.running():
        yield server


def crew_llm(server: CrewLLMServer) -> LLM:
    """CrewAI's own OpenAI-compatible LLM, pointed at the loopback server."""
    return LLM(model="openai/gpt-4o-mini", base_url=server.url, api_key="sk-test", temperature=0)


@pytest.fixture
def crew_memory(mem: Memory, llm_server: CrewLLMServer) -> Iterator[Callable[..., Any]]:
    """CrewAI unified Memory objects whose storage is a MemoryStorage over ``mem``."""
    opened: list[Any] = []

    def factory(**scope: Any) -> Any:
        embedder = MemoryEmbedder(mem)
        storage = MemoryStorage(mem, embedder=embedder, **scope)
        crew_mem = CrewMemory(storage=storage, embedder=embedder, llm=crew_llm(llm_server))
        opened.append(crew_mem)
        return crew_mem

    yield factory
    for crew_mem in opened:
        crew_mem.drain_writes()


def test_remember_recall_forget_through_crewai_memory(
    mem: Memory, crew_memory: Callable[..., Any], llm_server: CrewLLMServer
) -> None:
    cm = crew_memory(user="alice")
    first = cm.remember(
        "Alice prefers the dark theme in every code editor",
        scope="/users/alice",
        categories=["preference"],
        importance=0.9,
        metadata={"origin": "chat", "turn": 3},
    )
    cm.remember("Bob drinks green tea every morning", scope="/users/bob", categories=["habit"], importance=0.4)
    cm.remember("The office closes at six on Fridays", scope="/company", categories=["facts"], importance=0.5)
    assert llm_server.requests == []  # every field given: CrewAI needs no analysis

    matches = cm.recall("which theme does alice like in her code editor", depth="shallow", limit=3)
    assert matches and matches[0].record.content == "Alice prefers the dark theme in every code editor"
    top = matches[0].record
    assert (top.id, top.scope, top.categories) == (first.id, "/users/alice", ["preference"])
    assert top.metadata == {"origin": "chat", "turn": 3}
    assert top.importance == pytest.approx(0.9)
    assert 0.0 < matches[0].score <= 1.0

    # scope and category filters narrow CrewAI's search
    query = "what does bob drink every morning"
    assert cm.recall(query, depth="shallow")[0].record.content == "Bob drinks green tea every morning"
    in_alice = cm.recall(query, scope="/users/alice", depth="shallow")
    assert "Bob drinks green tea every morning" not in [m.record.content for m in in_alice]
    in_bob = cm.recall(query, scope="/users/bob", depth="shallow")
    assert [m.record.content for m in in_bob] == ["Bob drinks green tea every morning"]
    habits = cm.recall("what does bob drink", categories=["habit"], depth="shallow")
    assert [m.record.content for m in habits] == ["Bob drinks green tea every morning"]

    # the records are memories of kind crewai, scoped to the storage's user, with the CrewAI fields kept
    stored = mem.list(kinds="crewai", user="alice", limit=10).items
    assert len(stored) == 3 and not mem.list(kinds="crewai", user="bob").items
    item = next(i for i in stored if i.content.startswith("Alice"))
    assert item.metadata["crewai_id"] == first.id and item.metadata["origin"] == "chat"
    assert "crewai-scope:/users" in item.tags and "crewai-category:preference" in item.tags

    assert cm.list_scopes("/") == ["/company", "/users"]
    assert cm.list_scopes("/users") == ["/users/alice", "/users/bob"]
    info = cm.info("/users")
    assert info.record_count == 2 and info.categories == ["habit", "preference"]
    assert cm.list_categories() == {"facts": 1, "habit": 1, "preference": 1}
    assert [r.content for r in cm.list_records(scope="/company")] == ["The office closes at six on Fridays"]

    updated = cm.update(first.id, content="Alice prefers the light theme in every code editor")
    assert updated.id == first.id
    assert cm._storage.get_record(first.id).content == "Alice prefers the light theme in every code editor"
    assert [e.op for e in mem.history(item.id)] == ["add", "update"]

    assert cm.forget(scope="/users/bob") == 1
    assert cm._storage.count() == 2
    assert cm.forget(older_than=datetime.now(UTC).replace(tzinfo=None) - timedelta(days=1)) == 0
    assert cm.forget(metadata_filter={"origin": "chat"}) == 1
    assert [r.content for r in cm.list_records()] == ["The office closes at six on Fridays"]
    cm.reset()
    assert cm._storage.count() == 0 and not mem.list(kinds="crewai").items


def test_private_records_and_isolation(mem: Memory, crew_memory: Callable[..., Any]) -> None:
    alice = crew_memory(user="alice")
    bob = crew_memory(user="bob")
    mem.remember("Alice's unrelated fact outside CrewAI", user="alice")
    alice.remember(
        "Alice's locker code is 4711", scope="/", categories=["secret"], importance=0.5, source="alice", private=True
    )
    bob.remember("Bob's locker is number nine", scope="/", categories=["facts"], importance=0.5)

    query = "what is the locker code"
    assert [m.record.content for m in alice.recall(query, depth="shallow")] == []  # private to its source
    seen = alice.recall(query, depth="shallow", source="alice")
    assert [m.record.content for m in seen] == ["Alice's locker code is 4711"] and seen[0].record.private
    assert mem.list(kinds="crewai", user="alice").items[0].sensitivity == "private"
    # nothing crosses users: bob's storage sees only bob's record, alice's only hers
    assert [m.record.content for m in bob.recall(query, depth="shallow", include_private=True)] == [
        "Bob's locker is number nine"
    ]
    assert [r.content for r in alice.list_records()] == ["Alice's locker code is 4711"]
    bob.reset()
    assert alice._storage.count() == 1
    assert [i.content for i in mem.list(kinds="fact", user="alice").items] == ["Alice's unrelated fact outside CrewAI"]


def test_llm_analysis_and_deep_recall_through_loopback(
    mem: Memory, crew_memory: Callable[..., Any], llm_server: CrewLLMServer
) -> None:
    cm = crew_memory(agent="planner")
    record = cm.remember("Alice switched her editor to the dark theme last week")
    # CrewAI asked the LLM (over the real wire format) for scope, categories and importance
    assert any("MemoryAnalysis" in json.dumps(r) for r in llm_server.requests)
    assert (record.scope, record.categories) == ("/preferences/editor", ["preference", "tools"])
    got = cm._storage.get_record(record.id)
    assert got is not None and got.scope == "/preferences/editor" and got.importance == pytest.approx(0.8)
    assert got.metadata["entities"] == ["Alice"]
    (item,) = mem.list(kinds="crewai", agent="planner").items
    assert "crewai-scope:/preferences/editor" in item.tags

    matches = cm.recall("alice editor theme", depth="deep", limit=3)
    assert [m.record.content for m in matches] == ["Alice switched her editor to the dark theme last week"]


def test_crew_kickoff_saves_and_recalls(
    mem: Memory, crew_memory: Callable[..., Any], llm_server: CrewLLMServer
) -> None:
    cm = crew_memory(user="team")

    def run(description: str) -> str:
        agent = Agent(
            role="Planner", goal="Track deadlines", backstory="Keeps the team on time.", llm=crew_llm(llm_server)
        )
        task = Task(description=description, expected_output="One sentence.", agent=agent)
        crew = Crew(agents=[agent], tasks=[task], memory=cm)
        result = str(crew.kickoff())
        cm.drain_writes()
        return result

    assert "14th of March" in run("When is the quarterly report due?")
    # the crew extracted memories from its output (through the LLM) and saved them in our store
    contents = sorted(i.content for i in mem.list(kinds="crewai", user="team").items)
    assert contents == sorted(EXTRACTED["memories"])

    before = len(llm_server.requests)
    run("Who owns the quarterly report and when is it due?")
    # the second run's task prompt carried the memories the agent recalled from our store
    later = llm_server.prompts()[before:]
    assert any("Bob owns the quarterly report" in p and "Relevant memories" in p for p in later)


def test_protocol_async_and_vector_only_search(mem: Memory) -> None:
    from crewai.memory.storage.backend import StorageBackend
    from crewai.memory.types import MemoryRecord

    from memory.embedders.base import embed_texts

    embedder = MemoryEmbedder(mem)
    storage = MemoryStorage(mem, user="carol", embedder=embedder)
    assert isinstance(storage, StorageBackend)
    records = [
        MemoryRecord(content="Carol waters the ferns on Mondays", scope="/home", categories=["chores"]),
        MemoryRecord(content="Carol's bicycle has a flat tyre", scope="/home/garage", categories=["repairs"]),
    ]
    asyncio.run(storage.asave(records))
    assert storage.count() == 2 and storage.count("/home/garage") == 1

    # a vector CrewAI's embedder did not make (no text known): searched in the vector index alone
    (vector,) = embed_texts(mem.embedder, ["who waters the ferns on mondays"])
    found = asyncio.run(storage.asearch([float(x) for x in vector], limit=1))
    assert [(r.content, r.id) for r, _ in found] == [("Carol waters the ferns on Mondays", records[0].id)]
    assert 0.0 < found[0][1] <= 1.0
    # the same text through the embedder: hybrid recall, same answer and the same cosine score
    (again,) = embedder(["who waters the ferns on mondays"])
    assert storage.search(again, limit=1)[0][1] == pytest.approx(found[0][1], abs=1e-5)
    assert storage.search(again, categories=["repairs"], limit=5)[0][0].content == "Carol's bicycle has a flat tyre"

    # saving a record whose id is stored replaces it
    storage.save([records[0].model_copy(update={"content": "Carol waters the ferns on Tuesdays"})])
    assert storage.count() == 2 and storage.get_record(records[0].id).content == "Carol waters the ferns on Tuesdays"
    # the same text again under a new id: one memory, the newest record's id and fields
    repeat = MemoryRecord(content="Carol's bicycle has a flat tyre", scope="/errands", categories=["todo"])
    storage.save([repeat])
    assert storage.count() == 2 and storage.get_record(records[1].id) is None
    assert (storage.get_record(repeat.id).scope, storage.list_categories()) == ("/errands", {"chores": 1, "todo": 1})
    # the text of a memory stored outside CrewAI: the record joins it, whose own tags, kind and metadata stay
    plain = mem.remember("Carol likes jazz", user="carol", tags=["music"], metadata={"src": "chat"})
    assert storage.count() == 2
    joined = MemoryRecord(content="Carol likes jazz", scope="/music", categories=["taste"])
    storage.save([joined])
    assert storage.count() == 3 and storage.get_record(joined.id).scope == "/music"
    item = mem.get(plain)
    assert (item.kind, item.tags[0], item.metadata["src"]) == ("fact", "music", "chat")
    assert asyncio.run(storage.adelete(record_ids=[repeat.id])) == 1
    assert storage.get_record(repeat.id) is None and storage.count() == 2


def test_bad_input_and_foreign_vectors(mem: Memory, crew_memory: Callable[..., Any]) -> None:
    from crewai.memory.storage.backend import EmbeddingDimensionMismatchError

    from memory.errors import InvalidInputError

    cm = crew_memory(user="dave")
    with pytest.raises(InvalidInputError, match="metadata key"):
        cm.remember("Dave likes chess", scope="/", categories=[], importance=0.5, metadata={"bad key!": 1})
    assert cm._storage.count() == 0 and not mem.list(kinds="crewai").items  # nothing stored

    # CrewAI configured with another embedder: its vectors do not fit the store's space
    foreign = CrewMemory(
        storage=MemoryStorage(mem, user="dave"), embedder=lambda texts: [[0.5, 0.5, 0.5] for _ in texts]
    )
    with pytest.raises(EmbeddingDimensionMismatchError):
        foreign.recall("chess", depth="shallow")
    with pytest.raises(TypeError):
        MemoryStorage(object())  # type: ignore[arg-type]
