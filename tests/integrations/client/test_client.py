"""memory.client over a real `memory serve`: keys, errors mapped back, pagination, async twin, conversations."""

from __future__ import annotations

import asyncio
import io
import json

import pytest

from memory import AuthenticationError, InvalidInputError, NotFoundError, PermissionDeniedError, StoreUnavailableError
from memory.client import AsyncClient, Client
from memory.types import Hit, MemoryItem, Page


def test_keys_scope_and_read_only(served) -> None:  # type: ignore[no-untyped-def]
    with Client(served.url, api_key=served.keys["a"], namespace="a") as a:
        memory_id = a.remember("Alice prefers dark mode", user="alice", tags=["ui"])
        assert a.get(memory_id).content == "Alice prefers dark mode"
        with pytest.raises(PermissionDeniedError):
            a.recall("dark mode", namespace="b")
        assert a.namespaces() == ["a"]
    with Client(served.url, api_key=served.keys["a_ro"], namespace="a") as ro:
        assert ro.recall("dark mode")[0].id == memory_id
        with pytest.raises(PermissionDeniedError):
            ro.remember("not allowed")
    with Client(served.url, api_key="mk_wrong", namespace="a") as bad, pytest.raises(AuthenticationError):
        bad.recall("x")
    with Client(served.url, namespace="a") as none, pytest.raises(AuthenticationError):
        none.recall("x")


def test_types_pagination_and_errors(mem: Client) -> None:
    ids = mem.remember([f"note number {i}" for i in range(7)], user="u")
    assert isinstance(ids, list) and len(ids) == 7
    page = mem.list(limit=3)
    assert isinstance(page, Page) and len(page.items) == 3 and page.next_cursor
    second = mem.list(limit=3, cursor=page.next_cursor)
    assert {i.id for i in page.items}.isdisjoint({i.id for i in second.items})
    assert sorted(i.id for i in mem.iter_all(limit=2)) == sorted(ids)
    hits = mem.recall("note number 3", limit=2)
    assert isinstance(hits[0], Hit) and isinstance(hits[0].item, MemoryItem)
    updated = mem.update(ids[0], content="note number zero", reason="typo")
    assert updated.content == "note number zero"
    assert [e.op for e in mem.history(ids[0])] == ["add", "update"]
    with pytest.raises(NotFoundError):
        mem.get("00000000-0000-7000-8000-000000000000")
    with pytest.raises(InvalidInputError):
        mem.recall("")
    buffer = io.StringIO()
    assert mem.export(buffer) == 7
    exported = [json.loads(line) for line in buffer.getvalue().splitlines()]
    assert {e["item"]["id"] for e in exported if e["type"] == "memory"} == set(ids)
    assert mem.forget(ids[1]) == 1 and mem.stats().total == 6
    assert mem.forget_all(user="u") == 6


def test_conversations_blocks_context(mem: Client) -> None:
    first = mem.messages.append("t1", "I moved to Lyon last spring", role="user", user="alice")
    second = mem.messages.append("t1", "Lyon is lovely", role="assistant")
    assert (first.turn, second.turn) == (1, 2)
    assert [m.content for m in mem.messages.recent("t1", 5)] == ["I moved to Lyon last spring", "Lyon is lovely"]
    assert mem.messages.search("moved to Lyon", thread="t1")[0].message.id == first.id
    assert [t.thread for t in mem.messages.threads()] == ["t1"]
    block = mem.blocks.replace("user_info", "Lives in Lyon.", user="alice")
    assert mem.blocks.append("user_info", "Likes tea.", user="alice").value.startswith("Lives in Lyon.")
    assert block.label == "user_info" and any(b.label == "user_info" for b in mem.blocks.all(user="alice"))
    context = mem.context("where do I live now?", thread="t1", budget_tokens=400, user="alice")
    assert "Lyon" in json.dumps(context["messages"]) and context["trace"]["sections"]
    report = mem.run_sync()
    assert report["messages_done"] == 2 and report["error"] is None


def test_async_client(served, mem: Client) -> None:  # type: ignore[no-untyped-def]
    async def scenario() -> None:
        async with AsyncClient(served.url, api_key=served.keys["all"], namespace=mem.namespace) as client:
            memory_id = await client.remember("Bob runs marathons", user="bob")
            assert (await client.get(memory_id)).user == "bob"
            assert (await client.recall("marathon"))[0].id == memory_id
            assert [i.id async for i in client.iter_all()] == [memory_id]
            message = await client.messages.append("t", "hello there")
            assert (await client.messages.recent("t"))[0].id == message.id
            with pytest.raises(NotFoundError):
                await client.forget("00000000-0000-7000-8000-000000000000")
            assert await client.forget(memory_id) == 1

    asyncio.run(scenario())


def test_sync_and_async_clients_have_the_same_methods() -> None:
    def public(cls: type) -> set[str]:
        return {n for n in dir(cls) if not n.startswith("_")} - {"close", "aclose"}

    assert public(Client) == public(AsyncClient)


def test_unreachable_server_is_a_clear_error() -> None:
    with Client("http://127.0.0.1:9", timeout=2) as client, pytest.raises(StoreUnavailableError):
        client.recall("anything")
