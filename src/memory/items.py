"""Memories as records: validate, embed, store, change, delete, read (``Memory``'s item operations).

Every write keeps the ledger and the context windows current; a failing
embedder leaves memories stored as pending. Reads enforce clearance: a secret
above the caller's clearance is "not found" exactly as an unknown id is.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from memory.backends.base import AddResult, ListOrder, NewRecord, Vector
from memory.embedders.base import embed_chunked
from memory.errors import EmbeddingMismatchError, InvalidInputError, NotFoundError, ProviderError
from memory.filters import Filter
from memory.limits import MAX_TTL_SECONDS
from memory.pagination import decode_cursor, encode_cursor
from memory.policy import redact_history
from memory.records import (
    build_item,
    check_datetime,
    check_importance,
    check_kind,
    check_limit,
    check_metadata,
    check_name,
    check_seconds,
    check_sensitivity,
    check_strings,
    check_tags,
    check_vector,
    content_hash,
    ledger_entry,
    normalise_content,
    offset_time,
)
from memory.services import Core
from memory.types import SENSITIVITY_LEVELS, LedgerEntry, MemoryItem, Page, Stats
from memory.windows import Windows, anchor_of

__all__ = ["Items", "UPDATABLE"]

log = logging.getLogger(__name__)

UPDATABLE = (
    "content",
    "kind",
    "context",
    "tags",
    "keywords",
    "entities",
    "metadata",
    "source_ids",
    "importance",
    "valid_from",
    "valid_to",
    "sensitivity",
    "expires_at",
)


def _ttl_to_expiry(ttl: object, now: datetime) -> datetime | None:
    if ttl is None:
        return None
    seconds = check_seconds(ttl, "ttl")
    if seconds > MAX_TTL_SECONDS:
        raise InvalidInputError(f"ttl must be at most {MAX_TTL_SECONDS:.0f} seconds (about 100 years)")
    return offset_time(now, seconds, "ttl")


def _describe(entry: object) -> str:
    """A short name for a batch entry in an error: its thread and the start of its text."""
    content = entry.get("content") if isinstance(entry, Mapping) else entry
    head = " ".join(content[:40].split()) + ("…" if len(content) > 40 else "") if isinstance(content, str) else "?"
    thread = entry.get("thread") if isinstance(entry, Mapping) else None
    return (f"thread {thread!r}, " if isinstance(thread, str) else "") + f"{head!r}"


class Items:
    """The item operations of a store: remember, update, forget, get, list, history, stats."""

    def __init__(self, core: Core, windows: Windows) -> None:
        """Bind to the store's core and its window keeper."""
        self._core = core
        self._backend = core.backend
        self._embedder = core.embedder
        self.settings = core.settings
        self._clock = core.clock
        self._windows = windows

    def _prepare(self, content: object, fields: Mapping[str, Any], now: datetime) -> tuple[MemoryItem, Vector | None]:
        unknown = set(fields) - {
            "user", "agent", "thread", "namespace", "kind", "context", "tags", "keywords", "entities",
            "metadata", "source_ids", "importance", "valid_from", "valid_to", "sensitivity",
            "expires_at", "ttl", "vector", "created_at",
        }  # fmt: skip
        if unknown:
            raise InvalidInputError(f"unknown field(s) {sorted(unknown)} for a memory")
        text = normalise_content(content, max_chars=self.settings.limits.max_content_chars)
        expires_at = check_datetime(fields.get("expires_at"), "expires_at")
        if fields.get("ttl") is not None:
            if expires_at is not None:
                raise InvalidInputError("give ttl or expires_at, not both")
            expires_at = _ttl_to_expiry(fields["ttl"], now)
        valid_from = check_datetime(fields.get("valid_from"), "valid_from")
        valid_to = check_datetime(fields.get("valid_to"), "valid_to")
        if valid_from and valid_to and valid_to <= valid_from:
            raise InvalidInputError("valid_to must be later than valid_from")
        context = fields.get("context")
        if context is not None:
            context = normalise_content(context, max_chars=self.settings.limits.max_content_chars)
        item = build_item(
            content=text,
            namespace=self._core.ns(fields.get("namespace")),
            now=now,
            user=check_name(fields.get("user"), "user"),
            agent=check_name(fields.get("agent"), "agent"),
            thread=check_name(fields.get("thread"), "thread"),
            kind=check_kind(fields.get("kind", "fact")),
            context=context,
            tags=check_tags(fields.get("tags")),
            keywords=check_strings(fields.get("keywords"), "keywords"),
            entities=check_strings(fields.get("entities"), "entities"),
            metadata=check_metadata(fields.get("metadata")),
            source_ids=check_strings(fields.get("source_ids"), "source_ids"),
            importance=check_importance(fields.get("importance", 0.5)),
            valid_from=valid_from,
            valid_to=valid_to,
            sensitivity=check_sensitivity(fields.get("sensitivity", "normal")),
            expires_at=expires_at,
            created_at=check_datetime(fields.get("created_at"), "created_at"),
        )
        vector = fields.get("vector")
        if vector is not None:
            if not self._core.ensure_space(strict=True):
                raise InvalidInputError("the embedder's dimension is unknown; cannot check the vector")
            return item, check_vector(vector, self._embedder.dimension)
        return item, None

    def _embed_items(
        self, items: builtins.list[MemoryItem], given: builtins.list[Vector | None]
    ) -> builtins.list[tuple[MemoryItem, Vector | None]]:
        """Attach vectors: given ones, else embed; a failing embedder leaves items pending."""
        out: builtins.list[tuple[MemoryItem, Vector | None]] = []
        todo = [
            i
            for i, (item, vec) in enumerate(zip(items, given, strict=True))
            if vec is None and item.sensitivity != "secret"
        ]
        vectors: dict[int, Vector] = {}
        error: str | None = None
        if todo:
            try:
                self._core.ensure_space(strict=True)
                matrix = embed_chunked(
                    self._embedder,
                    [items[i].content for i in todo],
                    batch_size=self.settings.limits.embed_batch_size,
                )
                vectors = {i: matrix[j] for j, i in enumerate(todo)}
            except (ProviderError, EmbeddingMismatchError) as exc:
                if isinstance(exc, EmbeddingMismatchError):
                    raise
                error = str(exc)
                log.warning("embedding failed, %d memories stored as pending: %s", len(todo), exc)
        model = self._embedder.model_name
        for index, (item, vec) in enumerate(zip(items, given, strict=True)):
            vector = vec if vec is not None else vectors.get(index)
            if vector is not None:
                item = item.model_copy(update={"embedding_status": "done", "embedding_model": model})
            elif item.sensitivity == "secret":
                item = item.model_copy(update={"embedding_status": "skipped"})
            else:
                item = item.model_copy(update={"embedding_status": "pending", "embedding_error": error})
            out.append((item, vector))
        return out

    def check_batch(self, entries: object) -> None:
        """InvalidInputError unless ``entries`` is a non-empty list within the batch limit."""
        if isinstance(entries, (str, bytes)) or not isinstance(entries, Sequence):
            raise InvalidInputError("entries must be a list of strings or dicts")
        if not entries:
            raise InvalidInputError("nothing to remember: the batch is empty")
        if len(entries) > self.settings.limits.max_batch:
            raise InvalidInputError(f"batch of {len(entries)} is over the limit of {self.settings.limits.max_batch}")

    def add(
        self, entries: Sequence[str | Mapping[str, Any]], defaults: Mapping[str, Any]
    ) -> builtins.list[tuple[NewRecord, AddResult]]:
        """Store many memories in one transaction; the records and the results, in order (see ``Memory.remember``)."""
        self.check_batch(entries)
        now = self._clock()
        prepared: builtins.list[tuple[MemoryItem, Vector | None]] = []
        for index, entry in enumerate(entries):
            if isinstance(entry, Mapping):
                fields = {**defaults, **{k: v for k, v in entry.items() if k != "content"}}
                content = entry.get("content")
            else:
                fields, content = dict(defaults), entry
            try:
                prepared.append(self._prepare(content, fields, now))
            except InvalidInputError as exc:
                if len(entries) == 1:
                    raise
                raise InvalidInputError(f"entry {index} of the batch ({_describe(entry)}): {exc}") from exc
        embedded = self._embed_items([p[0] for p in prepared], [p[1] for p in prepared])
        records = [
            NewRecord(item, vector, ledger_entry("add", item.id, item.namespace, now, after=item))
            for item, vector in embedded
        ]
        results = self._windows.add(records)
        return builtins.list(zip(records, results, strict=True))

    def remember(self, content: object, **fields: Any) -> str:
        """Store one memory (no extraction) and return its id, as ``Memory.remember`` does."""
        return self.add([content], fields)[0][1].id  # type: ignore[list-item]

    def update(
        self, memory_id: str, *, namespace: str | None = None, reason: str | None = None, **changes: Any
    ) -> MemoryItem:
        """Change fields of a memory; returns the updated item.

        Updatable: content, kind, context, tags, keywords, entities, metadata
        (replaced whole), source_ids, importance, valid_from, valid_to,
        sensitivity, expires_at. New content is re-embedded, and the keywords and
        entities of the text it replaces are dropped unless given in the same call.
        The ledger keeps the state before and after. Raises NotFoundError or
        InvalidInputError.
        """
        if not changes:
            raise InvalidInputError(f"nothing to update; give one of {', '.join(UPDATABLE)}")
        unknown = set(changes) - set(UPDATABLE)
        if unknown:
            raise InvalidInputError(f"cannot update {sorted(unknown)}; updatable: {', '.join(UPDATABLE)}")
        old = self.get(memory_id, namespace=namespace, clearance="secret")
        now = self._clock()
        new: dict[str, Any] = {"updated_at": now}
        limit = self.settings.limits.max_content_chars
        for name, value in changes.items():
            if name == "content":
                text = normalise_content(value, max_chars=limit)
                new.update(content=text, content_hash=content_hash(text))
            elif name == "kind":
                new[name] = check_kind(value)
            elif name == "context":
                new[name] = None if value is None else normalise_content(value, max_chars=limit)
            elif name == "tags":
                new[name] = check_tags(value)
            elif name in ("keywords", "entities", "source_ids"):
                new[name] = check_strings(value, name)
            elif name == "metadata":
                new[name] = check_metadata(value)
            elif name == "importance":
                new[name] = check_importance(value)
            elif name == "sensitivity":
                new[name] = check_sensitivity(value)
            else:
                new[name] = check_datetime(value, name)
        if "content" in new and new["content"] != old.content:
            # Keywords and entities describe the text they were taken from: they go with it (unless given
            # anew), so nothing of a replaced text stays readable, e.g. after a secret is rewritten and lowered.
            for name in ("keywords", "entities"):
                new.setdefault(name, ())
        candidate = old.model_copy(update=new)
        if candidate.valid_from and candidate.valid_to and candidate.valid_to <= candidate.valid_from:
            raise InvalidInputError("valid_to must be later than valid_from")
        needs_embedding = (
            candidate.content != old.content
            or (candidate.sensitivity != "secret" and old.embedding_status != "done")
            or (candidate.sensitivity == "secret" and old.sensitivity != "secret")
        )
        vector: Vector | None = None
        if needs_embedding:
            candidate = candidate.model_copy(update={"embedding_status": "pending", "embedding_model": None})
            ((candidate, vector),) = self._embed_items([candidate], [None])
        entry = ledger_entry("update", old.id, old.namespace, now, before=old, after=candidate, reason=reason)
        self._backend.replace(candidate, vector, entry)
        self._windows.refresh(candidate.namespace, [anchor_of(candidate)])
        return candidate

    def forget(self, memory_id: str | Sequence[str], *, namespace: str | None = None, reason: str | None = None) -> int:
        """Delete a memory (or several) with its index entries and vector; returns how many.

        The ledger keeps the deleted state. Raises NotFoundError when a single
        id is unknown.
        """
        ns = self._core.ns(namespace)
        if isinstance(memory_id, str):
            ids = [memory_id]
        elif isinstance(memory_id, Sequence) and not isinstance(memory_id, (bytes, bytearray)):
            ids = list(memory_id)
        else:
            raise InvalidInputError(f"memory id must be a string or a list of strings, got {type(memory_id).__name__}")
        for value in ids:
            check_name(value, "memory id", optional=False)
        items = self._backend.get(ns, ids)
        if isinstance(memory_id, str) and not items:
            raise NotFoundError(f"no memory {memory_id!r} in namespace {ns!r}")
        now = self._clock()
        ledger = [ledger_entry("delete", i.id, ns, now, before=i, reason=reason) for i in items]
        deleted = self._backend.delete(ns, [i.id for i in items], ledger)
        self._windows.refresh(ns, [anchor_of(i) for i in items if i.thread is not None])
        return deleted

    def forget_matching(self, flt: Filter, *, reason: str | None = None) -> int:
        """Delete every memory ``flt`` sees, in pages, keeping the ledger; returns how many (``Memory.forget_all``)."""
        now = self._clock()
        total = 0
        while True:
            batch = self._backend.list(flt, 500, ListOrder(newest_first=False))
            if not batch:
                break
            ledger = [
                ledger_entry("delete", i.id, i.namespace, now, before=i, reason=reason or "forget_all") for i in batch
            ]
            total += self._backend.delete(flt.namespace, [i.id for i in batch], ledger)
            self._windows.refresh(flt.namespace, [anchor_of(i) for i in batch if i.thread is not None])
        return total

    def get(self, memory_id: str, *, namespace: str | None = None, clearance: str = "private") -> MemoryItem:
        """The memory with this id. Raises NotFoundError (also for secrets without clearance)."""
        check_name(memory_id, "memory id", optional=False)
        ns = self._core.ns(namespace)
        found = self._backend.get(ns, [memory_id])
        level = SENSITIVITY_LEVELS[check_sensitivity(clearance)]
        if not found or SENSITIVITY_LEVELS[found[0].sensitivity] > level:
            raise NotFoundError(f"no memory {memory_id!r} in namespace {ns!r}")
        return found[0]

    def list(
        self,
        *,
        limit: int = 50,
        cursor: str | None = None,
        oldest_first: bool = False,
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
        include_expired: bool = False,
        include_invalid: bool = False,
    ) -> Page:
        """A page of memories matching the filters, newest first; ``next_cursor`` continues it."""
        limit = check_limit(limit)
        flt = self._core.filter(
            namespace, user=user, agent=agent, thread=thread, kinds=kinds, tags=tags,
            tags_all=tags_all, metadata=metadata, since=since, until=until, clearance=clearance,
            include_expired=include_expired, include_invalid=include_invalid,
        )  # fmt: skip
        after_at, after_id = decode_cursor(cursor) if cursor else (None, None)
        order = ListOrder(newest_first=not oldest_first, after_created_at=after_at, after_id=after_id)
        items = self._backend.list(flt, limit + 1, order)
        next_cursor = encode_cursor(items[limit - 1].created_at, items[limit - 1].id) if len(items) > limit else None
        return Page(items=tuple(items[:limit]), next_cursor=next_cursor)

    def history(
        self, memory_id: str, *, namespace: str | None = None, clearance: str = "private"
    ) -> builtins.list[LedgerEntry]:
        """Every recorded change of a memory, oldest first (kept after deletion). Raises NotFoundError.

        Without ``clearance="secret"`` the history of a memory that is (or was
        deleted as) secret is unknown, and snapshots above ``clearance`` (and
        earlier ones holding the same text) are redacted: see :mod:`memory.policy`.
        """
        check_name(memory_id, "memory id", optional=False)
        ns = self._core.ns(namespace)
        entries = redact_history(self._backend.history(ns, memory_id), check_sensitivity(clearance))
        if not entries:
            raise NotFoundError(f"no history for memory {memory_id!r} in namespace {ns!r}")
        return entries

    def stats(
        self,
        *,
        namespace: str | None = None,
        user: str | None = None,
        agent: str | None = None,
        thread: str | None = None,
        clearance: str = "private",
    ) -> Stats:
        """Counts of memories in a scope, by kind, sensitivity and embedding status.

        Secrets are counted only with ``clearance="secret"``; below it
        ``ledger_entries`` is None (the ledger counts changes to secrets too).
        """
        flt = self._core.filter(
            namespace, user=user, agent=agent, thread=thread,
            clearance=clearance, include_expired=True, include_invalid=True,
        )  # fmt: skip
        spaces = self._backend.vector_spaces()
        space = next((s for s in spaces if s.model == self._embedder.model_name), spaces[0] if spaces else None)
        return Stats(
            namespace=flt.namespace,
            **self._backend.item_counts(flt),
            ledger_entries=self._backend.ledger_count(flt.namespace) if flt.clearance == "secret" else None,
            embedding_model=space.model if space else None,
            embedding_dim=space.dim if space else None,
            backend=self._backend.name,
        )

    def namespaces(self) -> builtins.list[str]:
        """Namespaces that hold memories, messages or blocks."""
        found = set(self._backend.namespaces())
        store = self._backend.episodic
        if store is not None:
            found.update(store.message_namespaces())
        return sorted(found)

    def vector_of(self, memory_id: str, *, namespace: str | None = None) -> np.ndarray | None:
        """The stored embedding of a memory in the current embedder's space, or None."""
        ns = self._core.ns(namespace)
        found = self._backend.get_vectors(ns, self._embedder.model_name, [memory_id])
        return found.get(memory_id)
