"""The storage contract every backend implements.

A backend stores memory items, their lexical index entries, their vectors
(one vector space per embedding model) and the ledger. It knows nothing about
embedding, fusion or scoring: the facade hands it finished records and asks
it for ranked candidates per channel. Everything it returns is already
filtered by the :class:`~memory.filters.Filter` it was given: scope,
sensitivity, TTL and validity predicates run inside the backend (in SQL for
SQL backends), never as post-filters in the caller.

Rules every implementation follows (the contract suite in
``tests/contract`` checks them):

* ``add`` writes each new item, its text-index entry, its vector (when given),
  its context window (when its record carries one and the backend has a
  :class:`WindowIndex`) and its ledger entry in one transaction: all of a
  batch or nothing.
* ``add`` deduplicates atomically: a live item with the same content hash in
  the same scope (namespace, user, agent, thread) is returned instead of a
  new row, also when several processes race. Live means neither expired nor
  closed (``expires_at``/``valid_to`` unset or later than the new item's
  ``created_at``).
* Nothing crosses a namespace: every method takes the namespace or a filter
  holding it.
* Driver exceptions are translated to :mod:`memory.errors` at the boundary.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from memory.backends.values import (
    AddResult,
    ChannelHit,
    ListOrder,
    NewRecord,
    NewWindow,
    RankFields,
    Vector,
    VectorSpace,
)
from memory.filters import Filter
from memory.types import LedgerEntry, MemoryItem

if TYPE_CHECKING:
    from memory.backends.dialect import Dialect
    from memory.backends.episodic import EpisodicStore
    from memory.backends.feedback import FeedbackStore
    from memory.backends.graph import GraphStore
    from memory.backends.items import ItemCounts
    from memory.backends.keys import KeyStore
    from memory.backends.tiers import TierStore

__all__ = [
    "Backend",
    "NewRecord",
    "NewWindow",
    "AddResult",
    "ChannelHit",
    "RankFields",
    "VectorSpace",
    "ListOrder",
    "Vector",
    "WindowIndex",
    "LedgerTransfer",
]


@runtime_checkable
class Backend(Protocol):
    """Storage contract. See the module docstring for the rules.

    Optional stores are typed attributes, None when the backend does not hold
    that kind of record: callers test ``backend.graph is None``, never probe.
    """

    name: str

    @property
    def path(self) -> Path | None:
        """The database file (media files go beside it), or None for a server."""
        ...

    # -- capabilities --------------------------------------------------------
    @property
    def concurrent_reads(self) -> bool:
        """True when reads may run in parallel threads (recall then runs its channels concurrently)."""
        ...

    @property
    def graph(self) -> GraphStore | None:
        """The knowledge graph (entities, relations, mentions, links), or None."""
        ...

    @property
    def episodic(self) -> EpisodicStore | None:
        """Conversations, blocks and job state, or None."""
        ...

    @property
    def tiers(self) -> TierStore | None:
        """MemoryOS tiers (STM, MTM, personas, system memory), or None."""
        ...

    @property
    def feedback(self) -> FeedbackStore | None:
        """Conversation records and prompt versions, or None."""
        ...

    @property
    def dialect(self) -> Dialect | None:
        """The SQL engine's answers for stores written once over SQL (e.g. LangGraph checkpoints), or None."""
        ...

    @property
    def windows(self) -> WindowIndex | None:
        """Storage of the context windows the library computes, or None (recall then searches content only)."""
        ...

    def key_store(self) -> KeyStore | None:
        """The API key store of this database (the caller closes it), or None."""
        ...

    # -- maintenance ---------------------------------------------------------
    def server_info(self) -> dict[str, Any] | None:
        """What a database server reports about itself (version, schema, indexes), or None without a server."""
        ...

    def settle(self) -> float:
        """Bring the store to rest after a bulk load (statistics, checkpoints); returns the seconds it took."""
        ...

    def drop_vector_indexes(self) -> bool:
        """Drop approximate vector indexes before a bulk load; False when the engine keeps none to rebuild."""
        ...

    def build_vector_indexes(self, maintenance_work_mem: str = "1GB") -> float:
        """Rebuild what :meth:`drop_vector_indexes` dropped (with that much build memory); returns seconds."""
        ...

    # -- lifecycle ---------------------------------------------------------
    def close(self) -> None:
        """Release connections and files. Idempotent."""
        ...

    # -- vector spaces -----------------------------------------------------
    def vector_spaces(self) -> builtins.list[VectorSpace]:
        """The embedding models this store holds vectors for."""
        ...

    def has_vector_space(self, model: str) -> bool:
        """True when the store holds ``model``'s space (spaces are never removed: a yes is remembered)."""
        ...

    def ensure_vector_space(self, model: str, dim: int) -> VectorSpace:
        """Register ``model`` with ``dim`` (creating its index) or check it.

        Raises EmbeddingMismatchError when the store already holds ``model``
        with another dimension.
        """
        ...

    # -- writes ------------------------------------------------------------
    def add(self, records: Sequence[NewRecord]) -> builtins.list[AddResult]:
        """Insert records atomically with dedup by (scope, content_hash); one result per record.

        With a :attr:`windows` index, a record's ``window`` is stored with its
        row as :meth:`WindowIndex.set_windows` would store it (InvalidInputError
        for a text or vector it cannot store; nothing of the batch is written).
        """
        ...

    def replace(self, item: MemoryItem, vector: Vector | None, ledger: LedgerEntry) -> None:
        """Overwrite an existing item (same id and namespace), its index entries and vector.

        ``vector=None`` with ``item.embedding_status != 'done'`` removes the old vector.
        Raises NotFoundError when the item does not exist.
        """
        ...

    def set_vectors(self, namespace: str, model: str, updates: Sequence[tuple[str, Vector]]) -> int:
        """Store vectors for existing items and mark them embedded; returns rows updated."""
        ...

    def mark_embedding(self, namespace: str, ids: Sequence[str], status: str, error: str | None) -> int:
        """Set embedding_status (and error) on items; returns rows updated."""
        ...

    def delete(self, namespace: str, ids: Sequence[str], ledger: Sequence[LedgerEntry]) -> int:
        """Delete items with their index entries and vectors; record ``ledger``; returns rows deleted."""
        ...

    def record_access(self, namespace: str, ids: Sequence[str], at: datetime) -> None:
        """Increment access_count and set accessed_at for ``ids``."""
        ...

    # -- reads -------------------------------------------------------------
    def get(self, namespace: str, ids: Sequence[str]) -> builtins.list[MemoryItem]:
        """Items by id in ``namespace``, in the order asked; unknown ids are omitted."""
        ...

    def rank_fields(self, namespace: str, ids: Sequence[str]) -> dict[str, RankFields]:
        """What ranking reads of the items ``ids`` in ``namespace`` (created_at, importance); unknown ids omitted.

        Recall ranks its fused candidates on these and reads whole items only for the hits it returns.
        """
        ...

    def contents(self, namespace: str, ids: Sequence[str]) -> dict[str, str]:
        """The content of the items ``ids`` in ``namespace``, by id (no rows decoded); unknown ids omitted.

        For ranking rules that read the candidates' text (recall reads whole items only for the hits it returns).
        """
        ...

    def find_ids(self, flt: Filter, limit: int | None = None) -> builtins.list[str]:
        """Ids of the items matching ``flt`` (newest first)."""
        ...

    def list(self, flt: Filter, limit: int, order: ListOrder) -> builtins.list[MemoryItem]:
        """Items matching ``flt`` in ``order``, at most ``limit``."""
        ...

    def count(self, flt: Filter) -> int:
        """Number of items matching ``flt``."""
        ...

    def search_lexical(
        self,
        flt: Filter,
        terms: Sequence[str],
        k: int,
        *,
        fields: Mapping[str, float] | None = None,
        exact_only: bool = False,
    ) -> builtins.list[ChannelHit]:
        """BM25-ranked items containing any of ``terms`` (already normalised words), best first.

        ``fields`` weighs the indexed fields ``content``, ``window`` (the text
        given to :meth:`set_windows`) and ``time`` (``retrieval.window.time_words``
        of created_at); None means content only. A field of weight 0 does not match.
        ``exact_only``: search only where the engine ranks the whole match without
        bounding its work (``LEXICAL_EXACT_DOCS``), else return no hits: for an optional
        second search (pseudo-relevance feedback) that must not cost what a bounded one does.
        """
        ...

    def search_vector(self, flt: Filter, model: str, vector: Vector, k: int) -> builtins.list[ChannelHit]:
        """Nearest items by cosine similarity in ``model``'s space, best first; score = cosine."""
        ...

    def get_vectors(self, namespace: str, model: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors of ``ids`` in ``model``'s space (missing ones omitted)."""
        ...

    def as_stored(self, model: str, vectors: Sequence[Vector]) -> builtins.list[Vector]:
        """``vectors`` as :meth:`get_vectors` would return them once stored in ``model``'s space.

        A store may keep vectors at a lower precision (SQLite: float16);
        what the library derives from vectors in hand before a write (context
        windows) then equals what it derives from the store later.
        """
        ...

    def pending_embeddings(self, namespace: str | None, limit: int) -> builtins.list[MemoryItem]:
        """Items whose embedding_status is 'pending' or 'failed', oldest first (any namespace if None)."""
        ...

    def claim_pending_embeddings(
        self, namespace: str | None, limit: int, worker: str, lease_seconds: float, now: datetime
    ) -> builtins.list[MemoryItem]:
        """Claim up to `limit` items whose embedding_status is 'pending' or 'failed', that are
        not secret, and that no live lease holds (claimed_until unset or <= now); oldest first.
        Sets claimed_by=worker, claimed_until=now+lease atomically (Postgres: FOR UPDATE SKIP
        LOCKED; SQLite: inside BEGIN IMMEDIATE). `set_vectors` and `mark_embedding` clear
        the claim. Two concurrent callers never get the same item."""
        ...

    def history(self, namespace: str, item_id: str) -> builtins.list[LedgerEntry]:
        """Ledger entries of an item, oldest first (also after deletion)."""
        ...

    def ledger_count(self, namespace: str) -> int:
        """Number of ledger entries in ``namespace``."""
        ...

    def group_counts(self, flt: Filter, column: str) -> dict[str, int]:
        """Counts of matching items grouped by ``column`` (kind, sensitivity or embedding_status)."""
        ...

    def item_counts(self, flt: Filter) -> ItemCounts:
        """The number of matching items and their counts by kind, sensitivity and embedding status (one scan)."""
        ...

    def namespaces(self) -> builtins.list[str]:
        """Namespaces that hold at least one item."""
        ...

    def iter_items(self, flt: Filter, batch_size: int = 500) -> Iterator[MemoryItem]:
        """All items matching ``flt``, oldest first, fetched in batches."""
        ...


@runtime_checkable
class LedgerTransfer(Protocol):
    """Optional capability of a backend: its ledger read and written whole (copies, migrations, the sync audit).

    The SQL backends have it; a backend without it cannot be a source or
    destination of ``memory migrate``, and the sync job's audit entries are
    not recorded there (logged).
    """

    def iter_ledger(self, batch_size: int = 1000) -> Iterator[LedgerEntry]:
        """Every ledger entry of every namespace, in the order recorded."""
        ...

    def write_ledger(self, entries: Sequence[LedgerEntry]) -> None:
        """Append ledger entries as they are."""
        ...


@runtime_checkable
class WindowIndex(Protocol):
    """Optional capability of a backend: storing the context windows the library computes.

    Backends without it (``memory.retrieval.window``) still work: recall then
    searches content only, as before windows existed. A backend with it also
    stores the window a new record carries (``NewRecord.window``) in ``add``.
    """

    def window_rule(self) -> str | None:
        """The recorded window-rule state: the rule the stored windows follow (or an upgrade's progress), or None."""
        ...

    def set_window_rule(self, rule: str) -> None:
        """Record the window-rule state (the library's: ``memory.windows``)."""
        ...

    def set_windows(self, namespace: str, model: str | None, updates: Sequence[tuple[str, str, Vector | None]]) -> int:
        """Store library-computed context windows: (id, window text, window vector or None).

        The text becomes the lexical ``window`` field (kept when the item is
        replaced); the vector replaces the item's vector in ``model``'s space
        (None removes it; ``model=None`` leaves vectors alone). Embedding
        status is not changed. Returns rows updated.
        """
        ...
