"""The context assembler draws on the memory tiers (``TiersSource`` over ``mem.tiers.retrieve``)."""

from __future__ import annotations

from typing import Any

from memory import Memory
from memory.embedders.hashing import HashingEmbedder


def test_context_includes_tier_records_for_the_agent_and_user(tmp_db: str, clock: Any) -> None:
    with Memory(tmp_db, embedder=HashingEmbedder(), clock=clock) as mem:
        mem.tiers.configure(agent="guide", stm_capacity=1, heat_threshold=2.0)
        for query in ("My name is Alice and I live in Berlin.", "I love hiking in the Alps.", "What boots?"):
            mem.tiers.add_page(query, "ok", agent="guide", user="alice")
            clock.advance(minutes=1)
        mem.tiers.add_page("secret plans", "ok", agent="guide", user="bob")
        out = mem.context("where does she live?", user="alice", agent="guide")
        notes = {n.source: n for n in out.trace.sources}
        assert notes["tiers"].status == "used" and notes["tiers"].sections >= 2
        assert "location: Berlin" in out.system  # the user persona
        assert "What boots?" in out.system  # the STM page
        assert "secret plans" not in out.system  # another user's tiers
        ids = [t.id for t in out.trace.sections if t.id.startswith("tier:")]
        assert "tier:persona:user:alice" in ids
        no_agent = mem.context("where does she live?", user="alice")
        skipped = {n.source: n for n in no_agent.trace.sources}["tiers"]
        assert skipped.status == "skipped" and "agent" in skipped.note


def test_tier_context_records_are_flat_and_ordered(tmp_db: str, clock: Any) -> None:
    with Memory(tmp_db, embedder=HashingEmbedder(), clock=clock) as mem:
        mem.tiers.configure(agent="g", stm_capacity=2)
        for n in range(4):
            mem.tiers.add_page(f"hiking trip number {n}", "ok", agent="g", user="u")
            clock.advance(minutes=1)
        records = mem.tiers.retrieve("hiking trip", agent="g", user="u").records()
        tiers = [r.tier for r in records]
        assert tiers == sorted(tiers, key=["lpm", "system", "mtm", "stm"].index)
        assert tiers.count("stm") == 2 and tiers.count("mtm") == 2
        assert all(r.score is not None and 0.0 <= r.score <= 1.0 for r in records if r.tier == "mtm")
        stm = [r.content for r in records if r.tier == "stm"]
        # rendered as MemoryOS's prompt: the exchange, its time, its meta-chain
        assert [c.split("\nConversation chain overview: ")[0] for c in stm] == [
            "User: hiking trip number 2\nAssistant: ok\nTime: 2026-01-01 12:02",
            "User: hiking trip number 3\nAssistant: ok\nTime: 2026-01-01 12:03",
        ]
        assert all("Conversation chain overview: topic: hiking" in c for c in stm)
