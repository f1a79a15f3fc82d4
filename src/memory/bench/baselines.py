"""Plain retrieval baselines computed in the benchmark run itself (pure functions).

* **BM25** — the project's own Okapi BM25 (k1 = 1.2, b = 0.75; Lucene's idf
  ``ln(1 + (N - df + 0.5) / (df + 0.5))``) over lowercased words
  (:func:`memory.retrieval.text.words`) minus English stopwords
  (:data:`memory.retrieval.text.STOPWORDS`), with the query's terms from
  :func:`memory.retrieval.text.query_terms`. No stemming. Not bm25s: the same
  tokenisation as the library's lexical channel, without its extra fields.
* **dense** (MiniLM by default) — cosine between the query vector and each document's vector
  (the same vectors the store holds: long texts as the mean of their chunks).
* **RRF(k=60)** — reciprocal rank fusion of the two, ``Σ 1 / (60 + rank)``.

Each returns document indices best first (ties by index).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from memory.retrieval.text import STOPWORDS, query_terms, words

__all__ = ["BM25", "bm25_ranking", "cosine_ranking", "rrf_ranking", "baseline_rankings"]


class BM25:
    """An Okapi BM25 index over a fixed list of documents."""

    def __init__(self, documents: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> None:
        """Index ``documents`` (tokenised as the module docs say)."""
        self.k1, self.b = k1, b
        self.counts = [Counter(w for w in words(d) if w not in STOPWORDS) for d in documents]
        self.lengths = [sum(c.values()) for c in self.counts]
        self.average = (sum(self.lengths) / len(self.lengths)) if self.lengths else 0.0
        df: Counter[str] = Counter()
        for counts in self.counts:
            df.update(counts.keys())
        n = len(documents)
        self.idf = {term: math.log(1.0 + (n - f + 0.5) / (f + 0.5)) for term, f in df.items()}

    def scores(self, query: str) -> list[float]:
        """BM25 score of every document for ``query``."""
        terms = query_terms(query)
        out = []
        for counts, length in zip(self.counts, self.lengths, strict=True):
            norm = self.k1 * (1.0 - self.b + self.b * length / (self.average or 1.0))
            total = 0.0
            for term in terms:
                tf = counts.get(term, 0)
                if tf:
                    total += self.idf[term] * tf * (self.k1 + 1.0) / (tf + norm)
            out.append(total)
        return out


def bm25_ranking(index: BM25, query: str) -> list[int]:
    """Documents with a positive BM25 score, best first."""
    scores = index.scores(query)
    return sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: (-scores[i], i))


def cosine_ranking(vectors: npt.NDArray[np.float32], query: npt.NDArray[np.float32]) -> list[int]:
    """All documents by cosine to ``query`` (rows are unit vectors), best first."""
    scores = vectors @ query
    return sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))


def rrf_ranking(rankings: Sequence[Sequence[int]], k: float = 60.0) -> list[int]:
    """Reciprocal rank fusion of ``rankings`` with constant ``k``."""
    total: dict[int, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking, 1):
            total[doc] = total.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(total, key=lambda d: (-total[d], d))


def baseline_rankings(
    documents: Sequence[str], vectors: npt.NDArray[np.float32], query: str, query_vector: npt.NDArray[np.float32]
) -> dict[str, list[int]]:
    """``{"BM25": …, "dense": …, "RRF(k=60)": …}`` document indices best first."""
    lexical = bm25_ranking(BM25(documents), query)
    dense = cosine_ranking(vectors, query_vector)
    return {"BM25": lexical, "dense": dense, "RRF(k=60)": rrf_ranking([lexical, dense])}
