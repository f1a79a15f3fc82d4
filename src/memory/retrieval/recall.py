"""Recall orchestration: from a query and a scope to scored hits (what ``Memory.recall`` runs).

The channels (lexical BM25 and its pseudo-relevance feedback, vector KNN over
own and window vectors, the context-window channel, the graph channel) are
searched, fused by weighted RRF (:mod:`memory.retrieval.fusion`) and ranked
with recency and importance. The lexical channel runs on a second connection
beside the vector channel when the backend allows concurrent reads.
"""

from __future__ import annotations

import builtins
import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import Any, Protocol

from memory.backends.base import Backend, ChannelHit, RankFields, Vector
from memory.backends.graph import GraphStore
from memory.embedders.base import Embedder, embed_query
from memory.errors import InvalidInputError, ProviderError
from memory.filters import Filter
from memory.records import check_limit, check_query
from memory.retrieval.config import RetrievalConfig
from memory.retrieval.contextual import contextual_query
from memory.retrieval.fusion import FusedCandidate, bounded_ask, decided_hits, decisive_depth, fuse, rank
from memory.retrieval.quantity import asks_for_amount, quantity_factors
from memory.retrieval.rerank import RerankStage
from memory.retrieval.speaker import named_by_others, turn_factors
from memory.retrieval.text import feedback_applies, feedback_terms, query_terms
from memory.retrieval.window import window_model
from memory.types import Hit, ScoreParts

__all__ = ["Recall", "RecallContext"]

log = logging.getLogger(__name__)

#: Worker threads for the lexical channels of concurrent recalls (a backend with concurrent reads).
CHANNEL_WORKERS = 4
#: A namespace whose lexical channels took less CPU than this (seconds, a moving average) runs them on the
#: recalling thread: work that small is mostly Python on both sides, which the GIL does not overlap, so
#: handing it to a worker and waiting costs more than it saves (a 30-memory namespace: 2.4 -> 1.9 ms a
#: recall). Larger namespaces' channels (a LoCoMo conversation's ~5.5 ms, 100k memories' ~17 ms) still run
#: beside the query's embedding and vector search.
LEXICAL_INLINE_CPU = 0.002
#: A namespace's first channels cost more, cold (2.6 ms in a 30-memory one, then ~0.3; more on a process's
#: first recall): the second cost replaces the first, and later ones are averaged (each halves the gap).
#: Namespaces whose lexical cost is remembered; past it the longest-known is forgotten.
LEXICAL_COSTS_KEPT = 4096
#: After a lone channel's first hits held chat turns whose speakers scale scores, or window and own vectors
#: merged from searches cut short (so all candidates were asked for after all), recalls in that namespace ask
#: for all at once this many times before trying the bound again: a store of conversation turns does not pay
#: two searches a recall.
BOUND_RETRY = 32


class RecallContext(Protocol):
    """What recall needs of a store (``memory.services.Core`` provides it)."""

    @property
    def backend(self) -> Backend:
        """The storage backend."""

    @property
    def embedder(self) -> Embedder:
        """The embedder of the store's vector space."""

    def ensure_space(self, *, strict: bool) -> bool:
        """Register/check the embedder's vector space; False if its dimension is unknown yet."""

    def filter(self, *args: Any, **kwargs: Any) -> Filter:
        """A validated filter with the store's defaults and clock."""

    def retrieval_config(self, retrieval: RetrievalConfig | str | None) -> RetrievalConfig:
        """The given config, a preset by name, or the store's default."""

    def keys_on(self) -> bool:
        """Whether the backend indexes the key fields."""

    def windows_on(self) -> bool:
        """Whether the store keeps context windows."""


