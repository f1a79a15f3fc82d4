"""In-process backend for tests and throwaway agents: dicts, numpy and a small BM25."""

from __future__ import annotations

import builtins
import math
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import numpy as np

from memory.backends.base import AddResult, ChannelHit, ListOrder, NewRecord, Vector, VectorSpace
from memory.backends.inmemory_feedback import InMemoryFeedbackStore
from memory.backends.inmemory_graph import InMemoryGraph
from memory.backends.inmemory_tiers import InMemoryTierStore
from memory.errors import EmbeddingMismatchError, InvalidInputError, NotFoundError
from memory.filters import Filter, matches
from memory.retrieval.text import words
from memory.retrieval.window import field_weights, time_words
from memory.types import LedgerEntry, MemoryItem

if TYPE_CHECKING:
    from memory.backends.inmemory_episodic import InMemoryEpisodicStore

__all__ = ["InMemoryBackend", "bm25_search"]

_BM25_K1 = 1.2
_BM25_B = 0.75
_GROUP_COLUMNS = {"kind", "sensitivity", "embedding_status"}


def bm25_search(
    corpus: dict[str, Counter[str]], wanted: set[str], terms: Sequence[str], k: int
) -> builtins.list[ChannelHit]:
    """Okapi BM25 of the documents in ``wanted`` (idf and length over all of ``corpus``), best first, ties by id."""
    n_docs = len(corpus)
    if n_docs == 0 or not terms:
        return []
    avg_len = sum(sum(tokens.values()) for tokens in corpus.values()) / n_docs or 1.0
    doc_freq = {t: sum(1 for tokens in corpus.values() if t in tokens) for t in terms}
    hits: builtins.list[ChannelHit] = []
    for doc_id in wanted:
        tokens = corpus[doc_id]
        length = sum(tokens.values())
        score = 0.0
        for term in terms:
            tf = tokens.get(term, 0)
            if not tf:
                continue
            df = doc_freq[term]
            idf = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
            score += idf * tf * (_BM25_K1 + 1) / (tf + _BM25_K1 * (1 - _BM25_B + _BM25_B * length / avg_len))
        if score > 0:
            hits.append(ChannelHit(doc_id, score))
    hits.sort(key=lambda h: (-h.score, h.id))
    return hits[:k]


