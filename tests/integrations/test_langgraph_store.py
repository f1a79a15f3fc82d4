"""The LangGraph store over memories: the BaseStore API, semantic search by recall, TTL, and a real StateGraph."""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

import pytest
from frameworks import framework

from memory import Memory

framework("langgraph.store.base")

from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.store.base import BaseStore, GetOp, PutOp, SearchOp  # noqa: E402

from memory.errors import InvalidInputError  # noqa: E402
from memory.integrations.langgraph import MemorySaver, MemoryStore  # noqa: E402


def test_put_get_update_delete(mem: Memory) -> None:
    store = MemoryStore(mem)
    store.put(("users", "alice"), "prefs", {"text": "Alice prefers dark mode", "n": 1})
    first = store.get(("users", "alice"), "prefs")
    assert first is not None and first.value == {"text": "Alice prefers dark mode", "n": 1}
    assert first.namespace == ("users", "alice") and first.key == "prefs"
    store.put(("users", "alice"), "prefs", {"text": "Alice prefers light mode", "n": 2})
    second = store.get(("users", "alice"), "prefs")
    assert second is not None and second.value["n"] == 2
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at
    assert store.get(("users", "bob"), "prefs") is None
    # the items are memories: history kept, visible to recall
    hits = mem.recall("light mode", kinds=["langgraph"])
    assert hits and "light mode" in hits[0].content
    assert [e.op for e in mem.history(hits[0].id)] == ["add", "update"]
    store.delete(("users", "alice"), "prefs")
    assert store.get(("users", "alice"), "prefs") is None


def test_same_value_under_two_keys_stays_two_items(mem: Memory) -> None:
    store = MemoryStore(mem)
    store.put(("docs",), "a", {"text": "same words"})
    store.put(("docs",), "b", {"text": "same words"})
    store.delete(("docs",), "a")
    kept = store.get(("docs",), "b")
    assert kept is not None and kept.value == {"text": "same words"}
    assert [i.key for i in store.search(("docs",))] == ["b"]


def test_semantic_search_prefix_filter_and_paging(mem: Memory) -> None:
    store = MemoryStore(mem, index={"fields": ["text"]})
    store.put(("users", "alice", "memories"), "1", {"text": "Alice loves hiking in the Alps", "year": 2020})
    store.put(("users", "alice", "memories"), "2", {"text": "Alice works as a pastry chef", "year": 2023})
    store.put(("users", "bob", "memories"), "3", {"text": "Bob loves hiking in Norway", "year": 2024})
    store.put(("users", "alice", "memories"), "4", {"text": "hiking boots size", "year": 2021}, index=False)
    hits = store.search(("users", "alice"), query="who goes hiking in the mountains?")
    assert [h.key for h in hits][0] == "1"
    assert "3" not in {h.key for h in hits}  # other prefix
    assert "4" not in {h.key for h in hits}  # index=False: never found by a query
    assert all(h.score is not None for h in hits)
    everyone = store.search(("users",), query="hiking")
    assert {h.key for h in everyone} >= {"1", "3"}
    recent = store.search(("users",), filter={"year": {"$gte": 2023}})
    assert {h.key for h in recent} == {"2", "3"}
    exact = store.search(("users",), query="hiking", filter={"year": 2024})
    assert [h.key for h in exact] == ["3"]
    listed = store.search(("users", "alice", "memories"))
    assert {h.key for h in listed} == {"1", "2", "4"}
    pages = [store.search(("users",), limit=2, offset=offset) for offset in (0, 2, 4)]
    assert [len(p) for p in pages] == [2, 2, 0]
    assert {h.key for p in pages for h in p} == {"1", "2", "3", "4"}


def test_list_namespaces(mem: Memory) -> None:
    store = MemoryStore(mem)
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z", "b")]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z", "b")]
    assert store.list_namespaces(prefix=("a", "b")) == [("a", "b", "c"), ("a", "b", "d")]
    assert store.list_namespaces(suffix=("b",)) == [("z", "b")]
    assert store.list_namespaces(prefix=("a", "*", "d")) == [("a", "b", "d")]
    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("a", "x"), ("z", "b")]
    assert store.list_namespaces(limit=1, offset=1) == [("a", "b", "d")]


def test_batch_and_abatch(mem: Memory) -> None:
    store = MemoryStore(mem)
    results = store.batch([PutOp(("n",), "k", {"text": "one"}), GetOp(("n",), "k"), SearchOp(("n",), query="one")])
    assert results[0] is None and results[1].value == {"text": "one"}  # type: ignore[union-attr]
    assert [i.key for i in results[2]] == ["k"]  # type: ignore[union-attr]

    async def run() -> list[object]:
        await store.aput(("n",), "j", {"text": "two"})
        got = await store.aget(("n",), "j")
        found = await store.asearch(("n",), query="two")
        return [got, found, await store.alist_namespaces()]

    got, found, namespaces = asyncio.run(run())
    assert got.value == {"text": "two"}  # type: ignore[attr-defined]
    assert "j" in {i.key for i in found}  # type: ignore[attr-defined]
    assert namespaces == [("n",)]


