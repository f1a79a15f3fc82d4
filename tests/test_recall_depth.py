"""A lone channel is asked for the hits that can reach the head only (:func:`memory.retrieval.fusion.decisive_depth`).

Every recall here is compared with the same recall asked for ``candidates``
hits: the same memories, scores and score parts.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

import memory.retrieval.recall as recall_module
from memory import Memory
from memory.backends.base import ChannelHit, Vector
from memory.backends.sqlite.throwaway import ThrowawaySQLiteBackend
from memory.embedders.hashing import HashingEmbedder
from memory.filters import Filter
from memory.retrieval.config import RetrievalConfig

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
WORDS = "lake garden piano river market bread winter violin harbour lantern".split()


class CountingBackend(ThrowawaySQLiteBackend):
    """memory:// recording how many hits each vector and lexical search was asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[int] = []

    def search_vector(self, flt: Filter, model: str, vector: Vector, k: int) -> list[ChannelHit]:
        if not model.endswith("+window"):
            self.asked.append(k)
        return super().search_vector(flt, model, vector, k)

    def search_lexical(self, flt: Filter, terms: Any, k: int, **kwargs: Any) -> list[ChannelHit]:
        self.asked.append(k)
        return super().search_lexical(flt, terms, k, **kwargs)


def _content(n: int) -> str:
    # Lengths vary, so BM25 scores seldom tie; (n % 10, n % 17) names each of the 120.
    return f"{WORDS[n % 10]} {WORDS[(n * 3) % 10]} {WORDS[(n * 7) % 10]} {' '.join(['note'] * (n % 17))}".strip()


def _open(speakers: dict[int, str]) -> tuple[Memory, CountingBackend]:
    backend = CountingBackend()
    mem = Memory(backend=backend, embedder=HashingEmbedder(), clock=lambda: NOW)
    rows = [
        {
            "content": _content(n),
            "importance": (n % 5) / 4,
            "created_at": NOW - timedelta(days=(n * 11) % 90),
            "metadata": {"speaker": speakers[n]} if n in speakers else {},
        }
        for n in range(120)
    ]
    mem.remember_batch(rows)
    backend.asked.clear()
    return mem, backend


@pytest.fixture
def store() -> Iterator[tuple[Memory, CountingBackend]]:
    mem, backend = _open({})
    with mem:
        yield mem, backend


def _hits(mem: Memory, query: str, retrieval: str | RetrievalConfig, limit: int = 10) -> list[tuple[str, Any]]:
    return [(h.id, h.parts) for h in mem.recall(query, limit=limit, retrieval=retrieval)]


def _unbounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recall_module, "decisive_depth", lambda config, limit: None)


QUERIES = [f"{a} {b}" for a in WORDS[:5] for b in WORDS[5:]]


@pytest.mark.parametrize("retrieval", ["vector", "lexical"])
def test_a_lone_channel_asks_for_the_decisive_hits_and_ranks_as_with_all(
    store: tuple[Memory, CountingBackend], monkeypatch: pytest.MonkeyPatch, retrieval: str
) -> None:
    mem, backend = store
    bounded, asked = {}, {}
    for query in QUERIES:
        backend.asked.clear()
        bounded[query] = _hits(mem, query, retrieval)
        asked[query] = list(backend.asked)
    # 15 decide a head of 10; 16 more see a run of equal scores across the cut to its end (then all 50 are
    # asked for only when the run reaches the 31st).
    assert all(first == 31 for first, *_ in asked.values())
    assert sum(found == [31] for found in asked.values()) >= 20  # BM25 ties often on these short texts
    _unbounded(monkeypatch)
    backend.asked.clear()
    assert {q: _hits(mem, q, retrieval) for q in QUERIES} == bounded
    assert set(backend.asked) == {50}


def _twins(mem: Memory, count: int) -> None:
    vector = HashingEmbedder().embed_batch(["piano lantern"])[0]
    twins = [
        {"content": f"twin {n}", "vector": np.asarray(vector), "created_at": NOW - timedelta(days=n)}
        for n in range(count)
    ]
    mem.remember_batch(twins)  # hits with one score, the best for the query


