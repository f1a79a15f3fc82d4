"""CrewAI memory storage over :class:`~memory.Memory`: CrewAI's unified ``Memory`` keeps its records here.

>>> from crewai.memory import Memory as CrewMemory
>>> from memory import Memory
>>> from memory.integrations.crewai import MemoryEmbedder, MemoryStorage
>>> mem = Memory("sqlite:///agent.db")                                                   # doctest: +SKIP
>>> crew_memory = CrewMemory(storage=MemoryStorage(mem, user="alice"), embedder=MemoryEmbedder(mem))  # doctest: +SKIP
>>> crew = Crew(agents=[...], tasks=[...], memory=crew_memory)                          # doctest: +SKIP

``MemoryStorage`` implements CrewAI's ``StorageBackend`` protocol
(``crewai.memory.storage.backend``): save/search/delete/update/get_record,
list_records, scopes and categories, count, reset, and the async variants.
Every CrewAI record is a memory (kind ``crewai``) in the storage's namespace,
user and agent: its scope path and categories become tags (``crewai-scope:/a``
for every ancestor of the scope and ``crewai-scope:/``, ``crewai-category:x``);
a record repeating the text of a memory there becomes that memory (the Memory
keeps one memory per text; its other tags stay). Its metadata is kept
(plus ``crewai_*`` keys for the record id, scope, categories and source),
importance, creation and last access map to the memory's, and a
private record is a ``private`` memory. So CrewAI's memories have history,
export and recall like any other.

Search gets only a query vector from CrewAI. Give CrewAI :class:`MemoryEmbedder`
(the Memory's own embedder) so query and stored vectors share one space; the
embedder remembers the texts it embedded, so a search for one of them runs the
full hybrid ``recall`` (vector + BM25, recency, importance), and the score
CrewAI sees is the cosine similarity of query and memory, as its own stores
report. A vector of unknown text is searched in the vector index alone. A
vector of another length raises CrewAI's ``EmbeddingDimensionMismatchError``.
Needs ``pip install 'llm-agent-memory[crewai]'``.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from memory.integrations import require

require("crewai.memory.storage.backend", "crewai")

from crewai.memory.storage.backend import EmbeddingDimensionMismatchError  # noqa: E402
from crewai.memory.types import MemoryRecord, ScopeInfo  # noqa: E402

from memory.embedders.base import embed_texts  # noqa: E402
from memory.memory import Memory  # noqa: E402
from memory.types import MemoryItem  # noqa: E402

__all__ = ["MemoryEmbedder", "MemoryStorage"]

KIND = "crewai"
SCOPE_TAG = "crewai-scope:"
CATEGORY_TAG = "crewai-category:"
_RESERVED = ("crewai_id", "crewai_scope", "crewai_categories", "crewai_source")
_PAGE = 500


def _scope(path: str | None) -> str:
    """A scope path in canonical form: ``/`` or ``/a/b`` (no trailing slash, no empty parts)."""
    parts = [p for p in (path or "/").split("/") if p]
    return "/" + "/".join(parts)


def _scope_tags(path: str) -> list[str]:
    parts = [p for p in path.split("/") if p]
    return [SCOPE_TAG + "/"] + [SCOPE_TAG + "/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _naive(value: datetime) -> datetime:
    """CrewAI keeps naive UTC times (``datetime.utcnow``)."""
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo is not None else value


class MemoryEmbedder:
    """CrewAI embedder callable over the Memory's embedder (texts -> unit vectors), remembering recent texts.

    Pass it as ``crewai.memory.Memory(embedder=...)``: then CrewAI's vectors are in
    the space the Memory stores, and :class:`MemoryStorage` can turn a query
    vector back into its text for a hybrid recall.
    """

    def __init__(self, memory: Memory, *, remember_texts: int = 256) -> None:
        if not isinstance(memory, Memory):
            raise TypeError("MemoryEmbedder needs a memory.Memory")
        self.memory = memory
        self._texts: OrderedDict[bytes, str] = OrderedDict()
        self._size = remember_texts
        self._lock = threading.Lock()

    def __call__(self, input: Sequence[str]) -> list[list[float]]:  # noqa: A002 - CrewAI/Chroma's name
        """Embed ``input``; one unit-length vector per text."""
        texts = list(input)
        if not texts:
            return []
        rows = embed_texts(self.memory.embedder, texts)
        with self._lock:
            for text, row in zip(texts, rows, strict=True):
                key = self._key(row)
                self._texts[key] = text
                self._texts.move_to_end(key)
            while len(self._texts) > self._size:
                self._texts.popitem(last=False)
        return [[float(x) for x in row] for row in rows]

    @staticmethod
    def _key(vector: Any) -> bytes:
        return np.asarray(vector, dtype=np.float32).tobytes()

    def text_of(self, vector: Sequence[float]) -> str | None:
        """The text this embedder turned into ``vector`` recently, if any."""
        with self._lock:
            return self._texts.get(self._key(vector))


class MemoryStorage:
    """CrewAI ``StorageBackend`` keeping records as memories (kind ``crewai``) of one namespace/user/agent."""

    def __init__(
        self,
        memory: Memory,
        *,
        namespace: str | None = None,
        user: str | None = None,
        agent: str | None = None,
        embedder: MemoryEmbedder | None = None,
    ) -> None:
        if not isinstance(memory, Memory):
            raise TypeError("MemoryStorage needs a memory.Memory")
        self.memory = memory
        self.namespace = memory.namespace if namespace is None else namespace
        self.user = user
        self.agent = agent
        self.embedder = embedder

    # -- mapping -------------------------------------------------------------

    def _fields(self, record: MemoryRecord) -> dict[str, Any]:
        scope = _scope(record.scope)
        categories = list(dict.fromkeys(record.categories))
        metadata = {k: v for k, v in record.metadata.items() if k not in _RESERVED}
        metadata.update(
            crewai_id=record.id,
            crewai_scope=scope,
            crewai_categories=categories,
            crewai_source=record.source,
        )
        return {
            "tags": _scope_tags(scope) + [CATEGORY_TAG + c for c in categories],
            "metadata": metadata,
            "importance": record.importance,
            "sensitivity": "private" if record.private else "normal",
        }

    def _record(self, item: MemoryItem) -> MemoryRecord:
        meta = dict(item.metadata)
        created = _naive(item.created_at)
        return MemoryRecord(
            id=str(meta.get("crewai_id") or item.id),
            content=item.content,
            scope=str(meta.get("crewai_scope") or "/"),
            categories=[str(c) for c in meta.get("crewai_categories") or []],
            metadata={k: v for k, v in meta.items() if k not in _RESERVED},
            importance=item.importance,
            created_at=created,
            last_accessed=_naive(item.accessed_at) if item.accessed_at is not None else created,
            source=meta.get("crewai_source"),
            private=item.sensitivity != "normal",
        )

    def _query(
        self,
        scope_prefix: str | None = None,
        categories: Sequence[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Keyword arguments of recall/list/filter selecting this storage's records."""
        # Every CrewAI record carries the root scope tag (also a memory that a record's text joined).
        args: dict[str, Any] = {"namespace": self.namespace, "user": self.user, "agent": self.agent}
        scope = _scope(scope_prefix)
        args["tags_all"] = [SCOPE_TAG + "/"] if scope == "/" else [SCOPE_TAG + "/", SCOPE_TAG + scope]
        if categories:
            args["tags"] = [CATEGORY_TAG + c for c in categories]
        if metadata_filter:
            args["metadata"] = {k: v for k, v in metadata_filter.items()}
        return args

    def _items(
        self,
        scope_prefix: str | None = None,
        categories: Sequence[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> Iterator[MemoryItem]:
        """Every record in scope, newest first."""
        args = self._query(scope_prefix, categories, metadata_filter)
        cursor: str | None = None
        while True:
            page = self.memory.list(limit=_PAGE, cursor=cursor, **args)
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def _find(self, record_id: str) -> MemoryItem | None:
        for item in self._items(metadata_filter={"crewai_id": record_id}):
            return item
        return None

    # -- the StorageBackend protocol -------------------------------------------

    def save(self, records: list[MemoryRecord]) -> None:
        """Store CrewAI records (one transaction); a record whose id is stored already is replaced.

        A record whose text is stored already (in this storage) becomes that memory: the
        Memory keeps one memory per text and scope, so the newest record's id and fields win.
        """
        new: list[MemoryRecord] = []
        for record in records:
            if self._find(record.id) is not None:
                self.update(record)
            else:
                new.append(record)
        if not new:
            return
        entries = [{"content": r.content, "created_at": _utc(r.created_at), **self._fields(r)} for r in new]
        ids = self.memory.remember_batch(entries, namespace=self.namespace, user=self.user, agent=self.agent, kind=KIND)
        for record, memory_id in zip(new, ids, strict=True):
            # The Memory keeps one memory per content and scope: a record repeating a stored text
            # takes that memory over (its id, scope, categories and metadata are the newest).
            item = self.memory.get(memory_id, namespace=self.namespace, clearance="secret")
            if item.metadata.get("crewai_id") != record.id:
                self._replace(item, record)

    def search(
        self,
        query_embedding: list[float],
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[MemoryRecord, float]]:
        """Records most similar to the query vector, best first, with their cosine similarity."""
        dimension = self.memory.embedder.dimension
        if len(query_embedding) != dimension:
            raise EmbeddingDimensionMismatchError(dimension, len(query_embedding))
        if limit < 1:
            return []
        query = np.asarray(query_embedding, dtype=np.float32)
        args = self._query(scope_prefix, categories, metadata_filter)
        text = self.embedder.text_of(query_embedding) if self.embedder is not None else None
        k = min(limit, 1000)
        if text is not None and text.strip():
            items = [h.item for h in self.memory.recall(text, limit=k, **args)]
        else:
            flt = self.memory.filter(**args)
            hits = self.memory.backend.search_vector(flt, self.memory.embedder.model_name, query, k)
            found = {i.id: i for i in self.memory.backend.get(flt.namespace, [h.id for h in hits])}
            items = [found[h.id] for h in hits if h.id in found]
        out: list[tuple[MemoryRecord, float]] = []
        for item in items:
            vector = self.memory.vector_of(item.id, namespace=self.namespace)
            # Clamped before the threshold: an unrelated memory's cosine is ~0 and, with vectors stored
            # at float16, may come out at -1e-5; it passes the default min_score of 0 as CrewAI expects.
            score = max(0.0, min(1.0, float(np.dot(vector, query)))) if vector is not None else 0.0
            if score >= min_score:
                out.append((self._record(item), score))
        return out

    def delete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        """Delete the records matching every given criterion; returns how many."""
        wanted = set(record_ids) if record_ids is not None else None
        cutoff = _utc(older_than) if older_than is not None else None
        doomed = [
            item.id
            for item in self._items(scope_prefix, categories, metadata_filter)
            if (wanted is None or str(item.metadata.get("crewai_id")) in wanted)
            and (cutoff is None or item.created_at < cutoff)
        ]
        deleted = 0
        for start in range(0, len(doomed), _PAGE):
            deleted += self.memory.forget(doomed[start : start + _PAGE], namespace=self.namespace, reason="crewai")
        return deleted

    def update(self, record: MemoryRecord) -> None:
        """Replace the record with the same id (stores it when there is none)."""
        item = self._find(record.id)
        if item is None:
            self.save([record])
            return
        self._replace(item, record, content=record.content)

    def _replace(self, item: MemoryItem, record: MemoryRecord, **changes: Any) -> None:
        """Give ``item`` the record's fields; tags and metadata that are not CrewAI's stay."""
        fields = self._fields(record)
        own_tags = [t for t in item.tags if not t.startswith((SCOPE_TAG, CATEGORY_TAG))]
        fields["tags"] = own_tags + fields["tags"]
        if item.kind != KIND:  # a memory of another kind whose text a record repeated keeps its metadata
            fields["metadata"] = {**item.metadata, **fields["metadata"]}
        self.memory.update(item.id, namespace=self.namespace, reason="crewai", **fields, **changes)

    def get_record(self, record_id: str) -> MemoryRecord | None:
        """The record with this id, or None."""
        item = self._find(record_id)
        return None if item is None else self._record(item)

    def list_records(self, scope_prefix: str | None = None, limit: int = 200, offset: int = 0) -> list[MemoryRecord]:
        """Records in scope (and subscopes), newest first."""
        out: list[MemoryRecord] = []
        for position, item in enumerate(self._items(scope_prefix)):
            if position >= offset + limit:
                break
            if position >= offset:
                out.append(self._record(item))
        return out

    def get_scope_info(self, scope: str) -> ScopeInfo:
        """Record count, categories, date range and child scopes of ``scope``."""
        path = _scope(scope)
        records = [self._record(item) for item in self._items(path)]
        categories = sorted({c for r in records for c in r.categories})
        times = [r.created_at for r in records]
        return ScopeInfo(
            path=path,
            record_count=len(records),
            categories=categories,
            oldest_record=min(times) if times else None,
            newest_record=max(times) if times else None,
            child_scopes=self._children(path, records),
        )

    @staticmethod
    def _children(parent: str, records: list[MemoryRecord]) -> list[str]:
        base = [p for p in parent.split("/") if p]
        children: set[str] = set()
        for record in records:
            parts = [p for p in record.scope.split("/") if p]
            if len(parts) > len(base) and parts[: len(base)] == base:
                children.add("/" + "/".join(parts[: len(base) + 1]))
        return sorted(children)

    def list_scopes(self, parent: str = "/") -> list[str]:
        """Immediate child scopes of ``parent``."""
        path = _scope(parent)
        return self._children(path, [self._record(item) for item in self._items(path)])

    def list_categories(self, scope_prefix: str | None = None) -> dict[str, int]:
        """Category name -> number of records in scope."""
        counts: dict[str, int] = {}
        for item in self._items(scope_prefix):
            for category in self._record(item).categories:
                counts[category] = counts.get(category, 0) + 1
        return dict(sorted(counts.items()))

    def count(self, scope_prefix: str | None = None) -> int:
        """Records in scope (and subscopes)."""
        return sum(1 for _ in self._items(scope_prefix))

    def reset(self, scope_prefix: str | None = None) -> None:
        """Delete every record in scope (all of this storage's records when None)."""
        self.delete(scope_prefix=scope_prefix)

    async def asave(self, records: list[MemoryRecord]) -> None:
        """:meth:`save` in a worker thread."""
        await asyncio.to_thread(self.save, records)

    async def asearch(
        self,
        query_embedding: list[float],
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[MemoryRecord, float]]:
        """:meth:`search` in a worker thread."""
        return await asyncio.to_thread(
            self.search, query_embedding, scope_prefix, categories, metadata_filter, limit, min_score
        )

    async def adelete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        """:meth:`delete` in a worker thread."""
        return await asyncio.to_thread(self.delete, scope_prefix, categories, record_ids, older_than, metadata_filter)
