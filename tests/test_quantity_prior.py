"""A question that asks for an amount prefers the texts that state one (retrieval/quantity.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory import Memory
from memory.retrieval.config import RetrievalConfig, preset
from memory.retrieval.quantity import asks_for_amount, quantity_factors, states_amount


@pytest.mark.parametrize(
    "query",
    [
        "How much total money have I spent on bike-related expenses since the start of the year?",
        "How many online courses have I completed?",
        "How many years older is my grandma than me?",
        "How long have I been working at the bakery?",
        "How old is Melanie's daughter?",
        "How often does John go to the gym?",
        "How far is the cabin from the lake?",
        "What percentage of leadership positions do women hold in my company?",
        "What is the total number of trips I took?",
        "HOW MANY dogs does Caroline have?",
    ],
)
def test_questions_that_ask_for_an_amount(query: str) -> None:
    assert asks_for_amount(query)


@pytest.mark.parametrize(
    "query",
    [
        "What did Caroline research?",
        "How did you feel after the race?",
        "How was the trip to Lisbon?",
        "When did Melanie paint a sunrise?",
        "Where did Rachel move to?",
        "Which restaurant did you recommend?",
        "Is it somehow important?",  # "how" inside a word
    ],
)
def test_other_questions_do_not_ask_for_an_amount(query: str) -> None:
    assert not asks_for_amount(query)


@pytest.mark.parametrize(
    "text",
    [
        "The mechanic replaced the chain, which cost me $25.",
        "I've already completed 12 courses on Coursera.",
        "My grandma's 75th birthday was lovely.",
        "Women hold about 40% of the senior roles.",
        "We have two dogs and a cat.",
        "I go to the gym twice a week.",
        "It took a couple of hours.",
        "Dozens of people came.",
        "It was €300 in the end.",
        "Twelve of us went.",  # number words in any case
        "TWO TICKETS, PLEASE",
        "Half the cake was gone.",
    ],
)
def test_texts_that_state_an_amount(text: str) -> None:
    assert states_amount(text)


@pytest.mark.parametrize(
    "text",
    [
        "I'm planning a road trip and want my bike in good condition.",
        "The local bike shop downtown was great.",
        "Someone gave me a tent; anyone can borrow it.",  # "one" inside words is not a number
        "Often I just listen.",
        "Someone said it was Tone's turn; Oneida is lovely.",  # capitalised words that hold a number word
    ],
)
def test_texts_that_state_no_amount(text: str) -> None:
    assert not states_amount(text)


def test_the_factor_scales_only_the_texts_that_state_no_amount() -> None:
    texts = {"a": "The chain cost me $25.", "b": "I love my bike.", "c": "I ride it every day."}
    question = "How much did I spend on my bike?"
    assert quantity_factors(question, texts, 0.2) == {"b": pytest.approx(0.8), "c": pytest.approx(0.8)}
    assert quantity_factors(question, texts, 0.0) == {}  # off
    assert quantity_factors("Where do I ride my bike?", texts, 0.2) == {}  # not asking for an amount
    assert quantity_factors(question, {"b": texts["b"], "c": texts["c"]}, 0.2) == {}  # no candidate states one
    assert quantity_factors(question, {}, 0.2) == {}


TEXTS = [
    "My bike chain is old; I wonder what a new bike chain would cost.",
    "The shop fixed my bike for $25.",
]
QUESTION = "How much did the bike chain cost?"


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(f"sqlite:///{tmp_path / 'quantity.db'}", embedder="hashing") as store:
        yield store


def test_recall_prefers_the_text_that_states_an_amount(mem: Memory) -> None:
    mem.remember_batch([{"content": text} for text in TEXTS])
    off_config = preset("balanced").model_copy(update={"quantity_penalty": 0.0})
    off = mem.recall(QUESTION, limit=2, retrieval=off_config)
    assert off[0].item.content == TEXTS[0]  # without the prior the text that repeats the words asked wins
    assert all(h.parts.quantity is None for h in off)
    hits = mem.recall(QUESTION, limit=2)
    assert hits[0].item.content == TEXTS[1] and hits[0].parts.quantity is None
    assert hits[1].parts.quantity == pytest.approx(0.8)
    unscaled = next(h for h in off if h.id == hits[1].id)
    assert hits[1].score == pytest.approx(unscaled.score * 0.8)  # the factor is applied to the blend, and shown


def test_recall_leaves_other_questions_alone(mem: Memory) -> None:
    mem.remember_batch([{"content": text} for text in TEXTS])
    question = "What did the shop do to the bike chain?"
    config = preset("balanced")
    on = mem.recall(question, limit=2, retrieval=config)
    off = mem.recall(question, limit=2, retrieval=config.model_copy(update={"quantity_penalty": 0.0}))
    assert [h.id for h in on] == [h.id for h in off]
    assert all(h.parts.quantity is None for h in on)


def test_recall_respects_the_limit_and_filters_while_reading_candidates(mem: Memory) -> None:
    mem.remember_batch([{"content": text} for text in TEXTS])
    mem.remember("The bike chain cost $90 at the other shop.", user="someone-else")
    hits = mem.recall(QUESTION, limit=1, user="someone-else")
    assert [h.item.content for h in hits] == ["The bike chain cost $90 at the other shop."]
    assert len(mem.recall(QUESTION, limit=1)) == 1


def test_messages_search_prefers_the_text_that_states_an_amount_too(mem: Memory) -> None:
    mem.messages.append_many([{"role": "user", "content": text, "thread": "bikes"} for text in TEXTS], embed=True)
    off = mem.messages.search(QUESTION, limit=2, retrieval=RetrievalConfig(quantity_penalty=0.0))
    assert off[0].message.content == TEXTS[0]
    hits = mem.messages.search(QUESTION, limit=2)
    assert hits[0].message.content == TEXTS[1]
    scaled = next(h for h in hits if h.message.content == TEXTS[0])
    unscaled = next(h for h in off if h.message.content == TEXTS[0])
    assert scaled.score == pytest.approx(unscaled.score * 0.8)


def test_the_penalty_is_validated() -> None:
    with pytest.raises(ValueError):
        RetrievalConfig(quantity_penalty=1.5)
    with pytest.raises(ValueError):
        RetrievalConfig(quantity_penalty=-0.1)
