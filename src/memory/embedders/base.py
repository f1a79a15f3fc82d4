"""The embedder contract and the helpers built on it once.

An embedder only implements ``embed_batch``; batching, validation and
normalisation come from :func:`embed_texts`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from memory.errors import EmbedderError, Error

__all__ = ["Embedder", "embed_texts", "embed_query"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors.

    ``model_name`` identifies the vector space (stored with every vector);
    ``dimension`` is the vector length, detected on first use for remote
    models. ``embed_batch`` returns one row per text.
    """

    model_name: str

    @property
    def dimension(self) -> int:
        """Length of the vectors this embedder returns."""
        ...

    def embed_batch(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts``; returns an array of shape (len(texts), dimension)."""
        ...


def embed_texts(embedder: Embedder, texts: Sequence[str], *, batch_size: int = 64) -> npt.NDArray[np.float32]:
    """Embed ``texts`` in batches; returns unit-length float32 rows.

    Raises EmbedderError when the embedder fails or returns the wrong shape or
    non-finite values.
    """
    if not texts:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    chunks: list[npt.NDArray[np.float32]] = []
    for start in range(0, len(texts), batch_size):
        batch = list(texts[start : start + batch_size])
        try:
            raw = embedder.embed_batch(batch)
        except Error:
            raise
        except Exception as exc:  # noqa: BLE001 - any provider failure becomes EmbedderError
            raise EmbedderError(f"embedder {embedder.model_name!r} failed: {exc}") from exc
        array = np.asarray(raw, dtype=np.float32)
        if array.ndim != 2 or array.shape[0] != len(batch):
            raise EmbedderError(f"embedder {embedder.model_name!r} returned shape {array.shape} for {len(batch)} texts")
        if not np.all(np.isfinite(array)):
            raise EmbedderError(f"embedder {embedder.model_name!r} returned NaN or infinite values")
        norms = np.linalg.norm(array, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        chunks.append((array / norms).astype(np.float32))
    result = np.vstack(chunks)
    return result


def embed_query(embedder: Embedder, text: str) -> npt.NDArray[np.float32]:
    """Embed one text; returns a unit-length float32 vector."""
    row: npt.NDArray[np.float32] = embed_texts(embedder, [text])[0]
    return row