def test_namespaces_do_not_cross(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    a, b = MemoryStore(mem, namespace="tenant-a"), MemoryStore(mem, namespace="tenant-b")
    a.put(("x",), "k", {"text": "secret plans of tenant a"})
    assert b.get(("x",), "k") is None
    assert b.search(("x",), query="secret plans") == []
    assert b.list_namespaces() == []


def test_bad_input_is_refused_and_changes_nothing(mem: Memory) -> None:
    store = MemoryStore(mem)
    with pytest.raises(InvalidInputError):
        store.batch([PutOp(("a.b",), "k", {"v": 1})])
    with pytest.raises(InvalidInputError):
        store.batch([PutOp(("a",), "k", "not a dict")])  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        store.batch([PutOp(("a",), "k", {"v": object()})])  # not JSON
    assert mem.stats().total == 0
    store.put(("a",), "k", {"v": 1})
    with pytest.raises(InvalidInputError):
        store.search(("a",), filter={"v": {"$regex": "x"}})
    assert store.get(("a",), "k").value == {"v": 1}  # type: ignore[union-attr]


def test_ttl_expires_and_reads_refresh(make_memory: Callable[..., Memory], clock: Any) -> None:
    mem = make_memory(clock=clock)
    store = MemoryStore(mem, ttl={"default_ttl": 10, "refresh_on_read": True})
    assert store.supports_ttl
    store.put(("s",), "short", {"text": "expires soon"})
    store.put(("s",), "forever", {"text": "stays"}, ttl=None)
    clock.advance(minutes=8)
    assert store.get(("s",), "short") is not None  # refreshes: 10 more minutes from now
    clock.advance(minutes=8)
    assert store.get(("s",), "short", refresh_ttl=False) is not None
    clock.advance(minutes=3)
    assert store.get(("s",), "short") is None
    assert [i.key for i in store.search(("s",))] == ["forever"]
    assert all(h.key == "forever" for h in store.search(("s",), query="expires soon"))
    assert store.sweep_ttl() == 1


class State(TypedDict):
    question: str
    user: str
    answers: Annotated[list[str], operator.add]


def build_graph(store: BaseStore) -> StateGraph:
    def remember(state: State, *, store: BaseStore) -> dict[str, list[str]]:
        store.put(("users", state["user"]), state["question"], {"text": state["question"]})
        return {"answers": []}

    def answer(state: State, *, store: BaseStore) -> dict[str, list[str]]:
        found = store.search(("users", state["user"]), query=state["question"], limit=3)
        return {"answers": [found[0].value["text"] if found else "nothing"]}

    graph = StateGraph(State)
    graph.add_node("remember", remember)
    graph.add_node("answer", answer)
    graph.add_edge(START, "answer")  # answer from what was stored before, then store the question
    graph.add_edge("answer", "remember")
    graph.add_edge("remember", END)
    return graph


def test_a_real_state_graph_with_the_store_and_checkpointer(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    store = MemoryStore(mem, index={"fields": ["text"]})
    saver = MemorySaver(mem)
    app = build_graph(store).compile(store=store, checkpointer=saver)
    config = {"configurable": {"thread_id": "t1"}}
    out = app.invoke({"question": "I adopted a cat named Miso", "user": "alice", "answers": []}, config)
    assert out["answers"] == ["nothing"]
    out = app.invoke({"question": "what is my cat called?", "user": "alice", "answers": []}, config)
    assert "Miso" in out["answers"][-1]
    # the checkpointer kept the thread's state; another user's memories are not searched
    assert len(app.get_state(config).values["answers"]) == 2
    assert len(list(app.get_state_history(config))) >= 6
    other = app.invoke(
        {"question": "what is my cat called?", "user": "bob", "answers": []}, {"configurable": {"thread_id": "t2"}}
    )
    assert "Miso" not in other["answers"][-1]

    async def run_async() -> dict[str, object]:
        return await app.ainvoke(
            {"question": "Miso likes tuna", "user": "alice", "answers": []}, {"configurable": {"thread_id": "t3"}}
        )

    assert "Miso" in asyncio.run(run_async())["answers"][-1]
    assert {i.value["text"] for i in store.search(("users", "alice"))} == {
        "I adopted a cat named Miso",
        "what is my cat called?",
        "Miso likes tuna",
    }
