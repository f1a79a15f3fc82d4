"""Ranking MTM pages for a query: each turn of a page indexed as flat recall indexes a memory (pure).

A page holds one exchange (query and response). Ranked as one text, a
two-turn page blurs the turn that answers a question with the one beside it
(LoCoMo dev, MiniLM: R@10 0.62–0.64 even over every page). So each turn of a
page is ranked on its own, with the keys flat recall gives a memory
(:mod:`memory.retrieval.window`), and a page scores as the sum of its turns' fused scores:

* **vector** — cosine of the query with the turn's *window vector*: its own
  vector (``DialoguePage.turn_vectors``, the page vector for older pages)
  blended with the ``WINDOW`` turns on each side in its thread, weighted by
  :func:`~memory.retrieval.window.context_share`;
* **lexical** — BM25 per field with the weights of flat recall's default
  (:data:`memory.retrieval.config.DEFAULT_FIELDS`): the turn's words, its
  window (the neighbours' words when the turn is short, and the dates of the
  events it mentions, :func:`~memory.retrieval.window.event_time_words`) and
  the time words of the page (``"8 May 2023"``); words are Porter-stemmed
  (:mod:`memory.tiers.porter`) as the FTS5/PostgreSQL indexes stem them;
* **segment** — the Fscore of the page's MTM segment with the query (the
  MemoryOS segment stage, as a prior every page of the segment shares,
  instead of a gate that drops every page of the other segments), weighted
  by ``TierConfig.segment_prior`` — 0 by default: on LoCoMo dev it lowered
  R@10 at every weight tried (0.5: 0.683/0.637 on conv-26/conv-30, 0.2:
  0.728/0.690, 0: 0.731/0.703, pages by their best turn).

The channels are fused by flat recall's weighted reciprocal rank fusion
(:func:`memory.retrieval.fusion.fuse`, its ``rrf_k`` and ``candidates``).
Neighbours more sensitive than a turn are left out of its window, as in flat
recall. Per-page derived data (token counts) can be kept between queries in a
caller's dict keyed by page id.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from memory.backends.base import ChannelHit
from memory.retrieval.config import DEFAULT_FIELDS, RetrievalConfig
from memory.retrieval.fusion import fuse
from memory.retrieval.text import query_terms, words
from memory.retrieval.window import WINDOW, context_share, event_time_words, time_words, window_vector
from memory.tiers.porter import stem
from memory.tiers.types import DialoguePage
from memory.types import SENSITIVITY_LEVELS

__all__ = ["PageTurns", "rank_pages_by_turns", "turns_of", "SEGMENT_WEIGHT"]

#: Default weight of the segment channel beside vector and lexical (1.0 each); see the module notes.
SEGMENT_WEIGHT = 0.0
_K1, _B = 1.2, 0.75


@dataclass(frozen=True, slots=True)
class PageTurns:
    """What a page contributes to the index, computed once per page: its turns' texts, vectors and tokens."""

    texts: tuple[str, ...]
    vectors: tuple[tuple[float, ...], ...]
    tokens: tuple[Counter[str], ...]
    lengths: tuple[int, ...]
    time_tokens: Counter[str]
    event_tokens: tuple[Counter[str], ...]
    shares: tuple[float, ...]


def _stemmed(text: str) -> list[str]:
    return [stem(w) for w in words(text)]


def turns_of(page: DialoguePage) -> PageTurns:
    """The turns of ``page`` (query, response; empty ones left out) with what ranking needs of them."""
    texts = tuple(t for t in (page.query, page.response) if t.strip())
    own = page.turn_vectors if len(page.turn_vectors) == len(texts) else tuple(page.vector for _ in texts)
    tokens = tuple(Counter(_stemmed(t)) for t in texts)
    return PageTurns(
        texts=texts,
        vectors=tuple(own),
        tokens=tokens,
        lengths=tuple(sum(c.values()) for c in tokens),
        time_tokens=Counter(_stemmed(time_words(page.created_at))),
        event_tokens=tuple(Counter(_stemmed(event_time_words(t, page.created_at))) for t in texts),
        shares=tuple(context_share(t) for t in texts),
    )


def _bm25(terms: set[str], docs: Sequence[Counter[str]], lengths: Sequence[int]) -> npt.NDArray[np.float64]:
    out = np.zeros(len(docs))
    if not docs or not terms:
        return out
    avg = (sum(lengths) / len(docs)) or 1.0
    df = Counter(t for d in docs for t in terms if t in d)
    n = len(docs)
    idf = {t: math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in df}
    for i, (doc, length) in enumerate(zip(docs, lengths, strict=True)):
        score = 0.0
        for term in idf:
            f = doc.get(term, 0)
            if f:
                score += idf[term] * f * (_K1 + 1) / (f + _K1 * (1 - _B + _B * length / avg))
        out[i] = score
    return out


