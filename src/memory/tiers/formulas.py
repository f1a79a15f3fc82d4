"""Pure MemoryOS formulas: cosine, Jaccard, Fscore, recency and heat (no I/O, no state).

* ``Fscore = cos(e_segment, e_page) + Jaccard(K_segment, K_page)`` — in [−1, 2];
* ``R_recency = exp(−Δt / μ)`` with Δt in seconds (a future ``last_accessed`` counts as Δt = 0);
* ``Heat = α·N_visit + β·L_interaction + γ·R_recency``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import datetime

__all__ = ["cosine", "jaccard", "fscore", "recency", "heat", "mean_vector"]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors; 0.0 when either is empty or all zeros.

    Raises ValueError on a length mismatch.
    """
    if len(a) != len(b):
        raise ValueError(f"vectors of different lengths ({len(a)} and {len(b)})")
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return dot / (na * nb)


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """|A ∩ B| / |A ∪ B| of two keyword sets; 0.0 when both are empty."""
    left, right = set(a), set(b)
    union = left | right
    return len(left & right) / len(union) if union else 0.0


def fscore(
    segment_vector: Sequence[float],
    segment_keywords: Iterable[str],
    page_vector: Sequence[float],
    page_keywords: Iterable[str],
) -> float:
    """MemoryOS Fscore of a page (or query) against a segment: cosine of the embeddings plus keyword Jaccard."""
    return cosine(segment_vector, page_vector) + jaccard(segment_keywords, page_keywords)


def recency(last_accessed: datetime, now: datetime, mu: float) -> float:
    """``exp(−Δt/μ)`` with Δt = now − last_accessed in seconds (clamped at 0). Raises ValueError if μ ≤ 0."""
    if mu <= 0:
        raise ValueError(f"mu must be positive, got {mu}")
    delta = max(0.0, (now - last_accessed).total_seconds())
    return math.exp(-delta / mu)


def heat(visits: int, interactions: int, recency_factor: float, *, alpha: float, beta: float, gamma: float) -> float:
    """``α·N_visit + β·L_interaction + γ·R_recency``."""
    return alpha * visits + beta * interactions + gamma * recency_factor


def mean_vector(vectors: Sequence[Sequence[float]]) -> list[float]:
    """The unit-length mean of ``vectors`` (the segment embedding); [] for no vectors, zeros stay zeros."""
    if not vectors:
        return []
    dim = len(vectors[0])
    if any(len(v) != dim for v in vectors):
        raise ValueError("vectors of different lengths")
    total = [sum(v[i] for v in vectors) / len(vectors) for i in range(dim)]
    norm = math.sqrt(sum(x * x for x in total))
    return [x / norm for x in total] if norm else total
