"""The configured LLM in conversation ends (issue 4) and context summaries (issue 7), over a loopback chat server.

The provider is the real ``openai`` one; the server speaks the chat-completions
protocol with scripted answers (valid, malformed, HTTP 500).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fake_llm_server import FakeLLMServer

from memory import Memory
from memory.embedders.hashing import HashingEmbedder
from memory.llms import create_llm

SUMMARY = {
    "last_conversation_summary": "Al told the agent he is a nurse training for a marathon.",
    "user_info": "Al is a nurse.",
    "goals_and_status": "Run a marathon in spring (training).",
    "important_context": None,
}


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    fake = FakeLLMServer()
    yield fake
    fake.close()


def _memory(server: FakeLLMServer, clock: Any) -> Memory:
    llm = create_llm("openai", {"model": "test-model", "base_url": f"{server.url}/v1", "retry_backoff": 0.01})
    return Memory("memory://", embedder=HashingEmbedder(), llm=llm, clock=clock)


def _conversation(mem: Memory) -> None:
    mem.messages.append("t1", "I am a nurse. I want to run a marathon in spring.", user="al")
    mem.messages.append("t1", "Great, let's plan your training.", role="assistant", user="al")
    mem.messages.append("t1", "My locker code is 4711.", user="al", sensitivity="secret")


def test_end_conversation_uses_the_llm(server: FakeLLMServer, clock: Any) -> None:
    server.script = [f"json:{json.dumps(SUMMARY)}"]
    with _memory(server, clock) as mem:
        _conversation(mem)
        ended = mem.end_conversation("t1")
        blocks = {b.label: b.value for b in mem.blocks.all(user="al")}
        history = mem.blocks.history("user_info", user="al")
    assert ended.summarizer == "llm" and ended.fallback_reason is None
    # the summary, then the facts of the user's message (extract_facts), which the profile is built from
    assert len(server.requests) == 2 and "SPEAKER: al" in json.dumps(server.requests[1]["body"]["messages"])
    body = server.requests[0]["body"]
    assert body["response_format"]["type"] == "json_schema"
    prompt = json.dumps(body["messages"])
    assert "I am a nurse" in prompt and "4711" not in prompt  # secrets never reach the model
    assert blocks["last_conversation_summary"] == SUMMARY["last_conversation_summary"]
    assert blocks["user_info"] == "al\n- Al is a nurse."  # the current facts, not the model's free text
    assert "marathon" in blocks["goals_and_status"] and "4711" not in json.dumps(blocks)
    assert blocks["important_context"] == ""  # null: left unchanged
    assert set(ended.updated) == {"last_conversation_summary", "user_info", "goals_and_status"}
    assert "fallback" not in json.dumps([h.model_dump(mode="json") for h in history])


@pytest.mark.parametrize(
    ("answers", "error"),
    [
        (["json:this is not JSON"] * 3, "LLMOutputError"),
        (['json:{"last_conversation_summary": 42}'] * 3, "LLMOutputError"),
        (["500"] * 3, "LLMError"),
    ],
    ids=["malformed", "wrong-schema", "http-500"],
)
def test_end_conversation_falls_back_to_extractive(
    server: FakeLLMServer, clock: Any, answers: list[str], error: str
) -> None:
    server.script = list(answers)
    server.default = f"json:{json.dumps(SUMMARY)}"  # would succeed: proves every retry was used up first
    with _memory(server, clock) as mem:
        _conversation(mem)
        ended = mem.end_conversation("t1")
        blocks = {b.label: b.value for b in mem.blocks.all(user="al")}
        reasons = json.dumps([h.model_dump(mode="json") for h in mem.blocks.history("user_info", user="al")])
    summaries = [r for r in server.requests if "CURRENT BLOCKS" in json.dumps(r["body"]["messages"])]
    assert len(summaries) == 3  # one try + two retries
    assert ended.summarizer == "extractive" and ended.fallback_reason and ended.fallback_reason.startswith(error)
    # the profile comes from the user's facts (the model failed there too: the offline extractor's facts)
    assert "Al is a nurse." in blocks["user_info"] and "marathon" in blocks["goals_and_status"]
    assert "Conversation t1" in blocks["last_conversation_summary"]
    assert "extractive fallback" in reasons and error in reasons  # the blocks' history says why


def test_heuristic_provider_keeps_the_extractive_summarizer(clock: Any) -> None:
    with Memory("memory://", embedder=HashingEmbedder(), clock=clock) as mem:
        _conversation(mem)
        ended = mem.end_conversation("t1")
    assert ended.summarizer == "extractive" and ended.fallback_reason is None


_LONG = " ".join(
    f"Note {n}: the quarterly report for region {n} mentions budget item {n * 7} and a meeting in room {n}."
    for n in range(60)
)


def _context(mem: Memory) -> Any:
    mem.remember(_LONG, user="al")
    return mem.context("what does the quarterly report say about budgets?", user="al", budget={"total": 800})


def test_context_summarises_with_the_llm(server: FakeLLMServer, clock: Any) -> None:
    server.default = 'json:{"summary": "LLM SUMMARY: budgets rose in every region."}'
    with _memory(server, clock) as mem:
        compiled = _context(mem)
    tasks = [r["body"]["messages"][0]["content"] for r in server.requests]
    assert tasks and all("shorten a section" in t for t in tasks)
    text = json.dumps(compiled.messages)
    assert "LLM SUMMARY: budgets rose" in text
    notes = {n.source: n for n in compiled.trace.sources}
    assert notes["llm_summariser"].status == "used" and notes["llm_summariser"].sections == len(server.requests)
    assert compiled.trace.tokens["total"] <= 800


def test_context_falls_back_to_extractive_when_the_llm_fails(server: FakeLLMServer, clock: Any) -> None:
    server.default = "500"
    with _memory(server, clock) as mem:
        compiled = _context(mem)
        baseline = Memory("memory://", embedder=HashingEmbedder(), clock=clock)
        expected = _context(baseline)
        baseline.close()
    assert server.requests  # the model was asked
    notes = {n.source: n for n in compiled.trace.sources}
    assert notes["llm_summariser"].status == "failed" and "LLMError" in notes["llm_summariser"].note
    assert "llm_summariser" not in {n.source for n in expected.trace.sources}  # heuristic: never asked
    assert compiled.messages == expected.messages  # the same extractive summary as without a model
    assert compiled.trace.tokens["total"] <= 800
