"""Recall runs the lexical channel beside the vector channel on backends with concurrent reads."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import pytest

from memory import Memory
from memory.backends.base import ChannelHit
from memory.backends.sqlite.throwaway import ThrowawaySQLiteBackend
from memory.embedders.hashing import HashingEmbedder
from memory.errors import StorageError
from memory.filters import Filter

TEXTS = [
    "Caroline went to the LGBTQ support group on Sunday",
    "Melanie painted a sunrise over the lake",
    "Caroline is researching adoption agencies",
    "Melanie's kids love the pottery class",
    "The support group met again in June",
]


class ConcurrentInMemory(ThrowawaySQLiteBackend):
    """The memory:// backend, declaring concurrent reads, recording where the lexical channel ran."""

    concurrent_reads = True

    def __init__(self) -> None:
        super().__init__()
        self.lexical_threads: list[str] = []
        self.fail_lexical = False

    def search_lexical(
        self,
        flt: Filter,
        terms: Sequence[str],
        k: int,
        *,
        fields: Mapping[str, float] | None = None,
        exact_only: bool = False,
    ) -> list[ChannelHit]:
        self.lexical_threads.append(threading.current_thread().name)
        if self.fail_lexical:
            raise StorageError("lexical index unavailable")
        return super().search_lexical(flt, terms, k, fields=fields, exact_only=exact_only)


NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def _memory(backend: ThrowawaySQLiteBackend) -> Memory:
    mem = Memory(backend=backend, embedder=HashingEmbedder(), clock=lambda: NOW)
    mem.remember_batch(TEXTS)
    return mem


def _ranked(mem: Memory, query: str) -> list[tuple[str, float, tuple[str, ...]]]:
    return [(h.item.content, round(h.score, 9), tuple(sorted(h.channels))) for h in mem.recall(query, limit=5)]


def test_same_ranking_with_and_without_the_side_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    import memory.retrieval.recall as recall_module

    monkeypatch.setattr(recall_module, "LEXICAL_INLINE_CPU", 0.0)  # on the side thread however cheap
    side, plain = ConcurrentInMemory(), ThrowawaySQLiteBackend()
    with _memory(side) as a, _memory(plain) as b:
        for query in ("support group Caroline", "Melanie painting", "adoption", "pottery for kids"):
            assert _ranked(a, query) == _ranked(b, query)
    assert side.lexical_threads and all(name.startswith("memory-recall") for name in side.lexical_threads)


def test_sequential_when_only_one_channel_is_asked_for() -> None:
    backend = ConcurrentInMemory()
    with _memory(backend) as mem:
        mem.recall("support group", retrieval="lexical")
    assert backend.lexical_threads == [threading.current_thread().name]


def test_a_lexical_failure_reaches_the_caller_and_recall_works_afterwards() -> None:
    backend = ConcurrentInMemory()
    with _memory(backend) as mem:
        backend.fail_lexical = True
        with pytest.raises(StorageError, match="lexical index unavailable"):
            mem.recall("support group")
        backend.fail_lexical = False
        assert [h.item.content for h in mem.recall("support group")] == [
            h.item.content for h in mem.recall("support group", retrieval="balanced")
        ]
        assert mem.recall("support group", limit=5)


def test_close_stops_the_side_thread() -> None:
    # Only this Memory's threads: one an earlier test left unclosed may still await collection.
    before = set(threading.enumerate())
    mem = _memory(ConcurrentInMemory())
    mem.recall("adoption")
    own = [t for t in threading.enumerate() if t.name.startswith("memory-recall") and t not in before]
    assert own
    mem.close()
    assert not any(t.is_alive() for t in own)


def test_the_lexical_cost_forgets_the_cold_first_recall_then_averages() -> None:
    from memory.retrieval.recall import LEXICAL_INLINE_CPU

    with _memory(ThrowawaySQLiteBackend()) as mem:
        recall = mem._recall
        assert recall._lexical_is_costly("ns")  # unknown: on the worker
        recall._note_lexical_cpu("ns", 10 * LEXICAL_INLINE_CPU)  # the cold first recall
        assert recall._lexical_is_costly("ns")
        recall._note_lexical_cpu("ns", LEXICAL_INLINE_CPU / 4)  # replaces it
        assert not recall._lexical_is_costly("ns")
        recall._note_lexical_cpu("ns", 2 * LEXICAL_INLINE_CPU)  # averaged: 1.125 times the bound
        assert recall._lexical_is_costly("ns")
        recall._note_lexical_cpu("ns", 0.0)
        assert not recall._lexical_is_costly("ns") and recall._lexical_is_costly("other")  # per namespace
