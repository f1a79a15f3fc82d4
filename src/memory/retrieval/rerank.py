"""The optional rerank stage: a :class:`~memory.rerankers.Reranker` reorders the fused top-N.

It runs after fusion and scoring, on candidates that already passed every
filter (scope, clearance, validity), so the reranker never sees what the
caller may not. The top ``top_n`` candidates are scored by the reranker and
ordered by ``weight · rerank + (1 - weight) · final`` (``weight`` 1 = the
reranker's order alone); their ``ScoreParts.rerank`` holds the reranker's
score and ``final`` the blend. Candidates below the top N keep their order
after them. A failing reranker logs a warning and leaves the fused order, as a
failing embedder leaves the lexical channel: recall still answers.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import TypeVar

from memory.config import RerankSettings
from memory.errors import ProviderError
from memory.rerankers import Reranker, create_reranker
from memory.types import MemoryItem, ScoreParts

__all__ = ["rerank_ranked", "reranker_scores", "RerankStage"]

log = logging.getLogger(__name__)

C = TypeVar("C")


def rerank_ranked(
    reranker: Reranker | None,
    query: str,
    ranked: Sequence[tuple[C, MemoryItem, ScoreParts]],
    *,
    top_n: int,
    weight: float = 1.0,
) -> list[tuple[C, MemoryItem, ScoreParts]]:
    """Reorder the first ``top_n`` of ``ranked`` by the reranker's scores; the rest follow unchanged.

    Returns ``ranked`` as a list, untouched, when there is no reranker, fewer
    than two candidates, or the reranker fails (logged).
    """
    ranked = list(ranked)
    if reranker is None or len(ranked) < 2 or top_n < 2:
        return ranked
    head, tail = ranked[:top_n], ranked[top_n:]
    scores = reranker_scores(reranker, query, [item.content for _, item, _ in head])
    if scores is None:
        return ranked
    rescored = []
    for position, ((candidate, item, parts), score) in enumerate(zip(head, scores, strict=True)):
        final = weight * score + (1.0 - weight) * parts.final
        updated = parts.model_copy(update={"rerank": score, "final": final})
        rescored.append((position, (candidate, item, updated)))
    rescored.sort(key=lambda entry: (-round(entry[1][2].final, 12), entry[0]))
    return [entry for _, entry in rescored] + tail


def reranker_scores(reranker: Reranker, query: str, documents: Sequence[str]) -> list[float] | None:
    """The reranker's score of each document, or None when it fails or answers badly (logged: recall goes on)."""
    try:
        scores = reranker.rerank(query, documents)
    except ProviderError as exc:
        log.warning("rerank skipped, reranker failed: %s", exc)
        return None
    except Exception as exc:  # noqa: BLE001 - a third-party reranker's bug must not fail recall
        log.warning("rerank skipped, reranker %r raised %s: %s", reranker, type(exc).__name__, exc)
        return None
    if len(scores) != len(documents) or not all(
        isinstance(s, int | float) and not isinstance(s, bool) and math.isfinite(s) for s in scores
    ):
        log.warning(
            "rerank skipped, reranker %r returned %d scores for %d documents", reranker, len(scores), len(documents)
        )
        return None
    return [float(s) for s in scores]


class RerankStage:
    """The configured reranker with its ``top_n`` and ``weight``; a no-op when there is none."""

    def __init__(self, reranker: Reranker | None, *, top_n: int = 20, weight: float = 1.0, owned: bool = False) -> None:
        """Hold ``reranker`` (None: recall keeps the fused order); ``owned``: :meth:`close` closes it."""
        self.reranker = reranker
        self.top_n = top_n
        self.weight = weight
        self._owned = owned

    def window(self, limit: int) -> int:
        """How many ranked candidates recall decodes for ``limit`` hits: ``top_n`` more only with a reranker."""
        return max(limit, self.top_n) if self.reranker is not None else limit

    @classmethod
    def open(cls, settings: RerankSettings | None, given: Reranker | None = None) -> RerankStage:
        """The stage for a Memory: ``given`` if any, else the configured provider, else none.

        Raises ConfigError for an unknown provider or bad options.
        """
        top_n = settings.top_n if settings is not None else 20
        weight = settings.weight if settings is not None else 1.0
        if given is not None:
            return cls(given, top_n=top_n, weight=weight)
        if settings is None:
            return cls(None)
        return cls(create_reranker(settings.provider, settings.options), top_n=top_n, weight=weight, owned=True)

    def apply(
        self, query: str, ranked: Sequence[tuple[C, MemoryItem, ScoreParts]]
    ) -> list[tuple[C, MemoryItem, ScoreParts]]:
        """:func:`rerank_ranked` with this stage's reranker, ``top_n`` and ``weight``."""
        return rerank_ranked(self.reranker, query, ranked, top_n=self.top_n, weight=self.weight)

    def blended(self, query: str, texts: Sequence[str], scores: Sequence[float]) -> list[float] | None:
        """``weight · rerank + (1 - weight) · score`` of each of the first ``top_n`` texts (best first), or None.

        None without a reranker, with fewer than two texts, or when the
        reranker fails (logged): the caller keeps its own order. Message search
        ranks its hits with this, as recall does with :meth:`apply`.
        """
        if self.reranker is None or len(texts) < 2 or self.top_n < 2:
            return None
        head = list(texts[: self.top_n])
        found = reranker_scores(self.reranker, query, head)
        if found is None:
            return None
        return [self.weight * r + (1.0 - self.weight) * float(s) for r, s in zip(found, scores, strict=False)]

    def close(self) -> None:
        """Close the reranker if this stage created it. Idempotent."""
        closer = getattr(self.reranker, "close", None) if self._owned else None
        if callable(closer):
            closer()
