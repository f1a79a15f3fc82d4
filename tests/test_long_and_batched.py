"""Long content is valid input; batched writes run a bounded number of SQL statements."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory import Memory
from memory.embedders.base import CHUNK_CHARS, chunk_text, embed_chunked, embed_texts
from memory.errors import InvalidInputError
from memory.records import DEFAULT_MAX_CONTENT_CHARS
from memory.retrieval.config import RetrievalConfig
from memory.retrieval.window import window_model

WHEN = datetime(2023, 5, 20, 2, 21, tzinfo=UTC)


def _long_text(chars: int, head: str, tail: str) -> str:
    filler = " ".join(f"word{i % 997}" for i in range(chars // 8))
    return f"{head} {filler[: chars - len(head) - len(tail) - 2]} {tail}"


def test_limit_is_far_above_32000() -> None:
    assert DEFAULT_MAX_CONTENT_CHARS >= 200_000


def test_long_memory_is_stored_chunk_embedded_and_fully_indexed(tmp_path: Path) -> None:
    text = _long_text(80_000, "zebracorn opening", "quokkasaurus closing")
    with Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing") as mem:
        memory_id = mem.remember(text, thread="t1")
        assert mem.get(memory_id).content == text
        # the last words are indexed for text search, not only the first chunk
        assert [h.id for h in mem.recall("quokkasaurus", retrieval="lexical")] == [memory_id]
        stored = mem.vector_of(memory_id)
        assert stored is not None
        expected = embed_chunked(mem.embedder, [text])[0]
        first_chunk_only = embed_texts(mem.embedder, [chunk_text(text)[0]])[0]
        assert np.allclose(stored, expected, rtol=1e-3, atol=1e-5)  # SQLite stores float16 (2^-11 relative)
        assert not np.allclose(stored, first_chunk_only, atol=1e-3)
        assert len(chunk_text(text)) > 80_000 // CHUNK_CHARS - 1


def test_long_message_is_valid_input(tmp_path: Path) -> None:
    text = _long_text(76_560, "user: a long message", "ending marker glimmerfox")
    with Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing") as mem:
        message = mem.messages.append("s1", text, embed=True)
        assert message.content == text
        hits = mem.messages.search("glimmerfox", retrieval="lexical")
        assert [h.message.id for h in hits] == [message.id]


def test_over_the_limit_names_the_entry_and_writes_nothing(tmp_path: Path) -> None:
    too_long = "x" * (DEFAULT_MAX_CONTENT_CHARS + 1)
    with Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing") as mem:
        with pytest.raises(InvalidInputError, match=r"entry 2 of the batch \(thread 'big'.*over the limit"):
            mem.remember_batch(["one", "two", {"content": too_long, "thread": "big"}, "four"])
        assert list(mem.list().items) == []
        with pytest.raises(InvalidInputError, match=r"entry 1 of the batch \(thread 'big'.*over the limit"):
            mem.messages.append_many([{"thread": "a", "content": "fine"}, {"thread": "big", "content": too_long}])
        assert mem.messages.recent("a") == []


class _Counting:
    """Forwards to a DB-API connection and counts the statements the backend sends (execute/executemany calls)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    def execute(self, *args: Any) -> Any:
        self.calls += 1
        return self.inner.execute(*args)

    def executemany(self, *args: Any) -> Any:
        self.calls += 1
        return self.inner.executemany(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _statements(mem: Memory, entries: list[dict[str, object]]) -> int:
    backend: Any = mem.backend
    counting = _Counting(backend._conn)
    backend._conn = counting
    try:
        mem.remember_batch(entries)
    finally:
        backend._conn = counting.inner
    return counting.calls


def _thread_entries(prefix: str, n: int, threads: int, dim: int) -> list[dict[str, object]]:
    rng = np.random.default_rng(len(prefix) + n)
    out: list[dict[str, object]] = []
    for i in range(n):
        vector = rng.standard_normal(dim).astype(np.float32)
        out.append(
            {
                "content": f"{prefix} turn {i} about topic {i % 7}",
                "thread": f"{prefix}-{i % threads}",
                "created_at": WHEN + timedelta(seconds=i),
                "vector": vector / np.linalg.norm(vector),
                "tags": ["chat"],
            }
        )
    return out


def test_statements_per_batch_do_not_grow_with_the_batch(tmp_path: Path) -> None:
    with Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing") as mem:
        dim = mem.embedder.dimension
        mem.remember_batch(_thread_entries("warm", 4, 2, dim))  # creates the spaces and first windows
        small = _statements(mem, _thread_entries("small", 40, 4, dim))
        large = _statements(mem, _thread_entries("large", 400, 4, dim))
        assert large <= small + 20, (small, large)  # per thread and per batch, not per memory
        assert len(mem.list(limit=1000).items) == 444
        # windows were computed for every new memory: each has a window vector and a window text
        ids = [i.id for i in mem.list(limit=1000).items]
        space = window_model(mem.embedder.model_name)
        assert set(mem.backend.get_vectors("default", space, ids)) == set(ids)
        hits = mem.recall(
            "large turn 398", limit=50, retrieval=RetrievalConfig(channels=("lexical",), fields={"window": 1.0})
        )
        assert {h.item.content for h in hits[:4]} >= {
            "large turn 394 about topic 2",
            "large turn 402 about topic 3",
        } - {"large turn 402 about topic 3"}
