"""The embedder contract and the helpers built on it once.

An embedder only implements ``embed_batch``; batching, validation and
normalisation come from :func:`embed_texts`. An embedder that reads a bounded
window of each text (MiniLM: 256 tokens) may also implement
:class:`WindowedEmbedder`, so that a longer text is embedded in pieces it
reads whole (:func:`text_chunks`) instead of by its beginning only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from memory.errors import EmbedderError, Error, InvalidInputError

__all__ = [
    "Embedder", "WindowedEmbedder", "embed_texts", "embed_query", "embed_chunked", "chunk_text", "text_chunks",
    "split_at_tokens", "CHUNK_CHARS",
]  # fmt: skip

#: Longest text embedded in one piece; longer texts are embedded as the mean of their chunks. An embedder
#: that knows its window (:class:`WindowedEmbedder`) has texts cut shorter where they would not fit it.
CHUNK_CHARS = 2_000


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


@runtime_checkable
class WindowedEmbedder(Protocol):
    """An embedder that reads at most a window of each text and can say where a longer text must be cut."""

    def split_for_window(self, text: str) -> list[str]:
        """``text`` as consecutive pieces that each fit the model's window (one piece when it fits)."""
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


def split_at_tokens(text: str, offsets: Sequence[tuple[int, int]], limit: int) -> list[str]:
    """``text`` cut into consecutive pieces of at most ``limit`` tokens (pure).

    ``offsets`` are the (start, end) characters of each token of ``text`` in
    order, as a tokenizer reports them. A cut falls on the last whitespace
    before the first token that does not fit, when that is past the middle of
    the piece (so words stay whole), else at that token's start. Pieces are
    stripped; a text of at most ``limit`` tokens is returned whole.
    """
    if limit < 1:
        raise InvalidInputError("token limit must be positive")
    pieces: list[str] = []
    first, start = 0, 0  # the piece's first token and first character
    while len(offsets) - first > limit:
        cut = offsets[first + limit][0]
        space = max(text.rfind(" ", start, cut + 1), text.rfind("\n", start, cut + 1))
        if space > start + (cut - start) // 2:
            cut = space
        if cut <= start:  # no progress (zero-width tokens): take the token whole rather than loop
            cut = max(offsets[first + limit][1], start + 1)
        piece = text[start:cut].strip()
        if piece:
            pieces.append(piece)
        start = cut
        while first < len(offsets) and offsets[first][0] < cut:
            first += 1
    rest = text[start:].strip()
    if rest:
        pieces.append(rest)
    return pieces


def text_chunks(embedder: Embedder, text: str) -> list[str]:
    """The pieces ``embedder`` embeds ``text`` as: each fits its window and :data:`CHUNK_CHARS`.

    An embedder that knows its window (:class:`WindowedEmbedder`) cuts where
    its tokens say; any piece is then at most :data:`CHUNK_CHARS` characters
    (:func:`chunk_text`). Empty for a blank text.
    """
    return _chunker(embedder)(text)


def _chunker(embedder: Embedder) -> Callable[[str], list[str]]:
    """:func:`text_chunks` for one embedder (its capability checked once, not per text)."""
    if not isinstance(embedder, WindowedEmbedder):
        return chunk_text
    split = embedder.split_for_window
    return lambda text: [chunk for piece in split(text) for chunk in chunk_text(piece)]


def embed_chunked(embedder: Embedder, texts: Sequence[str], *, batch_size: int = 64) -> npt.NDArray[np.float32]:
    """Unit vectors of ``texts``; a text longer than the embedder reads is the mean of its chunks' vectors.

    An embedder reads a bounded window (MiniLM: 256 tokens), so a long text
    embedded whole would be represented by its beginning only: it is split by
    :func:`text_chunks` (the embedder's window where it knows it, else
    :data:`CHUNK_CHARS` characters). Every chunk of every text goes through
    :func:`embed_texts` in one pass (same batching and validation). Raises
    EmbedderError as :func:`embed_texts`.
    """
    pieces: list[str] = []
    owners: list[int] = []
    chunks_of = _chunker(embedder)
    for index, text in enumerate(texts):
        for chunk in chunks_of(text) or [text]:
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
