"""A dependency-free embedder: hashed character n-grams and words.

Quality is far below a neural model, but it needs nothing but numpy, is
deterministic across processes and machines, and is fast. It is the fallback
when the local model is not installed, and the embedder most tests use.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, model_validator

from memory.provider_options import parse_options

__all__ = ["HashingEmbedder"]

_WORD = re.compile(r"\w+", re.UNICODE)


@lru_cache(maxsize=200_000)
def _bucket(feature: str, dim: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dim, (1.0 if (value >> 63) & 1 else -1.0)


class HashingEmbedder:
    """Signed feature hashing of char 3–5-grams (within words) and whole words."""

    class Options(BaseModel):
        """Options of the ``hashing`` embedder."""

        model_config = ConfigDict(extra="forbid", frozen=True)

        dim: int = Field(384, ge=8, le=65_536, description="vector length (hash buckets)")
        ngram_min: int = Field(3, ge=1, le=16)
        ngram_max: int = Field(5, ge=1, le=16)

        @model_validator(mode="after")
        def _ordered(self) -> HashingEmbedder.Options:
            if self.ngram_min > self.ngram_max:
                raise ValueError("ngram_min must not exceed ngram_max")
            return self

    def __init__(self, dim: int = 384, ngram_min: int = 3, ngram_max: int = 5) -> None:
        """Create an embedder with ``dim`` buckets and n-grams of ``ngram_min``..``ngram_max`` chars.

        Raises ConfigError for bad options.
        """
        options = parse_options(self.Options, "hashing", {"dim": dim, "ngram_min": ngram_min, "ngram_max": ngram_max})
        dim, ngram_min, ngram_max = options.dim, options.ngram_min, options.ngram_max
        self._dim = dim
        self._ngrams = (ngram_min, ngram_max)
        self.model_name = f"hashing-ngram-{ngram_min}{ngram_max}-d{dim}"

    @property
    def dimension(self) -> int:
        """Vector length (the number of hash buckets)."""
        return self._dim

    def _features(self, text: str) -> list[tuple[str, float]]:
        features: list[tuple[str, float]] = []
        low, high = self._ngrams
        for word in _WORD.findall(text.lower()):
            features.append(("w:" + word, 2.0))
            padded = f"<{word}>"
            for n in range(low, high + 1):
                for i in range(0, max(len(padded) - n + 1, 1)):
                    features.append(("c:" + padded[i : i + n], 1.0))
        if not features and text.strip():
            # Text without word characters (emoji, punctuation) still gets a direction.
            features = [("s:" + ch, 1.0) for ch in text.strip()]
        return features

    def embed_batch(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed texts; rows are L2-normalised (all-zero only for empty text)."""
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in self._features(text):
                index, sign = _bucket(feature, self._dim)
                out[row, index] += sign * weight
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
        return out
