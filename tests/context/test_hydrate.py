"""hydrate and the facade: sources, skips, scoping and secrets, JSON round trips, compose."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory import AsyncMemory, Memory
from memory.context import (
    ContextRequest,
    ContextStrategy,
    PromptIR,
    Section,
    SectionSource,
    Skipped,
    TokenBudget,
    compose,
    counter_for,
    hydrate,
    register_source,
    unregister_source,
)
from memory.context.hydrate import HydrationContext, default_sources, entity_mentions
from memory.embedders.hashing import HashingEmbedder
from memory.errors import InvalidInputError, StorageError


@pytest.fixture
def mem(tmp_db: str, clock: Any) -> Iterator[Memory]:
    m = Memory(tmp_db, embedder=HashingEmbedder(), clock=clock)
    m.remember("Alice prefers dark mode", user="alice", kind="fact")
    m.remember("Alice moved to Berlin in 2024", user="alice", kind="fact")
    m.remember("Alice's bank PIN is 4711", user="alice", sensitivity="secret")
    m.remember("Bob lives in Paris", user="bob")
    m.remember("Alice lives in Rome", user="alice", namespace="other")
    yield m
    m.close()


def test_context_draws_from_the_users_memories_only(mem: Memory) -> None:
    out = mem.context("Where does Alice live? What is her PIN?", user="alice", system="Be brief.")
    assert out.messages[0]["role"] == "system" and out.messages[0]["content"].startswith("Be brief.")
    assert "Alice moved to Berlin in 2024" in out.system
    assert "Paris" not in out.system  # another user
    assert "Rome" not in out.system  # another namespace
    assert "4711" not in out.system  # secret without clearance
    with_clearance = mem.context("What is her PIN?", user="alice", clearance="secret")
    assert "4711" in with_clearance.system
    notes = {n.source: n for n in out.trace.sources}
    assert notes["recall"].status == "used" and notes["recall"].sections == 2
    assert notes["recent"].status == "skipped" and notes["recent"].note == "no thread in the request"
    assert notes["blocks"].status == "skipped" and notes["blocks"].note == "no blocks in this scope"
    # the store has a graph (issue 5) but nothing was extracted here
    assert notes["graph"].status == "skipped" and notes["graph"].note.startswith("no facts about")
    assert out.trace.timings_ms["total"] > 0 and "source.recall" in out.trace.timings_ms


def test_get_memory_context_fits_max_tokens_exactly(mem: Memory) -> None:
    for n in range(1, 40, 3):
        text = mem.get_memory_context("alice", n, user="alice")
        assert counter_for(None).count(text) <= n
    assert "Berlin" in mem.get_memory_context("where did alice move", 200, user="alice")
    assert mem.get_memory_context("alice", 200, user="nobody") == ""
    with pytest.raises(InvalidInputError, match="max_tokens"):
        mem.get_memory_context("alice", 0)


def test_bad_requests_are_clear_errors(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="invalid context request"):
        mem.context("q", budget={"total": -1})
    with pytest.raises(InvalidInputError, match="invalid context request"):
        mem.context("q", nonsense=1)
    with pytest.raises(InvalidInputError):
        mem.context("")
    with pytest.raises(InvalidInputError, match="not both"):
        mem.context(ContextRequest(observation="q"), user="x")


def test_request_and_ir_round_trip_through_json(mem: Memory) -> None:
    request = ContextRequest(
        observation="Where?", user="alice", budget=TokenBudget(total=900, reserve_ratio=0.1, allocation="fixed"),
        strategy=ContextStrategy(semantic_limit=3), state={"project": "memory"},
    )  # fmt: skip
    assert ContextRequest.model_validate_json(request.model_dump_json()) == request
    ir = hydrate(mem, request)
    assert PromptIR.model_validate_json(ir.model_dump_json()) == ir
    out = mem.context(request)
    assert type(out.trace).model_validate_json(out.trace.model_dump_json()) == out.trace


def test_recent_turns_blocks_and_history_come_from_the_store(tmp_db: str, clock: Any) -> None:
    mem = Memory(tmp_db, embedder=HashingEmbedder(), clock=clock)
    t0 = clock.now - timedelta(minutes=5)
    for minute, role, text, level in [
        (0, "user", "I adopted a cat", "normal"),
        (1, "assistant", "Nice! What is its name?", "normal"),
        (2, "user", "my password is swordfish", "secret"),
        (3, "user", "What should I name it?", "normal"),
    ]:
        mem.messages.append("t1", text, role=role, user="alice", sensitivity=level,
                            created_at=t0 + timedelta(minutes=minute))  # fmt: skip
    mem.messages.append("t0", "We could name the cat Miso or Pixel", role="user", user="alice",
                        created_at=t0 - timedelta(days=7))  # fmt: skip
    mem.blocks.replace("user_info", "Alice, 34, software engineer", user="alice")
    strategy = ContextStrategy(history_search_limit=3)
    out = mem.context("What should I name it?", user="alice", thread="t1", strategy=strategy)
    assert "## Recent conversation\n[2026-01-01 11:55] user: I adopted a cat\n" in out.system
    assert "swordfish" not in out.system
    assert out.system.count("What should I name it?") == 0  # the observation goes in the user message only
    assert "## User info\nAlice, 34, software engineer" in out.system
    assert "## Related past messages" in out.system and "Miso or Pixel" in out.system
    notes = {n.source: n.status for n in out.trace.sources}
    assert notes["recent"] == notes["blocks"] == notes["history"] == "used"
    no_thread = mem.context("hello", user="bob")
    skipped = {n.source: n.note for n in no_thread.trace.sources}
    assert skipped["recent"] == "no thread in the request" and skipped["blocks"] == "no blocks in this scope"
    mem.close()


class Broken:
    name = "broken"

    def collect(self, ctx: HydrationContext) -> list[Section] | Skipped:
        raise StorageError("database is locked")


class Extra:
    name = "weather"

    def collect(self, ctx: HydrationContext) -> list[Section] | Skipped:
        return [
            Section(id="weather", label="Weather", source=SectionSource(kind="state", name="weather"),
                    content=f"Sunny, for {ctx.request.user}", priority="high")
        ]  # fmt: skip


def test_custom_sources_and_failures_are_noted(mem: Memory) -> None:
    out = mem.context("hi", user="alice", sources=[*default_sources(), Broken(), Extra()])
    notes = {n.source: n for n in out.trace.sources}
    assert notes["broken"].status == "failed" and "locked" in notes["broken"].note
    assert "## Weather\nSunny, for alice" in out.system
    register_source(Extra())
    try:
        assert "Sunny" in mem.context("hi", user="alice").system
        with pytest.raises(InvalidInputError, match="exists"):
            register_source(Extra())
    finally:
        unregister_source("weather")
    with pytest.raises(InvalidInputError, match="name"):
        register_source(object())  # type: ignore[arg-type]


def test_entity_mentions() -> None:
    assert entity_mentions("What did Caroline tell Melanie about New York's parks?") == [
        "Caroline", "Melanie", "New York"
    ]  # fmt: skip


def _ir(sections: list[Section], observation: str) -> PromptIR:
    from memory.context import PromptMeta

    return PromptIR(sections=tuple(sections), observation=observation,
                    meta=PromptMeta(timestamp=datetime(2026, 1, 1, tzinfo=UTC)))  # fmt: skip


def _s(id: str, content: str, mode: str, **kw: Any) -> Section:
    return Section(id=id, label=id, source=SectionSource(kind="static"), content=content, composition=mode, **kw)  # type: ignore[arg-type]


def test_compose_follows_the_composition_modes() -> None:
    a = _ir(
        [
            _s("base", "outer rules", "hierarchical", priority="critical"),
            _s("c1", "be kind", "constraint", priority="medium"),
            _s("m", "fact one", "additive", relevance=0.2),
            _s("now", "old state", "contextual"),
            _s("turn", "first turn", "contextual"),
        ],
        "first question",
    )
    b = _ir(
        [
            _s("base", "inner rules", "hierarchical", priority="critical"),
            _s("c1", "be kind", "constraint", priority="high"),
            _s("c2", "be short", "constraint"),
            _s("m2", "fact one", "additive", relevance=0.9),
            _s("now", "new state", "contextual"),
        ],
        "second question",
    )
    out = compose(a, b)
    by_id = {s.id: s for s in out.sections}
    assert [s.content for s in out.sections if s.composition == "hierarchical"] == ["outer rules", "inner rules"]
    assert by_id["base"].priority == "critical" and by_id["base~2"].priority == "high"
    assert by_id["c1"].priority == "high" and "c2" in by_id  # constraints AND-ed, stronger priority kept
    assert by_id["m"].relevance == 0.9 and "m2" not in by_id  # mixture: one copy, best relevance
    assert [s.content for s in out.sections if s.composition == "contextual"] == ["first turn", "new state"]
    assert out.observation == "second question"


def test_async_twin_builds_the_same_context(tmp_db: str) -> None:
    async def scenario() -> tuple[str, str]:
        async with AsyncMemory(tmp_db, embedder=HashingEmbedder()) as amem:
            await amem.remember("Carol plays chess", user="c")
            out = await amem.context("chess?", user="c", strategy={"include_time": False})
            text = await amem.get_memory_context("chess", 50, user="c")
            return out.system, text

    system, text = asyncio.run(scenario())
    assert "Carol plays chess" in system and "Carol plays chess" in text
