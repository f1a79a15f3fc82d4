"""The embedder contract and the helpers built on it once.

An embedder only implements ``embed_batch``; batching, validation and
normalisation come from :func:`embed_texts`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from memory.errors import EmbedderError, Error, InvalidInputError

__all__ = [
    "Embedder",
    "embed_texts",
    "embed_query",
    "embed_chunked",
    "chunk_text",
    "calling_thread_only",
    "on_calling_thread_only",
    "CHUNK_CHARS",
]

#: Longest text embedded in one piece; longer texts are embedded as the mean of their chunks.
CHUNK_CHARS = 2_000


_CALLING_THREAD_ONLY: ContextVar[bool] = ContextVar("memory_embed_calling_thread_only", default=False)


@contextmanager
def calling_thread_only() -> Iterator[None]:
    """Inside the block, embedders that split a call over threads of their own run it on the calling thread.

    For callers that know the process's other threads want the other cores: the
    batching queue's worker runs its batches so, since its callers are concurrent
    (a server's request threads then parse, search and write beside it). An
    embedder honours it if it can (the MiniLM numpy runtime does; ONNX Runtime's
    threads are fixed when its session opens). It holds for the current thread
    (or asyncio task) only.
    """
    token = _CALLING_THREAD_ONLY.set(True)
    try:
        yield
    finally:
        _CALLING_THREAD_ONLY.reset(token)


def on_calling_thread_only() -> bool:
    """True inside :func:`calling_thread_only`."""
    return _CALLING_THREAD_ONLY.get()


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
    """Embed one text; returns a unit-length float32 vector.

    An embedder with a ``query_cache`` (a batching one, see
    :mod:`memory.embedders.batching`) answers a repeated text from it.
    """
    cache = getattr(embedder, "query_cache", None)
    if cache is not None:
        cached: npt.NDArray[np.float32] | None = cache.get(text)
        if cached is not None:
            return cached
    row: npt.NDArray[np.float32] = embed_texts(embedder, [text])[0]
    if cache is not None:
        cache.put(text, row)
    return row


def chunk_text(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """Split ``text`` into pieces of at most ``size`` characters, at whitespace where possible."""
    if size < 1:
        raise InvalidInputError("chunk size must be positive")
    chunks: list[str] = []
    rest = text.strip()
    while len(rest) > size:
        cut = rest.rfind(" ", 0, size + 1)
        if cut <= size // 2:
            cut = size
        chunks.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    if rest:
        chunks.append(rest)
    return chunks


def embed_chunked(embedder: Embedder, texts: Sequence[str], *, batch_size: int = 64) -> npt.NDArray[np.float32]:
    """Unit vectors of ``texts``; a text longer than :data:`CHUNK_CHARS` is the mean of its chunks' vectors.

    An embedder reads a bounded window (MiniLM: 256 tokens), so a long text
    embedded whole would be represented by its beginning only. Every chunk of
    every text goes through :func:`embed_texts` in one pass (same batching
    and validation). Raises EmbedderError as :func:`embed_texts`.
    """
    pieces: list[str] = []
    owners: list[int] = []
    for index, text in enumerate(texts):
        for chunk in chunk_text(text) or [text]:
            pieces.append(chunk)
            owners.append(index)
    matrix = embed_texts(embedder, pieces, batch_size=batch_size)
    if len(pieces) == len(texts):
        return matrix
    out = np.zeros((len(texts), matrix.shape[1]), dtype=np.float32)
    np.add.at(out, np.asarray(owners), matrix)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    pooled: npt.NDArray[np.float32] = (out / norms).astype(np.float32)
    return pooled
