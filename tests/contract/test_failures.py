"""A failing embedder never loses a write; vector spaces are checked."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
import pytest

from memory import EmbedderError, EmbeddingMismatchError, Memory
from memory.embedders.hashing import HashingEmbedder


class FlakyEmbedder:
    """Hashing embedder that fails while ``broken`` is set (a stand-in for a remote outage)."""

    def __init__(self) -> None:
        self._inner = HashingEmbedder()
        self.model_name = self._inner.model_name
        self.broken = False

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed_batch(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.broken:
            raise ConnectionError("embedding service unreachable")
        return self._inner.embed_batch(texts)


def test_failing_embedder_keeps_the_write_pending(make_memory: Callable[..., Memory]) -> None:
    embedder = FlakyEmbedder()
    mem = make_memory(embedder=embedder)
    embedder.broken = True
    memory_id = mem.remember("Heidi's birthday is in May")
    item = mem.get(memory_id)
    assert item.embedding_status == "pending"
    assert item.embedding_error and "unreachable" in item.embedding_error
    hits = mem.recall("birthday")
    assert [h.id for h in hits] == [memory_id]
    assert "lexical" in hits[0].channels and "vector" not in hits[0].channels  # found by its words alone
    assert mem.embed_pending() == 0
    embedder.broken = False
    assert mem.embed_pending() == 1
    item = mem.get(memory_id)
    assert item.embedding_status == "done" and item.embedding_error is None
    assert "vector" in mem.recall("birthday")[0].channels


def test_bad_embedder_output_is_an_embedder_error(make_memory: Callable[..., Memory]) -> None:
    class WrongShape(FlakyEmbedder):
        def embed_batch(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
            return np.ones((len(texts) + 1, 384), dtype=np.float32)

    mem = make_memory(embedder=WrongShape())
    memory_id = mem.remember("shape mismatch is caught")
    assert mem.get(memory_id).embedding_status == "pending"
    with pytest.raises(EmbedderError):
        from memory.embedders.base import embed_texts

        embed_texts(WrongShape(), ["a"])


def test_other_dimension_is_refused(make_memory: Callable[..., Memory], backend_name: str) -> None:
    mem = make_memory(embedder=HashingEmbedder(dim=384))
    mem.remember("first")
    with pytest.raises(EmbeddingMismatchError):
        mem.backend.ensure_vector_space(mem.embedder.model_name, 128)
    with pytest.raises(EmbeddingMismatchError, match="built with embedder"):
        make_memory(embedder=HashingEmbedder(dim=128))
