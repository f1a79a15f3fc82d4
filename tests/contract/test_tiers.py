"""Tiers (MemoryOS) against every backend: the TierStore contract and the service flows over it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory import Memory
from memory.aio import AsyncMemory
from memory.backends.base import Backend
from memory.backends.tiers import TierChanges, TierStore
from memory.embedders.hashing import HashingEmbedder
from memory.episodic.worker import Worker
from memory.errors import ConfigError, InvalidInputError, LLMError
from memory.llms.base import ChatRequest, ChatResult, OutputT, Usage
from memory.tiers.analysis import MetaChainOut, PersonaUpdate, SharedFact, SummaryOut
from memory.tiers.types import AgentPersona, DialoguePage, ObjectPersona, Segment, SystemEntry

T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)

#: Twenty turns on four topics (Berlin life, Alps hiking, cooking pasta, reading), one minute apart.
TURNS = [
    ("My name is Alice and I live in Berlin.", "Nice to meet you, Alice from Berlin."),
    ("I work as a nurse in Berlin.", "Nursing in Berlin sounds demanding."),
    ("I live in Berlin with my dog Rex.", "Berlin with Rex sounds fun."),
    ("Berlin has great parks for my dog Rex.", "Berlin parks are great for dogs."),
    ("I love hiking in the Alps.", "Hiking in the Alps is wonderful."),
    ("Hiking in the Alps is best in early summer.", "Early summer is good for Alps hiking."),
    ("I enjoy long hiking trips in the Alps with friends.", "Alps hiking trips with friends are great."),
    ("The Alps have many hiking huts.", "Alps hiking huts are handy."),
    ("I need new hiking boots for the Alps.", "Good hiking boots help in the Alps."),
    ("I prefer leather hiking boots.", "Leather hiking boots last long."),
    ("I like cooking pasta at home.", "Pasta at home is a good choice."),
    ("I cook pasta with fresh tomatoes.", "Fresh tomatoes make pasta better."),
    ("Cooking pasta relaxes me after work.", "Cooking pasta after work is relaxing."),
    ("My favourite pasta is carbonara.", "Carbonara pasta is a classic."),
    ("I hate cooking fish.", "Fish cooking can be tricky."),
    ("I read books about mountains.", "Mountain books are inspiring."),
    ("I read books every night.", "Reading books at night is calming."),
    ("Books about the Alps are my favourite.", "Alps books are great."),
    ("I plan to visit Vienna in spring.", "Vienna in spring is lovely."),
    ("Vienna has great coffee houses.", "Vienna coffee houses are famous."),
]


def _tier_store(backend: Backend) -> TierStore:
    store = getattr(backend, "tiers", None)
    if store is None:
        pytest.skip(f"the {backend.name} backend has no tier store yet")
    return store  # type: ignore[no-any-return]


@pytest.fixture
def store(backend: Backend) -> TierStore:
    """The tier store of the backend under test (skipped where there is none)."""
    return _tier_store(backend)


@pytest.fixture
def tmem(make_memory: Callable[..., Memory]) -> Memory:
    """A Memory whose backend has a tier store."""
    mem = make_memory()
    _tier_store(mem.backend)
    return mem


def _page(ns: str, n: int, agent: str = "a", user: str = "u") -> DialoguePage:
    return DialoguePage(id=f"p{n:03d}", namespace=ns, agent=agent, user=user, query=f"q{n}", response=f"r{n}",
                        created_at=T0 + timedelta(minutes=n), keywords=("k",), vector=(1.0, 0.0))  # fmt: skip


def _segment(ns: str, sid: str, pages: tuple[DialoguePage, ...]) -> Segment:
    return Segment(id=sid, namespace=ns, agent="a", user="u", summary="s", keywords=("k",), vector=(1.0, 0.0),
                   pages=pages, created_at=T0, last_accessed=T0)  # fmt: skip


# -- the storage contract ------------------------------------------------------


def test_store_round_trips_every_record_in_order(store: TierStore) -> None:
    pages = [_page("ns", n) for n in (3, 1, 2)]
    seg = _segment("ns", "s1", (pages[0],))
    obj = ObjectPersona(namespace="ns", agent="a", type="product", identifier="Kettle X", profile={"colour": "red"},
                        knowledge=("boils fast",), traits=("loud",), updated_at=T0)  # fmt: skip
    agent = AgentPersona(namespace="ns", agent="a", profile={"role": "guide"}, traits=("patient",), updated_at=T0)
    entry = SystemEntry(id="e1", namespace="ns", content="Shops close on Sunday", importance=0.7, source_agent="a",
                        vector=(0.0, 1.0), created_at=T0)  # fmt: skip
    store.write("ns", TierChanges(pages=pages, segments=[seg], objects=[obj], agents=[agent], system=[entry]))
    assert [p.id for p in store.stm("ns", "a", "u")] == ["p003", "p001", "p002"]  # insertion order
    assert store.stm("ns", "a", "u")[0] == pages[0]
    assert store.segments("ns", "a", "u") == [seg]
    assert store.object_persona("ns", "a", "product", "Kettle X") == obj
    assert store.object_personas("ns", "a") == [obj]
    assert store.agent_persona("ns", "a") == agent
    assert store.system_entries("ns") == [entry]
    assert store.owners("ns") == [("a", "u")]
    # rewriting keeps the place; deleting removes
    store.write("ns", TierChanges(pages=[pages[0].model_copy(update={"meta_chain": "m"})], delete_pages=[pages[1]]))
    assert [(p.id, p.meta_chain) for p in store.stm("ns", "a", "u")] == [("p003", "m"), ("p002", "")]
    store.write("ns", TierChanges(delete_segments=[seg], delete_system=[entry]))
    assert store.segments("ns", "a", "u") == [] and store.system_entries("ns") == []


def test_store_namespaces_and_owners_are_isolated(store: TierStore) -> None:
    store.write("one", TierChanges(pages=[_page("one", 1)]))
    store.write("two", TierChanges(pages=[_page("two", 1, agent="b", user="v")]))
    store.set_config("one", "agent:a", {"stm_capacity": 3})
    assert [p.namespace for p in store.stm("one", "a", "u")] == ["one"]
    assert store.stm("two", "a", "u") == [] and store.stm("one", "b", "v") == []
    assert store.owners("one") == [("a", "u")] and store.owners("two") == [("b", "v")]
    assert store.get_config("two", "agent:a") is None
    assert store.get_config("one", "agent:a") == {"stm_capacity": 3}


def test_store_write_is_all_or_nothing(store: TierStore) -> None:
    stray = _page("other", 2)
    with pytest.raises(ValueError):
        store.write("ns", TierChanges(pages=[_page("ns", 1), stray]))
    assert store.stm("ns", "a", "u") == [] and store.stm("other", "a", "u") == []


def test_tiers_survive_reopening(backend_name: str, open_backend: Callable[[], Backend]) -> None:
    first = open_backend()
    _tier_store(first).write("ns", TierChanges(pages=[_page("ns", 1)]))
    first.close()
    again = open_backend()
    try:
        assert [p.id for p in _tier_store(again).stm("ns", "a", "u")] == ["p001"]
    finally:
        again.close()


# -- the service over every backend ---------------------------------------------


def _talk(mem: Memory, clock: Any, turns: list[tuple[str, str]], **kw: Any) -> None:
    for query, response in turns:
        mem.tiers.add_page(query, response, **kw)
        clock.advance(minutes=1)


def test_twenty_turns_flow_into_segments_and_personas(tmem: Memory, clock: Any) -> None:
    _talk(tmem, clock, TURNS, agent="guide", user="alice")
    snap = tmem.tiers.show(agent="guide", user="alice")
    assert len(snap.stm) == 7  # seed default capacity
    assert [p.query for p in snap.stm] == [q for q, _ in TURNS[-7:]]
    moved = [p for seg, _ in snap.segments for p in seg.pages]
    assert sorted(p.query for p in moved) == sorted(q for q, _ in TURNS[:13])  # every page went somewhere
    assert len(snap.segments) < 13  # related pages joined segments
    hiking = next(seg for seg, _ in snap.segments if "hiking" in seg.keywords)
    assert len(hiking.pages) >= 4 and "alps" in hiking.keywords
    assert any(p.analyzed for p in hiking.pages)  # it got hot and was analysed ...
    assert hiking.visits == 0 and hiking.interactions < len(hiking.pages)  # ... and its counters were reset
    persona = snap.user_persona
    assert persona is not None and persona.type == "user" and persona.identifier == "alice"
    assert "alice love hiking in the Alps." in persona.knowledge
    assert "love hiking in the Alps" in persona.traits
    assert snap.agent_persona is not None and any("hiking" in t for t in snap.agent_persona.traits)
    assert any(o.identifier == "Alps" and o.knowledge for o in snap.objects)
    # every page's exchange is also in the episodic store
    assert len(tmem.messages.recent("tiers-guide-alice", 100)) == 40


def test_profile_and_queues_follow_the_config(tmem: Memory, clock: Any) -> None:
    tmem.tiers.configure(agent="guide", stm_capacity=1, heat_threshold=2.0, kb_capacity=2, traits_capacity=1)
    _talk(tmem, clock, [
        ("My name is Alice and I live in Berlin.", "Hi Alice."),
        ("I work as a nurse at the Charite.", "Nice."),
        ("I love hiking.", "Great."),
        ("I enjoy pasta.", "Tasty."),
        ("I am 34 years old.", "Noted."),
    ], agent="guide", user="alice")  # fmt: skip
    persona = tmem.tiers.show(agent="guide", user="alice").user_persona
    assert persona is not None
    assert persona.profile == {"name": "Alice", "location": "Berlin", "occupation": "nurse"}
    assert len(persona.knowledge) == 2  # kb queue capacity: the oldest fell out
    assert persona.knowledge[-1] == "alice enjoy pasta."
    assert persona.traits == ("enjoy pasta",)  # traits queue capacity 1


def test_eviction_keeps_capacity_and_pages_stay_in_episodic_storage(tmem: Memory, clock: Any) -> None:
    tmem.tiers.configure(agent="bot", stm_capacity=1, mtm_capacity=2, heat_threshold=100.0)
    topics = [("Quantum chromodynamics lecture notes.", "ok"), ("Sourdough baking schedule.", "ok"),
              ("Tax return deadline reminder.", "ok"), ("Violin practice routine.", "ok"),
              ("Garden tomato watering plan.", "ok")]  # fmt: skip
    _talk(tmem, clock, topics[:3], agent="bot", user="u")
    # visit the first segment so it is hotter than the second one
    first = tmem.tiers.show(agent="bot", user="u").segments[0][0]
    tmem.tiers.retrieve("Quantum chromodynamics lecture", agent="bot", user="u", top_m=1)
    _talk(tmem, clock, topics[3:], agent="bot", user="u")
    snap = tmem.tiers.show(agent="bot", user="u")
    assert len(snap.segments) == 2
    kept = [p.query for seg, _ in snap.segments for p in seg.pages]
    assert first.pages[0].query in kept  # the visited segment survived
    assert "Sourdough baking schedule." not in kept  # the coldest went
    texts = [m.content for m in tmem.messages.recent("tiers-bot-u", 50)]
    assert all(q in texts for q, _ in topics)  # nothing lost


def test_retrieval_returns_every_tier_and_counts_visits(tmem: Memory, clock: Any) -> None:
    _talk(tmem, clock, TURNS, agent="guide", user="alice")
    before = {s.id: (s.visits, h) for s, h in tmem.tiers.show(agent="guide", user="alice").segments}
    ctx = tmem.tiers.retrieve("hiking boots for the Alps", agent="guide", user="alice", top_m=2, top_k=3)
    assert len(ctx.stm) == 7 and len(ctx.segments) == 2 and len(ctx.pages) == 3
    assert "hiking" in ctx.pages[0].page.text.lower()
    assert ctx.pages[0].score >= ctx.pages[-1].score
    assert {h.segment_id for h in ctx.pages} <= {s.segment_id for s in ctx.segments}
    assert ctx.user_persona is not None and ctx.agent_persona is not None
    assert any(o.identifier == "Alps" for o in ctx.objects)
    for hit in ctx.segments:
        visits, heat = before[hit.segment_id]
        assert tmem.tiers.show(agent="guide", user="alice").segments  # still there
        after = next(s for s, _ in tmem.tiers.show(agent="guide", user="alice").segments if s.id == hit.segment_id)
        assert after.visits == visits + 1 and hit.heat > heat
    assert "## Relevant past exchanges" in ctx.to_text()


def test_hot_knowledge_is_promoted_to_system_memory_shared_by_agents(tmem: Memory, clock: Any) -> None:
    tmem.tiers.configure(agent="scout", stm_capacity=1, heat_threshold=3.0)
    _talk(tmem, clock, [
        ("Lake Bled has a island church.", "ok"),
        ("Lake Bled is in Slovenia and Lake Bled is busy in summer.", "ok"),
        ("Lake Bled has a castle too.", "ok"),
        ("filler turn", "ok"),
    ], agent="scout", user="u1")  # fmt: skip
    system = tmem.tiers.show(agent="scout", user="u1").system
    assert system and all(e.importance >= 0.6 and e.source_agent == "scout" for e in system)
    assert any("Lake Bled" in e.content for e in system)
    other = tmem.tiers.retrieve("Tell me about Lake Bled", agent="another-agent", user="u2")
    assert any("Lake Bled" in e.content for e in other.system)  # shared across agents of the namespace
    # capacity: only the most important entry stays
    tmem.tiers.configure(agent="scout", system_capacity=1)
    _talk(tmem, clock, [("Lake Bled is cold.", "ok"), ("filler again", "ok")], agent="scout", user="u1")
    assert len(tmem.tiers.show(agent="scout", user="u1").system) <= 1


def test_per_agent_and_type_configs_are_isolated(tmem: Memory) -> None:
    tmem.tiers.configure(agent_type="support", stm_capacity=10, heat_threshold=4.0)
    tmem.tiers.configure(agent="s1", agent_type="support", heat_alpha=2.0)
    tmem.tiers.configure(agent="s2", stm_capacity=3)
    s1 = tmem.tiers.config("s1")
    assert (s1.stm_capacity, s1.heat_threshold, s1.heat_alpha) == (10, 4.0, 2.0)
    s2 = tmem.tiers.config("s2")
    assert (s2.stm_capacity, s2.heat_threshold, s2.heat_alpha) == (3, 5.0, 1.0)
    assert tmem.tiers.config("other").stm_capacity == 7
    assert tmem.tiers.config("s1", namespace="elsewhere").stm_capacity == 7
    with pytest.raises(InvalidInputError, match="stm_capacity"):
        tmem.tiers.configure(agent="s1", stm_capacity=0)
    with pytest.raises(InvalidInputError, match="unknown tier setting"):
        tmem.tiers.configure(agent="s1", capacity=5)
    with pytest.raises(InvalidInputError):
        tmem.tiers.configure(stm_capacity=5)
    assert tmem.tiers.config("s1").stm_capacity == 10  # nothing changed


def test_namespaces_are_isolated(tmem: Memory, clock: Any) -> None:
    _talk(tmem, clock, TURNS[:10], agent="a", user="u", namespace="red")
    assert tmem.tiers.show(agent="a", user="u", namespace="blue").stm == ()
    ctx = tmem.tiers.retrieve("hiking in the Alps", agent="a", user="u", namespace="blue")
    assert ctx.stm == () and ctx.pages == () and ctx.user_persona is None and ctx.system == ()
    assert tmem.tiers.owners("red") == [("a", "u")] and tmem.tiers.owners("blue") == []
    assert len(tmem.tiers.show(agent="a", user="u", namespace="red").stm) == 7


def test_bad_input_changes_nothing(tmem: Memory) -> None:
    for kwargs in ({"agent": "", "user": "u"}, {"agent": "a", "user": None}):
        with pytest.raises(InvalidInputError):
            tmem.tiers.add_page("q", "r", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        tmem.tiers.add_page("  ", "", agent="a", user="u")
    with pytest.raises(InvalidInputError):
        tmem.tiers.retrieve("q", agent="a", user="u", top_k=0)
    with pytest.raises(InvalidInputError):
        tmem.tiers.retrieve("", agent="a", user="u")
    assert tmem.tiers.owners() == []


def test_consolidation_as_a_worker_job(tmem: Memory, clock: Any) -> None:
    _talk(tmem, clock, TURNS[:10], agent="w", user="u", consolidate=False)
    assert len(tmem.tiers.show(agent="w", user="u").stm) == 10
    result = Worker(tmem, jobs=["tiers"], interval=0).run_once()
    assert result["tiers"]["pages_moved"] == 3
    assert len(tmem.tiers.show(agent="w", user="u").stm) == 7


class ScriptedLLM:
    """A deterministic in-process LLM for the tiers tasks (or a failing one)."""

    provider = "scripted"
    model_name = "scripted:v1"

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.tasks: list[str] = []

    def chat(self, request: ChatRequest[OutputT]) -> ChatResult[OutputT]:
        self.tasks.append(request.task)
        if self.fail:
            raise LLMError("scripted outage")
        answers: dict[str, Any] = {
            "tiers_meta_chain": MetaChainOut(meta_chain="chain from the model"),
            "tiers_summary": SummaryOut(summary="model summary", keywords=["Model", "words"]),
            "tiers_persona": PersonaUpdate(
                user_profile={"mood": "cheerful"},
                user_knowledge=["knows the model"],
                agent_traits=["concise"],
                shared=[SharedFact(content="The office opens at nine.", importance=0.9)],
            ),
        }
        output = request.schema.model_validate(answers[request.task].model_dump())
        return ChatResult(output=output, usage=Usage(), model=self.model_name)


def test_llm_provider_is_used_when_configured(make_memory: Callable[..., Memory], clock: Any) -> None:
    llm = ScriptedLLM()
    mem = make_memory(llm=llm)
    _tier_store(mem.backend)
    mem.tiers.configure(agent="g", stm_capacity=1, heat_threshold=2.0)
    _talk(mem, clock, [("first", "a"), ("second", "b")], agent="g", user="u")
    snap = mem.tiers.show(agent="g", user="u")
    assert snap.stm[0].meta_chain == "chain from the model"
    assert snap.segments[0][0].summary == "model summary" and snap.segments[0][0].keywords == ("model", "words")
    assert snap.user_persona is not None and snap.user_persona.profile == {"mood": "cheerful"}
    assert snap.agent_persona is not None and snap.agent_persona.traits == ("concise",)
    assert [e.content for e in snap.system] == ["The office opens at nine."]
    assert {"tiers_meta_chain", "tiers_summary", "tiers_persona"} <= set(llm.tasks)


def test_failing_llm_falls_back_and_loses_nothing(make_memory: Callable[..., Memory], clock: Any) -> None:
    mem = make_memory(llm=ScriptedLLM(fail=True))
    _tier_store(mem.backend)
    mem.tiers.configure(agent="g", stm_capacity=1, heat_threshold=2.0)
    _talk(mem, clock, [("I love tea.", "a")], agent="g", user="u")
    page = mem.tiers.add_page("I love tea a lot.", "b", agent="g", user="u")
    snap = mem.tiers.show(agent="g", user="u")
    assert snap.stm == (page,) and page.meta_chain.startswith("topic:")
    assert snap.segments and snap.segments[0][0].summary.startswith("I love tea")  # the extractive fallback
    assert snap.user_persona is not None and "love tea" in snap.user_persona.traits


def test_async_twin(open_backend: Callable[[], Backend]) -> None:
    async def scenario() -> tuple[int, int]:
        backend = open_backend()
        if getattr(backend, "tiers", None) is None:
            backend.close()  # skipping must not leak the backend (an unclosed pool warns later, in another test)
        _tier_store(backend)
        async with AsyncMemory(backend=backend, embedder=HashingEmbedder()) as amem:
            for query, response in TURNS[:9]:
                await amem.tiers.add_page(query, response, agent="a", user="u")
            ctx = await amem.tiers.retrieve("hiking", agent="a", user="u")
            report = await amem.tiers.consolidate()
            return len(ctx.stm), report.pages_moved

    assert asyncio.run(scenario()) == (7, 0)


def test_secret_pages_stay_out_of_retrieval_personas_and_context(tmem: Memory, clock: Any) -> None:
    tmem.tiers.configure(agent="g", stm_capacity=1, heat_threshold=2.0)
    with pytest.raises(InvalidInputError):
        tmem.tiers.add_page("q", "r", agent="g", user="u", sensitivity="top")
    _talk(tmem, clock, [("I love my secret garden of orchids.", "ok")], agent="g", user="u")
    tmem.tiers.add_page("My orchid vault code is 4711.", "ok", agent="g", user="u", sensitivity="secret")
    clock.advance(minutes=1)
    _talk(tmem, clock, [("I love orchids in general.", "ok")], agent="g", user="u")
    ctx = tmem.tiers.retrieve("orchid vault code", agent="g", user="u", top_k=10)
    texts = [p.text for p in ctx.stm] + [h.page.text for h in ctx.pages]
    assert texts and not any("4711" in t for t in texts)
    assert not any("4711" in s.summary or "4711" in s.keywords for s in ctx.segments)
    assert "4711" not in ctx.to_text()
    snap = tmem.tiers.show(agent="g", user="u")
    persona = snap.user_persona
    assert persona is not None and persona.knowledge and not any("4711" in k for k in persona.knowledge)
    assert not any("4711" in p.meta_chain for p in snap.stm)
    cleared = tmem.tiers.retrieve("orchid vault code", agent="g", user="u", top_k=10, clearance="secret")
    assert any("4711" in h.page.text for h in cleared.pages)
    secret_messages = [m for m in tmem.messages.recent("tiers-g-u", 10, clearance="secret") if "4711" in m.content]
    assert secret_messages and secret_messages[0].sensitivity == "secret"
    with pytest.raises(InvalidInputError):
        tmem.tiers.retrieve("x", agent="g", user="u", clearance="root")


def test_forget_all_takes_the_users_tier_records_along(tmem: Memory, clock: Any) -> None:
    tmem.tiers.configure(agent="a1", stm_capacity=2, heat_threshold=2.0)
    _talk(tmem, clock, TURNS[:6], agent="a1", user="alice")
    _talk(tmem, clock, TURNS[:4], agent="a1", user="bob")
    tmem.remember("alice likes tea", user="alice")
    assert tmem.forget_all(user="alice") == 1
    assert tmem.tiers.owners() == [("a1", "bob")]
    assert tmem.tiers.show(agent="a1", user="alice").user_persona is None
    assert tmem.tiers.show(agent="a1", user="bob").stm
    tmem.forget_all(thread="some-thread")  # a thread scope leaves the tiers alone
    assert tmem.tiers.owners() == [("a1", "bob")]
    tmem.forget_all()
    assert tmem.tiers.owners() == []


def test_forget_a_user_removes_their_tiers_only(tmem: Memory, clock: Any) -> None:
    tmem.tiers.configure(agent="a1", stm_capacity=2, heat_threshold=2.0)
    _talk(tmem, clock, TURNS[:6], agent="a1", user="alice")
    _talk(tmem, clock, TURNS[:3], agent="a2", user="alice")
    _talk(tmem, clock, TURNS[:6], agent="a1", user="bob")
    before = tmem.tiers.show(agent="a1", user="alice")
    assert before.user_persona is not None and before.segments
    expected = len(before.stm) + len(before.segments) + 1 + len(tmem.tiers.show(agent="a2", user="alice").stm)
    assert tmem.tiers.forget(user="alice", agent="a2") == 3
    assert tmem.tiers.show(agent="a2", user="alice").stm == ()
    assert tmem.tiers.forget(user="alice") == expected - 3
    after = tmem.tiers.show(agent="a1", user="alice")
    assert after.stm == () and after.segments == () and after.user_persona is None
    bob = tmem.tiers.show(agent="a1", user="bob")
    assert bob.stm and bob.segments and bob.user_persona is not None
    assert tmem.tiers.owners() == [("a1", "bob")]
    assert tmem.tiers.forget(user="alice") == 0
    with pytest.raises(InvalidInputError):
        tmem.tiers.forget(user="")


def test_export_import_round_trips_the_tiers(make_memory: Callable[..., Memory], clock: Any) -> None:
    import io

    from memory.transfer import export_jsonl, import_jsonl

    source = make_memory()
    _tier_store(source.backend)
    source.tiers.configure(agent_type="guides", heat_threshold=2.0)
    source.tiers.configure(agent="g", agent_type="guides", stm_capacity=2)
    _talk(source, clock, TURNS[:8], agent="g", user="alice")
    source.tiers.add_page("my secret code is 4711", "ok", agent="g", user="alice", sensitivity="secret")
    _talk(source, clock, TURNS[8:10], agent="g", user="bob")
    before = source.tiers.show(agent="g", user="alice")
    buffer = io.StringIO()
    export_jsonl(source, buffer)
    text = buffer.getvalue()
    assert '"type":"tier"' in text and "secret code" not in text  # secret pages stay home without clearance
    target = Memory("memory://", embedder=HashingEmbedder(), clock=clock)
    try:
        report = import_jsonl(target, io.StringIO(text))
        assert report.tiers > 0
        after = target.tiers.show(agent="g", user="alice")
        assert after.config == before.config and after.agent_type == "guides"
        assert [p.id for p in after.stm] == [p.id for p in before.stm if p.sensitivity != "secret"]
        assert {s.id for s, _ in after.segments} == {s.id for s, _ in before.segments}
        assert after.user_persona == before.user_persona and after.agent_persona == before.agent_persona
        assert after.system == before.system
        again = import_jsonl(target, io.StringIO(text))
        assert again.tiers == 0  # everything already there
        only_bob = io.StringIO()
        export_jsonl(source, only_bob, user="bob")
        assert '"user":"alice"' not in only_bob.getvalue() and '"user":"bob"' in only_bob.getvalue()
        bad = text.replace('"kind":"page"', '"kind":"pager"', 1)
        with Memory("memory://", embedder=HashingEmbedder()) as empty:
            with pytest.raises(InvalidInputError, match="tier kind"):
                import_jsonl(empty, io.StringIO(bad))
            assert empty.tiers.owners() == [] and empty.stats().total == 0  # nothing written
    finally:
        target.close()


def test_export_import_records_copies_a_namespace_as_stored(store: TierStore, twin_backend: Backend) -> None:
    pages = [_page("ns", n) for n in (3, 1, 2)]
    seg = _segment("ns", "s1", (pages[0],))
    obj = ObjectPersona(namespace="ns", agent="a", type="product", identifier="Kettle", profile={"colour": "red"},
                        knowledge=("boils fast",), updated_at=T0)  # fmt: skip
    agent = AgentPersona(namespace="ns", agent="a", profile={"role": "guide"}, traits=("patient",), updated_at=T0)
    entry = SystemEntry(id="e1", namespace="ns", content="Shops close on Sunday", importance=0.7, source_agent="a",
                        vector=(0.0, 1.0), created_at=T0)  # fmt: skip
    store.write("ns", TierChanges(pages=pages, segments=[seg], objects=[obj], agents=[agent], system=[entry]))
    store.write("ns", TierChanges(pages=[pages[0].model_copy(update={"meta_chain": "m"})]))  # keeps its place
    store.set_config("ns", "agent:a", {"stm_capacity": 3})
    store.write("other", TierChanges(pages=[_page("other", 9)]))
    assert store.namespaces() == ["ns", "other"]
    records = store.export_records("ns")
    assert len(records) == 8 and {r[0] for r in records} == {"page", "segment", "object", "agent", "system", "config"}
    target = _tier_store(twin_backend)
    assert target.namespaces() == []
    assert target.import_records("ns", records) == 8
    assert target.export_records("ns") == records
    assert target.namespaces() == ["ns"]
    assert [(p.id, p.meta_chain) for p in target.stm("ns", "a", "u")] == [("p003", "m"), ("p001", ""), ("p002", "")]
    assert target.segments("ns", "a", "u") == [seg] and target.object_personas("ns", "a") == [obj]
    assert target.agent_persona("ns", "a") == agent and target.system_entries("ns") == [entry]
    assert target.configs("ns") == {"agent:a": {"stm_capacity": 3}}
    # a copy never merges; strays, unknown kinds and bad documents are refused, and nothing is written then
    with pytest.raises(ConfigError):
        target.import_records("ns", records)
    with pytest.raises(InvalidInputError):
        target.import_records("elsewhere", records)
    with pytest.raises(InvalidInputError):
        target.import_records("new", [("page", "o", "x", "{not json")])
    with pytest.raises(InvalidInputError):
        target.import_records("new", [("bogus", "o", "x", "{}")])
    assert target.namespaces() == ["ns"]
