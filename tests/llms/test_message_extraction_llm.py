"""Message extraction through the real openai provider against a loopback chat server (issue 5)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_llm_server import FakeLLMServer

from memory import Memory
from memory.config import load_settings
from memory.embedders.hashing import HashingEmbedder
from memory.llms import create_llm


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    fake = FakeLLMServer()
    yield fake
    fake.close()


def _memory(server: FakeLLMServer, tmp_path: Path, clock: Any, *, sync_extracts: bool = False) -> Memory:
    llm = create_llm("openai", {"model": "test-model", "base_url": f"{server.url}/v1", "retry_backoff": 0.01})
    settings = load_settings({"database": f"sqlite:///{tmp_path / 'm.db'}", "extraction": {"messages": sync_extracts}})
    return Memory(settings=settings, embedder=HashingEmbedder(), llm=llm, clock=clock)


def test_append_does_not_call_the_llm_unless_asked(server: FakeLLMServer, tmp_path: Path, clock: Any) -> None:
    with _memory(server, tmp_path, clock) as mem:
        mem.messages.append("t1", "Alice moved to Berlin.", user="al")
        mem.run_sync()
        assert server.requests == [] and mem.stats().total == 0


def test_llm_facts_are_validated_stored_and_graphed(server: FakeLLMServer, tmp_path: Path, clock: Any) -> None:
    server.script = [
        'json:{"facts": [{"statement": "Alice lives in Berlin.", "subject": "Alice", "predicate": "lives in", '
        '"object": "Berlin", "negated": false, "when": null}, {"statement": "Alice is a nurse.", "subject": "Alice", '
        '"predicate": "works as", "object": "nurse", "negated": false, "when": "last year"}], '
        '"entities": [{"name": "Alice", "type": "person"}, {"name": "Berlin", "type": "place"}], "correction": null}'
    ]
    with _memory(server, tmp_path, clock) as mem:
        said = mem.messages.append(
            "t1", "I'm Alice, a nurse living in Berlin.", user="al", speaker="Alice", extract=True
        )
        assert len(server.requests) == 1  # one call for the message, JSON-schema constrained
        request = server.requests[0]["body"]
        assert request["response_format"]["type"] == "json_schema"
        assert "SPEAKER: Alice" in request["messages"][-1]["content"]
        items = mem.list(limit=10).items
        assert sorted(i.content for i in items) == ["Alice is a nurse.", "Alice lives in Berlin."]
        assert all(i.source_ids == (said.id,) for i in items)
        nurse = next(i for i in items if "nurse" in i.content)
        assert nurse.metadata["fact_slots"] == {"job_title": "nurse"} and nurse.metadata["fact_time"]["granularity"]
        assert {r.predicate for r in mem.graph.facts_about("Alice")} == {"lives in", "works as"}
        server.script = [
            'json:{"facts": [{"statement": "Alice moved to Hamburg.", "subject": "Alice", "predicate": "moved to", '
            '"object": "Hamburg", "negated": false, "when": null}], "entities": [], "correction": null}'
        ]
        mem.messages.append("t1", "I moved to Hamburg!", user="al", speaker="Alice", extract=True)
        live = {i.content for i in mem.list(limit=10).items}
        assert "Alice moved to Hamburg." in live and "Alice lives in Berlin." not in live  # superseded


@pytest.mark.parametrize(
    "answer",
    [
        "500",  # the server fails
        "garbage",  # not JSON at all
        'json:{"facts": [{"statement": "I live in Oslo.", "subject": "Bob"}], "entities": []}',  # first person
        'json:{"facts": [{"statement": "", "subject": ""}]}',  # fails the schema
    ],
)
def test_a_bad_llm_answer_falls_back_to_the_offline_extractor(
    server: FakeLLMServer, tmp_path: Path, clock: Any, caplog: pytest.LogCaptureFixture, answer: str
) -> None:
    server.default = answer
    with _memory(server, tmp_path, clock) as mem, caplog.at_level(logging.WARNING):
        said = mem.messages.append("t1", "I moved to Oslo last week.", user="bob", speaker="Bob", extract=True)
        assert mem.messages.recent("t1", 5)[0].id == said.id  # the message is kept
        items = mem.list(limit=10).items
        assert [i.content for i in items] == ["Bob moved to Oslo."]  # the offline extractor's fact
        assert items[0].metadata["fact_extractor"] != "openai:test-model" and items[0].metadata["fact_llm_fallback"]
        assert any(said.id in r.getMessage() and "offline extractor" in r.getMessage() for r in caplog.records)


def test_sync_job_extracts_with_the_fallback(server: FakeLLMServer, tmp_path: Path, clock: Any) -> None:
    server.default = "500"
    with _memory(server, tmp_path, clock, sync_extracts=True) as mem:
        mem.messages.append("t1", "I moved to Rome.", user="carl", speaker="Carl")
        report = mem.run_sync()
        assert report.messages_done == 1 and report.messages_extracted == 1 and report.extraction_failed == 0
        assert [i.content for i in mem.list().items] == ["Carl moved to Rome."]
        assert mem.messages.recent("t1", 5)[0].embedding_status == "done"


def test_worker_extracts_facts_in_the_background(server: FakeLLMServer, tmp_path: Path, clock: Any) -> None:
    from memory.episodic.worker import Worker

    with _memory(server, tmp_path, clock, sync_extracts=True) as mem:
        said = mem.messages.append("t1", "I moved to Porto.", user="gina", speaker="Gina")
        assert server.requests == []  # the append did not wait for the model
        runner = Worker(mem, jobs=["sync", "extract"], interval=0)
        results = runner.run_once()
        assert results["sync"]["messages_extracted"] == 1 and len(server.requests) == 1
        items = mem.list().items
        assert [i.content for i in items] == ["Gina moved to Porto."]
        assert all(i.source_ids == (said.id,) for i in items)
        assert [r.predicate for r in mem.graph.facts_about("Gina")] == ["move to"]
