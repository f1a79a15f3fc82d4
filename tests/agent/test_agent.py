"""MemoryAgent end to end against a loopback chat-completions server with scripted tool calls."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from chat_server import ChatServer, answer, tool_call

from memory import Memory
from memory.agent import (
    MEMORY_TOOLS,
    ChatClient,
    InProcessSink,
    MemoryAgent,
    ToolScope,
    anthropic_tools,
    available_tools,
    execute_tool,
    openai_tools,
)
from memory.context import ContextStrategy, TokenBudget, counter_for
from memory.embedders.hashing import HashingEmbedder
from memory.errors import AgentError, InvalidInputError, ProviderError


@pytest.fixture
def mem(tmp_db: str) -> Iterator[Memory]:
    m = Memory(tmp_db, embedder=HashingEmbedder())
    yield m
    m.close()


def test_tool_definitions_in_both_shapes() -> None:
    names = [t["function"]["name"] for t in openai_tools()]
    assert names == ["remember", "recall", "forget", "update_block", "search_conversation"]
    assert all(t["type"] == "function" and t["function"]["parameters"]["type"] == "object" for t in openai_tools())
    anth = anthropic_tools(["recall"])
    assert anth == [{"name": "recall", "description": MEMORY_TOOLS[1].description,
                     "input_schema": MEMORY_TOOLS[1].parameters}]  # fmt: skip
    with pytest.raises(InvalidInputError, match="unknown memory tool"):
        openai_tools(["fly"])


def test_tool_execution_is_scoped_and_errors_are_results(mem: Memory) -> None:
    alice, bob = ToolScope(user="alice"), ToolScope(user="bob")
    stored = execute_tool(mem, "remember", '{"content": "Alice has a cat named Miso", "tags": ["pets"]}', alice)
    assert stored["stored"] and mem.get(stored["id"]).user == "alice"
    found = execute_tool(mem, "recall", {"query": "cat"}, alice)
    assert found["memories"][0]["content"] == "Alice has a cat named Miso"
    assert execute_tool(mem, "recall", {"query": "cat"}, bob) == {"memories": []}
    assert "no memory" in execute_tool(mem, "forget", {"id": stored["id"]}, bob)["error"]
    assert mem.get(stored["id"])  # bob could not delete it
    assert execute_tool(mem, "forget", {"id": stored["id"]}, alice) == {"id": stored["id"], "forgotten": True}
    assert execute_tool(mem, "update_block", {"label": "user_info", "content": "Alice, cat owner"}, alice) == {
        "label": "user_info", "updated": "replace"
    }  # fmt: skip
    execute_tool(mem, "update_block", {"label": "user_info", "content": "likes tea", "mode": "append"}, alice)
    assert mem.blocks.get("user_info", user="alice").value == "Alice, cat owner\nlikes tea"
    assert mem.blocks.get("user_info", user="bob").value == ""
    assert (
        "limit" in execute_tool(mem, "update_block", {"label": "user_info", "content": "x" * 100_000}, alice)["error"]
    )
    mem.messages.append("t1", "my cat Miso sleeps all day", role="user", user="alice")
    mem.messages.append("t2", "bob's cat is called Tom", role="user", user="bob")
    found_messages = execute_tool(mem, "search_conversation", {"query": "cat"}, alice)["messages"]
    assert [m["content"] for m in found_messages] == ["my cat Miso sleeps all day"]
    assert "not valid JSON" in execute_tool(mem, "recall", "{oops", alice)["error"]
    assert "unknown argument" in execute_tool(mem, "recall", {"query": "x", "k": 1}, alice)["error"]
    assert "missing argument" in execute_tool(mem, "remember", {}, alice)["error"]
    assert "wrong type" in execute_tool(mem, "recall", {"query": 3}, alice)["error"]
    assert "unknown tool" in execute_tool(mem, "rm_rf", {}, alice)["error"]
    assert "empty" in execute_tool(mem, "remember", {"content": "   "}, alice)["error"]
    assert [t.name for t in available_tools(mem)] == [t.name for t in MEMORY_TOOLS]


def test_agent_loop_end_to_end(mem: Memory) -> None:
    mem.remember("Alice lives in Berlin", user="alice")
    mem.remember("Bob lives in Paris", user="bob")
    script = [
        tool_call("remember", {"content": "Alice adopted a cat named Miso"}, "c1"),
        tool_call("recall", {"query": "cat name"}, "c2"),
        answer("Your cat is called Miso."),
        answer("You live in Berlin."),
    ]
    with ChatServer(script).running() as server:
        client = ChatClient(server.url, "gpt-4o-mini", api_key="sk-test")
        agent = MemoryAgent(mem, client, user="alice", budget=1500)
        turn = agent.run("I adopted a cat named Miso. What is my cat called?")
        second = agent.run("Where do I live?")
        client.close()
    assert turn.reply == "Your cat is called Miso."
    assert [len(s.tool_calls) for s in turn.steps] == [1, 1, 0]
    assert turn.saved == "saved to mem.messages"
    first, after_remember, after_recall, next_turn = server.requests
    assert server.headers[0]["Authorization"] == "Bearer sk-test"
    assert first["model"] == "gpt-4o-mini" and first["tool_choice"] == "auto"
    assert [t["function"]["name"] for t in first["tools"]] == [t.name for t in MEMORY_TOOLS]
    system = first["messages"][0]
    assert system["role"] == "system" and "Alice lives in Berlin" in system["content"]
    assert "Paris" not in system["content"]  # another user's memory never reaches the prompt
    assert first["messages"][-1] == {"role": "user", "content": "I adopted a cat named Miso. What is my cat called?"}
    # the context is rebuilt for every call: the fact remembered by the tool is in the next system prompt
    assert "Alice adopted a cat named Miso" in after_remember["messages"][0]["content"]
    assert after_remember["messages"][-2]["tool_calls"][0]["function"]["name"] == "remember"
    tool_result = after_remember["messages"][-1]
    assert tool_result["role"] == "tool" and tool_result["tool_call_id"] == "c1"
    assert json.loads(tool_result["content"])["stored"] is True
    recalled = json.loads(after_recall["messages"][-1]["content"])["memories"]
    assert recalled[0]["content"] == "Alice adopted a cat named Miso"
    # the next turn sees the earlier exchange as recent conversation (from the store's message log)
    assert "## Recent conversation" in next_turn["messages"][0]["content"]
    assert "assistant: Your cat is called Miso." in next_turn["messages"][0]["content"]
    assert next_turn["messages"][-1] == {"role": "user", "content": "Where do I live?"}
    assert second.reply == "You live in Berlin."
    assert mem.recall("Miso", user="alice")[0].content == "Alice adopted a cat named Miso"
    assert all("Miso" not in h.content for h in mem.recall("Miso", user="bob"))


def test_agent_saves_the_conversation_in_the_message_log(mem: Memory) -> None:
    with ChatServer([answer("Hello!"), answer("Still here.")]).running() as server:
        agent = MemoryAgent(mem, ChatClient(server.url, "llama3.2"), user="u", thread="t9")
        assert agent.run("hi").saved == "saved to mem.messages"
        agent.run("are you there?")
    rows = mem.messages.get_thread("t9")
    assert [(m.turn, m.role, m.content, m.user) for m in rows] == [
        (1, "user", "hi", "u"), (2, "assistant", "Hello!", "u"),
        (3, "user", "are you there?", "u"), (4, "assistant", "Still here.", "u"),
    ]  # fmt: skip
    system = server.requests[1]["messages"][0]["content"]
    assert "user: hi\n" in system and "assistant: Hello!" in system and "are you there?" not in system


def test_without_a_message_log_the_turns_are_kept_in_process(mem: Memory) -> None:
    sink = InProcessSink()
    with ChatServer([answer("Hello!"), answer("Yes.")]).running() as server:
        agent = MemoryAgent(mem, ChatClient(server.url, "m"), user="u", sink=sink)
        assert agent.run("hi").saved == InProcessSink.NOTE
        agent.run("again?")
    assert [(r, c) for r, c, _ in sink.transcript(agent.scope.thread)] == [
        ("user", "hi"), ("assistant", "Hello!"), ("user", "again?"), ("assistant", "Yes.")
    ]  # fmt: skip
    system = server.requests[1]["messages"][0]["content"]
    assert "## Recent conversation" in system and "assistant: Hello!" in system and "again?" not in system
    assert mem.messages.get_thread(agent.scope.thread) == []


def test_endpoint_failures_and_runaway_tool_loops_are_clear_errors(mem: Memory) -> None:
    with ChatServer([(500, '{"error": "boom"}'), (200, "not json")]).running() as server:
        agent = MemoryAgent(mem, ChatClient(server.url, "m"), user="u")
        with pytest.raises(ProviderError, match="answered 500"):
            agent.run("hi")
        with pytest.raises(ProviderError, match="unexpected body"):
            agent.run("hi")
    with ChatServer([tool_call("recall", {"query": "x"})] * 3).running() as server:
        agent = MemoryAgent(mem, ChatClient(server.url, "m"), user="u", max_steps=3)
        with pytest.raises(AgentError, match="after 3 model calls"):
            agent.run("loop forever")
    with pytest.raises(ProviderError, match="failed"):
        MemoryAgent(mem, ChatClient("http://127.0.0.1:9/v1", "m", timeout=2)).run("anyone?")
    with pytest.raises(InvalidInputError):
        ChatClient("ftp://x", "m")
    with pytest.raises(InvalidInputError, match="empty"):
        MemoryAgent(mem, ChatClient("http://127.0.0.1:9/v1", "m")).run("  ")


def test_the_whole_request_with_the_tool_exchange_fits_the_budget(mem: Memory) -> None:
    for i in range(40):
        mem.remember(f"Erin note {i}: she keeps plants number {i} on the balcony", user="erin")
    script = [tool_call("recall", {"query": "plants", "limit": 10}, "c1"), answer("You keep plants.")]
    with ChatServer(script).running() as server:
        agent = MemoryAgent(
            mem,
            ChatClient(server.url, "gpt-4o"),
            user="erin",
            budget=TokenBudget(total=1600),
            strategy=ContextStrategy(semantic_limit=40),
        )
        turn = agent.run("What do I keep on the balcony?")
    counter = counter_for("gpt-4o")
    second = server.requests[1]
    exchange = second["messages"][-2:]
    prompt = second["messages"][:-2]
    total = sum(counter.count(m["content"]) + 3 for m in prompt) + 3
    total += sum(counter.count(json.dumps(m, ensure_ascii=False)) + 3 for m in exchange)
    total += sum(counter.count(json.dumps(t, separators=(",", ":"))) for t in second["tools"])
    assert total <= 1600
    assert turn.steps[1].context_tokens < turn.steps[0].context_tokens  # the prompt gave way to the exchange


def test_agent_uses_a_versioned_prompt_and_reports_feedback(mem: Memory) -> None:
    mem.prompts.create("assistant", "You are the tested assistant, version one.")
    mem.prompts.add_version("assistant", "You are the tested assistant, version two.")
    with ChatServer([answer("Use the menu."), answer("Call GET /export."), answer("Hi again.")]).running() as server:
        agent = MemoryAgent(mem, ChatClient(server.url, "llama3.2"), user="u", thread="t1", prompt="assistant")
        agent.run("How do I export my data?")
        agent.run("No, I meant the API")
        record = agent.finish(rating=2, feedback="too vague at first")
        assert server.requests[0]["messages"][0]["content"].startswith("You are the tested assistant, version one.")
        assert record.prompt_name == "assistant" and record.prompt_version == 1 and record.corrections == 1
        assert record.summary and record.reward is not None and record.reward < 0.5
        mem.prompts.promote("assistant", 2)
        agent.scope = ToolScope(user="u", thread="t2")
        agent.run("Hello")
        assert server.requests[-1]["messages"][0]["content"].startswith("You are the tested assistant, version two.")
    assert mem.feedback.get("t2").prompt_version == 2
    assert [s.conversations for s in mem.prompts.stats("assistant")] == [1, 1]
