"""The `Memory` facade: opens a store, builds its :class:`~memory.services.Core` and composes the services.

Items (:mod:`memory.items`), recall (:mod:`memory.retrieval.recall`), messages, blocks, tiers, feedback
and extraction do the work; each receives the Core, never the facade."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from functools import cached_property
from typing import IO, TYPE_CHECKING, Any, overload

import numpy as np

from memory.backends.base import Backend
from memory.config import Settings, load_settings
from memory.embedders.base import Embedder
from memory.errors import InvalidInputError
from memory.filters import Filter
from memory.graph import GraphView
from memory.ids import utcnow
from memory.items import Items
from memory.llms import LLM
from memory.records import check_link_type, check_name
from memory.retrieval.config import RetrievalConfig
from memory.retrieval.recall import Recall
from memory.retrieval.rerank import RerankStage
from memory.services import Core, open_core
from memory.types import Hit, LedgerEntry, MemoryItem, Page, Stats
from memory.windows import Windows

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
    from memory.rerankers import Reranker
    from memory.tiers.service import Tiers
    from memory.transfer import ImportReport

__all__ = ["Memory"]


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
        reranker: Reranker | None = None,
    ) -> None:
        """Open a store.

        ``database`` is a URL (``sqlite:///memory.db``, ``memory://``) or a file path; ``embedder`` an
        Embedder instance or a provider name; ``backend`` an open Backend instance (overrides
        ``database``); ``llm`` an LLM instance or provider name (extraction, update decisions; default
        ``heuristic``). Unset values come from the environment, the config file and defaults (see
        :mod:`memory.config`). ``summarizer`` turns finished conversations into block updates (default:
        an LLMSummarizer when the LLM is not ``heuristic``, else ``ExtractiveSummarizer``).
        ``reranker`` reorders recall's fused top-N (default: ``[reranker]`` in the settings, or none).
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
        self._clock = clock or utcnow
        self._summarizer = summarizer
        self._core, self._close = open_core(
            self.settings, backend=backend, embedder=None if isinstance(embedder, str) else embedder,
            llm=llm if isinstance(llm, LLM) else None, clock=lambda: self._clock(),
            retrieval=retrieval if isinstance(retrieval, RetrievalConfig) else None,
        )  # fmt: skip
        self._backend, self._embedder, self._llm = self._core.backend, self._core.embedder, self._core.llm
        self._windows = Windows(self._core)
        self._items = Items(self._core, self._windows)
        self._rerank = RerankStage.open(self.settings.reranker, reranker)  # recall's and message search's
        self._recall = Recall(self._core, rerank=self._rerank)
        self.graph = GraphView(self._core)

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

    @property
    def core(self) -> Core:
        """The typed context the services of this store share (backend, embedder, LLM, settings, clock)."""
        return self._core

    def close(self) -> None:
        """Close the store (and the embedder, if this Memory created it). Idempotent."""
        self._recall.close()
        self._close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        return self._core.filter(
            namespace, user=user, agent=agent, thread=thread, kinds=kinds, tags=tags, tags_all=tags_all,
            metadata=metadata, since=since, until=until, clearance=clearance,
            include_expired=include_expired, include_invalid=include_invalid, ids=ids,
        )  # fmt: skip

    # -- writes ------------------------------------------------------------
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
        created_at. Identical content in the same scope returns the existing id, except across
        secrets: a secret write is its own row, and no write is answered with a secret's id.
        ``extract`` (False | True | "inline" | "background") runs extraction and update decisions
        (see :mod:`memory.extraction.pipeline`):
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
        self._items.check_batch(entries)
        extract = defaults.pop("extract", False)
        if extract is False or extract is None:
            return [result.id for _, result in self._items.add(entries, defaults)]
        from memory.extraction.pipeline import remember_extracting

        return remember_extracting(self._core, self._items, entries, defaults, extract)

    def extract(self, text: str, *, speaker: str | None = None, namespace: str | None = None) -> Extraction:
        """What extraction would store for ``text`` (facts, keywords, entities, relations); writes nothing.

        Known entity names of the namespace help the extractor. Raises
        InvalidInputError for bad text, LLMError when a model provider fails.
        """
        from memory.extraction.pipeline import preview

        return preview(self._core, text, speaker=speaker, namespace=namespace)

    def extract_pending(
        self, *, namespace: str | None = None, limit: int = 100, retry_failed: bool = False
    ) -> builtins.list[ExtractionReport]:
        """Run extraction for memories queued by ``remember(..., extract=...)``, oldest first.

        Returns one report per memory. An LLM failure marks that memory
        ``failed`` (kept, retried with ``retry_failed=True``) and moves on.
        """
        from memory.extraction.pipeline import extract_pending

        return extract_pending(self._core, namespace=namespace, limit=limit, retry_failed=retry_failed)

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
        type = check_link_type(type)
        ns = self._core.ns(namespace)
        for memory_id in (source_id, target_id):
            self.get(memory_id, namespace=ns, clearance=clearance)
        if source_id == target_id:
            raise InvalidInputError("a memory cannot be linked to itself")
        return self.graph.store.link(ns, source_id, target_id, type.strip(), self._clock())

    def update(
        self, memory_id: str, *, namespace: str | None = None, reason: str | None = None, **changes: Any
    ) -> MemoryItem:
        """Change fields of a memory; returns the updated item.

        Updatable: content, kind, context, tags, keywords, entities, metadata
        (replaced whole), source_ids, importance, valid_from, valid_to,
        sensitivity, expires_at. New content is re-embedded. The ledger keeps
        the state before and after. Raises NotFoundError or InvalidInputError.
        """
        return self._items.update(memory_id, namespace=namespace, reason=reason, **changes)

    def forget(self, memory_id: str | Sequence[str], *, namespace: str | None = None, reason: str | None = None) -> int:
        """Delete a memory (or several) with its index entries and vector; returns how many.

        The ledger keeps the deleted state. Raises NotFoundError when a single
        id is unknown.
        """
        return self._items.forget(memory_id, namespace=namespace, reason=reason)

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
        from memory.erase import forget_scope

        tiers = (lambda: self.tiers) if self._backend.tiers is not None else None
        return forget_scope(self._items, flt, tiers=tiers, feedback=self._backend.feedback, reason=reason)

    def embed_pending(self, *, namespace: str | None = None, limit: int = 1000) -> int:
        """Embed memories left pending (e.g. after an embedder outage); returns how many got vectors.

        Work is claimed in batches through the backend (a lease), so several
        processes can run this at once without embedding the same memory twice.
        On an embedder failure the batch stays pending with the error.
        """
        from memory.episodic.sync import embed_pending

        return embed_pending(self._core, namespace=namespace, limit=limit)

    # -- conversations, blocks, jobs (issue 4; code in memory.episodic) -----
    @cached_property
    def messages(self) -> Messages:
        """Conversation history: ``mem.messages.append(thread, content, role=...)``, recent, search, archive."""
        from memory.episodic.extract import extract_messages
        from memory.episodic.messages import Messages

        return Messages(
            self._core, on_stored=lambda stored: self.tiers.observe_messages(stored),
            extract=lambda found: extract_messages(self._core, found), rerank=self._rerank,
        )  # fmt: skip

    @cached_property
    def tiers(self) -> Tiers:
        """Hierarchical memory (MemoryOS): ``mem.tiers.add_page/retrieve/consolidate/configure/show``."""
        from memory.tiers.service import Tiers

        return Tiers(self._core, self.messages)

    @property
    def blocks(self) -> Blocks:
        """Working-memory blocks: ``mem.blocks.get/replace/append/history(label, user=...)``."""
        from memory.episodic.blocks import Blocks

        return Blocks(self._core)

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
        from memory.episodic.llm_summarize import default_summarizer
        from memory.episodic.summarize import end_conversation

        chosen = summarizer or self._summarizer or default_summarizer(self._llm)
        result = end_conversation(
            self._core, self.messages, self.blocks, thread, summarizer=chosen, namespace=namespace, user=user,
            agent=agent,
        )  # fmt: skip
        if self._backend.feedback is not None:  # the conversation record: summary and reward
            result.record = self.feedback.on_conversation_end(result, namespace)
        return result

    # -- feedback, prompt versions, reflection (issue 9; code in memory.feedback) --
    @cached_property
    def feedback(self) -> Feedback:
        """Conversation records: ``mem.feedback.record(thread, rating=..., feedback=...)``, get, list, summarize."""
        from memory.feedback.service import Feedback

        return Feedback(self._core, self.messages)

    @cached_property
    def prompts(self) -> Prompts:
        """Versioned prompts: ``mem.prompts.create/use/stats/suggest/promote``."""
        from memory.feedback.service import Prompts

        return Prompts(self._core, self.messages)

    def reflect(
        self, *, limit: int | None = None, dry_run: bool = False, namespace: str | None = None
    ) -> ReflectionReport:
        """One self-reflection pass: lessons from scored conversations, stored as ``procedural`` memories.

        Examines at most ``limit`` (default ``feedback.reflect_batch``) records not
        reflected yet; ``dry_run`` writes nothing. See :mod:`memory.feedback.reflect`.
        """
        return self.feedback.reflect(limit=limit, dry_run=dry_run, namespace=namespace)

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
            self._core, namespace=namespace, batch_size=batch_size,
            lease_seconds=DEFAULT_LEASE_SECONDS if lease_seconds is None else lease_seconds,
        )  # fmt: skip
        return job.estimate() if dry_run else job.run(max_batches=max_batches)

    def sync_status(self, *, namespace: str | None = None) -> SyncStatus:
        """Pending counts by status and the sync job's cursor and last error."""
        from memory.episodic.sync import SyncJob

        return SyncJob(self._core, namespace=namespace).status()

    def prune(self, *, namespace: str | None = None, media_grace_seconds: float | None = None) -> PruneReport:
        """Delete expired messages and memories (TTL); everywhere also unreferenced media files. Returns counts."""
        from memory.episodic.prune import MEDIA_GRACE_SECONDS, prune

        grace = MEDIA_GRACE_SECONDS if media_grace_seconds is None else media_grace_seconds
        return prune(self._core, self.messages, namespace=namespace, media_grace_seconds=grace)

    # -- reads -------------------------------------------------------------
    def get(self, memory_id: str, *, namespace: str | None = None, clearance: str = "private") -> MemoryItem:
        """The memory with this id. Raises NotFoundError (also for secrets without clearance)."""
        return self._items.get(memory_id, namespace=namespace, clearance=clearance)

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
        include_invalid: bool = False,
        recent: Sequence[str] | None = None,
    ) -> builtins.list[Hit]:
        """Find the memories most relevant to ``query``, best first, with score parts.

        Hybrid by default: vector KNN and BM25, fused by weighted RRF, then
        blended with recency and importance (see RetrievalConfig). Filters
        narrow the search; secrets need ``clearance='secret'``, expired items never come back,
        closed facts (valid_to passed) only with ``include_invalid``. Access statistics of the returned
        memories are updated. If the embedder fails, lexical results are still returned. ``recent``
        (the last turns, ``"Speaker: text"``) resolves a query that points back to them.
        """
        return self._recall.recall(
            query, limit=limit, namespace=namespace, user=user, agent=agent, thread=thread, kinds=kinds,
            tags=tags, tags_all=tags_all, metadata=metadata, since=since, until=until, clearance=clearance,
            include_invalid=include_invalid, retrieval=retrieval, recent=recent,
        )  # fmt: skip

    def warm(self, namespace: str | None = None) -> None:
        """Do recall's first-use work in ``namespace`` now (read-only: no access recorded; servers call it)."""
        self._recall.warm(namespace)

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
        return self._items.list(
            limit=limit, cursor=cursor, oldest_first=oldest_first, namespace=namespace, user=user, agent=agent,
            thread=thread, kinds=kinds, tags=tags, tags_all=tags_all, metadata=metadata, since=since,
            until=until, clearance=clearance, include_expired=include_expired, include_invalid=include_invalid,
        )  # fmt: skip

    def history(
        self, memory_id: str, *, namespace: str | None = None, clearance: str = "private"
    ) -> builtins.list[LedgerEntry]:
        """Every recorded change of a memory, oldest first (kept after deletion). Raises NotFoundError.

        Without ``clearance="secret"`` the history of a memory that is (or was
        deleted as) secret is unknown, and snapshots above ``clearance`` (and
        earlier ones holding the same text) are redacted: see :mod:`memory.policy`.
        """
        return self._items.history(memory_id, namespace=namespace, clearance=clearance)

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
        return self._items.stats(namespace=namespace, user=user, agent=agent, thread=thread, clearance=clearance)

    def namespaces(self) -> builtins.list[str]:
        """Namespaces that hold memories, messages or blocks."""
        return self._items.namespaces()

    def vector_of(self, memory_id: str, *, namespace: str | None = None) -> np.ndarray | None:
        """The stored embedding of a memory in the current embedder's space, or None."""
        return self._items.vector_of(memory_id, namespace=namespace)

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