@pytest.mark.parametrize("count", [16, 22, 30])
def test_a_tie_across_the_depth_is_seen_to_its_end_in_one_search(
    store: tuple[Memory, CountingBackend], monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    mem, backend = store
    _twins(mem, count)  # the 15th and the 16th tie; the run ends within the 31 hits fetched
    backend.asked.clear()
    bounded = _hits(mem, "piano lantern", "vector")
    assert backend.asked == [31]
    _unbounded(monkeypatch)
    assert _hits(mem, "piano lantern", "vector") == bounded


def test_a_tie_past_the_hits_fetched_asks_for_all(
    store: tuple[Memory, CountingBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    mem, backend = store
    _twins(mem, 40)  # 40 hits with one score: the run reaches the 31st
    backend.asked.clear()
    bounded = _hits(mem, "piano lantern", "vector")
    assert backend.asked == [31, 50]
    _unbounded(monkeypatch)
    assert _hits(mem, "piano lantern", "vector") == bounded


def test_named_speakers_among_the_hits_ask_for_all(monkeypatch: pytest.MonkeyPatch) -> None:
    # Melanie said the turns nearest the query; Caroline, whom it names, only turns ranked 20th to 30th. Among
    # the first 15 one speaker is named; among all the candidates two, and the query names one of them, so
    # Melanie's turns are scaled down: what the first hits alone cannot show.
    query = "what did Caroline say about the lake"
    number = {_content(n): n for n in range(120)}
    plain, _ = _open({})
    with plain:
        order = [number[hit.item.content] for hit in plain.recall(query, limit=50, retrieval="vector")]
    speakers = {**{n: "Melanie" for n in order[:10]}, **{n: "Caroline" for n in order[20:30]}}
    mem, backend = _open(speakers)
    with mem:
        bounded = _hits(mem, query, "vector")
        assert backend.asked == [31, 50]
        assert any(parts.speaker is not None for _, parts in bounded)
        _unbounded(monkeypatch)
        assert _hits(mem, query, "vector") == bounded


def test_a_namespace_of_speakers_skips_the_bound_for_a_while(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every turn has a named speaker: the first hits never decide the head, so asking for them first would
    # search twice a recall. After one such recall the namespace asks for all at once, BOUND_RETRY times.
    monkeypatch.setattr(recall_module, "BOUND_RETRY", 3)
    mem, backend = _open({n: ("Caroline", "Melanie")[n % 2] for n in range(120)})
    with mem:
        asked = []
        for query in QUERIES[:6]:
            backend.asked.clear()
            mem.recall(f"what did Caroline say about the {query}", retrieval="vector")
            asked.append(list(backend.asked))
        assert asked == [[31, 50], [50], [50], [50], [31, 50], [50]]
        other = mem.recall("lake", retrieval="vector", namespace="elsewhere")  # another namespace is not skipped
        assert other == [] and backend.asked[-1] == 31


def test_an_amount_asked_for_or_several_channels_ask_for_all(store: tuple[Memory, CountingBackend]) -> None:
    mem, backend = store
    mem.recall("how many piano notes", retrieval="vector")
    assert backend.asked == [50]
    backend.asked.clear()
    mem.recall("piano lake", retrieval="plain")
    assert sorted(backend.asked) == [50, 50]


def test_window_and_own_vectors_merged_from_cut_searches_ask_for_all(monkeypatch: pytest.MonkeyPatch) -> None:
    # Memories in a thread have window vectors, the rest own vectors only: the vector channel merges two searches.
    # When the own search was cut short after memories that have window vectors, one without could still rank
    # higher than the merged k-th, so the first hits do not decide the head.
    backend = CountingBackend()
    with Memory(backend=backend, embedder=HashingEmbedder(), clock=lambda: NOW) as mem:
        mem.remember_batch(
            [{"content": _content(n), "thread": "t1" if n % 2 else None, "created_at": NOW - timedelta(days=n % 9)}
             for n in range(120)]
        )  # fmt: skip
        backend.asked.clear()
        bounded = _hits(mem, "lake lantern", "vector")
        assert backend.asked == [31, 50]
        _unbounded(monkeypatch)
        assert _hits(mem, "lake lantern", "vector") == bounded
