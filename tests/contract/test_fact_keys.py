"""A turn's extracted facts in its index key (memory.retrieval.fact_key), on every backend."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from memory import Memory
from memory.config import Settings
from memory.extraction import nlp
from memory.retrieval.config import RetrievalConfig
from memory.retrieval.fact_key import fact_key, speaker_of, wants_fact_key
from memory.retrieval.window import window_model

#: The lexical channel over the window field alone: a hit there was found by its index key, not its words.
WINDOW_ONLY = RetrievalConfig(channels=("lexical",), weights={"lexical": 1.0}, fields={"window": 1.0})

TURNS = [
    "Maya: Hi Sam, how are you?",
    "Sam: Great, thanks! Anything new?",
    "Maya: I adopted a cat last week, her name is Miso.",
    "Sam: Lovely!",
]


def _window_hits(mem: Memory, query: str) -> list[str]:
    return [h.id for h in mem.recall(query, limit=10, retrieval=WINDOW_ONLY)]


NLP = pytest.mark.skipif(not nlp.available(), reason="needs the nlp extra (spaCy and its English model)")


@NLP
def test_extracted_memories_are_found_by_their_facts(make_memory: Callable[..., Memory]) -> None:
    # A memory without a thread has no neighbours: its window field holds only its own key.
    mem = make_memory(settings=Settings(database="memory://", fact_keys="extracted"))
    plain = mem.remember("I adopted a cat named Miso.", user="maya")
    assert _window_hits(mem, "Miso") == []  # stored without extraction: no fact key
    extracted = mem.remember("I adopted a dog named Rex.", user="maya", extract=True)
    assert _window_hits(mem, "Rex") == [extracted]
    assert plain not in _window_hits(mem, "maya adopted")


@NLP
def test_a_turn_key_names_its_speaker(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(database="memory://", fact_keys="all"))
    ids = mem.remember(TURNS, thread="chat")
    item = mem.get(ids[2])
    neighbours = [mem.get(i) for i in (ids[1], ids[3])]
    key = fact_key(item, neighbours)
    assert "Maya adopted a cat" in key
    assert "I " not in key
    assert fact_key(mem.get(ids[0]), [item]) == ""  # a greeting and a question state no fact


@NLP
def test_fact_keys_all_and_off(make_memory: Callable[..., Memory]) -> None:
    on = make_memory(settings=Settings(database="memory://", fact_keys="all"))
    found = on.remember("I adopted a cat named Miso.", user="maya")
    assert _window_hits(on, "Miso") == [found]
    off = make_memory(settings=Settings(database="memory://", fact_keys="off"))
    off.remember("I adopted a dog named Rex.", user="lena", extract=True)
    assert _window_hits(off, "Rex") == []


def test_secret_memories_get_no_fact_key(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(database="memory://", fact_keys="all"))
    secret_id = mem.remember("Maya: I adopted a cat named Miso.", thread="s", sensitivity="secret")
    item = mem.get(secret_id, clearance="secret")
    assert not wants_fact_key(item, "all")
    assert wants_fact_key(item.model_copy(update={"sensitivity": "normal"}), "all")
    assert not wants_fact_key(item.model_copy(update={"sensitivity": "normal"}), "extracted")
    assert not wants_fact_key(item.model_copy(update={"sensitivity": "normal"}), "off")


def test_speaker_from_the_chat_prefix_or_the_user(mem: Memory) -> None:
    item = mem.get(mem.remember("Caroline: I went to the support group.", user="u1"))
    assert speaker_of(item) == ("Caroline", "I went to the support group.")
    assert speaker_of(mem.get(mem.remember("user: I moved to Lisbon."))) == ("the user", "I moved to Lisbon.")
    plain = mem.get(mem.remember("I moved to Porto.", user="maya"))
    assert speaker_of(plain) == ("maya", "I moved to Porto.")
    nobody = mem.get(mem.remember("The sky is blue today."))
    assert speaker_of(nobody) == (None, "The sky is blue today.")
    assert fact_key(nobody, []) == ""


@NLP
def test_facts_blend_into_the_window_vector(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(database="memory://", fact_keys="all"))
    found = mem.remember("I adopted a cat named Miso.", user="maya")
    plain = mem.remember("The weather was grey all day.", user="maya")  # states no fact about maya
    model = mem.embedder.model_name
    own = mem.backend.get_vectors(mem.namespace, model, [found, plain])
    windows = mem.backend.get_vectors(mem.namespace, window_model(model), [found, plain])
    assert set(windows) == {found}  # thread-less: a window vector only where facts make one
    assert float(np.dot(windows[found], own[found])) < 0.999
    # unit length up to float16 rounding: memory:// is SQLite, which stores vectors as float16 (2^-11 per component)
    assert float(np.linalg.norm(windows[found])) == pytest.approx(1.0, abs=1e-3)
