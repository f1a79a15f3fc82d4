"""Dynamic batching across threads (real threads, a real embedder that counts its calls) and the query cache."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from memory import Memory
from memory.embedders.base import calling_thread_only, embed_query, embed_texts, on_calling_thread_only
from memory.embedders.batching import BatchingEmbedder, QueryCache, batching, queue_for
from memory.embedders.hashing import HashingEmbedder
from memory.errors import EmbedderError


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, slowed to ``delay`` s per call (as a model is), logging every call's texts.

    A text containing ``poison`` makes the whole call raise; ``short`` makes it return one row too few.
    """

    def __init__(self, delay: float = 0.02, dim: int = 32) -> None:
        super().__init__(dim=dim)
        self.delay = delay
        self.calls: list[list[str]] = []
        self.lock = threading.Lock()

    def embed_batch(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        with self.lock:
            self.calls.append(list(texts))
        time.sleep(self.delay)
        if any("poison" in t for t in texts):
            raise ValueError("cannot embed poison")
        rows = super().embed_batch(texts)
        return rows[:-1] if any("short" in t for t in texts) else rows


def _in_threads(count: int, work: Callable[[int], object]) -> list[object]:
    """Run ``work(i)`` in ``count`` threads released together; returns results (or the exceptions raised)."""
    barrier = threading.Barrier(count)
    results: list[object] = [None] * count

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = work(i)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


def test_concurrent_callers_share_batches_and_each_gets_its_own_rows() -> None:
    inner = CountingEmbedder()
    wrapped = batching(inner)
    texts = [f"text number {i} about topic {i % 5}" for i in range(24)]
    results = _in_threads(24, lambda i: embed_texts(wrapped, [texts[i]])[0])
    expected = HashingEmbedder(dim=32).embed_batch(texts)
    for i, row in enumerate(results):
        assert isinstance(row, np.ndarray)
        np.testing.assert_allclose(row, expected[i], atol=1e-6)
    assert sum(len(c) for c in inner.calls) == 24  # every text embedded once
    assert len(inner.calls) < 12  # 24 requests in far fewer model calls
    assert max(len(c) for c in inner.calls) >= 4
    queue = queue_for(inner)
    assert queue.requests == 24 and queue.batches == len(inner.calls) and queue.largest >= 4


def test_a_lone_caller_does_not_wait_for_company() -> None:
    inner = CountingEmbedder(delay=0.0)
    wrapped = batching(inner)
    embed_texts(wrapped, ["warm the worker"])
    started = time.perf_counter()
    for i in range(20):
        embed_texts(wrapped, [f"alone {i}"])
    per_call = (time.perf_counter() - started) / 20
    assert len(inner.calls) == 21
    assert per_call < 0.05  # far below any batching window a caller would sit out


def test_a_lone_caller_embeds_in_its_own_thread_and_batches_never_overlap() -> None:
    class Recording(CountingEmbedder):
        def __init__(self) -> None:
            super().__init__(delay=0.05)
            self.threads: list[str] = []
            self.running = 0
            self.overlapped = False

        def embed_batch(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
            with self.lock:
                self.running += 1
                self.overlapped |= self.running > 1
                self.threads.append(threading.current_thread().name)
            try:
                return super().embed_batch(texts)
            finally:
                with self.lock:
                    self.running -= 1

    inner = Recording()
    wrapped = batching(inner)
    assert isinstance(wrapped, BatchingEmbedder)
    embed_texts(wrapped, ["alone"])
    assert inner.threads == [threading.current_thread().name]  # no hand-off to the worker
    assert wrapped.queue._worker is None and wrapped.queue.batches == 1

    def later(i: int) -> object:
        time.sleep(0.01 * i)  # the first runs alone in its thread; the others arrive while it runs
        return embed_texts(wrapped, [f"caller {i}"])[0]

    results = _in_threads(4, later)
    expected = HashingEmbedder(dim=32).embed_batch([f"caller {i}" for i in range(4)])
    for i, row in enumerate(results):
        assert isinstance(row, np.ndarray)
        np.testing.assert_allclose(row, expected[i], atol=1e-6)
    assert not inner.overlapped  # one batch at a time, whoever runs it
    assert "memory-embed-batcher" in inner.threads  # the callers that queued were served by the worker
    assert wrapped.queue.requests == 5


def test_the_workers_batches_run_on_its_thread_alone_and_a_lone_callers_do_not() -> None:
    class Seeing(CountingEmbedder):
        def __init__(self) -> None:
            super().__init__(delay=0.05)
            self.seen: list[tuple[str, bool]] = []

        def embed_batch(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
            with self.lock:
                self.seen.append((threading.current_thread().name, on_calling_thread_only()))
            return super().embed_batch(texts)

    inner = Seeing()
    wrapped = batching(inner)
    embed_texts(wrapped, ["alone"])
    assert inner.seen == [(threading.current_thread().name, False)]  # a lone caller may use every core

    def later(i: int) -> object:
        time.sleep(0.01 * i)
        return embed_texts(wrapped, [f"caller {i}"])

    _in_threads(4, later)
    by_worker = [flag for name, flag in inner.seen if name == "memory-embed-batcher"]
    assert by_worker and all(by_worker)  # concurrent callers: the worker's batches stay on its thread
    assert all(not flag for name, flag in inner.seen if name != "memory-embed-batcher")
    assert wrapped.queue.lone == len(inner.seen) - len(by_worker)


def test_calling_thread_only_is_scoped_to_its_block_and_thread() -> None:
    assert not on_calling_thread_only()
    seen: list[bool] = []
    with calling_thread_only():
        assert on_calling_thread_only()
        other = threading.Thread(target=lambda: seen.append(on_calling_thread_only()))
        other.start()
        other.join()
        with calling_thread_only():
            assert on_calling_thread_only()
        assert on_calling_thread_only()
    assert not on_calling_thread_only() and seen == [False]


def test_a_failure_fails_only_its_own_callers() -> None:
    inner = CountingEmbedder()
    wrapped = batching(inner)

    def work(i: int) -> object:
        text = f"poison {i}" if i % 4 == 0 else f"good text {i}"
        return embed_texts(wrapped, [text])[0]

    results = _in_threads(16, work)
    for i, result in enumerate(results):
        if i % 4 == 0:
            assert isinstance(result, EmbedderError) and "poison" in str(result)
        else:
            expected = HashingEmbedder(dim=32).embed_batch([f"good text {i}"])[0]
            assert isinstance(result, np.ndarray)
            np.testing.assert_allclose(result, expected, atol=1e-6)
    shared = [c for c in inner.calls if len(c) > 1]
    assert any(any("poison" in t for t in c) and any("good" in t for t in c) for c in shared)  # it did share


def test_a_wrong_shape_fails_only_its_own_caller() -> None:
    inner = CountingEmbedder()
    wrapped = batching(inner)
    results = _in_threads(8, lambda i: embed_texts(wrapped, ["short one" if i == 3 else f"fine {i}"]))
    for i, result in enumerate(results):
        if i == 3:
            assert isinstance(result, EmbedderError) and "shape" in str(result)
        else:
            assert isinstance(result, np.ndarray) and result.shape == (1, 32)


def test_one_queue_per_embedder_and_no_double_wrapping() -> None:
    inner = CountingEmbedder(delay=0.0)
    first, second = batching(inner), batching(inner)
    assert isinstance(first, BatchingEmbedder) and batching(first) is first
    assert first.queue is second.queue and first.query_cache is second.query_cache
    other = batching(CountingEmbedder(delay=0.0))
    assert isinstance(other, BatchingEmbedder) and other.queue is not first.queue
    assert first.model_name == inner.model_name and first.dimension == 32
    assert first.ngram_min if hasattr(first, "ngram_min") else True  # other attributes are the inner's
    assert first.embed_batch([]).shape == (0, 32)


def test_the_worker_exits_when_idle_and_comes_back(monkeypatch: pytest.MonkeyPatch) -> None:
    import memory.embedders.batching as module

    monkeypatch.setattr(module, "IDLE_EXIT", 0.05)
    wrapped = batching(CountingEmbedder(delay=0.0))
    assert isinstance(wrapped, BatchingEmbedder)
    embed_texts(wrapped, ["one"])
    deadline = time.monotonic() + 5
    while wrapped.queue._worker is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert wrapped.queue._worker is None
    assert embed_texts(wrapped, ["two"]).shape == (1, 32)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_gets_its_own_queue() -> None:
    wrapped = batching(CountingEmbedder(delay=0.0))
    embed_texts(wrapped, ["before the fork"])
    pid = os.fork()
    if pid == 0:  # the child: the parent's worker thread does not exist here
        try:
            ok = embed_texts(wrapped, ["in the child"]).shape == (1, 32)
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_query_cache_answers_repeats_without_the_model() -> None:
    inner = CountingEmbedder(delay=0.0)
    wrapped = batching(inner)
    first = embed_query(wrapped, "what does alice like?")
    calls = len(inner.calls)
    again = embed_query(wrapped, "what does alice like?")
    assert len(inner.calls) == calls
    np.testing.assert_array_equal(first, again)
    again[0] = 42.0  # callers get copies
    np.testing.assert_array_equal(embed_query(wrapped, "what does alice like?"), first)
    embed_texts(wrapped, ["a document, never cached"])
    assert isinstance(wrapped, BatchingEmbedder) and len(wrapped.query_cache) == 1
    assert embed_query(inner, "bare embedders have no cache") is not None
    assert batching(CountingEmbedder(delay=0.0)).query_cache.get("what does alice like?") is None  # type: ignore[attr-defined]


def test_query_cache_is_bounded_by_entries_and_characters() -> None:
    cache = QueryCache(entries=3, text_chars=10, chars=20)
    vector = np.ones(4, dtype=np.float32)
    for text in ("a", "b", "c", "d"):
        cache.put(text, vector)
    assert len(cache) == 3 and cache.get("a") is None and cache.get("d") is not None
    cache.get("b")  # b is now the most recent: c goes next
    cache.put("e", vector)
    assert cache.get("c") is None and cache.get("b") is not None
    cache.put("x" * 11, vector)  # longer than one text may be
    assert cache.get("x" * 11) is None
    cache.put("y" * 10, vector)
    cache.put("z" * 10, vector)
    assert cache.chars <= 20 and cache.get("z" * 10) is not None and cache.get("y" * 10) is not None
    assert len(cache) == 2
    cache.clear()
    assert len(cache) == 0 and cache.chars == 0


def test_concurrent_threads_of_one_memory_share_embedder_calls(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    with Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder=inner) as mem:
        assert isinstance(mem.embedder, BatchingEmbedder) and mem.embedder.inner is inner

        def work(i: int) -> object:
            memory_id = mem.remember(f"fact {i}: user{i} likes colour {i}", user=f"u{i}")
            hits = mem.recall(f"what colour does user{i} like?", user=f"u{i}", limit=3)
            return memory_id, [h.id for h in hits]

        results = _in_threads(16, work)
        for result in results:
            assert isinstance(result, tuple), result
            memory_id, hit_ids = result
            assert memory_id in hit_ids
        assert len(mem.list(limit=100).items) == 16
        assert all(i.embedding_status == "done" for i in mem.list(limit=100).items)
    assert sum(len(c) for c in inner.calls) == 32  # 16 texts stored, 16 queries
    assert len(inner.calls) < 24


def test_a_failing_embedder_still_loses_no_write(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    with Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder=inner) as mem:
        results = _in_threads(8, lambda i: mem.remember(f"poison fact {i}" if i % 2 else f"plain fact {i}"))
        assert all(isinstance(r, str) for r in results)
        items = {i.content: i for i in mem.list(limit=100).items}
        assert len(items) == 8
        for i in range(8):
            status = items[f"poison fact {i}" if i % 2 else f"plain fact {i}"].embedding_status
            assert status == ("pending" if i % 2 else "done")
