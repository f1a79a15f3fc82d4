"""Messages feed extraction: facts become memories that cite their message; never for secrets (heuristic LLM)."""

from __future__ import annotations

from typing import Any

import pytest

from memory import Memory
from memory.config import load_settings
from memory.embedders.hashing import HashingEmbedder
from memory.errors import InvalidInputError


def _memory(db: str, clock: Any, *, sync_extracts: bool = False) -> Memory:
    settings = load_settings({"database": db, "extraction": {"messages": sync_extracts}})
    return Memory(settings=settings, embedder=HashingEmbedder(), clock=clock)


def test_append_with_extract_stores_facts_citing_the_message(tmp_db: str, clock: Any) -> None:
    with _memory(tmp_db, clock) as mem:
        said = mem.messages.append("t1", "Alice moved to Berlin in 2021.", user="al", agent="bot", extract=True)
        items = mem.list(limit=100).items
        assert items, "a fact was stored"
        for item in items:
            assert item.source_ids == (said.id,)
            assert (item.kind, item.user, item.agent, item.thread) == ("fact", "al", "bot", "t1")
        assert any("Berlin" in i.content for i in items)
        facts = mem.graph.facts_about("Alice")
        assert facts and set(facts[0].source_ids) <= {i.id for i in items}  # the graph cites the fact memory
        hits = mem.recall("where did Alice move?", user="al")
        assert hits and hits[0].item.source_ids == (said.id,)
        # appending it again stores nothing twice
        mem.messages.append("t1", "Alice moved to Berlin in 2021.", user="al", agent="bot", extract=True)
        assert mem.stats().total == len(items)


def test_secret_and_plain_messages_are_not_extracted(tmp_db: str, clock: Any) -> None:
    with _memory(tmp_db, clock) as mem:
        mem.messages.append("t1", "My PIN is 4711 and Bob lives in Oslo.", sensitivity="secret", extract=True)
        mem.messages.append("t1", "Carol lives in Rome.")  # extract not asked, setting off
        assert mem.stats().total == 0
        assert mem.graph.counts()["entities"] == 0
        report = mem.run_sync()
        assert report.messages_done == 1 and report.messages_extracted == 0 and mem.stats().total == 0
        with pytest.raises(InvalidInputError):
            mem.messages.append("t1", "x", extract="yes")  # type: ignore[arg-type]


def test_private_message_facts_stay_private(tmp_db: str, clock: Any) -> None:
    with _memory(tmp_db, clock) as mem:
        mem.messages.append("t1", "Dana works at Globex.", user="dd", sensitivity="private", extract=True)
        items = mem.list(clearance="private").items
        assert items and all(i.sensitivity == "private" for i in items)
        assert not mem.list(clearance="normal").items


def test_sync_job_extracts_when_enabled(tmp_db: str, clock: Any) -> None:
    with _memory(tmp_db, clock, sync_extracts=True) as mem:
        first = mem.messages.append("t1", "Erik moved to Madrid.", user="er")
        mem.messages.append("t1", "Erik's password is hunter2.", user="er", sensitivity="secret")
        mem.messages.append("t1", "", user="er", content_type="image", media=b"\x89PNG fake", mime="image/png")
        assert mem.stats().total == 0  # append never waits for extraction
        report = mem.run_sync()
        assert report.messages_extracted == 1 and report.facts_stored >= 1 and report.extraction_failed == 0
        items = mem.list().items
        assert items and all(i.source_ids == (first.id,) for i in items)
        assert all("hunter2" not in i.content for i in mem.list(clearance="secret").items)
        # a second run has nothing to do: messages are done, nothing extracted twice
        again = mem.run_sync()
        assert again.messages_extracted == 0 and mem.stats().total == len(items)


def test_extract_facts_reruns_for_stored_messages(tmp_db: str, clock: Any) -> None:
    with _memory(tmp_db, clock) as mem:
        said = mem.messages.append("t1", "I really like jazz. I live in Lyon.", user="fay", speaker="Fay")
        reports = mem.messages.extract_facts([said.id, "no-such-id"])
        assert [r.message_id for r in reports] == [said.id] and reports[0].status == "done"
        assert len(reports[0].memory_ids) >= 1
        twice = mem.messages.extract_facts([said.id])
        assert set(twice[0].memory_ids) == set(reports[0].memory_ids)
        with pytest.raises(InvalidInputError):
            mem.messages.extract_facts("not-a-list")  # type: ignore[arg-type]
