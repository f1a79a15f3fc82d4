"""Rerankers: score (query, document) pairs after fusion; the ``http`` provider speaks the common ``/rerank`` API.

A reranker is optional. When one is configured (``[reranker]`` in the config,
``MEMORY_RERANKER``, or ``Memory(reranker=...)``), recall hands it the fused
top-N candidates and orders them by its scores (:mod:`memory.retrieval.rerank`).
Third-party packages add rerankers through the entry-point group
``memory.rerankers``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from memory import registry

__all__ = ["Reranker", "create_reranker"]


@runtime_checkable
class Reranker(Protocol):
    """Scores how relevant each document is to a query (higher is more relevant).

    ``model_name`` names the model (shown in hits' score parts and logs);
    ``rerank`` returns one finite score per document, in the documents' order.
    """

    model_name: str

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """Score ``documents`` against ``query``; one float per document, input order."""
        ...


def create_reranker(provider: str, options: dict[str, object] | None = None) -> Reranker:
    """Instantiate a reranker by provider name (built-in ``http``, registered, entry point or dotted path).

    Raises ConfigError for an unknown provider or bad options.
    """
    reranker: Reranker = registry.create("reranker", provider, dict(options or {}), protocol=Reranker)
    return reranker
