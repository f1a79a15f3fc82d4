"""The dependency-free hashing embedder."""

from __future__ import annotations

import numpy as np
import pytest

from memory import registry
from memory.embedders.base import Embedder, embed_texts
from memory.embedders.hashing import HashingEmbedder
from memory.errors import ConfigError


def test_deterministic_across_calls_and_instances() -> None:
    texts = ["Alice prefers dark mode", "Bob lives in Paris"]
    first = HashingEmbedder().embed_batch(texts)
    again = HashingEmbedder().embed_batch(texts)
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(HashingEmbedder().embed_batch(texts[::-1]), first[::-1])


def test_unit_norm() -> None:
    vectors = HashingEmbedder(dim=64).embed_batch(["a", "some longer text with several words", "ÄÖÜ straße"])
    assert vectors.shape == (3, 64) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)


@pytest.mark.parametrize("text", ["🎉🔥", "?!...", "—", "👍 !!"])
def test_text_without_words_gets_a_direction(text: str) -> None:
    vector = HashingEmbedder().embed_batch([text])[0]
    assert np.linalg.norm(vector) == pytest.approx(1.0, rel=1e-6)
    other = HashingEmbedder().embed_batch(["🙂"])[0]
    assert not np.allclose(vector, other)


def test_empty_text_is_zero_and_embed_texts_keeps_it_finite() -> None:
    embedder = HashingEmbedder()
    assert not embedder.embed_batch([""]).any()
    assert np.isfinite(embed_texts(embedder, ["", "x"])).all()


def test_shared_words_are_closer() -> None:
    a, b, c = HashingEmbedder().embed_batch(["dark mode editor", "editor in dark mode", "sourdough bread recipe"])
    assert float(a @ b) > float(a @ c)


def test_identity_and_options() -> None:
    embedder = registry.create("embedder", "hashing", {"dim": 32})
    assert isinstance(embedder, Embedder)
    assert embedder.dimension == 32
    assert embedder.model_name == "hashing-ngram-35-d32"
    for bad in ({"dim": 4}, {"ngram_min": 6}, {"size": 3}):
        with pytest.raises(ConfigError):
            registry.create("embedder", "hashing", bad)
    with pytest.raises(ConfigError):
        HashingEmbedder(dim=2)
