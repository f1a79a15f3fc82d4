"""Peer vector stores for the speed benchmark: the same work on another embedded store.

A peer gets exactly what `memory` gets: the same texts, the same precomputed
vectors (so the embedder is identical and counted the same way) and the same
k. Peers run offline: Chroma is given every embedding (its default ONNX
model is never loaded) and its telemetry is off. mem0 (a memory library,
not a vector store) is :mod:`memory.bench.peer_mem0`.

Peers are optional dependencies (``pip install 'llm-agent-memory[bench]'``); opening a
missing one raises ConfigError.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from memory.embedders.base import Embedder
from memory.errors import ConfigError

__all__ = ["PeerStore", "PEERS", "peer_available", "open_peer"]

#: Peer name -> the module it needs.
PEERS: dict[str, str] = {"chroma": "chromadb", "lancedb": "lancedb", "mem0": "mem0"}


class PeerStore(Protocol):
    """An embedded vector store under test."""

    name: str

    def add(self, ids: Sequence[str], texts: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        """Store texts with their (unit-length) vectors."""
        ...

    def query(self, vector: npt.NDArray[np.float32], k: int) -> list[str]:
        """Ids of the ``k`` nearest texts by cosine, best first."""
        ...

    def close(self) -> None:
        """Release the store."""
        ...


def peer_available(name: str) -> bool:
    """True when the peer's package is installed."""
    module = PEERS.get(name)
    return module is not None and importlib.util.find_spec(module) is not None


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "?"


class ChromaPeer:
    """Chroma's PersistentClient in a directory; HNSW with cosine space."""

    def __init__(self, directory: Path) -> None:
        """Open a new persistent Chroma store in ``directory``."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # third-party import-time deprecations
            import chromadb
            from chromadb.config import Settings as ChromaSettings
        self.name = f"chromadb {_version('chromadb')}"
        self._client: Any = chromadb.PersistentClient(
            path=str(directory), settings=ChromaSettings(anonymized_telemetry=False, allow_reset=True)
        )
        self._collection: Any = self._client.create_collection(
            "bench", metadata={"hnsw:space": "cosine"}, embedding_function=None
        )

    def add(self, ids: Sequence[str], texts: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        """Insert documents with their embeddings."""
        self._collection.add(ids=list(ids), documents=list(texts), embeddings=np.asarray(vectors, dtype=np.float32))

    def query(self, vector: npt.NDArray[np.float32], k: int) -> list[str]:
        """Nearest ids with their documents (as `memory` returns contents)."""
        result = self._collection.query(
            query_embeddings=np.asarray(vector, dtype=np.float32)[None, :],
            n_results=k,
            include=["documents", "distances"],
        )
        return list(result["ids"][0])

    def close(self) -> None:
        """Drop the client (Chroma has no explicit close in every version)."""
        self._collection = None
        self._client = None


class LanceDBPeer:
    """A LanceDB table in a directory; exact (flat) cosine search."""

    def __init__(self, directory: Path) -> None:
        """Open a new LanceDB database in ``directory``."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import lancedb
        self.name = f"lancedb {_version('lancedb')}"
        self._db: Any = lancedb.connect(str(directory))
        self._table: Any = None

    def add(self, ids: Sequence[str], texts: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        """Append rows (the table is created on the first call)."""
        rows = [{"id": i, "text": t, "vector": v.tolist()} for i, t, v in zip(ids, texts, vectors, strict=True)]
        if self._table is None:
            self._table = self._db.create_table("bench", data=rows)
        else:
            self._table.add(rows)

    def query(self, vector: npt.NDArray[np.float32], k: int) -> list[str]:
        """Nearest ids by cosine distance."""
        if self._table is None:
            return []
        found = self._table.search(np.asarray(vector, dtype=np.float32).tolist()).metric("cosine").limit(k).to_list()
        return [str(row["id"]) for row in found]

    def close(self) -> None:
        """Drop the handles."""
        self._table = None
        self._db = None


def open_peer(name: str, directory: Path, model: Embedder | None = None) -> PeerStore:
    """Open peer ``name`` ('chroma', 'lancedb' or 'mem0') in an empty ``directory``.

    ``model`` is the embedder mem0 calls for texts it gets no vector for.
    Raises ConfigError when the name is unknown or its package is missing.
    """
    if name not in PEERS:
        raise ConfigError(f"unknown peer {name!r}; use one of {', '.join(sorted(PEERS))} or 'none'")
    if not peer_available(name):
        package = PEERS[name]
        if name == "mem0":
            raise ConfigError("peer 'mem0' needs mem0ai: pip install 'llm-agent-memory[bench-peers]'")
        raise ConfigError(
            f"peer {name!r} needs the {package!r} package: pip install {package} (or 'llm-agent-memory[bench]')"
        )
    directory.mkdir(parents=True, exist_ok=True)
    if name == "mem0":
        from memory.bench.peer_mem0 import Mem0Peer

        if model is None:
            raise ConfigError("peer 'mem0' needs the embedder of the run")
        return Mem0Peer(directory, model)
    if name == "chroma":
        return ChromaPeer(directory)
    return LanceDBPeer(directory)
