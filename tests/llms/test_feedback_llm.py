"""The feedback loop's LLM tasks (refine_prompt, reflect_conversation) through the real openai provider.

The model is the loopback fake server (scripted answers, real wire protocol); a
failing or confused model falls back to the deterministic rules and loses nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fake_llm_server import FakeLLMServer

from memory import Memory
from memory.config import FeedbackSettings, Settings
from memory.embedders.hashing import HashingEmbedder
from memory.llms import create_llm

SUMMARY = {"last_conversation_summary": "The user asked how to export data; the agent was vague.",
           "user_info": None, "goals_and_status": None, "important_context": None}  # fmt: skip


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    fake = FakeLLMServer()
    yield fake
    fake.close()


def _memory(server: FakeLLMServer, clock: Any) -> Memory:
    llm = create_llm("openai", {"model": "test-model", "base_url": f"{server.url}/v1", "retry_backoff": 0.01})
    settings = Settings(database="memory://", feedback=FeedbackSettings(reflect_min_support=1))
    return Memory(embedder=HashingEmbedder(), llm=llm, clock=clock, settings=settings)


def _bad_conversation(mem: Memory, server: FakeLLMServer) -> None:
    mem.prompts.create("support", "You are a support agent.")
    mem.messages.append("t1", "My account password is hunter2", role="user", user="alice", sensitivity="secret")
    mem.messages.append("t1", "How do I export my data?", role="user", user="alice")
    mem.messages.append("t1", "Use the menu.", role="assistant")
    mem.prompts.use("t1", "support")
    server.script = [f"json:{json.dumps(SUMMARY)}"]
    end = mem.end_conversation("t1")
    assert end.summarizer == "llm" and end.record is not None and end.record.summary == SUMMARY[
        "last_conversation_summary"]  # fmt: skip
    mem.feedback.record("t1", rating=1, feedback="too vague", example="Run `memory export`.")


def _sent(server: FakeLLMServer) -> str:
    return json.dumps([r["body"] for r in server.requests])


def test_suggest_and_reflect_with_the_model(server: FakeLLMServer, clock: Any) -> None:
    with _memory(server, clock) as mem:
        _bad_conversation(mem, server)
        refined = {
            "prompt": "You are a support agent. Always give the exact command.",
            "rationale": "users wanted commands",
        }
        server.script = [f"json:{json.dumps(refined)}"]
        suggestion = mem.prompts.suggest("support")
        assert suggestion.path == "llm" and suggestion.fallback_reason is None
        assert suggestion.version.origin == "llm" and suggestion.version.text == refined["prompt"]
        assert suggestion.version.status == "candidate" and suggestion.rationale == "users wanted commands"
        body = server.requests[-1]["body"]
        assert (
            "response_format" in body and "too vague" in json.dumps(body) and "Run `memory export`" in json.dumps(body)
        )
        lesson = {"outcome": "went_badly", "lessons": ["When asked about exports, give the exact command."]}
        server.script = [f"json:{json.dumps(lesson)}"]
        report = mem.reflect()
        assert report.path == "llm" and report.written == 1
        assert mem.get(report.memory_ids[0]).content == lesson["lessons"][0] + " (from 1 conversations: t1)"
        assert mem.get(report.memory_ids[0]).tags == ("reflection", "went_badly")
        calls = len(server.requests)
        assert mem.reflect().examined == 0 and len(server.requests) == calls  # idempotent, no model call
    assert "hunter2" not in _sent(server)  # the secret message never reached the model


@pytest.mark.parametrize("failure", ["500", "json:not json at all"])
def test_a_failing_model_falls_back_to_rules(server: FakeLLMServer, clock: Any, failure: str) -> None:
    with _memory(server, clock) as mem:
        _bad_conversation(mem, server)
        server.default = failure
        suggestion = mem.prompts.suggest("support")
        assert suggestion.path == "rules" and suggestion.fallback_reason
        assert "- Avoid: too vague" in suggestion.version.text and suggestion.version.origin == "suggested"
        report = mem.reflect()
        assert report.path == "rules" and report.fallback_reason and report.written == 1
        assert "avoid: too vague" in mem.get(report.memory_ids[0]).content
        assert mem.feedback.get("t1").reflected_at is not None  # nothing lost, nothing to redo
        assert [v.version for v in mem.prompts.versions("support")] == [1, 2]
    assert "hunter2" not in _sent(server)
