"""Pseudo-relevance feedback runs only where the top lexical hits are short texts (retrieval/text.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory import Memory
from memory.retrieval.config import PRESETS, RetrievalConfig
from memory.retrieval.text import content_words, feedback_applies
from memory.retrieval.window import CONTEXT_WORDS

SHORT = "Ann: I fired a vase in the kiln at pottery class"
LONG = SHORT + ". " + " ".join(f"word{i}" for i in range(40))


def test_content_words_leave_stopwords_out() -> None:
    assert content_words("I fired a vase in the kiln") == 3  # fired, vase, kiln
    assert content_words("") == 0


def test_feedback_applies_while_the_mean_length_is_short() -> None:
    assert feedback_applies([SHORT, SHORT], 30)
    assert not feedback_applies([LONG], 30)
    assert not feedback_applies([LONG, LONG, SHORT], 30)  # the mean is over the limit
    assert feedback_applies([LONG, SHORT, SHORT, SHORT, SHORT, SHORT, SHORT], 30)  # one long among short ones
    assert feedback_applies([LONG], None)  # no limit
    assert not feedback_applies([], 30) and not feedback_applies([], None)
    exactly = " ".join(f"w{i}" for i in range(30))
    assert feedback_applies([exactly], 30) and not feedback_applies([exactly + " w30"], 30)


def test_presets() -> None:
    assert PRESETS["balanced"].feedback_max_words == CONTEXT_WORDS
    assert "feedback" in PRESETS["balanced"].channels and "feedback" in PRESETS["best"].channels
    assert "feedback" not in PRESETS["fast"].channels
    with pytest.raises(ValueError):
        RetrievalConfig(feedback_max_words=0)


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(f"sqlite:///{tmp_path / 'feedback.db'}", embedder="hashing") as store:
        yield store


@pytest.mark.parametrize(("first", "expanded"), [(SHORT, True), (LONG, False)])
def test_messages_search_expands_only_from_short_turns(mem: Memory, first: str, expanded: bool) -> None:
    mem.messages.append_many(
        [
            {"role": "user", "content": first, "thread": "t"},
            {"role": "user", "content": "the kiln reached 1200 degrees", "thread": "t"},
        ],
        embed=True,
    )
    hits = mem.messages.search("pottery", limit=2)
    assert any("feedback" in h.channels for h in hits) is expanded
    always = mem.messages.search("pottery", limit=2, retrieval=RetrievalConfig(feedback_max_words=None))
    assert any("feedback" in h.channels for h in always)


def test_recall_skips_feedback_where_the_lexical_work_would_be_bounded(tmp_path: Path) -> None:
    from memory.backends.sqlite import SQLiteBackend
    from memory.backends.sqlite.lexical import LexicalBounds

    texts = [SHORT, "the kiln reached 1200 degrees"] + [f"note {i}: the kiln and a vase" for i in range(80)]
    for bound, expanded in ((10_000, True), (60, False)):  # with 60 the expanded match is "large"
        backend = SQLiteBackend(tmp_path / f"bounded-{bound}.db", lexical_bounds=LexicalBounds(exact_docs=bound))
        with Memory(backend=backend, embedder="hashing") as store:
            store.remember_batch([{"content": t} for t in texts])
            hits = store.recall("pottery", limit=5)
            assert hits and hits[0].content == SHORT
            assert any("feedback" in h.channels for h in hits) is expanded
