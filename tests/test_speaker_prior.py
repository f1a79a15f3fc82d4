"""Speaker-aware ranking: a question about the user in the first person prefers the user's own turns."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory import Memory
from memory.retrieval.config import RetrievalConfig, preset
from memory.retrieval.speaker import (
    ASSISTANT,
    USER,
    asked_speaker,
    named_factor,
    named_speaker,
    role_of,
    speaker_factor,
    turn_factors,
)


@pytest.mark.parametrize(
    "query",
    [
        "What brand of BBQ sauce am I currently obsessed with?",
        "How many bikes do I currently own?",
        "Can you recommend a show or movie for me to watch tonight?",  # a request: the user's tastes
        "Where did I attend the religious activity last week?",
        "What’s my dentist’s name?",  # typographic apostrophe
        "I told you about my trip last week. Where did I go?",  # "told" before "you": the user's words
    ],
)
def test_first_person_questions_ask_about_the_user(query: str) -> None:
    assert asked_speaker(query) == USER


@pytest.mark.parametrize(
    "query",
    [
        "I remember you told me to dilute tea tree oil. What ratio?",
        "What was the 7th job in the list you provided me?",
        "Which hotel did you recommend for my trip?",
        "You mentioned a few apps to me. Which one uses mnemonics?",
    ],
)
def test_questions_about_what_the_assistant_said_ask_about_the_assistant(query: str) -> None:
    assert asked_speaker(query) == ASSISTANT


@pytest.mark.parametrize(
    "query",
    [
        "What did Caroline research?",  # third person (LoCoMo): nobody is preferred
        "When did Melanie paint a sunrise?",
        "Can you remind me of the restaurant in Cihampelas Walk I liked?",  # either side may have named it
        "I was thinking about our previous conversation about gin. Which bottle was fifth?",
        "Imagine a mime in Miami",  # "i" inside words is not a pronoun
    ],
)
def test_other_questions_ask_about_nobody_in_particular(query: str) -> None:
    assert asked_speaker(query) is None


def test_the_factor_scales_only_the_other_sides_turns() -> None:
    assert speaker_factor(ASSISTANT, USER, 0.8) == pytest.approx(0.2)
    assert speaker_factor(USER, ASSISTANT, 0.8) == pytest.approx(0.2)
    assert speaker_factor(USER, USER, 0.8) is None
    assert speaker_factor(ASSISTANT, ASSISTANT, 0.8) is None
    assert speaker_factor("tool", USER, 0.8) is None  # a tool's output may hold the user's data
    assert speaker_factor(None, USER, 0.8) is None  # a memory without a role
    assert speaker_factor(ASSISTANT, None, 0.8) is None
    assert speaker_factor(ASSISTANT, USER, 0.0) is None
    assert role_of(" Assistant ") == ASSISTANT
    assert role_of(3) is None and role_of(None) is None and role_of("") is None


TURNS = [
    # The assistant's long reply repeats the user's words; the user's short turn holds the fact.
    ("user", "I finally bought a new air fryer for my kitchen, the Ninja one."),
    (
        "assistant",
        "An air fryer is a great kitchen gadget! Air fryers for the kitchen come in many sizes; a new air fryer "
        "like the one you bought cooks fries, wings and vegetables quickly. Enjoy your new kitchen air fryer!",
    ),
    ("user", "Thanks. Also, my sister Rachel moved to Denver last month."),
    ("assistant", "Denver is lovely. I hope Rachel enjoys her move!"),
]
QUESTION = "Which air fryer did I buy for my kitchen?"


def _remembered(mem: Memory) -> None:
    mem.remember_batch(
        [{"content": f"{role}: {text}", "thread": "chat", "metadata": {"role": role}} for role, text in TURNS]
    )


@pytest.fixture
def mem(tmp_path: Path) -> Memory:
    with Memory(f"sqlite:///{tmp_path / 'speaker.db'}", embedder="hashing") as store:
        yield store


def test_recall_prefers_the_users_turn_for_a_question_about_the_user(mem: Memory) -> None:
    _remembered(mem)
    off = mem.recall(QUESTION, limit=4, retrieval=preset("balanced").model_copy(update={"speaker_penalty": 0.0}))
    assert off[0].item.metadata["role"] == "assistant"  # without the prior the long echo wins
    assert all(h.parts.speaker is None for h in off)
    hits = mem.recall(QUESTION, limit=4)
    assert hits[0].item.content.startswith("user: I finally bought")
    assistants = [h for h in hits if h.item.metadata["role"] == "assistant"]
    assert assistants and all(h.parts.speaker == pytest.approx(0.2) for h in assistants)
    assert all(h.parts.speaker is None for h in hits if h.item.metadata["role"] == "user")
    for hit in assistants:  # the factor is applied to the blend, and shown
        unscaled = next(h for h in off if h.id == hit.id)
        assert hit.score == pytest.approx(unscaled.score * 0.2)


def test_recall_prefers_the_assistants_turn_for_a_question_about_what_it_said(mem: Memory) -> None:
    mem.remember_batch(
        [
            {"content": "user: Which hotel in Speyer should I book? I like hotels near the cathedral in Speyer.",
             "thread": "trip", "metadata": {"role": "user"}},
            {"content": "assistant: Try the Hotel Domhof.", "thread": "trip", "metadata": {"role": "assistant"}},
        ]
    )  # fmt: skip
    question = "Which hotel in Speyer did you recommend?"
    off = mem.recall(question, limit=2, retrieval=preset("balanced").model_copy(update={"speaker_penalty": 0.0}))
    assert off[0].item.metadata["role"] == "user"
    hits = mem.recall(question, limit=2)
    assert hits[0].item.metadata["role"] == "assistant" and hits[0].parts.speaker is None
    assert hits[1].parts.speaker == pytest.approx(0.2)


def test_recall_leaves_third_person_and_open_questions_alone(mem: Memory) -> None:
    _remembered(mem)
    for question in (
        "Which air fryer did the user buy for the kitchen?",
        "Can you remind me which air fryer I bought?",
    ):
        config = preset("balanced")
        on = mem.recall(question, limit=4, retrieval=config)
        off = mem.recall(question, limit=4, retrieval=config.model_copy(update={"speaker_penalty": 0.0}))
        assert [h.id for h in on] == [h.id for h in off]
        assert [h.score for h in on] == pytest.approx([h.score for h in off])  # recency moves between calls
        assert all(h.parts.speaker is None for h in on)


def test_memories_without_a_role_are_never_scaled(mem: Memory) -> None:
    mem.remember("The user bought a Ninja air fryer for the kitchen.")
    mem.remember("assistant: air fryer air fryer kitchen kitchen")  # says "assistant" but has no role
    hits = mem.recall(QUESTION, limit=5)
    assert hits and all(h.parts.speaker is None for h in hits)


def test_messages_search_prefers_the_users_turn_too(mem: Memory) -> None:
    mem.messages.append_many([{"role": role, "content": text, "thread": "chat"} for role, text in TURNS], embed=True)
    off = mem.messages.search(QUESTION, limit=4, retrieval=RetrievalConfig(speaker_penalty=0.0))
    assert off[0].message.role == "assistant"
    hits = mem.messages.search(QUESTION, limit=4)
    assert hits[0].message.role == "user" and hits[0].message.content.startswith("I finally bought")
    scaled = {h.message.id: h.score for h in hits if h.message.role == "assistant"}
    assert scaled and all(scaled[h.message.id] == pytest.approx(h.score * 0.2) for h in off if h.message.id in scaled)


# -- a question naming one of the chat's named speakers (LoCoMo's third-person questions) --------------------------


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("What did Caroline research?", "Caroline"),
        ("What is Caroline's favourite book?", "Caroline"),  # a possessive still names her
        ("When did John Smith move?", "John Smith"),  # the full name
        ("Where did John go after the game?", "John Smith"),  # or its first word
        ("What did Caroline and Melanie paint together?", None),  # both named: nobody preferred
        ("What did caroline research?", None),  # a name is written with its capital
        ("Which Carolines did they meet?", None),  # a whole word only
        ("What may happen next?", None),  # a speaker called May is not named by "may"
        ("What did the painter research?", None),  # nobody named
    ],
)
def test_a_question_names_one_speaker_or_none(query: str, named: str | None) -> None:
    assert named_speaker(query, ["Caroline", "Melanie", "John Smith", "May"]) == named


def test_naming_needs_two_speakers_and_the_factor_scales_only_the_others() -> None:
    assert named_speaker("What did Caroline research?", ["Caroline"]) is None  # nobody else to scale
    assert named_speaker("What did Caroline research?", ["Caroline", None, " ", 3]) is None
    assert named_factor("Melanie", "Caroline", 0.3) == pytest.approx(0.7)
    assert named_factor("Caroline", "Caroline", 0.3) is None
    assert named_factor(None, "Caroline", 0.3) is None  # a turn without a speaker
    assert named_factor("Melanie", None, 0.3) is None
    assert named_factor("Melanie", "Caroline", 0.0) is None


def test_the_first_person_rule_comes_first() -> None:
    turns = {"a": ("user", "Caroline"), "b": ("assistant", "Bot"), "c": (None, "Melanie")}
    assert turn_factors("Did I tell Caroline about my trip?", turns, 0.8, 0.3) == {"b": pytest.approx(0.2)}
    assert turn_factors("What did Caroline research?", turns, 0.8, 0.3) == {
        "b": pytest.approx(0.7), "c": pytest.approx(0.7),
    }  # fmt: skip
    assert turn_factors("What did Caroline research?", turns, 0.8, 0.0) == {}


CHAT = [
    # Melanie asks about Caroline's research in Caroline's words; Caroline's own turn holds the answer.
    ("Melanie", "Caroline, how is your research on adoption agencies going? Which adoption agencies did you research?"),
    ("Caroline", "I looked into three agencies that support LGBTQ parents."),
    ("Melanie", "I painted a lake at sunrise last week."),
]
NAMED_QUESTION = "Which adoption agencies did Caroline research?"


def test_recall_prefers_the_named_speakers_turns(mem: Memory) -> None:
    mem.remember_batch(
        [{"content": f"{who}: {text}", "thread": "s1", "metadata": {"speaker": who}} for who, text in CHAT]
    )
    config = preset("balanced")
    off = mem.recall(NAMED_QUESTION, limit=3, retrieval=config.model_copy(update={"named_speaker_penalty": 0.0}))
    on = mem.recall(NAMED_QUESTION, limit=3)
    assert all(h.parts.speaker is None for h in off)
    melanies = [h for h in on if h.item.metadata["speaker"] == "Melanie"]
    assert melanies and all(h.parts.speaker == pytest.approx(0.7) for h in melanies)
    assert all(h.parts.speaker is None for h in on if h.item.metadata["speaker"] == "Caroline")
    for hit in melanies:  # applied to the blend, and shown
        unscaled = next(h for h in off if h.id == hit.id)
        assert hit.score == pytest.approx(unscaled.score * 0.7)
    caroline = next(h for h in on if h.item.metadata["speaker"] == "Caroline")
    unscaled = next(h for h in off if h.id == caroline.id)
    assert caroline.score == pytest.approx(unscaled.score)
    assert [h.id for h in on].index(caroline.id) <= [h.id for h in off].index(caroline.id)


def test_messages_search_prefers_the_named_speakers_turns_too(mem: Memory) -> None:
    mem.messages.append_many(
        [{"role": "user", "speaker": who, "content": text, "thread": "s1"} for who, text in CHAT], embed=True
    )
    off = mem.messages.search(NAMED_QUESTION, limit=3, retrieval=RetrievalConfig(named_speaker_penalty=0.0))
    on = mem.messages.search(NAMED_QUESTION, limit=3)
    scaled = {h.message.id: h.score for h in on if h.message.speaker == "Melanie"}
    assert scaled and all(scaled[h.message.id] == pytest.approx(h.score * 0.7) for h in off if h.message.id in scaled)
    kept = {h.message.id: h.score for h in on if h.message.speaker == "Caroline"}
    assert kept and all(kept[h.message.id] == pytest.approx(h.score) for h in off if h.message.id in kept)