class Recall:
    """Hybrid recall over one store (``Memory.recall`` delegates here)."""

    def __init__(self, core: RecallContext, *, rerank: RerankStage | None = None) -> None:
        """Bind to the store's backend, embedder, settings and clock; ``rerank`` reorders the fused top-N."""
        self._core = core
        self._rerank = rerank
        self._backend = core.backend
        self._embedder = core.embedder
        self._channel_pool: ThreadPoolExecutor | None = None
        self._channel_pool_lock = threading.Lock()
        #: Namespace -> recalls left that skip the decisive depth (see BOUND_RETRY).
        self._unbounded: dict[str, int] = {}
        #: Namespace -> CPU seconds its lexical channels took (a moving average; see LEXICAL_INLINE_CPU), and
        #: whether that is past the first, cold cost.
        self._lexical_cpu: dict[str, tuple[float, bool]] = {}
        self._lexical_cpu_lock = threading.Lock()

    def close(self) -> None:
        """Stop the lexical channel's worker thread and close the rerank stage (idempotent)."""
        with self._channel_pool_lock:
            pool, self._channel_pool = self._channel_pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        if self._rerank is not None:
            self._rerank.close()

    def recall(
        self,
        query: str,
        *,
        limit: int = 10,
        namespace: str | None = None,
        user: str | None = None,
        agent: str | None = None,
        thread: str | None = None,
        kinds: Iterable[str] | str | None = None,
        tags: Iterable[str] | None = None,
        tags_all: Iterable[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        clearance: str = "private",
        include_invalid: bool = False,
        retrieval: RetrievalConfig | str | None = None,
        recent: Sequence[str] | None = None,
    ) -> builtins.list[Hit]:
        """The memories most relevant to ``query``, best first, with score parts (see ``Memory.recall``).

        ``recent`` (the conversation's last turns, oldest first, ``"Speaker: text"``) resolves a
        query that points back to them (see :func:`memory.retrieval.contextual.contextual_query`).
        """
        text = check_query(query)
        if recent is not None:
            if isinstance(recent, str) or not all(isinstance(t, str) for t in recent):
                raise InvalidInputError("recent must be a list of strings (the conversation's last turns)")
            text = contextual_query(text, recent)
        limit = check_limit(limit)
        config = self._core.retrieval_config(retrieval)
        flt = self._core.filter(
            namespace, user=user, agent=agent, thread=thread, kinds=kinds, tags=tags,
            tags_all=tags_all, metadata=metadata, since=since, until=until, clearance=clearance,
            include_invalid=include_invalid,
        )  # fmt: skip
        k = max(config.candidates, limit)
        size = self._rerank.window(limit) if self._rerank is not None else limit
        amounts = config.quantity_penalty > 0 and asks_for_amount(query)  # reads every candidate's text
        depth = None if amounts else decisive_depth(config, size)
        head = None
        if depth is not None and depth < k and self._bound_due(flt.namespace):
            head = self._head(query, text, flt, config, size, k=k, depth=depth)  # one channel: its first hits decide
        if head is None:
            head = self._head(query, text, flt, config, size, k=k, amounts=amounts)
            assert head is not None  # only a search bounded by depth declines
        items = {i.id: i for i in self._backend.get(flt.namespace, [c.id for c, _, _ in head])}
        ranked = [(c, items[c.id], parts) for c, _, parts in head if c.id in items]
        if self._rerank is not None:
            ranked = self._rerank.apply(text, ranked)
        ranked = ranked[:limit]
        hits = [
            Hit(item=item, score=parts.final, channels=candidate.channels, parts=parts)
            for candidate, item, parts in ranked
        ]
        if hits:
            self._backend.record_access(flt.namespace, [h.id for h in hits], flt.now)
        return hits

    def _bound_due(self, namespace: str) -> bool:
        """Whether to ask a lone channel for its decisive hits first in ``namespace`` (see :data:`BOUND_RETRY`)."""
        left = self._unbounded.get(namespace, 0)
        if left <= 0:
            return True
        if left == 1:
            self._unbounded.pop(namespace, None)  # the map holds only namespaces skipping it now
        else:
            self._unbounded[namespace] = left - 1
        return False

    def _head(
        self,
        query: str,
        text: str,
        flt: Filter,
        config: RetrievalConfig,
        size: int,
        *,
        k: int = 0,
        depth: int | None = None,
        amounts: bool = False,
    ) -> builtins.list[tuple[FusedCandidate, RankFields, ScoreParts]] | None:
        """The best ``size`` candidates with their score parts, from ``k`` hits per channel.

        With ``depth`` (:func:`decisive_depth`) the lone channel is asked for
        :func:`bounded_ask` hits (at most ``k``) and ranked on the first
        ``depth`` and those tied with the last of them (:func:`decided_hits`);
        None is returned when the bound does not hold for what it found: the
        vector channel's merge of window and own vectors is not surely its best
        hits, a run of equal scores across the cut reaches the last hit fetched
        (ties share a rank, so hits beyond could rank as high), or
        a speaker factor scales some hit, or could once more hits join them
        (the bound assumes none; the namespace then skips the bound for a
        while, :data:`BOUND_RETRY`). ``amounts``: the query asks for a number
        (quantity factors read every candidate's text).
        """
        asked = k if depth is None else bounded_ask(depth, k)
        results, whole = self._channel_hits(text, flt, config, asked)
        if depth is not None:
            hits = next(iter(results.values()), [])
            if not whole:  # window and own vectors merged from searches that were cut short
                self._unbounded[flt.namespace] = BOUND_RETRY
                return None
            decided = decided_hits([hit.score for hit in hits], depth, asked)
            if len(results) > 1 or decided is None:
                return None
            results = {name: found[:decided] for name, found in results.items()}
        store = self._backend.graph
        fused = fuse(results, config.weights, config.rrf_k)
        if config.graph_hop and "graph" in results and store is not None:
            fused = self._second_hop(store, flt, config, results, fused, k)
        # Rank on the fields ranking reads (created_at, importance, the chat side that said it);
        # decode whole items only for the hits returned (and the reranker's window).
        fields = self._rank_fields(flt.namespace, results, fused)
        turns = {item_id: (f.role, f.speaker) for item_id, f in fields.items()}
        speakers = turn_factors(query, turns, config.speaker_penalty, config.named_speaker_penalty)
        if depth is not None and (speakers or named_by_others(query, turns, config.named_speaker_penalty)):
            self._unbounded[flt.namespace] = BOUND_RETRY
            return None
        quantities: dict[str, float] = {}
        if amounts:
            texts = self._backend.contents(flt.namespace, list(fields))
            quantities = quantity_factors(query, texts, config.quantity_penalty)
        return rank(fused, fields, flt.now, config, speakers, quantities, limit=size)

    def _rank_fields(
        self, namespace: str, results: dict[str, builtins.list[ChannelHit]], fused: builtins.list[FusedCandidate]
    ) -> dict[str, RankFields]:
        """Ranking's fields of every fused candidate: those a channel read with its hits, the rest from the store."""
        known = {hit.id: hit.fields for hits in results.values() for hit in hits if hit.fields is not None}
        missing = [c.id for c in fused if c.id not in known]
        if missing:
            known.update(self._backend.rank_fields(namespace, missing))
        return known

    def _channel_hits(
        self, text: str, flt: Filter, config: RetrievalConfig, k: int
    ) -> tuple[dict[str, builtins.list[ChannelHit]], bool]:
        """Every configured channel's candidates for ``text`` (read-only), and whether the vector channel's are
        its best ``k`` for sure (see :meth:`_search_vectors`; True without it)."""
        results: dict[str, builtins.list[ChannelHit]] = {}
        lexical: Future[dict[str, builtins.list[ChannelHit]]] | None = None
        if "lexical" in config.channels:
            terms = query_terms(text)
            if (
                "vector" in config.channels
                and self._backend.concurrent_reads
                and self._lexical_is_costly(flt.namespace)
            ):
                # The lexical channel runs on another connection while this thread embeds the query
                # and searches vectors: the two cost their maximum instead of their sum.
                lexical = self._channels().submit(self._lexical_channels, flt, terms, k, config)
            else:
                results.update(self._lexical_channels(flt, terms, k, config))
        vector: Vector | None = None
        vector_hits: builtins.list[ChannelHit] | None = None
        whole = True
        context_hits: builtins.list[ChannelHit] | None = None
        try:
            if "vector" in config.channels or "context" in config.channels:
                try:
                    if self._core.ensure_space(strict=True):
                        vector = embed_query(self._embedder, text)
                        if "vector" in config.channels:
                            vector_hits, whole = self._search_vectors(flt, config, vector, k)
                        context_hits = self._search_context(flt, config, vector, k)
                except ProviderError as exc:
                    log.warning("vector channel skipped, embedder failed: %s", exc)
        finally:
            if lexical is not None:  # wait for it even when the vector channel failed
                results.update(lexical.result())
        if vector_hits is not None and "vector" in config.channels:
            results["vector"] = vector_hits
        if context_hits:
            results["context"] = context_hits
        store = self._backend.graph
        if "graph" in config.channels and config.weights.get("graph", 1.0) > 0 and store is not None:
            from memory.retrieval.graph import graph_channel

            query_vector = vector if "vector" in results else None
            graph_hits = graph_channel(
                self._backend, store, flt, text, query_terms(text), k,
                model=self._embedder.model_name if query_vector is not None else None, vector=query_vector,
                entity_vectors=config.graph_entity_vectors,
            )  # fmt: skip
            if graph_hits:  # an empty graph (no extraction yet) leaves the other channels' scale as it is
                results["graph"] = graph_hits
        return results, whole

    def warm(self, namespace: str | None = None) -> None:
        """Do recall's first-use work in ``namespace`` now: read-only, nothing recorded, nothing returned.

        Runs every channel of the default preset once for a fixed query, so the
        lexical channel's worker thread and connection, the embedder's first
        call and the vector copies are ready before a user's first search.
        """
        config = self._core.retrieval_config(None)
        flt = self._core.filter(namespace, clearance="private")
        self._channel_hits("warm up", flt, config, config.candidates)

    def _second_hop(
        self,
        store: GraphStore,
        flt: Filter,
        config: RetrievalConfig,
        results: dict[str, builtins.list[ChannelHit]],
        fused: builtins.list[FusedCandidate],
        k: int,
    ) -> builtins.list[FusedCandidate]:
        """Seed 003 data flow 1: the top fused hits' entities seed a ``hop`` channel; fused again with it."""
        from memory.retrieval.graph import graph_hop

        top = [c.id for c in fused[: config.graph_hop]]
        hop = graph_hop(self._backend, store, flt, top, k)
        if not hop:
            return fused
        results["hop"] = hop
        weights = {**config.weights, "hop": config.weights.get("graph", 1.0) * 0.5}
        return fuse(results, weights, config.rrf_k)

    def _channels(self) -> ThreadPoolExecutor:
        """The worker threads that run the lexical channel beside the vector channel (created on first use).

        Concurrent recalls (a server's requests) each get one, up to
        :data:`CHANNEL_WORKERS`: with a single worker they queued behind each
        other's lexical search.
        """
        with self._channel_pool_lock:
            if self._channel_pool is None:
                self._channel_pool = ThreadPoolExecutor(max_workers=CHANNEL_WORKERS, thread_name_prefix="memory-recall")
            return self._channel_pool

    def _lexical_is_costly(self, namespace: str) -> bool:
        """Whether ``namespace``'s lexical channels are worth a worker thread (not known yet: they are)."""
        known = self._lexical_cpu.get(namespace)
        return known is None or known[0] >= LEXICAL_INLINE_CPU

    def _note_lexical_cpu(self, namespace: str, seconds: float) -> None:
        with self._lexical_cpu_lock:
            known = self._lexical_cpu.get(namespace)
            if known is None:
                if len(self._lexical_cpu) >= LEXICAL_COSTS_KEPT:
                    del self._lexical_cpu[next(iter(self._lexical_cpu))]
                self._lexical_cpu[namespace] = (seconds, False)
            else:
                cost, warm = known
                self._lexical_cpu[namespace] = ((cost + seconds) / 2 if warm else seconds, True)

    def _lexical_channels(
        self, flt: Filter, terms: builtins.list[str], k: int, config: RetrievalConfig
    ) -> dict[str, builtins.list[ChannelHit]]:
        """The lexical channel, and the pseudo-relevance feedback channel when configured (their CPU noted)."""
        started = time.thread_time()  # this thread's CPU: waits for the GIL or a connection do not count
        try:
            return self._run_lexical_channels(flt, terms, k, config)
        finally:
            self._note_lexical_cpu(flt.namespace, time.thread_time() - started)

    def _run_lexical_channels(
        self, flt: Filter, terms: builtins.list[str], k: int, config: RetrievalConfig
    ) -> dict[str, builtins.list[ChannelHit]]:
        out = {"lexical": self._search_lexical(flt, terms, k, config)}
        if "feedback" in config.channels and out["lexical"]:
            top = [h.id for h in out["lexical"][: config.feedback_docs]]
            found = self._backend.contents(flt.namespace, top)  # their texts only: no whole rows decoded
            texts = [found[i] for i in top if i in found]
            extra = feedback_terms(texts, terms, config.feedback_terms)
            if extra and feedback_applies(texts, config.feedback_max_words):
                # A second search only where it is cheap: never one the backend would have to bound.
                out["feedback"] = self._search_lexical(flt, terms + extra, k, config, exact_only=True)
        return out

    def _search_lexical(
        self, flt: Filter, terms: builtins.list[str], k: int, config: RetrievalConfig, *, exact_only: bool = False
    ) -> builtins.list[ChannelHit]:
        """BM25 over the index key's fields; content only on a backend without them (``exact_only``: see Backend)."""
        if self._core.keys_on():
            return self._backend.search_lexical(flt, terms, k, fields=config.fields, exact_only=exact_only)
        return self._backend.search_lexical(flt, terms, k, exact_only=exact_only)

    def _search_context(
        self, flt: Filter, config: RetrievalConfig, vector: Vector, k: int
    ) -> builtins.list[ChannelHit] | None:
        """The context channel: the window vectors alone (None when not configured or the store has none)."""
        if "context" not in config.channels or not self._core.windows_on():
            return None
        space = window_model(self._embedder.model_name)
        if not self._backend.has_vector_space(space):
            return None
        return self._backend.search_vector(flt, space, vector, k)

    def vector_space(self, config: RetrievalConfig) -> str:
        """The space the vector channel searches: window vectors when configured and present.

        With a ``context`` channel the window vectors are searched there, and the
        vector channel searches the memories' own vectors.
        """
        model = self._embedder.model_name
        if config.window_vectors and "context" not in config.channels and self._core.windows_on():
            space = window_model(model)
            if self._backend.has_vector_space(space):
                return space
        return model

    def _search_vectors(
        self, flt: Filter, config: RetrievalConfig, vector: Vector, k: int
    ) -> tuple[builtins.list[ChannelHit], bool]:
        """The vector channel: window vectors, and own vectors of memories that have no window vector.

        Only memories with a thread get a window vector (for the others it would
        equal their own), so both spaces are searched and a memory found by its
        own vector counts only if it has no window vector: the same ranking as a
        window space holding every memory, without storing vectors twice.

        Also whether these are surely the best ``k`` of that ranking: not when
        the own search filled its ``k`` and some of them had window vectors (a
        memory without one, ranked past them, may still score above the merged
        k-th). The decisive depth (see :meth:`_head`) does not hold on such hits.
        """
        model = self._embedder.model_name
        space = self.vector_space(config)
        if space == model:
            return self._backend.search_vector(flt, model, vector, k), True
        windowed = self._backend.search_vector(flt, space, vector, k)
        own = self._backend.search_vector(flt, model, vector, k)
        if not windowed:  # no memory passing the filter has a window vector: own vectors rank alone
            return own, True
        found = {h.id for h in windowed}
        kept = [h for h in own if h.id not in found]
        has_window = set(self._backend.get_vectors(flt.namespace, space, [h.id for h in kept]))
        kept = [h for h in kept if h.id not in has_window]
        merged = sorted(windowed + kept, key=lambda h: (-h.score, h.id))
        return merged[:k], len(own) < k or len(kept) == len(own)
