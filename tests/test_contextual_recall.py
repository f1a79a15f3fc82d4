"""Contextual recall (issue 23 item 4): a query pointing back to the recent turns gets their names."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from memory import Memory
from memory.context import ContextStrategy, Section, SectionSource
from memory.embedders.hashing import HashingEmbedder
from memory.errors import InvalidInputError
from memory.retrieval.contextual import contextual_query, needs_context, recent_names

MAYA_TURNS = [
    "user: I had lunch with my friend Maya yesterday.",
    "assistant: How is Maya doing?",
    "user: Great, she changed jobs.",
]


def test_pronouns_and_ellipsis_need_context_plain_questions_do_not() -> None:
    assert needs_context("Where does she live now?")
    assert needs_context("What did they buy?")
    assert needs_context("And in 2022?")
    assert needs_context("what about her sister")
    assert not needs_context("Where does Maya live now?")
    assert needs_context("Did she move?")
    assert needs_context("Tell me where they went")
    assert not needs_context("When did Caroline go to the LGBTQ support group?")
    assert not needs_context("What did Caroline do with her kids?")  # "her" is Caroline


def test_recent_names_most_recent_first_speakers_and_mentions() -> None:
    assert recent_names(MAYA_TURNS) == ["Maya"]  # roles are not names; "Great" is not a name
    turns = ["Caroline: I went to a support group.", "Melanie: That's brave, tell me about Oscar!"]
    assert recent_names(turns) == ["Oscar", "Melanie"]
    assert recent_names(turns, most=1) == ["Oscar"]
    assert recent_names([], most=2) == []
    assert recent_names(["[2024-05-01 10:00] Tom: hi there"]) == ["Tom"]


def test_contextual_query_adds_names_only_when_the_query_points_back() -> None:
    assert contextual_query("Where does she live now?", MAYA_TURNS) == "Where does she live now? (Maya)"
    plain = "Where does Maya live now?"
    assert contextual_query(plain, MAYA_TURNS) == plain  # self-contained: unchanged
    assert contextual_query("Where does she live now?", None) == "Where does she live now?"
    assert contextual_query("Where does she live now?", []) == "Where does she live now?"
    # a name already in the query is not added twice
    assert contextual_query("Is Maya happy with her job?", MAYA_TURNS) == "Is Maya happy with her job?"


@pytest.fixture
def mem(tmp_db: str, clock: Any) -> Iterator[Memory]:
    m = Memory(tmp_db, embedder=HashingEmbedder(), clock=clock)
    m.remember("Maya moved to Lisbon last spring", user="u", kind="fact")
    m.remember("Tom lives in Oslo with his family", user="u", kind="fact")
    m.remember("Priya lives in Toronto, near the lake", user="u", kind="fact")
    m.remember("Ben lives in Madrid and works as a nurse", user="u", kind="fact")
    yield m
    m.close()


def test_recall_with_recent_turns_finds_mayas_city(mem: Memory) -> None:
    plain = mem.recall("Where does she live now?", user="u", limit=4)
    assert "Maya" not in plain[0].item.content  # on its own the question cannot know who "she" is
    hits = mem.recall("Where does she live now?", user="u", limit=4, recent=MAYA_TURNS)
    assert hits[0].item.content == "Maya moved to Lisbon last spring"
    # a self-contained question finds the same with or without recent turns
    question = "Where does Tom live?"
    assert [h.id for h in mem.recall(question, user="u", recent=MAYA_TURNS)] == [
        h.id for h in mem.recall(question, user="u")
    ]
    with pytest.raises(InvalidInputError):
        mem.recall("Where does she live now?", recent="Maya: hi")  # type: ignore[arg-type]


def test_context_build_resolves_the_pronoun_from_the_thread(mem: Memory) -> None:
    for text in MAYA_TURNS:
        role, _, content = text.partition(": ")
        mem.messages.append("t1", content, role=role, user="u")
    strategy = ContextStrategy(semantic_limit=1, include_procedures=False, contextual_recall=True)
    out = mem.context("Where does she live now?", user="u", thread="t1", strategy=strategy)
    assert "Maya moved to Lisbon" in out.system
    off = mem.context(
        "Where does she live now?", user="u", thread="t1",
        strategy=strategy.model_copy(update={"contextual_recall": False}),
    )  # fmt: skip
    assert "Maya moved to Lisbon" not in off.system


def test_context_build_uses_caller_temporal_sections(mem: Memory) -> None:
    """An agent keeping its turns in process passes them as a temporal section; recall reads it."""
    section = Section(
        id="recent:x", label="Recent conversation", content="\n".join(MAYA_TURNS),
        source=SectionSource(kind="temporal", name="agent.transcript", ref="x"), priority="high",
    )  # fmt: skip
    strategy = ContextStrategy(semantic_limit=1, include_procedures=False, contextual_recall=True)
    out = mem.context("Where does she live now?", user="u", sections=(section,), strategy=strategy)
    assert "Maya moved to Lisbon" in out.system
    off = strategy.model_copy(update={"contextual_recall": False})
    assert (
        "Maya moved to Lisbon"
        not in mem.context("Where does she live now?", user="u", sections=(section,), strategy=off).system
    )


def test_bench_recent_turns_never_reach_the_evidence_session() -> None:
    from memory.bench.contextual import pronoun_variant, recent_turns
    from memory.bench.locomo import Conversation, Question, Turn

    turns = tuple(
        Turn(dia_id=f"D{s}:{i}", session=s, session_date=None, speaker="Ann", content=f"Ann: s{s} t{i}")
        for s in (1, 2, 3)
        for i in range(1, 6)
    )
    q = Question(question="Where did Ann go?", category=4, evidence=("D3:2", "D2:5"), dropped=())
    conv = Conversation(sample_id="c", turns=turns, questions=(q,))
    assert recent_turns(conv, q, 2) == ["Ann: s1 t4", "Ann: s1 t5"]  # the session before session 2
    first = Question(question="x", category=4, evidence=("D1:3",), dropped=())
    assert recent_turns(conv, first, 4) == []
    assert pronoun_variant("Where did Ann's dog go?", ["Ann"]) == "Where did their dog go?"
    assert pronoun_variant("Where did Ann go?", ["Ann"]) == "Where did they go?"
    assert pronoun_variant("Where did Bo go?", ["Ann"]) is None
