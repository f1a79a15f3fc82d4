"""The Agents SDK session over the message log, run by the SDK's Runner against a loopback Chat Completions server."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from frameworks import framework

from memory import Memory

framework("agents")

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from memory.errors import InvalidInputError  # noqa: E402
from memory.integrations.openai_agents import MemorySession  # noqa: E402


def _chat_server_module() -> Any:
    path = Path(__file__).resolve().parents[1] / "agent" / "chat_server.py"
    spec = importlib.util.spec_from_file_location("memory_tests_chat_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


chat = _chat_server_module()


def _agent(url: str, tools: list[Any] | None = None) -> Agent:
    client = AsyncOpenAI(base_url=url, api_key="test-key", max_retries=0)
    return Agent(
        name="helper",
        instructions="Be brief.",
        model=OpenAIChatCompletionsModel(model="test-model", openai_client=client),
        tools=tools or [],
    )


def _run(agent: Agent, text: str, session: MemorySession) -> Any:
    config = RunConfig(tracing_disabled=True)
    return asyncio.run(Runner.run(agent, text, session=session, run_config=config))


def test_runner_keeps_the_conversation_in_the_thread(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    calls: list[str] = []

    @function_tool
    def lookup_weather(city: str) -> str:
        """The weather in a city."""
        calls.append(city)
        return f"sunny in {city}"

    script = [
        chat.answer("Nice to meet you, Alice."),
        chat.tool_call("lookup_weather", {"city": "Berlin"}),
        chat.answer("It is sunny in Berlin."),
    ]
    server = chat.ChatServer(script)
    with server.running():
        agent = _agent(server.url, [lookup_weather])
        session = MemorySession("chat-1", mem, user="alice")
        first = _run(agent, "Hi, I am Alice and I live in Berlin.", session)
        assert first.final_output == "Nice to meet you, Alice."
        second = _run(agent, "What's the weather where I live?", session)
        assert second.final_output == "It is sunny in Berlin."
    assert calls == ["Berlin"]
    # the second request carried the first turn, read back from the session
    sent = [m.get("content") for m in server.requests[1]["messages"]]
    assert "Hi, I am Alice and I live in Berlin." in sent and "Nice to meet you, Alice." in sent
    # the message log holds every item, in order, searchable, scoped to the user
    thread = mem.messages.get_thread("chat-1")
    roles = [m.role for m in thread]
    assert roles == ["user", "assistant", "user", "function_call", "function_call_output", "assistant"]
    assert all(m.user == "alice" for m in thread)
    assert "lookup_weather" in thread[3].content and "sunny in Berlin" in thread[4].content
    hits = mem.messages.search("where does alice live", thread="chat-1")
    assert hits and "Berlin" in hits[0].message.content
    items = asyncio.run(session.get_items())
    assert items[0] == {"role": "user", "content": "Hi, I am Alice and I live in Berlin."}
    assert items[3]["type"] == "function_call" and items[3]["name"] == "lookup_weather"


def test_get_add_pop_clear(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    session = MemorySession("s", mem)
    other = MemorySession("t", mem)

    async def scenario() -> None:
        assert await session.get_items() == []
        assert await session.pop_item() is None
        items = [{"role": "user", "content": f"message {i}"} for i in range(5)]
        await session.add_items(items)
        await other.add_items([{"role": "user", "content": "elsewhere"}])
        assert await session.get_items() == items
        assert await session.get_items(limit=2) == items[-2:]
        assert await session.pop_item() == items[-1]
        assert await session.get_items() == items[:-1]
        await session.add_items([{"role": "assistant", "content": "after pop"}])
        assert (await session.get_items(limit=1)) == [{"role": "assistant", "content": "after pop"}]
        await session.clear_session()
        assert await session.get_items() == []
        assert await other.get_items() == [{"role": "user", "content": "elsewhere"}]

    asyncio.run(scenario())


def test_bad_items_store_nothing(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    session = MemorySession("s", mem)
    with pytest.raises(InvalidInputError):
        asyncio.run(session.add_items([{"role": "user", "content": "ok"}, "not a dict"]))  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        asyncio.run(session.add_items([{"role": "user", "content": "ok"}, {"role": "user", "content": object()}]))
    assert asyncio.run(session.get_items()) == []


def test_namespaces_do_not_cross(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    a, b = MemorySession("same", mem, namespace="a"), MemorySession("same", mem, namespace="b")
    asyncio.run(a.add_items([{"role": "user", "content": "tenant a only"}]))
    assert asyncio.run(b.get_items()) == []
    assert asyncio.run(b.pop_item()) is None
    assert len(asyncio.run(a.get_items())) == 1