class InMemoryBackend:
    """Holds everything in process memory; thread-safe; lost when the process ends."""

    name = "inmemory"

    def __init__(self) -> None:
        """Create an empty store."""
        self._items: dict[str, MemoryItem] = {}
        self._tokens: dict[str, Counter[str]] = {}
        self._window_tokens: dict[str, Counter[str]] = {}
        self._vectors: dict[str, dict[str, Vector]] = {}
        self._spaces: dict[str, int] = {}
        self._ledger: builtins.list[LedgerEntry] = []
        self._lock = threading.RLock()
        self.graph = InMemoryGraph(self._lock)
        self.tiers = InMemoryTierStore(self._lock)
        self.feedback = InMemoryFeedbackStore(self._lock)
        self._claims: dict[str, datetime] = {}
        self._episodic: InMemoryEpisodicStore | None = None

    @property
    def episodic(self) -> InMemoryEpisodicStore:
        """The conversation/blocks/job-state store of this backend (see :mod:`memory.backends.episodic`)."""
        with self._lock:
            if self._episodic is None:
                from memory.backends.inmemory_episodic import InMemoryEpisodicStore

                self._episodic = InMemoryEpisodicStore()
            return self._episodic

    def close(self) -> None:
        """Nothing to release."""

    # -- vector spaces -----------------------------------------------------
    def vector_spaces(self) -> builtins.list[VectorSpace]:
        """Registered embedding models."""
        with self._lock:
            return [VectorSpace(m, d) for m, d in sorted(self._spaces.items())]

    def ensure_vector_space(self, model: str, dim: int) -> VectorSpace:
        """Register or check a model's dimension."""
        with self._lock:
            known = self._spaces.get(model)
            if known is not None and known != dim:
                raise EmbeddingMismatchError(
                    f"store holds {model!r} vectors of dimension {known}, embedder gives {dim}"
                )
            self._spaces[model] = dim
            self._vectors.setdefault(model, {})
            return VectorSpace(model, dim)

    def _check_vector(self, model: str | None, vector: Vector) -> None:
        if model is None or model not in self._spaces:
            raise InvalidInputError(f"no vector space registered for model {model!r}")
        if vector.shape != (self._spaces[model],):
            raise InvalidInputError(f"vector shape {vector.shape} does not fit {model!r}")

    # -- writes ------------------------------------------------------------
    def _live_duplicate(self, item: MemoryItem) -> str | None:
        for other in self._items.values():
            if other.expires_at is not None and other.expires_at <= item.created_at:
                continue
            if other.valid_to is not None and other.valid_to <= item.created_at:
                continue
            if (
                other.content_hash == item.content_hash
                and other.namespace == item.namespace
                and other.user == item.user
                and other.agent == item.agent
                and other.thread == item.thread
            ):
                return other.id
        return None

    def add(self, records: Sequence[NewRecord]) -> builtins.list[AddResult]:
        """Insert with dedup; all records are checked before any is stored."""
        with self._lock:
            for record in records:
                if record.vector is not None:
                    self._check_vector(record.item.embedding_model, record.vector)
                if record.item.id in self._items:
                    raise InvalidInputError(f"id {record.item.id} already exists")
            results: builtins.list[AddResult] = []
            staged: dict[tuple[str, str | None, str | None, str | None, str], str] = {}
            for record in records:
                item = record.item
                key = (item.namespace, item.user, item.agent, item.thread, item.content_hash)
                existing = staged.get(key) or self._live_duplicate(item)
                if existing is not None:
                    results.append(AddResult(existing, False))
                    continue
                self._store(item, record.vector)
                self._ledger.append(record.ledger)
                staged[key] = item.id
                results.append(AddResult(item.id, True))
            return results

    def _store(self, item: MemoryItem, vector: Vector | None) -> None:
        self._items[item.id] = item
        self._tokens[item.id] = Counter(words(item.content))
        for space in self._vectors.values():
            space.pop(item.id, None)
        if vector is not None and item.embedding_model is not None:
            self._vectors[item.embedding_model][item.id] = vector.astype(np.float32)

    def replace(self, item: MemoryItem, vector: Vector | None, ledger: LedgerEntry) -> None:
        """Overwrite an item; keeps the old vector when none is given and the status stays done."""
        with self._lock:
            old = self._items.get(item.id)
            if old is None or old.namespace != item.namespace:
                raise NotFoundError(f"no memory {item.id} in namespace {item.namespace!r}")
            if vector is not None:
                self._check_vector(item.embedding_model, vector)
            kept = None
            if vector is None and item.embedding_status == "done" and item.embedding_model:
                kept = self._vectors.get(item.embedding_model, {}).get(item.id)
            self._store(item, vector if vector is not None else kept)
            self._ledger.append(ledger)

    def set_vectors(self, namespace: str, model: str, updates: Sequence[tuple[str, Vector]]) -> int:
        """Attach vectors to existing items and mark them done."""
        with self._lock:
            for _, vector in updates:
                self._check_vector(model, vector)
            count = 0
            for item_id, vector in updates:
                item = self._items.get(item_id)
                if item is None or item.namespace != namespace:
                    continue
                self._items[item_id] = item.model_copy(
                    update={"embedding_status": "done", "embedding_model": model, "embedding_error": None}
                )
                self._vectors[model][item_id] = vector.astype(np.float32)
                self._claims.pop(item_id, None)
                count += 1
            return count

    def set_windows(self, namespace: str, model: str | None, updates: Sequence[tuple[str, str, Vector | None]]) -> int:
        """Store context windows (id, text, vector or None) of existing items; status untouched."""
        with self._lock:
            if model is not None:
                if model not in self._spaces:
                    raise InvalidInputError(f"no vector space registered for model {model!r}")
                for _, _, vector in updates:
                    if vector is not None:
                        self._check_vector(model, vector)
            count = 0
            for item_id, text, vector in updates:
                item = self._items.get(item_id)
                if item is None or item.namespace != namespace:
                    continue
                self._window_tokens[item_id] = Counter(words(text))
                if model is not None:
                    self._vectors[model].pop(item_id, None)
                    if vector is not None:
                        self._vectors[model][item_id] = np.asarray(vector, dtype=np.float32)
                count += 1
            return count

    def mark_embedding(self, namespace: str, ids: Sequence[str], status: str, error: str | None) -> int:
        """Set embedding status on items."""
        with self._lock:
            count = 0
            for item_id in ids:
                item = self._items.get(item_id)
                if item is None or item.namespace != namespace:
                    continue
                self._items[item_id] = item.model_copy(update={"embedding_status": status, "embedding_error": error})
                self._claims.pop(item_id, None)
                count += 1
            return count

    def delete(self, namespace: str, ids: Sequence[str], ledger: Sequence[LedgerEntry]) -> int:
        """Delete items, their tokens and vectors; record the ledger."""
        with self._lock:
            count = 0
            for item_id in ids:
                item = self._items.get(item_id)
                if item is None or item.namespace != namespace:
                    continue
                del self._items[item_id]
                self._tokens.pop(item_id, None)
                self._window_tokens.pop(item_id, None)
                for space in self._vectors.values():
                    space.pop(item_id, None)
                count += 1
            self.graph.forget_memories(namespace, ids)
            self._ledger.extend(ledger)
            return count

    def record_access(self, namespace: str, ids: Sequence[str], at: datetime) -> None:
        """Count an access."""
        with self._lock:
            for item_id in ids:
                item = self._items.get(item_id)
                if item is not None and item.namespace == namespace:
                    self._items[item_id] = item.model_copy(
                        update={"access_count": item.access_count + 1, "accessed_at": at}
                    )

    # -- reads -------------------------------------------------------------
    def _matching(self, flt: Filter) -> builtins.list[MemoryItem]:
        return [item for item in self._items.values() if matches(flt, item)]

    def get(self, namespace: str, ids: Sequence[str]) -> builtins.list[MemoryItem]:
        """Items by id, in the order asked."""
        with self._lock:
            found = (self._items.get(i) for i in ids)
            return [item for item in found if item is not None and item.namespace == namespace]

    def find_ids(self, flt: Filter, limit: int | None = None) -> builtins.list[str]:
        """Matching ids, newest first."""
        return [item.id for item in self.list(flt, limit or len(self._items) or 1, ListOrder())]

    def list(self, flt: Filter, limit: int, order: ListOrder) -> builtins.list[MemoryItem]:
        """Matching items in keyset order."""
        with self._lock:
            items = self._matching(flt)
        items.sort(key=lambda i: (i.created_at, i.id), reverse=order.newest_first)
        if order.after_created_at is not None and order.after_id is not None:
            key = (order.after_created_at, order.after_id)
            if order.newest_first:
                items = [i for i in items if (i.created_at, i.id) < key]
            else:
                items = [i for i in items if (i.created_at, i.id) > key]
        return items[:limit]

    def count(self, flt: Filter) -> int:
        """Number of matching items."""
        with self._lock:
            return len(self._matching(flt))

    def _field_tokens(self, item: MemoryItem) -> tuple[Counter[str], ...]:
        return (
            self._tokens[item.id],
            self._window_tokens.get(item.id, Counter()),
            Counter(words(time_words(item.created_at))),
        )

    def search_lexical(
        self, flt: Filter, terms: Sequence[str], k: int, *, fields: Mapping[str, float] | None = None
    ) -> builtins.list[ChannelHit]:
        """BM25 over matching items (no stemming here).

        Content only (the default): Okapi BM25 over the content. With
        ``fields`` weighing window or time words too, as SQLite FTS5 computes
        it: term frequency is the weighted sum over fields, length is the whole
        row's, idf is over the namespace's rows matching in a weighted field.
        """
        weights = field_weights(fields)
        if not terms or not any(weights):
            return []
        if weights[1:] == (0.0, 0.0):  # content only: as before windows (and as the other backends)
            with self._lock:
                corpus = {i.id: self._tokens[i.id] for i in self._items.values() if i.namespace == flt.namespace}
                wanted = {i.id for i in self._items.values() if i.id in corpus and matches(flt, i)}
                return bm25_search(corpus, wanted, terms, k)
        with self._lock:
            rows = [(i, self._field_tokens(i)) for i in self._items.values() if i.namespace == flt.namespace]
            n_docs = len(rows)
            if n_docs == 0:
                return []
            lengths = {i.id: sum(sum(f.values()) for f in fields_) for i, fields_ in rows}
            avg_len = sum(lengths.values()) / n_docs or 1.0

            def freq(fields_: tuple[Counter[str], ...], term: str) -> float:
                return sum(w * f.get(term, 0) for w, f in zip(weights, fields_, strict=True) if w > 0)

            doc_freq = {t: sum(1 for _, f in rows if freq(f, t) > 0) for t in terms}
            hits: builtins.list[ChannelHit] = []
            for item, fields_ in rows:
                if not matches(flt, item):
                    continue
                score = 0.0
                matched = False
                for term in terms:
                    tf = freq(fields_, term)
                    if not tf:
                        continue
                    matched = True
                    df = doc_freq[term]
                    idf = max(math.log((n_docs - df + 0.5) / (df + 0.5)), 1e-6)
                    norm = _BM25_K1 * (1 - _BM25_B + _BM25_B * lengths[item.id] / avg_len)
                    score += idf * tf * (_BM25_K1 + 1) / (tf + norm)
                if matched:
                    hits.append(ChannelHit(item.id, score))
        hits.sort(key=lambda h: (-h.score, h.id))
        return hits[:k]

    def search_vector(self, flt: Filter, model: str, vector: Vector, k: int) -> builtins.list[ChannelHit]:
        """Exact cosine KNN over matching items."""
        with self._lock:
            space = self._vectors.get(model, {})
            ids = [i.id for i in self._matching(flt) if i.id in space]
            if not ids:
                return []
            matrix = np.vstack([space[i] for i in ids])
        sims = matrix @ vector.astype(np.float32)
        order = sorted(range(len(ids)), key=lambda j: (-float(sims[j]), ids[j]))[:k]
        return [ChannelHit(ids[j], float(sims[j])) for j in order]

    def get_vectors(self, namespace: str, model: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors by id."""
        with self._lock:
            space = self._vectors.get(model, {})
            return {
                i: space[i].copy()
                for i in ids
                if i in space and i in self._items and self._items[i].namespace == namespace
            }

    def pending_embeddings(self, namespace: str | None, limit: int) -> builtins.list[MemoryItem]:
        """Items still to embed, oldest first."""
        with self._lock:
            pending = [
                i
                for i in self._items.values()
                if i.embedding_status in ("pending", "failed") and (namespace is None or i.namespace == namespace)
            ]
        pending.sort(key=lambda i: (i.created_at, i.id))
        return pending[:limit]

    def claim_pending_embeddings(
        self, namespace: str | None, limit: int, worker: str, lease_seconds: float, now: datetime
    ) -> builtins.list[MemoryItem]:
        """Claim up to ``limit`` unleased, non-secret items still to embed, oldest first (see base)."""
        with self._lock:
            free = [
                i
                for i in self._items.values()
                if i.embedding_status in ("pending", "failed")
                and i.sensitivity != "secret"
                and (namespace is None or i.namespace == namespace)
                and (i.id not in self._claims or self._claims[i.id] <= now)
            ]
            free.sort(key=lambda i: (i.created_at, i.id))
            chosen = free[: max(int(limit), 0)]
            until = now + timedelta(seconds=lease_seconds)
            for item in chosen:
                self._claims[item.id] = until
            return chosen

    def history(self, namespace: str, item_id: str) -> builtins.list[LedgerEntry]:
        """Ledger entries of an item, oldest first."""
        with self._lock:
            return [e for e in self._ledger if e.namespace == namespace and e.item_id == item_id]

    def ledger_count(self, namespace: str) -> int:
        """Ledger entries in a namespace."""
        with self._lock:
            return sum(1 for e in self._ledger if e.namespace == namespace)

    def group_counts(self, flt: Filter, column: str) -> dict[str, int]:
        """Counts by kind, sensitivity or embedding status."""
        if column not in _GROUP_COLUMNS:
            raise InvalidInputError(f"cannot group by {column!r}")
        with self._lock:
            return dict(Counter(str(getattr(i, column)) for i in self._matching(flt)))

    def namespaces(self) -> builtins.list[str]:
        """Namespaces with items."""
        with self._lock:
            return sorted({i.namespace for i in self._items.values()})

    def iter_items(self, flt: Filter, batch_size: int = 500) -> Iterator[MemoryItem]:
        """Matching items, oldest first."""
        with self._lock:
            items = sorted(self._matching(flt), key=lambda i: (i.created_at, i.id))
        yield from items

    # -- ledger transfer (memory migrate) ------------------------------------
    def iter_ledger(self, batch_size: int = 1000) -> Iterator[LedgerEntry]:
        """Every ledger entry of every namespace, in the order recorded."""
        del batch_size
        with self._lock:
            entries = builtins.list(self._ledger)
        yield from entries

    def write_ledger(self, entries: Sequence[LedgerEntry]) -> None:
        """Append ledger entries as they are (copying a store's history)."""
        with self._lock:
            self._ledger.extend(entries)