def _hits(scores: npt.NDArray[np.float64], limit: int, positive: bool) -> list[ChannelHit]:
    order = np.argsort(-scores, kind="stable")[:limit]
    return [ChannelHit(id=str(int(i)), score=float(scores[i])) for i in order if not positive or scores[i] > 0]


def rank_pages_by_turns(
    query: str,
    query_vector: Sequence[float],
    pages: Sequence[DialoguePage],
    segment_scores: Sequence[float],
    *,
    ranked: Sequence[bool] | None = None,
    cache: MutableMapping[str, PageTurns] | None = None,
    config: RetrievalConfig | None = None,
    segment_weight: float = SEGMENT_WEIGHT,
) -> list[tuple[int, float]]:
    """(index into ``pages``, score) of the pages to return, best first; the score is the sum of the fused
    scores of the page's turns (each 0..1, 1 = first in every channel), so a page scores 0..2.

    ``pages`` is the pool in any order (windows follow each thread in time
    order); ``segment_scores`` the Fscore of each page's segment with the
    query; ``ranked`` marks the pages that may be returned (others — STM
    pages, say — only lend their words to their neighbours' windows).
    """
    config = config or RetrievalConfig()
    if not pages:
        return []
    data = []
    for page in pages:
        found = cache.get(page.id) if cache is not None else None
        if found is None:
            found = turns_of(page)
            if cache is not None:
                cache[page.id] = found
        data.append(found)
    order = sorted(range(len(pages)), key=lambda i: (pages[i].thread or "", pages[i].created_at, pages[i].id))
    # one row per turn, in thread order
    rows: list[tuple[int, int]] = [(p, t) for p in order for t in range(len(data[p].texts))]
    dim = len(query_vector)
    q = np.asarray(query_vector, dtype=np.float32)
    vectors = np.zeros((len(rows), dim), dtype=np.float32)
    has_vector = np.zeros(len(rows), dtype=bool)
    for r, (p, t) in enumerate(rows):
        v = data[p].vectors[t]
        if dim and len(v) == dim:
            vectors[r] = v
            has_vector[r] = True
    content, windows, times, lengths, window_lengths, time_lengths = [], [], [], [], [], []
    vector_scores = np.full(len(rows), -2.0)
    for r, (p, t) in enumerate(rows):
        level = SENSITIVITY_LEVELS[pages[p].sensitivity]
        near = [
            s for s in range(max(r - WINDOW, 0), min(r + WINDOW + 1, len(rows)))
            if s != r and (pages[rows[s][0]].thread or "") == (pages[p].thread or "")
            and SENSITIVITY_LEVELS[pages[rows[s][0]].sensitivity] <= level
        ]  # fmt: skip
        share = data[p].shares[t]
        window = Counter(data[p].event_tokens[t])
        if share >= 0.5:
            for s in near:
                window.update(data[rows[s][0]].tokens[rows[s][1]])
        content.append(data[p].tokens[t])
        lengths.append(data[p].lengths[t])
        windows.append(window)
        window_lengths.append(sum(window.values()))
        times.append(data[p].time_tokens)
        time_lengths.append(sum(data[p].time_tokens.values()))
        if has_vector[r]:
            blended = window_vector(vectors[r], [vectors[s] for s in near if has_vector[s]], share)
            vector_scores[r] = float(blended @ q) / (float(np.linalg.norm(q)) or 1.0)
    terms = {stem(w) for w in query_terms(query)}
    fields = {**DEFAULT_FIELDS}
    lexical = (
        fields.get("content", 0.0) * _bm25(terms, content, lengths)
        + fields.get("window", 0.0) * _bm25(terms, windows, window_lengths)
        + fields.get("time", 0.0) * _bm25(terms, times, time_lengths)
    )
    allowed = [True] * len(pages) if ranked is None else list(ranked)
    eligible = np.array([allowed[p] for p, _ in rows], dtype=bool)
    segment = np.array([float(segment_scores[p]) for p, _ in rows])
    never = -np.inf
    channels = {
        "vector": _hits(np.where(eligible & has_vector, vector_scores, never), config.candidates, False),
        "lexical": _hits(np.where(eligible, lexical, 0.0), config.candidates, True),
        "segment": _hits(np.where(eligible, segment, never), config.candidates, False),
    }
    channels = {k: [h for h in v if math.isfinite(h.score)] for k, v in channels.items()}
    weights = {"vector": 1.0, "lexical": 1.0, "segment": segment_weight}
    totals: dict[int, float] = {}
    for candidate in fuse({k: v for k, v in channels.items() if weights[k] > 0}, weights, config.rrf_k):
        owner = rows[int(candidate.id)][0]
        totals[owner] = totals.get(owner, 0.0) + candidate.fusion
    # fused candidates come best first, so equal totals keep the order of the pages' best turns
    return sorted(totals.items(), key=lambda kv: -kv[1])
