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


def test_llm_facts_are_stored_and_queued_for_the_graph(server: FakeLLMServer, tmp_path: Path, clock: Any) -> None:
    server.script = ['json:{"facts": ["Alice lives in Berlin.", "Alice is a nurse."], "keywords": ["berlin"], '
                     '"entities": [{"name": "Alice", "type": "person"}], "relations": []}']  # fmt: skip
    with _memory(server, tmp_path, clock) as mem:
        said = mem.messages.append("t1", "I'm Alice, a nurse living in Berlin.", user="al", extract=True)
        assert len(server.requests) == 1  # one call for the message; the facts' graph work is queued
        items = mem.list(limit=10).items
        assert sorted(i.content for i in items) == ["Alice is a nurse.", "Alice lives in Berlin."]
        assert all(i.source_ids == (said.id,) and i.metadata["_extraction"] == "pending" for i in items)
        server.default = "extract"
        reports = mem.extract_pending()
        assert [r.status for r in reports] == ["done", "done"]


def test_an_llm_failure_keeps_the_message(
    server: FakeLLMServer, tmp_path: Path, clock: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server.default = "500"
    with _memory(server, tmp_path, clock) as mem, caplog.at_level(logging.WARNING):
        said = mem.messages.append("t1", "Bob moved to Oslo.", user="bob", extract=True)
        assert mem.messages.recent("t1", 5)[0].id == said.id and mem.stats().total == 0
        assert any(said.id in r.getMessage() and "LLMError" in r.getMessage() for r in caplog.records)
        server.default = "extract"  # the model is back: retry for the stored message
        reports = mem.messages.extract_facts([said.id])
        assert reports[0].status == "done" and mem.stats().total >= 1


def test_sync_job_reports_extraction_failures(server: FakeLLMServer, tmp_path: Path, clock: Any) -> None:
    server.default = "500"
    with _memory(server, tmp_path, clock, sync_extracts=True) as mem:
        mem.messages.append("t1", "Carl moved to Rome.", user="carl")
        report = mem.run_sync()
        assert report.messages_done == 1  # embedding is not held up by the model
        assert report.extraction_failed == 1 and report.extraction_error and "LLMError" in report.extraction_error
        assert mem.stats().total == 0 and mem.messages.recent("t1", 5)[0].embedding_status == "done"


def test_worker_extracts_queued_facts_in_the_background(server: FakeLLMServer, tmp_path: Path, clock: Any) -> None:
    from memory.episodic.worker import Worker

    with _memory(server, tmp_path, clock, sync_extracts=True) as mem:
        said = mem.messages.append("t1", "Gina moved to Porto.", user="gina")
        assert server.requests == []  # the append did not wait for the model
        runner = Worker(mem, jobs=["sync", "extract"], interval=0)
        results = runner.run_once()
        assert results["sync"]["messages_extracted"] == 1
        assert results["extract"]["processed"] >= 1 and results["extract"].get("done", 0) >= 1
        items = mem.list().items
        assert items and all(i.source_ids == (said.id,) and i.metadata["_extraction"] == "done" for i in items)
        assert mem.graph.facts_about("Gina")
