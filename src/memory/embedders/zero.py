"""The no-op embedder of seed 000 (``noopEmbedding``): every text becomes the zero vector.

For tests of code that takes an embedder but whose result must not depend on one
(the Prompt IR's section embeddings, :func:`memory.context.analysis.equivalent`).
Not for a store: zero vectors have no direction, so vector search over them ranks nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["ZeroEmbedder"]


class ZeroEmbedder:
    """Returns zeros of length ``dimension`` for every text; never fails, never loads anything."""

    def __init__(self, dimension: int = 384) -> None:
        """``dimension``: the vector length (>= 1)."""
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
            raise ValueError(f"dimension must be a positive integer, got {dimension!r}")
        self._dimension = dimension
        self.model_name = f"zero-d{dimension}"

    @property
    def dimension(self) -> int:
        """The vector length."""
        return self._dimension

    def embed_batch(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Zeros of shape (len(texts), dimension)."""
        return np.zeros((len(texts), self._dimension), dtype=np.float32)
