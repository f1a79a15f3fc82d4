"""Feedback against every backend: the FeedbackStore contract and the full loop over it (issue 9)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory import Memory
from memory.aio import AsyncMemory
from memory.backends.base import Backend
from memory.backends.feedback import FeedbackStore, RecordQuery
from memory.config import FeedbackSettings, Settings
from memory.context import ContextRequest
from memory.embedders.hashing import HashingEmbedder
from memory.episodic.worker import Worker
from memory.errors import InvalidInputError, NotFoundError
from memory.feedback.types import ConversationRecord

T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)


def _store(backend: Backend) -> FeedbackStore:
    store = getattr(backend, "feedback", None)
    assert store is not None, f"the {backend.name} backend has no feedback store"
    assert isinstance(store, FeedbackStore)
    return store  # type: ignore[no-any-return]


@pytest.fixture
def store(backend: Backend) -> FeedbackStore:
    """The feedback store of the backend under test."""
    return _store(backend)


def _record(thread: str, namespace: str = "ns", **fields: Any) -> ConversationRecord:
    fields.setdefault("created_at", T0)
    fields.setdefault("updated_at", T0)
    return ConversationRecord(namespace=namespace, thread=thread, **fields)


# -- the store contract -------------------------------------------------------


def test_records_upsert_read_and_list(store: FeedbackStore) -> None:
    store.put_record(_record("t1", user="alice", prompt_name="p", prompt_version=1, reward=0.2, feedback="too long"))
    store.put_record(_record("t2", user="bob", prompt_name="p", prompt_version=2, reward=0.9,
                             updated_at=T0 + timedelta(seconds=1)))  # fmt: skip
    store.put_record(_record("t3", updated_at=T0 + timedelta(seconds=2)))
    again = _record("t1", user="alice", prompt_name="p", prompt_version=1, reward=0.3, feedback="still long",
                    reward_components={"rating": 0.25, "method": "rating"})  # fmt: skip
    store.put_record(again)
    got = store.get_record("ns", "t1")
    assert got == again and got.reward_components == {"rating": 0.25, "method": "rating"}
    assert store.get_record("ns", "nope") is None
    assert [r.thread for r in store.list_records("ns", RecordQuery())] == ["t1", "t2", "t3"]
    assert [r.thread for r in store.list_records("ns", RecordQuery(newest_first=True, limit=2))] == ["t3", "t2"]
    assert [r.thread for r in store.list_records("ns", RecordQuery(prompt_name="p", prompt_version=2))] == ["t2"]
    assert [r.thread for r in store.list_records("ns", RecordQuery(reward_below=0.5))] == ["t1"]
    assert [r.thread for r in store.list_records("ns", RecordQuery(scored=False))] == ["t3"]
    assert [r.thread for r in store.list_records("ns", RecordQuery(user="bob"))] == ["t2"]


def test_reflection_cursor(store: FeedbackStore) -> None:
    for n in range(3):
        store.put_record(_record(f"t{n}", reward=0.5, updated_at=T0 + timedelta(seconds=n)))
    assert store.mark_reflected("ns", ["t0", "t2", "unknown"], T0) == 2
    todo = store.list_records("ns", RecordQuery(unreflected=True, scored=True))
    assert [r.thread for r in todo] == ["t1"]
    assert store.get_record("ns", "t0").reflected_at == T0  # type: ignore[union-attr]


def test_namespaces_never_mix(store: FeedbackStore) -> None:
    store.put_record(_record("t1", namespace="a", reward=0.1, prompt_name="p", prompt_version=1))
    store.add_prompt("a", "p", "text a", at=T0)
    assert store.get_record("b", "t1") is None
    assert store.list_records("b", RecordQuery()) == []
    assert store.get_prompt("b", "p") is None and store.prompt_names("b") == []
    assert store.aggregates("b", "p") == []
    assert store.add_prompt("b", "p", "text b", at=T0).version == 1  # numbering is per namespace
    assert store.delete_records("b") == 0 and store.delete_prompts("b") == 1
    assert store.get_record("a", "t1") is not None and store.get_prompt("a", "p").text == "text a"  # type: ignore[union-attr]


def test_every_record_and_namespace_can_be_listed(store: FeedbackStore) -> None:
    """iter_records pages through a namespace by thread; namespaces() names those with records or prompts."""
    assert store.namespaces() == []
    threads = [f"t{n:03d}" for n in range(25)]
    for thread in reversed(threads):
        store.put_record(_record(thread, namespace="a"))
    store.put_record(_record("x", namespace="b"))
    store.add_prompt("c", "p", "only a prompt here", at=T0)
    assert store.namespaces() == ["a", "b", "c"]
    assert [r.thread for r in store.iter_records("a", batch_size=7)] == threads
    assert [r.thread for r in store.iter_records("a", batch_size=25)] == threads
    assert [r.thread for r in store.iter_records("b")] == ["x"] and list(store.iter_records("c")) == []
    with pytest.raises(InvalidInputError):
        list(store.iter_records("a", batch_size=0))
    store.delete_records("a")
    store.delete_records("b")
    assert store.namespaces() == ["c"]


def test_prompt_versions_number_and_promote_atomically(store: FeedbackStore) -> None:
    v1 = store.add_prompt("ns", "support", "Be helpful.", at=T0)
    assert (v1.version, v1.status, v1.origin) == (1, "active", "manual")
    v2 = store.add_prompt("ns", "support", "Be brief.", at=T0, origin="suggested", parent=1, note="rules")
    v3 = store.add_prompt("ns", "support", "Be exact.", at=T0, origin="llm", parent=2)
    assert (v2.version, v2.status, v3.version, v3.parent) == (2, "candidate", 3, 2)
    assert store.get_prompt("ns", "support").version == 1  # type: ignore[union-attr]
    promoted = store.promote("ns", "support", 3, T0 + timedelta(hours=1))
    assert promoted.status == "active" and promoted.promoted_at == T0 + timedelta(hours=1)
    statuses = [(v.version, v.status) for v in store.prompt_versions("ns", "support")]
    assert statuses == [(1, "retired"), (2, "candidate"), (3, "active")]
    assert store.promote("ns", "support", 3, T0).status == "active"  # idempotent
    v4 = store.add_prompt("ns", "support", "Be kind.", at=T0, activate=True)
    assert [v.status for v in store.prompt_versions("ns", "support")] == ["retired", "candidate", "retired", "active"]
    assert store.get_prompt("ns", "support", 2).text == "Be brief."  # type: ignore[union-attr]
    assert store.get_prompt("ns", "support").version == v4.version  # type: ignore[union-attr]
    assert store.prompt_names("ns") == ["support"]
    with pytest.raises(NotFoundError):
        store.promote("ns", "support", 9, T0)
    with pytest.raises(NotFoundError):
        store.add_prompt("ns", "support", "x", at=T0, parent=9)
    assert [v.status for v in store.prompt_versions("ns", "support")].count("active") == 1


def test_concurrent_versions_get_distinct_numbers(open_backend: Callable[[], Backend], backend_name: str) -> None:
    backends = [open_backend() for _ in range(3)]  # three connections to one store
    try:
        numbers: list[int] = []
        errors: list[BaseException] = []

        def add(backend: Backend) -> None:
            try:
                for n in range(5):
                    numbers.append(_store(backend).add_prompt("ns", "p", f"text {n}", at=T0).version)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=add, args=(b,)) for b in backends]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert sorted(numbers) == list(range(1, 16))
        versions = _store(backends[0]).prompt_versions("ns", "p")
        assert [v.status for v in versions].count("active") == 1

        def promote(backend: Backend, offset: int) -> None:  # concurrent promotions: one active version, always
            try:
                for n in range(10):
                    _store(backend).promote("ns", "p", 2 + (n + offset) % 5, T0)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=promote, args=(b, i)) for i, b in enumerate(backends)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        statuses = [v.status for v in _store(backends[0]).prompt_versions("ns", "p")]
        assert statuses.count("active") == 1 and "candidate" in statuses and "retired" in statuses
    finally:
        for b in set(backends):
            b.close()


def test_aggregates_per_version(store: FeedbackStore) -> None:
    rewards = {1: [0.2, 0.4, None], 2: [0.8, 1.0]}
    for version, values in rewards.items():
        for n, reward in enumerate(values):
            store.put_record(_record(f"v{version}-{n}", prompt_name="p", prompt_version=version, reward=reward))
    store.put_record(_record("other", prompt_name="q", prompt_version=1, reward=0.0))
    got = {agg.version: (agg.count, round(agg.total, 6), round(agg.total_squares, 6), total)
           for agg, total in store.aggregates("ns", "p")}  # fmt: skip
    assert got == {1: (2, 0.6, 0.2, 3), 2: (2, 1.8, 1.64, 2)}


def test_delete_records_by_scope(store: FeedbackStore) -> None:
    store.put_record(_record("t1", user="alice"))
    store.put_record(_record("t2", user="alice", agent="bot"))
    store.put_record(_record("t3", user="bob"))
    assert store.delete_records("ns", thread="t3") == 1
    assert store.delete_records("ns", agent="bot") == 1
    assert store.delete_records("ns", user="alice") == 1
    assert store.list_records("ns", RecordQuery()) == []


@pytest.mark.parametrize(
    "bad",
    [
        {"thread": ""},
        {"thread": "x" * 500},
        {"namespace": " "},
        {"feedback": "a" * 20_001},
        {"example": "nul\x00inside"},
        {"reward_components": {"x": float("nan")}},
        {"prompt_version": 2},  # a version without its prompt name
    ],
)
def test_bad_records_change_nothing(store: FeedbackStore, bad: dict[str, Any]) -> None:
    store.put_record(_record("keep", reward=0.5))
    fields: dict[str, Any] = {"namespace": "ns", "thread": "t1", "created_at": T0, "updated_at": T0, **bad}
    record = ConversationRecord.model_construct(**ConversationRecord(**fields).model_dump()) if "thread" not in bad \
        else ConversationRecord(**fields)  # fmt: skip
    with pytest.raises(InvalidInputError):
        store.put_record(record)
    assert [r.thread for r in store.list_records("ns", RecordQuery())] == ["keep"]


@pytest.mark.parametrize("value", [float("nan"), -0.1, 1.5, float("inf")])
def test_rewards_outside_0_1_are_refused(store: FeedbackStore, value: float) -> None:
    record = ConversationRecord.model_construct(**_record("t1").model_dump() | {"reward": value})
    with pytest.raises(InvalidInputError):
        store.put_record(record)
    assert store.get_record("ns", "t1") is None


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda s: s.add_prompt("ns", "", "text", at=T0), InvalidInputError),
        (lambda s: s.add_prompt("ns", "p", "   ", at=T0), InvalidInputError),
        (lambda s: s.add_prompt("ns", "p", "x" * 50_001, at=T0), InvalidInputError),
        (lambda s: s.add_prompt("ns", "p", "text\x00", at=T0), InvalidInputError),
        (lambda s: s.add_prompt("ns", "p", "text", at=T0, origin="magic"), InvalidInputError),
        (lambda s: s.add_prompt("ns", "p", "text", at=T0, parent=0), InvalidInputError),
        (lambda s: s.get_prompt("ns", "p", 0), InvalidInputError),
        (lambda s: s.promote("ns", "p", -1, T0), InvalidInputError),
        (lambda s: s.list_records("ns", RecordQuery(limit=0)), InvalidInputError),
        (lambda s: s.list_records("ns", RecordQuery(reward_below=float("nan"))), InvalidInputError),
    ],
)
def test_bad_prompt_input_changes_nothing(store: FeedbackStore, call: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        call(store)
    assert store.prompt_names("ns") == []


# -- the services over every backend -----------------------------------------------


def _chat(mem: Memory, thread: str, turns: list[tuple[str, str]], user: str = "alice") -> None:
    for role, text in turns:
        mem.messages.append(thread, text, role=role, user=user if role == "user" else None)


BAD_TURNS = [("user", "How do I export my data?"), ("assistant", "Use the menu."),
             ("user", "No, I meant the API export"), ("assistant", "Call GET /export.")]  # fmt: skip
GOOD_TURNS = [("user", "How do I export my data?"), ("assistant", "Run `memory export --out backup.jsonl`.")]


def test_the_full_loop(make_memory: Callable[..., Memory], clock: Any) -> None:
    settings = Settings(database="memory://", feedback=FeedbackSettings(auto_promote=True, min_count=3))
    mem = make_memory(settings=settings)
    v1 = mem.prompts.create("support", "You are a support agent.")
    # conversations with version 1 go badly
    for n in range(4):
        thread = f"bad{n}"
        _chat(mem, thread, BAD_TURNS)
        assert mem.prompts.use(thread, "support") == v1.text
        end = mem.end_conversation(thread)
        assert end.record is not None and end.record.summary and end.record.corrections == 1
        assert end.record.prompt_version == 1 and end.summary == end.record.summary
        mem.feedback.record(thread, rating=2, feedback="too vague, give the exact command",
                            example="Run `memory export --out file.jsonl`.")  # fmt: skip
        clock.advance(minutes=1)
    stats = {s.version: s for s in mem.prompts.stats("support")}
    assert stats[1].count == 4 and stats[1].mean is not None and stats[1].mean < 0.5
    assert stats[1].ci_low is not None and stats[1].ci_low <= stats[1].mean <= stats[1].ci_high  # type: ignore[operator]
    # a suggestion from the low-reward feedback: a candidate, not active
    suggestion = mem.prompts.suggest("support")
    assert suggestion.path == "rules" and suggestion.fallback_reason is None
    v2 = suggestion.version
    assert (v2.version, v2.status, v2.origin, v2.parent) == (2, "candidate", "suggested", 1)
    assert "Avoid: too vague, give the exact command" in v2.text and v2.text.startswith(v1.text)
    assert set(suggestion.based_on) == {f"bad{n}" for n in range(4)}
    assert mem.prompts.get("support").version == 1
    # explicit promotion; later conversations are attributed to version 2
    mem.prompts.promote("support", 2)
    for n in range(3):
        thread = f"good{n}"
        _chat(mem, thread, GOOD_TURNS)
        assert mem.prompts.use(thread, "support") == v2.text
        mem.feedback.record(thread, rating=5, task_completed=True)
    assert {r.thread: r.prompt_version for r in mem.feedback.list(prompt="support", version=2)} == {
        "good0": 2, "good1": 2, "good2": 2}  # fmt: skip
    # a thread keeps the version it started with
    assert mem.prompts.use("bad0", "support") == v1.text
    stats = {s.version: s for s in mem.prompts.stats("support")}
    assert stats[2].count == 3 and stats[2].mean == 1.0 and stats[1].status == "retired"
    # reflection writes procedural memories once
    # one lesson per group of consistent outcomes (4 bad, 3 good), each citing its conversations
    report = mem.reflect()
    assert report.examined == 7 and report.written == 2 and report.path == "rules"
    assert any("from 4 conversations: bad0, bad1, bad2, bad3" in lesson for lesson in report.lessons)
    again = mem.reflect()
    assert again.examined == 0 and again.written == 0
    lessons = mem.list(kinds="procedural", user="alice", limit=50).items
    assert len(lessons) == 2  # identical lessons of identical conversations are stored once
    assert any("avoid: too vague" in m.content for m in lessons) and all("reflection" in m.tags for m in lessons)
    # the context includes them
    prompt = mem.context(ContextRequest(observation="How do I export my data?", user="alice"))
    assert any(s.source.name == "procedures" for s in prompt.sections)
    text = "\n".join(m["content"] for m in prompt.messages)
    assert "Learned procedures" in text and "avoid: too vague" in text, text


def test_auto_promotion_only_when_configured_and_better(make_memory: Callable[..., Memory]) -> None:
    def run(settings: Settings) -> Memory:
        mem = make_memory(settings=settings)
        mem.prompts.create("p", "v1 text")
        mem.prompts.add_version("p", "v2 text")
        for n in range(4):
            mem.feedback.record(f"a{n}", prompt="p", prompt_version=1, rating=2 + (n % 2))
        for n in range(4):
            mem.feedback.record(f"b{n}", prompt="p", prompt_version=2, rating=5 - (n % 2) * 0.5)
        return mem

    off = run(Settings(database="memory://", feedback=FeedbackSettings(min_count=3)))
    assert off.prompts.get("p").version == 1  # measured better, but not configured
    decision = off.prompts.auto_promote("p", dry_run=True)
    assert decision.candidate == 2 and not decision.promoted and off.prompts.get("p").version == 1
    off.forget_all()
    on = run(Settings(database="memory://", feedback=FeedbackSettings(min_count=3, auto_promote=True)))
    assert on.prompts.get("p").version == 2
    assert [s.status for s in on.prompts.stats("p")] == ["retired", "active"]


def test_the_automatic_loop_explores_measures_and_promotes(make_memory: Callable[..., Memory]) -> None:
    """Candidates get a share of threads (explore), rewards are measured, the better one is promoted by itself."""
    settings = Settings(database="memory://", feedback=FeedbackSettings(auto_promote=True, min_count=4, explore=0.5))
    mem = make_memory(settings=settings)
    mem.prompts.create("p", "Answer.")
    for n in range(3):
        mem.feedback.record(f"seed{n}", prompt="p", rating=2, feedback="too vague, give the exact steps")
    assert mem.prompts.suggest("p").version.version == 2
    used: dict[int, int] = {}
    for n in range(60):
        thread = f"t{n}"
        text = mem.prompts.use(thread, "p")
        version = mem.feedback.get(thread).prompt_version
        assert version is not None
        used[version] = used.get(version, 0) + 1
        # the simulated user likes the refined prompt better
        mem.feedback.record(thread, rating=5 if "Learned rules" in text else 2 + n % 2)
        if mem.prompts.get("p").version == 2:
            break
    assert mem.prompts.get("p").version == 2, used
    assert used.get(2, 0) >= 4 and used.get(1, 0) >= 1
    assert [s.status for s in mem.prompts.stats("p")] == ["retired", "active"]


def test_auto_promotion_needs_enough_data(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(database="memory://", feedback=FeedbackSettings(auto_promote=True)))
    mem.prompts.create("p", "v1")
    mem.prompts.add_version("p", "v2")
    for n in range(3):
        mem.feedback.record(f"a{n}", prompt="p", prompt_version=1, reward=0.1)
        mem.feedback.record(f"b{n}", prompt="p", prompt_version=2, reward=1.0)
    decision = mem.prompts.auto_promote("p")
    assert not decision.promoted and "not enough" in decision.reason
    assert mem.prompts.get("p").version == 1


def test_explore_sends_a_share_of_new_threads_to_the_candidate(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(database="memory://", feedback=FeedbackSettings(explore=0.5)))
    mem.prompts.create("p", "v1")
    mem.prompts.add_version("p", "v2")
    got = [mem.prompts.use(f"t{n}", "p") for n in range(40)]
    assert 8 <= got.count("v2") <= 32 and got.count("v1") + got.count("v2") == 40
    assert [mem.prompts.use(f"t{n}", "p") for n in range(40)] == got  # sticky per thread


def test_feedback_input_errors_change_nothing(mem: Memory) -> None:
    mem.feedback.record("t1", rating=4)
    before = mem.feedback.get("t1")
    for kwargs in (
        {"reward": float("nan")}, {"reward": 1.5}, {"reward": -0.1}, {"rating": 6}, {"rating": 0},
        {"rating": 2, "rating_scale": "thumbs"}, {"rating": 0.5, "rating_scale": "thumbs"},
        {"rating": 2, "rating_scale": "emoji"}, {"feedback": "   "}, {"feedback": "x" * 20_001},
        {"task_completed": "yes"}, {"prompt_version": 1}, {"example": "a\x00b"},
    ):  # fmt: skip
        with pytest.raises(InvalidInputError):
            mem.feedback.record("t1", **kwargs)
    with pytest.raises(NotFoundError):
        mem.feedback.record("t1", prompt="missing")
    with pytest.raises(InvalidInputError):
        mem.feedback.record("", rating=3)
    assert mem.feedback.get("t1") == before
    with pytest.raises(NotFoundError):
        mem.feedback.get("t2")


def test_concurrent_feedback_on_one_thread_loses_nothing(make_memory: Callable[..., Memory], backend_name: str) -> None:
    """Writers on separate connections update different fields of one record; every field survives."""
    mems = [make_memory() for _ in range(4)]
    mems[0].feedback.record("t1", summary="start")
    fields: list[dict[str, Any]] = [
        {"rating": 4},
        {"feedback": "clear and short"},
        {"task_completed": True},
        {"example": "exactly this"},
    ]
    errors: list[BaseException] = []

    def write(mem: Memory, values: dict[str, Any]) -> None:
        try:
            for _ in range(5):
                mem.feedback.record("t1", **values)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(m, f)) for m, f in zip(mems, fields, strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    rec = mems[0].feedback.get("t1")
    assert (rec.rating, rec.feedback, rec.task_completed, rec.example, rec.summary) == (
        0.75, "clear and short", True, "exactly this", "start")  # fmt: skip
    assert rec.revision >= 21 and rec.reward is not None


def test_explicit_reward_and_signals(mem: Memory) -> None:
    _chat(mem, "t1", [("user", "Book a table for two"), ("assistant", "Done for three."),
                      ("user", "That's wrong, I said two")])  # fmt: skip
    rec = mem.feedback.record("t1", task_completed=False)
    assert rec.corrections == 1 and rec.reward is not None and rec.reward < 0.5
    assert rec.reward_components["method"] == "implicit" and rec.reward_components["task"] == 0.0
    rec = mem.feedback.record("t1", reward=0.9)
    assert rec.reward == 0.9 and rec.explicit_reward and rec.reward_components["method"] == "explicit"
    rec = mem.feedback.record("t1", feedback="thanks")  # the explicit reward stays
    assert rec.reward == 0.9 and rec.feedback == "thanks"
    assert mem.feedback.record("t2", rating=1, rating_scale="thumbs").reward == 1.0
    assert mem.feedback.record("t3").reward is None  # nobody judged it


def test_forget_all_removes_feedback_and_prompts(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    mem.prompts.create("p", "text", namespace="a")
    mem.prompts.create("p", "text", namespace="b")
    mem.feedback.record("t1", rating=3, user="alice", namespace="a")
    mem.feedback.record("t2", rating=3, user="bob", namespace="a")
    mem.feedback.record("t1", rating=3, namespace="b")
    mem.forget_all(namespace="a", user="bob")
    assert [r.thread for r in mem.feedback.list(namespace="a")] == ["t1"]
    assert mem.prompts.get("p", namespace="a").version == 1
    mem.forget_all(namespace="a")
    assert mem.feedback.list(namespace="a") == [] and mem.prompts.list(namespace="a") == []
    assert len(mem.feedback.list(namespace="b")) == 1 and mem.prompts.get("p", namespace="b").text == "text"


def test_reflection_skips_secrets_and_redoes_changed_records(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(feedback=FeedbackSettings(reflect_min_support=1)))
    mem.messages.append("t1", "My card PIN is 4921", role="user", user="alice", sensitivity="secret")
    mem.messages.append("t1", "Why is my transfer blocked?", role="user", user="alice")
    mem.messages.append("t1", "It is not blocked.", role="assistant")
    end = mem.end_conversation("t1")
    assert end.record is not None and "4921" not in (end.record.summary or "")
    mem.feedback.record("t1", rating=1, feedback="wrong, it was blocked")
    first = mem.reflect()
    assert first.written == 1 and "4921" not in first.lessons[0]
    lesson = mem.get(first.memory_ids[0])
    assert (
        lesson.kind == "procedural"
        and lesson.user == "alice"
        and lesson.metadata["reflection_of"] == ("agent=- prompt=- outcome=went_badly")
        and lesson.metadata["supported_by"] == ["t1"]
    )
    assert set(lesson.source_ids) == set(end.record.message_ids) and len(lesson.source_ids) == 2
    assert mem.reflect(dry_run=True).examined == 0
    mem.feedback.record("t1", feedback="wrong, check the fraud flag first")
    dry = mem.reflect(dry_run=True)
    assert dry.examined == 1 and dry.written == 0 and "fraud flag" in dry.lessons[0]
    second = mem.reflect()
    assert second.written == 1 and second.replaced == 1
    contents = [m.content for m in mem.list(kinds="procedural", limit=10).items]
    assert len(contents) == 1 and "fraud flag" in contents[0]


def test_procedures_in_context_respect_scope_and_strategy(mem: Memory) -> None:
    mem.remember("When asked for exports, give the exact command.", kind="procedural", user="alice")
    mem.remember("Never mention the staging server for exports.", kind="procedural", user="alice", sensitivity="secret")
    mem.remember("Bob likes long answers about exports.", kind="procedural", user="bob")
    mem.remember("Exports for bob go through ops.", kind="procedural", user="alice", namespace="other")

    def text(**fields: Any) -> str:
        prompt = mem.context(ContextRequest(observation="How do exports work?", user="alice", **fields))
        return "\n".join(m["content"] for m in prompt.messages)

    shown = text()
    assert "Learned procedures" in shown and "exact command" in shown
    assert "staging" not in shown and "Bob likes" not in shown and "go through ops" not in shown
    assert "staging" in text(clearance="secret")
    assert "Learned procedures" not in text(strategy={"include_procedures": False, "include_knowledge": False})


def test_worker_job_reflect(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(feedback=FeedbackSettings(reflect_min_support=1)))
    mem.feedback.record("t1", rating=1, feedback="too slow")
    mem.feedback.record("t2", rating=5, example="short answers")
    worker = Worker(mem, jobs=["reflect"], interval=0)
    result = worker.run_once()
    assert result["reflect"]["examined"] == 2 and result["reflect"]["written"] == 2
    assert worker.run_once()["reflect"]["examined"] == 0


def test_async_twins(open_backend: Callable[[], Backend]) -> None:
    async def scenario() -> tuple[Any, Any]:
        settings = Settings(feedback=FeedbackSettings(reflect_min_support=1))
        async with AsyncMemory(backend=open_backend(), embedder=HashingEmbedder(), settings=settings) as amem:
            await amem.prompts.create("p", "hello")
            assert await amem.prompts.use("t1", "p") == "hello"
            record = await amem.feedback.record("t1", rating=1, feedback="bad")
            report = await amem.reflect()
            return record, report

    record, report = asyncio.run(scenario())
    assert record.prompt_version == 1 and report.written == 1


def test_export_and_import_keep_records_and_versions(make_memory: Callable[..., Memory]) -> None:
    import io

    mem = make_memory(namespace="a")
    mem.prompts.create("p", "v1")
    mem.prompts.add_version("p", "v2")
    mem.prompts.promote("p", 2)
    mem.feedback.record("t1", rating=2, feedback="too long", prompt="p", user="alice")
    mem.feedback.record("t2", rating=5, user="bob")
    mem.remember("a fact")
    records = {r.thread: r for r in mem.feedback.list(namespace="a")}
    versions = mem.prompts.versions("p")
    out = io.StringIO()
    mem.export(out)
    scoped = io.StringIO()
    mem.export(scoped, user="alice")
    assert '"kind":"prompt"' not in scoped.getvalue() and '"thread":"t2"' not in scoped.getvalue()
    mem.forget_all(namespace="a")
    assert mem.feedback.list(namespace="a") == [] and mem.prompts.list(namespace="a") == []
    report = mem.import_(io.StringIO(out.getvalue()))
    assert report.feedback == 4 and report.imported == 1
    assert {r.thread: r for r in mem.feedback.list(namespace="a")} == records
    assert mem.prompts.versions("p") == versions
    again = mem.import_(io.StringIO(out.getvalue()))
    assert again.feedback == 0  # nothing twice
    bad = out.getvalue().replace('"kind":"prompt"', '"kind":"nonsense"', 1)
    with pytest.raises(InvalidInputError, match="feedback kind"):
        mem.import_(io.StringIO(bad))
