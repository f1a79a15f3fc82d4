"""Facts from messages on every backend: stored citing the message, through the sync job, never from secrets."""

from __future__ import annotations

from collections.abc import Callable

from memory import Memory
from memory.config import load_settings


def test_messages_feed_extraction(make_memory: Callable[..., Memory]) -> None:
    settings = load_settings({"extraction": {"messages": True}})
    mem = make_memory(settings=settings)
    inline = mem.messages.append("t1", "Alice moved to Berlin in 2021.", user="al", extract=True)
    later = mem.messages.append("t1", "Bob works at Acme.", user="bob")
    mem.messages.append("t1", "Carol's PIN is 4711.", user="carol", sensitivity="secret", extract=True)
    assert {i.source_ids for i in mem.list(limit=100).items} == {(inline.id,)}
    report = mem.run_sync()
    assert report.messages_done == 2 and report.messages_skipped == 1
    sources = {i.source_ids for i in mem.list(limit=100, clearance="secret").items}
    assert sources == {(inline.id,), (later.id,)}
    assert all("4711" not in i.content for i in mem.list(limit=100, clearance="secret").items)
    assert mem.graph.facts_about("Alice") and mem.graph.facts_about("Bob")
    assert mem.graph.facts_about("Carol") == []
