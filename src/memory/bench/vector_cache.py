"""A disk cache of text vectors for benchmark runs (never needed for correctness).

Benchmarks store the same texts again and again (LongMemEval's 29,519
haystack turns recur across questions and runs). :class:`DiskCachedEmbedder`
wraps an embedder and keeps each text's vector under
``~/.cache/memory/vectors/<model>-d<dim>/`` (``$MEMORY_CACHE_DIR`` overrides
``~/.cache/memory``), keyed by the model name, the dimension and a 64-bit
BLAKE2b hash of the text. A missing, stale or corrupt cache only costs
time: texts not found are embedded by the wrapped embedder, and a shard that
cannot be read is ignored. A single text not in the cache (a query) goes to
the wrapped embedder and is not cached, so measured recall latency includes
embedding the query.

Layout: append-only shards ``NNNNNN.npy`` (float32 rows) with
``NNNNNN.keys.npy`` (uint64 text hashes), written atomically. Delete the
directory to clear it.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from memory.embedders.base import Embedder

__all__ = ["DiskCachedEmbedder", "cache_root", "text_key"]


def cache_root() -> Path:
    """``$MEMORY_CACHE_DIR`` or ``~/.cache/memory``."""
    configured = os.environ.get("MEMORY_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "memory"


def text_key(text: str) -> int:
    """The 64-bit BLAKE2b hash of ``text`` (UTF-8) that keys its vector."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


class DiskCachedEmbedder:
    """An embedder whose batch results are kept on disk (same model name, dimension and vectors)."""

    def __init__(self, inner: Embedder, directory: Path | None = None, *, flush_every: int = 2_000) -> None:
        """Wrap ``inner``; vectors live under ``directory`` (default: :func:`cache_root`/vectors/<model>-d<dim>)."""
        self.inner = inner
        self.model_name = inner.model_name
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{inner.model_name}-d{inner.dimension}")
        self.directory = directory if directory is not None else cache_root() / "vectors" / slug
        self._flush_every = flush_every
        self._known: dict[int, npt.NDArray[np.float32]] = {}
        self._pending: dict[int, npt.NDArray[np.float32]] = {}
        self.hits = 0
        self.misses = 0
        self._load()

    @property
    def dimension(self) -> int:
        """The wrapped embedder's dimension."""
        return self.inner.dimension

    def _load(self) -> None:
        if not self.directory.is_dir():
            return
        for keys_path in sorted(self.directory.glob("*.keys.npy")):
            try:
                keys = np.load(keys_path)
                rows = np.load(keys_path.with_name(keys_path.name.replace(".keys.npy", ".npy")))
            except (OSError, ValueError):
                continue
            if rows.ndim != 2 or rows.shape != (keys.shape[0], self.inner.dimension):
                continue
            self._known.update(zip((int(k) for k in keys), rows.astype(np.float32), strict=True))

    def embed_batch(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Rows for ``texts``: cached ones from disk, the rest embedded (and cached).

        A lone text is a query (or a single write): always embedded by the
        wrapped model, never answered from the cache nor kept in it, so a
        recall's timed latency includes its query's embedding even when the
        same text was embedded in a batch before (a baseline embeds every question).
        """
        if len(texts) == 1:
            return np.asarray(self.inner.embed_batch(list(texts)), dtype=np.float32)
        keys = [text_key(t) for t in texts]
        todo: dict[int, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in self._known and key not in todo:
                todo[key] = text
        self.misses += len(todo)
        self.hits += len(texts) - len(todo)
        if todo:
            rows = np.asarray(self.inner.embed_batch(list(todo.values())), dtype=np.float32)
            for key, row in zip(todo, rows, strict=True):
                self._known[key] = row
                self._pending[key] = row
            if len(self._pending) >= self._flush_every:
                self.flush()
        return np.stack([self._known[k] for k in keys])

    def flush(self) -> None:
        """Write vectors embedded since the last flush as a new shard (atomic; errors only warn)."""
        if not self._pending:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            number = len(list(self.directory.glob("*.keys.npy")))
            while (self.directory / f"{number:06d}.keys.npy").exists():
                number += 1
            stem = self.directory / f"{number:06d}"
            keys = np.array(list(self._pending), dtype=np.uint64)
            rows = np.stack(list(self._pending.values())).astype(np.float32)
            _atomic_save(Path(f"{stem}.npy"), rows)
            _atomic_save(Path(f"{stem}.keys.npy"), keys)  # keys last: a shard counts once both exist
        except OSError:
            return
        self._pending.clear()


def _atomic_save(path: Path, array: npt.NDArray[np.generic]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npy")
    np.save(tmp, array)
    tmp.replace(path)
