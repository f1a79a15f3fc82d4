"""Tier retrieval ranks each turn of a page as flat recall ranks a memory (tiers/search.py, tiers/porter.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from memory import Memory
from memory.embedders.hashing import HashingEmbedder
from memory.tiers.porter import stem
from memory.tiers.search import rank_pages_by_turns
from memory.tiers.types import DialoguePage

EMBEDDER = HashingEmbedder()


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("caresses", "caress"), ("ponies", "poni"), ("cats", "cat"), ("feed", "feed"), ("agreed", "agre"),
        ("motoring", "motor"), ("hopping", "hop"), ("filing", "file"), ("happy", "happi"), ("relational", "relat"),
        ("generalizations", "gener"), ("painting", "paint"), ("paintings", "paint"), ("painted", "paint"),
        ("adoption", "adopt"), ("adopted", "adopt"), ("running", "run"), ("hopeful", "hope"), ("goodness", "good"),
        ("electrical", "electr"), ("controlling", "control"), ("as", "as"), ("2023", "2023"), ("café", "café"),
    ],
)  # fmt: skip
def test_porter_stems_as_the_fts5_tokenizer_does(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_porter_agrees_with_nltk_original_algorithm_when_installed() -> None:
    porter = pytest.importorskip("nltk.stem.porter")
    reference = porter.PorterStemmer(mode=porter.PorterStemmer.ORIGINAL_ALGORITHM)
    sample = (
        "relational conditional rational valenci digitizer conformabli radicalli differentli vileli analogousli "
        "vietnamization predication operator feudalism decisiveness hopefulness callousness formaliti sensitiviti "
        "sensibiliti triplicate formative formalize electriciti hopeful revival allowance inference airliner "
        "gyroscopic adjustable defensible irritant replacement adjustment dependent homologou communism activate "
        "angulariti homologous effective bowdlerize probate cease controll roll sized conflated troubled tanned "
        "falling hissing fizzed failing sky plastered bled sing skiing volunteering grandmother festivals"
    ).split()
    assert [stem(w) for w in sample] == [reference.stem(w) for w in sample]


def _page(query: str, response: str, n: int, *, thread: str = "t", when: datetime | None = None,
          sensitivity: str = "normal") -> DialoguePage:  # fmt: skip
    vectors = EMBEDDER.embed_batch([f"{query}\n{response}", query, response])
    unit = [tuple(float(x) for x in v / (np.linalg.norm(v) or 1.0)) for v in vectors]
    return DialoguePage(
        id=f"p{n:03d}", namespace="ns", agent="a", user="u", query=query, response=response,
        created_at=when or datetime(2023, 5, 8, tzinfo=UTC) + timedelta(minutes=n), vector=unit[0],
        turn_vectors=(unit[1], unit[2]), thread=thread, sensitivity=sensitivity,  # type: ignore[arg-type]
    )  # fmt: skip


def _rank(query: str, pages: list[DialoguePage], **kw: Any) -> list[str]:
    q = EMBEDDER.embed_batch([query])[0]
    q = q / (np.linalg.norm(q) or 1.0)
    order = rank_pages_by_turns(query, q.tolist(), pages, [0.0] * len(pages), **kw)
    return [pages[i].id for i, _ in order]


FILLER = [
    ("How was work today?", "Busy, lots of meetings."),
    ("Did you watch the game?", "Yes, what a finish."),
    ("Any plans for dinner?", "Maybe pasta tonight."),
    ("Is the weather nice there?", "Rainy all week."),
]


def test_stemmed_words_match_and_a_short_reply_is_found_through_its_window() -> None:
    pages = [_page(q, r, n) for n, (q, r) in enumerate(FILLER)]
    pages.append(_page("I finished my paintings of the lake at sunrise.", "They look wonderful.", 10))
    pages.append(_page("When did you go to the pottery workshop?", "Yes, two weekends ago!", 11))
    pages += [_page(q, r, 20 + n) for n, (q, r) in enumerate(FILLER)]
    assert _rank("What did she paint?", pages)[0] == "p010"
    assert _rank("pottery workshop", pages)[0] == "p011"


def test_time_words_of_the_page_and_of_the_events_it_mentions_are_searched() -> None:
    may = datetime(2023, 5, 8, tzinfo=UTC)
    pages = [_page(q, r, n, when=may) for n, (q, r) in enumerate(FILLER)]
    pages.append(_page("I ran a charity race.", "Great job!", 9, when=datetime(2023, 7, 2, tzinfo=UTC)))
    pages.append(_page("Yesterday I went hiking.", "Nice!", 10, when=datetime(2022, 3, 17, tzinfo=UTC)))
    assert _rank("What happened in July 2023?", pages)[0] == "p009"
    assert _rank("16 March 2022", pages)[0] == "p010"


def test_context_pages_lend_words_but_are_never_returned() -> None:
    pages = [_page(q, r, n) for n, (q, r) in enumerate(FILLER)]
    pages.append(_page("Tell me about the zeppelin museum.", "It opens at nine.", 50))
    got = _rank("zeppelin museum", pages, ranked=[True] * len(FILLER) + [False])
    assert "p050" not in got and len(got) == len(FILLER)


def test_a_more_sensitive_neighbour_never_enters_a_turns_window() -> None:
    def place_of_short_turn(sensitivity: str) -> int:
        told = _page("My locker code is quokka-7.", "Noted.", 1, sensitivity=sensitivity)
        short = _page("Okay.", "Sure.", 2)
        pages = [_page(q, r, 10 + n, thread="other") for n, (q, r) in enumerate(FILLER)] + [told, short]
        return _rank("quokka", pages, ranked=[True] * len(FILLER) + [False, True]).index("p002")

    assert place_of_short_turn("normal") == 0  # found through its window (the neighbour's words)
    assert place_of_short_turn("private") > 0  # the private words never reach a normal turn's window


def test_retrieve_reaches_every_segment_and_pages_keep_a_vector_per_turn(tmp_db: str, clock: Any) -> None:
    """No hard top-m gate: a page of a segment whose summary does not match the query is still found."""
    with Memory(tmp_db, embedder=EMBEDDER, clock=clock) as mem:
        mem.tiers.configure(agent="g", stm_capacity=2, top_m_segments=1, fscore_threshold=1.5)
        topics = [("We talked about sourdough starters.", "Feed it daily."),
                  ("The cello needs new strings.", "Try steel ones."),
                  ("Our trip to Kyoto is in April.", "Book the ryokan early."),
                  ("The garden roses have aphids.", "Spray soapy water."),
                  ("Let's check the weather.", "It's sunny.")]  # fmt: skip
        for q, r in topics:
            page = mem.tiers.add_page(q, r, agent="g", user="u", record=False)
            assert len(page.turn_vectors) == 2 and page.turn_vectors[0] != page.turn_vectors[1]
        snap = mem.tiers.show(agent="g", user="u")
        assert len(snap.segments) == 3  # each topic its own segment (threshold above reach)
        got = mem.tiers.retrieve("ryokan booking", agent="g", user="u")
        assert got.pages[0].page.response == "Book the ryokan early."
        assert 0.0 < got.pages[0].score <= 2.0
        gated = mem.tiers.retrieve("ryokan booking", agent="g", user="u", top_m=1)
        assert {h.segment_id for h in gated.pages} <= {s.segment_id for s in gated.segments}


def test_the_segment_prior_moves_pages_only_when_weighted() -> None:
    pages = [_page(q, r, n) for n, (q, r) in enumerate(FILLER)]
    pages.append(_page("The telescope arrived.", "Enjoy the stars.", 10))
    pages.append(_page("My telescope is broken.", "Get it repaired.", 11))
    q = EMBEDDER.embed_batch(["telescope"])[0]
    q = (q / (np.linalg.norm(q) or 1.0)).tolist()
    prior = [0.0] * len(FILLER) + [0.1, 1.5]  # the second page's segment matches the query far better
    plain = [pages[i].id for i, _ in rank_pages_by_turns("telescope", q, pages, prior)]
    weighted = [pages[i].id for i, _ in rank_pages_by_turns("telescope", q, pages, prior, segment_weight=3.0)]
    assert set(plain[:2]) == set(weighted[:2]) == {"p010", "p011"}
    assert weighted[0] == "p011"
    swapped = [0.0] * len(FILLER) + [1.5, 0.1]
    first = rank_pages_by_turns("telescope", q, pages, swapped, segment_weight=3.0)[0][0]
    assert pages[first].id == "p010"
    assert plain == [pages[i].id for i, _ in rank_pages_by_turns("telescope", q, pages, swapped)]  # weight 0: no effect
