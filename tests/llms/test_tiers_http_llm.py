"""Tier LLM tasks through the real openai provider against a loopback chat server (scripted answers)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fake_llm_server import FakeLLMServer

from memory import Memory
from memory.embedders.hashing import HashingEmbedder
from memory.llms import create_llm


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    fake = FakeLLMServer()
    yield fake
    fake.close()


def _memory(server: FakeLLMServer, clock: Any) -> Memory:
    llm = create_llm("openai", {"model": "test-model", "base_url": f"{server.url}/v1", "retry_backoff": 0.01})
    mem = Memory("memory://", embedder=HashingEmbedder(), llm=llm, clock=clock)
    mem.tiers.configure(agent="g", stm_capacity=1, heat_threshold=2.0)
    return mem


def test_tier_tasks_go_through_the_http_provider(server: FakeLLMServer, clock: Any) -> None:
    persona = {"user_profile": {"city": "Berlin"}, "user_knowledge": ["alice lives in Berlin"], "user_traits": [],
               "agent_traits": ["answers briefly"], "objects": [{"type": "place", "identifier": "Berlin",
               "profile": {}, "knowledge": ["Berlin is a city"], "traits": []}],
               "shared": [{"content": "Berlin is a city", "importance": 0.8}]}  # fmt: skip
    server.script = [
        'json:{"meta_chain": "first chain"}',
        'json:{"meta_chain": "second chain"}',
        'json:{"summary": "About Berlin.", "keywords": ["berlin"]}',
        f"json:{json.dumps(persona)}",
    ]
    with _memory(server, clock) as mem:
        mem.tiers.add_page("I live in Berlin.", "Nice.", agent="g", user="alice")
        mem.tiers.add_page("It is big.", "Yes.", agent="g", user="alice")
        snap = mem.tiers.show(agent="g", user="alice")
    assert len(server.requests) == 4
    for request in server.requests:
        assert request["path"] == "/v1/chat/completions" and "response_format" in request["body"]
    assert snap.stm[0].meta_chain == "second chain"
    assert snap.segments[0][0].summary == "About Berlin." and snap.segments[0][0].keywords == ("berlin",)
    assert snap.user_persona is not None and snap.user_persona.profile == {"city": "Berlin"}
    assert [o.identifier for o in snap.objects] == ["Berlin"]
    assert snap.agent_persona is not None and snap.agent_persona.traits == ("answers briefly",)
    assert [(e.content, e.importance) for e in snap.system] == [("Berlin is a city", 0.8)]


def test_an_llm_outage_falls_back_without_losing_pages(server: FakeLLMServer, clock: Any) -> None:
    server.default = "500"
    with _memory(server, clock) as mem:
        mem.tiers.add_page("I love tea.", "Nice.", agent="g", user="alice")
        mem.tiers.add_page("Green tea mostly.", "Good.", agent="g", user="alice")
        report = mem.tiers.consolidate()
        snap = mem.tiers.show(agent="g", user="alice")
    assert server.requests  # the provider was asked
    assert snap.stm[0].query == "Green tea mostly." and snap.stm[0].meta_chain.startswith("topic:")
    assert snap.segments[0][0].summary.startswith("I love tea")
    assert snap.user_persona is not None and "love tea" in snap.user_persona.traits
    assert report.pages_moved == 0  # the inline pass already moved the overflow
