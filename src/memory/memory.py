"""The `Memory` facade: the one public object over storage, embedding and retrieval."""

from __future__ import annotations

import builtins
import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any, overload

import numpy as np

from memory.backends import open_backend
from memory.backends.base import Backend, ChannelHit, ListOrder, NewRecord, Vector
from memory.config import Settings, load_settings
from memory.embedders import create_embedder
from memory.embedders.base import Embedder, embed_chunked, embed_query
from memory.embedders.batching import batching
from memory.errors import (
    EmbeddingMismatchError,
    Error,
    InvalidInputError,
    NotFoundError,
    ProviderError,
)
from memory.filters import Filter
from memory.graph import GraphView
from memory.ids import utcnow
from memory.limits import MAX_LIMIT, MAX_METADATA_FILTERS, MAX_QUERY_CHARS, MAX_TTL_SECONDS, VISIBLE
from memory.llms import LLM, create_llm
from memory.pagination import decode_cursor, encode_cursor
from memory.records import (
    build_item,
    check_datetime,
    check_encodable,
    check_importance,
    check_kind,
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
from memory.retrieval.config import RetrievalConfig, preset
from memory.retrieval.fusion import fuse, rank
from memory.retrieval.text import feedback_terms, query_terms
from memory.retrieval.window import event_time_words, window_model
from memory.types import SENSITIVITY_LEVELS, Hit, LedgerEntry, MemoryItem, Page, Stats
from memory.windows import Anchor, anchor_of, refresh_windows

if TYPE_CHECKING:
    from memory.backends.graph import MemoryLink
    from memory.context import CompiledPrompt, ContextRequest, ContextSource, Summariser
    from memory.episodic.blocks import Blocks
    from memory.episodic.messages import Messages
    from memory.episodic.prune import PruneReport
    from memory.episodic.summarize import ConversationEnd, Summarizer
    from memory.episodic.sync import SyncEstimate, SyncReport, SyncStatus
    from memory.extraction.pipeline import ExtractionReport
    from memory.extraction.service import Extraction
    from memory.feedback.service import Feedback, Prompts
    from memory.feedback.types import ReflectionReport
    from memory.tiers.service import Tiers
    from memory.transfer import ImportReport

__all__ = ["Memory"]

log = logging.getLogger(__name__)
_VISIBLE = re.compile(VISIBLE)

_UPDATABLE = (
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


def _check_limit(limit: object, what: str = "limit") -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInputError(f"{what} must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
    return limit


def _describe(entry: object) -> str:
    """A short name for a batch entry in an error: its thread and the start of its text."""
    content = entry.get("content") if isinstance(entry, Mapping) else entry
    head = " ".join(content[:40].split()) + ("…" if len(content) > 40 else "") if isinstance(content, str) else "?"
    thread = entry.get("thread") if isinstance(entry, Mapping) else None
    return (f"thread {thread!r}, " if isinstance(thread, str) else "") + f"{head!r}"


class Memory:
    """Long-term memory for an agent: remember, recall, update, forget, with history.

    >>> mem = Memory("memory://", embedder="hashing")
    >>> mem.remember("Alice prefers dark mode", user="alice")  # doctest: +SKIP
    """

    def __init__(
        self,
        database: str | None = None,
        *,
        namespace: str | None = None,
        embedder: Embedder | str | None = None,
        backend: Backend | None = None,
        retrieval: RetrievalConfig | str | None = None,
        settings: Settings | None = None,
        clock: Callable[[], datetime] | None = None,
        llm: LLM | str | None = None,
        summarizer: Summarizer | None = None,
    ) -> None:
        """Open a store.

        ``database`` is a URL (``sqlite:///memory.db``, ``memory://``) or a file
        path; ``embedder`` an Embedder instance or a provider name; ``backend``
        an open Backend instance (overrides ``database``); ``llm`` an LLM
        instance or provider name (extraction, update decisions; default
        ``heuristic``). Unset values come
        from the environment, the config file and defaults (see
        :mod:`memory.config`). ``summarizer`` turns finished conversations into
        block updates (default: an LLMSummarizer when the LLM is not
        ``heuristic``, else :class:`~memory.episodic.summarize.ExtractiveSummarizer`).
        Raises ConfigError or EmbeddingMismatchError.
        """
        overrides: dict[str, Any] = {"database": database, "namespace": namespace}
        if isinstance(retrieval, str):
            overrides["retrieval"] = retrieval
        if isinstance(embedder, str):
            overrides["embedder"] = {"provider": embedder}
        if isinstance(llm, str):
            overrides["llm"] = {"provider": llm}
        self.settings = settings or load_settings(overrides)
        check_name(self.settings.namespace, "namespace", optional=False)
        self._retrieval = retrieval if isinstance(retrieval, RetrievalConfig) else self.settings.retrieval_config()
        self._clock = clock or utcnow
        self._summarizer = summarizer
        self._messages: Messages | None = None
        self._tiers: Tiers | None = None
        self._channel_pool: ThreadPoolExecutor | None = None
        self._channel_pool_lock = threading.Lock()
        self._feedback: Feedback | None = None
        self._prompts: Prompts | None = None
        self._backend: Backend = backend or open_backend(self.settings.database)
        try:
            self._owns_embedder = isinstance(embedder, str) or embedder is None
            if self._owns_embedder:
                spec = self.settings.embedder
                self._embedder: Embedder = create_embedder(spec.provider, spec.options)
            else:
                self._embedder = embedder  # type: ignore[assignment]
            self._embedder = batching(self._embedder)  # concurrent callers share embedder calls (issue 22)
            self._space_ready = False
            self._ensure_space(strict=False)
            self._owns_llm = not isinstance(llm, LLM)
            self._llm: LLM = (
                llm if isinstance(llm, LLM) else create_llm(self.settings.llm.provider, self.settings.llm.options)
            )
            self.graph = GraphView(self)
        except BaseException:
            self._backend.close()
            raise

    # -- plumbing ----------------------------------------------------------
    @property
    def backend(self) -> Backend:
        """The storage backend in use."""
        return self._backend

    @property
    def embedder(self) -> Embedder:
        """The embedder in use."""
        return self._embedder

    @property
    def llm(self) -> LLM:
        """The LLM used for extraction and update decisions."""
        return self._llm

    @property
    def namespace(self) -> str:
        """The default namespace of this instance."""
        return self.settings.namespace

    def now(self) -> datetime:
        """The current time by this store's clock (UTC)."""
        return self._clock()

    def close(self) -> None:
        """Close the store (and the embedder, if this Memory created it). Idempotent."""
        with self._channel_pool_lock:
            pool, self._channel_pool = self._channel_pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        self._backend.close()
        closer = getattr(self._embedder, "close", None) if self._owns_embedder else None
        if callable(closer):
            closer()
        llm_closer = getattr(self._llm, "close", None) if getattr(self, "_owns_llm", False) else None
        if callable(llm_closer):
            llm_closer()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ensure_space(self, *, strict: bool) -> bool:
        """Register/check the embedder's vector space; False if its dimension is unknown yet."""
        if self._space_ready:
            return True
        try:
            dim = self._embedder.dimension
        except ProviderError:
            if strict:
                raise
            return False
        model = self._embedder.model_name
        spaces = self._backend.vector_spaces()
        if spaces and all(s.model != model for s in spaces):
            known = ", ".join(f"{s.model} (dim {s.dim})" for s in spaces)
            raise EmbeddingMismatchError(
                f"this store was built with embedder {known}; the configured embedder is "
                f"{model} (dim {dim}). Configure the store's embedder, or export and import "
                "into a new store to re-embed."
            )
        self._backend.ensure_vector_space(model, dim)
        self._space_ready = True
        return True

    def _ns(self, namespace: str | None) -> str:
        if namespace is None:
            return self.settings.namespace
        value = check_name(namespace, "namespace", optional=False)
        assert value is not None
        return value

    def _refresh_windows(self, namespace: str, anchors: Iterable[Anchor]) -> None:
        """Recompute the context windows around ``anchors`` (see :mod:`memory.windows`)."""
        anchors = builtins.list(anchors)
        if not anchors or not self._windows_on():
            return
        model = space = None
        if self._ensure_space(strict=False):
            model = self._embedder.model_name
            space = window_model(model)
            if all(s.model != space for s in self._backend.vector_spaces()):
                # First windows in this store (new, or written before windows existed): index
                # every memory, so the vector channel never searches a partial window space.
                self._backend.ensure_vector_space(space, self._embedder.dimension)
                self._rebuild_windows()
                return
        refresh_windows(
            self._backend,
            namespace,
            anchors,
            size=self.settings.context_window,
            model=model,
            window_space=space,
            scope_filter=lambda thread: self.filter(
                namespace, thread=thread, clearance="secret", include_expired=True, include_invalid=True
            ),
        )

    def _keys_on(self) -> bool:
        """Whether the backend indexes the key fields (window, time words): it can store windows."""
        return self._backend.windows is not None

    def _windows_on(self) -> bool:
        """Whether this store keeps context windows (configured, and the backend can store them)."""
        return self.settings.context_window > 0 and self._keys_on()

    def _rebuild_windows(self) -> None:
        """Compute the context window of every memory in every namespace (once per store)."""
        for ns in self._backend.namespaces():
            flt = self.filter(ns, clearance="secret", include_expired=True, include_invalid=True)
            anchors = [anchor_of(item) for item in self._backend.iter_items(flt)]
            for start in range(0, len(anchors), 5000):
                self._refresh_windows(ns, anchors[start : start + 5000])

    def filter(
        self,
        namespace: str | None = None,
        *,
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
        ids: Sequence[str] | None = None,
    ) -> Filter:
        """Build a validated :class:`Filter` with this store's defaults and clock.

        Raises InvalidInputError for bad filter values.
        """
        if isinstance(kinds, str):
            kinds = [kinds]
        if kinds is not None:
            kinds = check_strings(kinds, "kinds")
        if metadata is not None:
            if not isinstance(metadata, Mapping):
                raise InvalidInputError("metadata filter must be a mapping of key to value")
            if len(metadata) > MAX_METADATA_FILTERS:
                raise InvalidInputError(f"metadata filter has more than {MAX_METADATA_FILTERS} keys")
            for key, value in metadata.items():
                if value is not None and not isinstance(value, (str, int, float, bool)):
                    raise InvalidInputError(
                        f"metadata filter {key!r} must compare to a string, number, boolean or null"
                    )
                if isinstance(value, float) and value != value:
                    raise InvalidInputError(f"metadata filter {key!r} is NaN")
        try:
            return Filter(
                namespace=self._ns(namespace),
                user=check_name(user, "user"),
                agent=check_name(agent, "agent"),
                thread=check_name(thread, "thread"),
                kinds=tuple(check_kind(k) for k in kinds) if kinds is not None else None,
                tags_any=check_tags(tags) if tags is not None else None,
                tags_all=check_tags(tags_all) if tags_all is not None else None,
                metadata=dict(metadata) if metadata is not None else None,
                created_after=check_datetime(since, "since"),
                created_before=check_datetime(until, "until"),
                ids=tuple(ids) if ids is not None else None,
                clearance=check_sensitivity(clearance),
                include_expired=bool(include_expired),
                include_invalid=bool(include_invalid),
                now=self._clock(),
            )
        except Error:
            raise
        except ValueError as exc:  # pydantic validation of the Filter model
            raise InvalidInputError(f"invalid filter: {exc}") from exc

    # -- writes ------------------------------------------------------------
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
            namespace=self._ns(fields.get("namespace")),
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
            if not self._ensure_space(strict=True):
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
                self._ensure_space(strict=True)
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

    @overload
    def remember(self, content: str, **fields: Any) -> str: ...

    @overload
    def remember(self, content: Sequence[str | Mapping[str, Any]], **fields: Any) -> builtins.list[str]: ...

    def remember(self, content: str | Sequence[str | Mapping[str, Any]], **fields: Any) -> str | list[str]:
        """Store a memory (or a batch) and return its id (or ids, in order).

        Fields: user, agent, thread, namespace, kind ('fact'), context, tags,
        keywords, entities, metadata, source_ids, importance (0..1), valid_from,
        valid_to, sensitivity ('normal' | 'private' | 'secret'), expires_at or
        ttl (seconds or timedelta), vector (a precomputed embedding),
        created_at. Identical content in the same scope returns the existing
        id, except across secrets: a secret write is always stored as its own
        row and no write is ever answered with a secret's id (that answer
        would tell the writer the secret exists). ``extract`` (False | True | "inline" | "background") runs
        extraction and update decisions (see :mod:`memory.extraction.pipeline`):
        True follows ``settings.extraction.mode`` (inline with the heuristic
        LLM, else background); background queues the memory for
        :meth:`extract_pending`. Inline, the id returned is the memory that
        holds the fact afterwards (an existing one after NOOP or UPDATE).
        A batch may hold strings or dicts of ``{"content": ..., **fields}``;
        ``fields`` are defaults for every entry. The whole batch is validated
        before anything is written and written in one transaction.

        Raises InvalidInputError (nothing stored) for bad input. If the
        embedder fails the memory is still stored, marked pending.
        """
        if isinstance(content, str):
            return self.remember_batch([content], **fields)[0]
        if isinstance(content, (bytes, bytearray)) or not isinstance(content, Sequence):
            raise InvalidInputError(f"content must be a string or a list, got {type(content).__name__}")
        return self.remember_batch(content, **fields)

    def remember_batch(self, entries: Sequence[str | Mapping[str, Any]], **defaults: Any) -> builtins.list[str]:
        """Store many memories in one transaction; returns their ids in order (see :meth:`remember`)."""
        if isinstance(entries, (str, bytes)) or not isinstance(entries, Sequence):
            raise InvalidInputError("entries must be a list of strings or dicts")
        if not entries:
            raise InvalidInputError("nothing to remember: the batch is empty")
        if len(entries) > self.settings.limits.max_batch:
            raise InvalidInputError(f"batch of {len(entries)} is over the limit of {self.settings.limits.max_batch}")
        mode = self._extract_mode(defaults.pop("extract", False))
        if mode is not None:
            defaults["metadata"] = {**check_metadata(defaults.get("metadata")), "_extraction": "pending"}
            entries = [
                {**e, "metadata": {**check_metadata(e.get("metadata")), "_extraction": "pending"}}
                if isinstance(e, Mapping) and e.get("metadata") is not None
                else e
                for e in entries
            ]
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
        results = self._backend.add(records)
        self._windows_after_add([r.item for r, res in zip(records, results, strict=True) if res.created])
        ids = [r.id for r in results]
        if mode == "inline":
            from memory.extraction.pipeline import safe_process

            for position, (record, result) in enumerate(zip(records, results, strict=True)):
                if result.created:
                    found = self._backend.get(record.item.namespace, [result.id])
                    if found:
                        ids[position] = safe_process(self, found[0]).result_id
        return ids

    def _extract_mode(self, value: object) -> str | None:
        if value is False or value is None:
            return None
        self.graph.store  # noqa: B018 - raises GraphUnavailableError before anything is written
        if value is True:
            mode = self.settings.extraction.mode
            if mode == "auto":
                return "inline" if getattr(self._llm, "provider", "") == "heuristic" else "background"
            return mode
        if value in ("inline", "background"):
            return str(value)
        raise InvalidInputError(f"extract must be True, False, 'inline' or 'background', got {value!r}")

    def extract(self, text: str, *, speaker: str | None = None, namespace: str | None = None) -> Extraction:
        """What extraction would store for ``text`` (facts, keywords, entities, relations); writes nothing.

        Known entity names of the namespace help the extractor. Raises
        InvalidInputError for bad text, LLMError when a model provider fails.
        """
        from memory.extraction.service import extract

        content = normalise_content(text, max_chars=self.settings.limits.max_content_chars)
        store = self._backend.graph
        known = [e.name for e in store.list_entities(self._ns(namespace), 200)] if store is not None else []
        return extract(content, llm=self._llm, known_entities=known, speaker=speaker)

    def extract_pending(
        self, *, namespace: str | None = None, limit: int = 100, retry_failed: bool = False
    ) -> builtins.list[ExtractionReport]:
        """Run extraction for memories queued by ``remember(..., extract=...)``, oldest first.

        Returns one report per memory. An LLM failure marks that memory
        ``failed`` (kept, retried with ``retry_failed=True``) and moves on.
        """
        from memory.extraction.pipeline import pending, safe_process

        limit = _check_limit(limit)
        ns = self._ns(namespace) if namespace is not None else None
        return [safe_process(self, item) for item in pending(self, ns, limit, retry_failed)]

    def link(
        self,
        source_id: str,
        target_id: str,
        type: str = "relates_to",
        *,
        namespace: str | None = None,
        clearance: str = "private",
    ) -> MemoryLink:
        """Link two memories with a typed edge (idempotent). Raises NotFoundError or InvalidInputError.

        Both memories must be visible at ``clearance``: linking a secret without
        secret clearance raises NotFoundError, as if it did not exist.
        """
        if not isinstance(type, str) or not type.strip() or len(type) > 64:
            raise InvalidInputError("link type must be a non-empty string of at most 64 characters")
        ns = self._ns(namespace)
        for memory_id in (source_id, target_id):
            self.get(memory_id, namespace=ns, clearance=clearance)
        if source_id == target_id:
            raise InvalidInputError("a memory cannot be linked to itself")
        return self.graph.store.link(ns, source_id, target_id, type.strip(), self._clock())

    def _windows_after_add(self, items: Iterable[MemoryItem]) -> None:
        """Compute the context windows of newly stored ``items`` and of their thread neighbours."""
        by_ns: dict[str, builtins.list[Anchor]] = {}
        for item in items:
            if item.thread is None and not item.context and not event_time_words(item.content, item.created_at):
                continue  # stored with an empty window and no window vector: nothing to compute
            by_ns.setdefault(item.namespace, []).append(anchor_of(item))
        for ns, anchors in by_ns.items():
            self._refresh_windows(ns, anchors)

    def update(
        self, memory_id: str, *, namespace: str | None = None, reason: str | None = None, **changes: Any
    ) -> MemoryItem:
        """Change fields of a memory; returns the updated item.

        Updatable: content, kind, context, tags, keywords, entities, metadata
        (replaced whole), source_ids, importance, valid_from, valid_to,
        sensitivity, expires_at. New content is re-embedded. The ledger keeps
        the state before and after. Raises NotFoundError or InvalidInputError.
        """
        if not changes:
            raise InvalidInputError(f"nothing to update; give one of {', '.join(_UPDATABLE)}")
        unknown = set(changes) - set(_UPDATABLE)
        if unknown:
            raise InvalidInputError(f"cannot update {sorted(unknown)}; updatable: {', '.join(_UPDATABLE)}")
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
        self._refresh_windows(candidate.namespace, [anchor_of(candidate)])
        return candidate

    def forget(self, memory_id: str | Sequence[str], *, namespace: str | None = None, reason: str | None = None) -> int:
        """Delete a memory (or several) with its index entries and vector; returns how many.

        The ledger keeps the deleted state. Raises NotFoundError when a single
        id is unknown.
        """
        ns = self._ns(namespace)
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
        self._refresh_windows(ns, [anchor_of(i) for i in items if i.thread is not None])
        return deleted

    def forget_all(
        self,
        *,
        namespace: str | None = None,
        user: str | None = None,
        agent: str | None = None,
        thread: str | None = None,
        reason: str | None = None,
        clearance: str = "secret",
    ) -> int:
        """Delete every memory in a scope (secret, expired and closed ones too); returns how many.

        With ``clearance`` below ``secret`` (a caller without secret clearance)
        secrets are left alone and not counted: a caller changes only what it can see.

        Also deletes what the tiers hold about the scope's users (unless a
        thread is given) and the scope's feedback records (prompt versions when
        the whole namespace goes). Messages stay: clear them with
        ``mem.messages.clear``.
        """
        flt = self.filter(
            namespace, user=user, agent=agent, thread=thread,
            clearance=clearance, include_expired=True, include_invalid=True,
        )  # fmt: skip
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
            self._refresh_windows(flt.namespace, [anchor_of(i) for i in batch if i.thread is not None])
        if self._backend.tiers is not None and flt.thread is None:
            self._forget_tiers(flt.namespace, flt.user, flt.agent)
        store = self._backend.feedback
        if store is not None:  # conversation records of the scope; prompts when the whole namespace goes
            store.delete_records(flt.namespace, thread=flt.thread, user=flt.user, agent=flt.agent)
            if flt.user is None and flt.agent is None and flt.thread is None:
                store.delete_prompts(flt.namespace)
        return total

    def _forget_tiers(self, namespace: str, user: str | None, agent: str | None) -> None:
        """What the tiers hold about the scope's users (pages, segments, user personas), as ``tiers.forget``.

        Shared tier data (agent personas, system memory) stays, as with ``tiers.forget``.
        """
        owners = self.tiers.store.owners(namespace)
        users = sorted({u for a, u in owners if u and (user is None or u == user) and (agent is None or a == agent)})
        for name in users:
            self.tiers.forget(user=name, agent=agent, namespace=namespace)

    def embed_pending(self, *, namespace: str | None = None, limit: int = 1000) -> int:
        """Embed memories left pending (e.g. after an embedder outage); returns how many got vectors.

        Work is claimed in batches through the backend (a lease), so several
        processes can run this at once without embedding the same memory twice.
        On an embedder failure the batch stays pending with the error.
        """
        from memory.episodic.sync import embed_item_batch, worker_id

        ns = None if namespace is None else self._ns(namespace)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError(f"limit must be a positive integer, got {limit!r}")
        worker = worker_id()
        done, remaining = 0, limit
        while remaining > 0:
            size = min(remaining, self.settings.limits.embed_batch_size)
            claimed, embedded, error = embed_item_batch(
                self, namespace=ns, limit=size, worker=worker, failed_status="pending"
            )
            done += embedded
            remaining -= claimed
            if error is not None or claimed == 0:
                break
        return done

    # -- conversations, blocks, jobs (issue 4; code in memory.episodic) -----
    @property
    def messages(self) -> Messages:
        """Conversation history: ``mem.messages.append(thread, content, role=...)``, recent, search, archive."""
        if self._messages is None:
            from memory.episodic.messages import Messages

            self._messages = Messages(self)
        return self._messages

    @property
    def tiers(self) -> Tiers:
        """Hierarchical memory (MemoryOS): ``mem.tiers.add_page/retrieve/consolidate/configure/show``."""
        if self._tiers is None:
            from memory.tiers.service import Tiers

            self._tiers = Tiers(self)
        return self._tiers

    @property
    def blocks(self) -> Blocks:
        """Working-memory blocks: ``mem.blocks.get/replace/append/history(label, user=...)``."""
        from memory.episodic.blocks import Blocks

        return Blocks(self)

    def end_conversation(
        self,
        thread: str,
        *,
        namespace: str | None = None,
        user: str | None = None,
        agent: str | None = None,
        summarizer: Summarizer | None = None,
    ) -> ConversationEnd:
        """Update the working-memory blocks (summary, user info, goals) from a finished thread.

        Uses ``summarizer``, else the one given to Memory, else an LLMSummarizer
        when an LLM provider other than ``heuristic`` is configured, else the
        extractive default. An LLM failure falls back to the extractive summary
        (``result.fallback_reason`` says why).
        """
        from memory.episodic.llm_summarize import LLMSummarizer
        from memory.episodic.summarize import ExtractiveSummarizer, end_conversation

        default = ExtractiveSummarizer() if self._llm.provider == "heuristic" else LLMSummarizer(self._llm)
        chosen = summarizer or self._summarizer or default
        result = end_conversation(self, thread, summarizer=chosen, namespace=namespace, user=user, agent=agent)
        if self._backend.feedback is not None:  # the conversation record: summary and reward
            result.record = self.feedback.on_conversation_end(result, namespace)
        return result

    # -- feedback, prompt versions, reflection (issue 9; code in memory.feedback) --
    @property
    def feedback(self) -> Feedback:
        """Conversation records: ``mem.feedback.record(thread, rating=..., feedback=...)``, get, list, summarize."""
        if self._feedback is None:
            from memory.feedback.service import Feedback

            self._feedback = Feedback(self)
        return self._feedback

    @property
    def prompts(self) -> Prompts:
        """Versioned prompts: ``mem.prompts.create/use/stats/suggest/promote``."""
        if self._prompts is None:
            from memory.feedback.service import Prompts

            self._prompts = Prompts(self)
        return self._prompts

    def reflect(
        self, *, limit: int | None = None, dry_run: bool = False, namespace: str | None = None
    ) -> ReflectionReport:
        """One self-reflection pass: lessons from scored conversations, stored as ``procedural`` memories.

        Examines at most ``limit`` (default ``feedback.reflect_batch``) records not
        reflected yet; ``dry_run`` writes nothing. See :mod:`memory.feedback.reflect`.
        """
        from memory.feedback.reflect import reflect
        from memory.feedback.service import feedback_store

        settings = self.settings.feedback
        limit = settings.reflect_batch if limit is None else _check_limit(limit)
        return reflect(
            self, feedback_store(self), self._ns(namespace), limit=limit, low=settings.low_reward,
            high=settings.high_reward, dry_run=bool(dry_run),
        )  # fmt: skip

    def run_sync(
        self,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
        max_batches: int | None = None,
        batch_size: int | None = None,
        lease_seconds: float | None = None,
    ) -> SyncReport | SyncEstimate:
        """Run the episodic→semantic sync job now (see :mod:`memory.episodic.sync`).

        Returns a SyncReport, or with ``dry_run`` a SyncEstimate (nothing claimed or written).
        """
        from memory.episodic.sync import DEFAULT_LEASE_SECONDS, SyncJob

        job = SyncJob(
            self, namespace=namespace, batch_size=batch_size,
            lease_seconds=DEFAULT_LEASE_SECONDS if lease_seconds is None else lease_seconds,
        )  # fmt: skip
        return job.estimate() if dry_run else job.run(max_batches=max_batches)

    def sync_status(self, *, namespace: str | None = None) -> SyncStatus:
        """Pending counts by status and the sync job's cursor and last error."""
        from memory.episodic.sync import SyncJob

        return SyncJob(self, namespace=namespace).status()

    def prune(self, *, namespace: str | None = None, media_grace_seconds: float | None = None) -> PruneReport:
        """Delete expired messages and memories (TTL); everywhere also unreferenced media files. Returns counts."""
        from memory.episodic.prune import MEDIA_GRACE_SECONDS, prune

        grace = MEDIA_GRACE_SECONDS if media_grace_seconds is None else media_grace_seconds
        return prune(self, namespace=namespace, media_grace_seconds=grace)

    # -- reads -------------------------------------------------------------
    def get(self, memory_id: str, *, namespace: str | None = None, clearance: str = "private") -> MemoryItem:
        """The memory with this id. Raises NotFoundError (also for secrets without clearance)."""
        check_name(memory_id, "memory id", optional=False)
        ns = self._ns(namespace)
        found = self._backend.get(ns, [memory_id])
        level = SENSITIVITY_LEVELS[check_sensitivity(clearance)]
        if not found or SENSITIVITY_LEVELS[found[0].sensitivity] > level:
            raise NotFoundError(f"no memory {memory_id!r} in namespace {ns!r}")
        return found[0]

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
        retrieval: RetrievalConfig | str | None = None,
    ) -> builtins.list[Hit]:
        """Find the memories most relevant to ``query``, best first, with score parts.

        Hybrid by default: vector KNN and BM25, fused by weighted RRF, then
        blended with recency and importance (see RetrievalConfig). Filters
        narrow the search; secret, expired and closed (valid_to passed) items
        never come back unless ``clearance='secret'``. Access statistics of the
        returned memories are updated. If the embedder fails, lexical results
        are still returned.
        """
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a string, got {type(query).__name__}")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidInputError(f"query is longer than {MAX_QUERY_CHARS} characters")
        text = query.strip()
        if not _VISIBLE.search(text):
            raise InvalidInputError("query is empty: give the text to search for")
        check_encodable(text, "query")
        limit = _check_limit(limit)
        config = self._retrieval_config(retrieval)
        flt = self.filter(
            namespace, user=user, agent=agent, thread=thread, kinds=kinds, tags=tags,
            tags_all=tags_all, metadata=metadata, since=since, until=until, clearance=clearance,
        )  # fmt: skip
        k = max(config.candidates, limit)
        results: dict[str, builtins.list[ChannelHit]] = {}
        lexical: Future[dict[str, builtins.list[ChannelHit]]] | None = None
        if "lexical" in config.channels:
            terms = query_terms(text)
            if "vector" in config.channels and self._backend.concurrent_reads:
                # The lexical channel runs on another connection while this thread embeds the query
                # and searches vectors: the two cost their maximum instead of their sum.
                lexical = self._channels().submit(self._lexical_channels, flt, terms, k, config)
            else:
                results.update(self._lexical_channels(flt, terms, k, config))
        vector: Vector | None = None
        vector_hits: builtins.list[ChannelHit] | None = None
        context_hits: builtins.list[ChannelHit] | None = None
        try:
            if "vector" in config.channels or "context" in config.channels:
                try:
                    if self._ensure_space(strict=True):
                        vector = embed_query(self._embedder, text)
                        if "vector" in config.channels:
                            vector_hits = self._search_vectors(flt, config, vector, k)
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
            )  # fmt: skip
            if graph_hits:  # an empty graph (no extraction yet) leaves the other channels' scale as it is
                results["graph"] = graph_hits
        fused = fuse(results, config.weights, config.rrf_k)
        items = {i.id: i for i in self._backend.get(flt.namespace, [c.id for c in fused])}
        ranked = rank(fused, items, flt.now, config)[:limit]
        hits = [
            Hit(item=item, score=parts.final, channels=candidate.channels, parts=parts)
            for candidate, item, parts in ranked
        ]
        if hits:
            self._backend.record_access(flt.namespace, [h.id for h in hits], flt.now)
        return hits

    def _channels(self) -> ThreadPoolExecutor:
        """The one worker thread that runs the lexical channel beside the vector channel (created on first use)."""
        with self._channel_pool_lock:
            if self._channel_pool is None:
                self._channel_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory-recall")
            return self._channel_pool

    def _lexical_channels(
        self, flt: Filter, terms: builtins.list[str], k: int, config: RetrievalConfig
    ) -> dict[str, builtins.list[ChannelHit]]:
        """The lexical channel, and the pseudo-relevance feedback channel when configured."""
        out = {"lexical": self._search_lexical(flt, terms, k, config)}
        if "feedback" in config.channels and out["lexical"]:
            top = [h.id for h in out["lexical"][: config.feedback_docs]]
            texts = [i.content for i in self._backend.get(flt.namespace, top)]
            extra = feedback_terms(texts, terms, config.feedback_terms)
            if extra:
                out["feedback"] = self._search_lexical(flt, terms + extra, k, config)
        return out

    def _search_lexical(
        self, flt: Filter, terms: builtins.list[str], k: int, config: RetrievalConfig
    ) -> builtins.list[ChannelHit]:
        """BM25 over the index key's fields; content only on a backend without them."""
        if self._keys_on():
            return self._backend.search_lexical(flt, terms, k, fields=config.fields)
        return self._backend.search_lexical(flt, terms, k)

    def _search_context(
        self, flt: Filter, config: RetrievalConfig, vector: Vector, k: int
    ) -> builtins.list[ChannelHit] | None:
        """The context channel: the window vectors alone (None when not configured or the store has none)."""
        if "context" not in config.channels or not self._windows_on():
            return None
        space = window_model(self._embedder.model_name)
        if all(s.model != space for s in self._backend.vector_spaces()):
            return None
        return self._backend.search_vector(flt, space, vector, k)

    def _vector_space(self, config: RetrievalConfig) -> str:
        """The space the vector channel searches: window vectors when configured and present.

        With a ``context`` channel the window vectors are searched there, and the
        vector channel searches the memories' own vectors.
        """
        model = self._embedder.model_name
        if config.window_vectors and "context" not in config.channels and self._windows_on():
            space = window_model(model)
            if any(s.model == space for s in self._backend.vector_spaces()):
                return space
        return model

    def _search_vectors(
        self, flt: Filter, config: RetrievalConfig, vector: Vector, k: int
    ) -> builtins.list[ChannelHit]:
        """The vector channel: window vectors, and own vectors of memories that have no window vector.

        Only memories with a thread get a window vector (for the others it would
        equal their own), so both spaces are searched and a memory found by its
        own vector counts only if it has no window vector: the same ranking as a
        window space holding every memory, without storing vectors twice.
        """
        model = self._embedder.model_name
        space = self._vector_space(config)
        if space == model:
            return self._backend.search_vector(flt, model, vector, k)
        windowed = self._backend.search_vector(flt, space, vector, k)
        found = {h.id for h in windowed}
        own = [h for h in self._backend.search_vector(flt, model, vector, k) if h.id not in found]
        has_window = set(self._backend.get_vectors(flt.namespace, space, [h.id for h in own]))
        merged = windowed + [h for h in own if h.id not in has_window]
        merged.sort(key=lambda h: (-h.score, h.id))
        return merged[:k]

    def _retrieval_config(self, retrieval: RetrievalConfig | str | None) -> RetrievalConfig:
        if retrieval is None:
            return self._retrieval
        if isinstance(retrieval, RetrievalConfig):
            return retrieval
        return preset(retrieval)

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
        limit = _check_limit(limit)
        flt = self.filter(
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
        from memory.policy import redact_history

        check_name(memory_id, "memory id", optional=False)
        ns = self._ns(namespace)
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
        flt = self.filter(
            namespace, user=user, agent=agent, thread=thread,
            clearance=clearance, include_expired=True, include_invalid=True,
        )  # fmt: skip
        spaces = self._backend.vector_spaces()
        space = next((s for s in spaces if s.model == self._embedder.model_name), spaces[0] if spaces else None)
        return Stats(
            namespace=flt.namespace,
            total=self._backend.count(flt),
            by_kind=self._backend.group_counts(flt, "kind"),
            by_sensitivity=self._backend.group_counts(flt, "sensitivity"),
            by_embedding_status=self._backend.group_counts(flt, "embedding_status"),
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
        ns = self._ns(namespace)
        found = self._backend.get_vectors(ns, self._embedder.model_name, [memory_id])
        return found.get(memory_id)

    def export(self, stream: IO[str], *, clearance: str = "private", **filters: Any) -> int:
        """Write memories matching ``filters`` (as for :meth:`list`) to ``stream`` as JSONL; returns how many.

        Secret memories are written only with ``clearance="secret"``. See :mod:`memory.transfer`.
        """
        from memory.transfer import export_jsonl

        return export_jsonl(self, stream, clearance=clearance, **filters)

    def import_(self, stream: IO[str], *, on_progress: Callable[[int, int], None] | None = None) -> ImportReport:
        """Read a JSONL export from ``stream`` into this store (validated whole before writing).

        Returns an ImportReport. Raises InvalidInputError (nothing written) for a malformed file.
        """
        from memory.transfer import import_jsonl

        return import_jsonl(self, stream, on_progress=on_progress)

    # -- context assembly (logic in memory.context) ------------------------
    def context(
        self,
        request: ContextRequest | str | None = None,
        /,
        *,
        sources: Sequence[ContextSource] | None = None,
        summariser: Summariser | None = None,
        **fields: Any,
    ) -> CompiledPrompt:
        """Build the prompt for one model call under a token budget (DESIGN §8).

        ``request`` is a :class:`~memory.context.ContextRequest`, or the
        observation text with request fields as keywords (user, thread,
        budget, strategy, system, …). Returns a CompiledPrompt: ``.messages``
        (OpenAI shape), ``.anthropic()``, ``.trace`` (what went in, what was
        cut and why). Sections are summarised with the configured LLM when it is
        not ``heuristic`` (extractive on failure, noted in ``trace.sources``)
        unless ``summariser`` is given. Raises InvalidInputError or ContextBudgetError.
        """
        from memory.context.pipeline import as_request, build_context
        from memory.context.summarise import llm_summariser

        if summariser is None and self._llm.provider != "heuristic":
            summariser = llm_summariser(self._llm)
        return build_context(self, as_request(request, fields), sources=sources, summariser=summariser)

    def get_memory_context(self, query: str, max_tokens: int = 1000, **scope: Any) -> str:
        """The memories relevant to ``query`` as one text of at most ``max_tokens`` tokens (seed 001).

        Scope keywords: namespace, user, agent, thread, clearance, model
        (picks the tokenizer), limit (max memories, default 10).
        """
        from memory.context.pipeline import memory_context_text

        return memory_context_text(self, query, max_tokens, **scope)
