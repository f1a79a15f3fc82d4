"""The episodic→semantic sync job (DESIGN §9, seed 004).

Each batch is *claimed* through the store (a lease: ``claimed_by`` /
``claimed_until``), embedded, and written with ``set_message_vectors`` /
``set_vectors``, which mark the rows ``done`` and release the claim in one
transaction. So:

* several workers (processes, or machines on Postgres) share the work and
  never embed the same row at the same time;
* a worker killed mid-batch leaves its rows claimed; the next run on the
  same host releases the claims of workers whose process is gone (others'
  leases run out) and embeds them — nothing is lost, and nothing that was
  committed is embedded again;
* an embedder that fails or times out marks the batch ``failed`` with the
  error (retried by the next run); the rows not tried yet are released.

Secret and expired messages are marked ``skipped`` and never sent to the
embedder. Messages longer than ``CHUNK_CHARS`` are split into chunks; their
vector is the normalised mean of the chunk vectors. Memories (items) left
pending are embedded by the same job after the messages. Every row embedded
gets an ``embed`` audit entry in the ledger (model, dimension, size, batch,
worker, time; :mod:`memory.episodic.audit`), shown by ``history(id)``.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from memory.backends.episodic import EpisodicStore
from memory.embedders.base import CHUNK_CHARS, chunk_text, embed_chunked
from memory.episodic.audit import Embedded, audit_entries, write_audit
from memory.episodic.types import JobState, Message
from memory.errors import EmbeddingMismatchError, InvalidInputError, ProviderError
from memory.ids import new_id
from memory.services import Core, episodic_store
from memory.types import MemoryItem
from memory.windows import Windows, anchor_of

log = logging.getLogger(__name__)

__all__ = [
    "SyncJob",
    "SyncReport",
    "SyncEstimate",
    "SyncStatus",
    "embed_messages",
    "embed_item_batch",
    "chunk_text",
    "worker_id",
    "JOB_NAME",
    "CHUNK_CHARS",
    "DEFAULT_LEASE_SECONDS",
]

JOB_NAME = "semantic_sync"
#: How long a claim holds before another worker may take the rows.
DEFAULT_LEASE_SECONDS = 300.0


def worker_id() -> str:
    """A name for this worker: host, process id and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def dead_local_workers(workers: Sequence[str]) -> list[str]:
    """The workers named like :func:`worker_id` on this host whose process no longer exists.

    Conservative: names from other hosts, unparsable names, this process and
    live (or unknowable) processes are left out — their leases simply run out.
    """
    host = socket.gethostname()
    dead = []
    for name in workers:
        parts = name.rsplit(":", 2)
        if len(parts) != 3 or parts[0] != host or not parts[1].isdigit():
            continue
        pid = int(parts[1])
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            dead.append(name)
        except OSError:
            continue  # exists but not ours (EPERM), or unknowable
    return dead


def _message_text(message: Message) -> str:
    """What is embedded for a message: its text, else its media's name."""
    if message.content:
        return message.content
    if message.media is not None and message.media.name:
        return f"{message.content_type}: {message.media.name}"
    return ""


def _embed_chunked(core: Core, texts: Sequence[str]) -> np.ndarray:
    """Embed texts (long ones as the mean of their chunks); raises ProviderError."""
    return embed_chunked(core.embedder, texts, batch_size=core.settings.limits.embed_batch_size)


@dataclass
class _Outcome:
    done: int = 0
    failed: int = 0
    skipped: int = 0
    error: str | None = None
    last: Message | None = None
    embedded: list[Message] = field(default_factory=list)


def embed_messages(core: Core, store: EpisodicStore, messages: Sequence[Message]) -> _Outcome:
    """Embed claimed (or just appended) messages and store the result; never raises ProviderError.

    Secret, expired and textless messages are marked skipped. On an embedder
    failure the messages are marked failed with the error.
    """
    outcome = _Outcome()
    now = core.now()
    by_ns: dict[str, list[Message]] = {}
    for message in messages:
        reason = None
        if message.sensitivity == "secret":
            reason = "secret: never embedded"
        elif message.expires_at is not None and message.expires_at <= now:
            reason = "expired"
        elif not _message_text(message):
            reason = "no text to embed"
        if reason is not None:
            outcome.skipped += store.mark_messages(message.namespace, [message.id], "skipped", reason)
            continue
        by_ns.setdefault(message.namespace, []).append(message)
    if messages:
        outcome.last = max(messages, key=lambda m: (m.created_at, m.id))
    if not by_ns:
        return outcome
    try:
        core.ensure_space(strict=True)
    except ProviderError as exc:
        outcome.error = str(exc)
    for namespace, group in by_ns.items():
        ids = [m.id for m in group]
        if outcome.error is not None:
            outcome.failed += store.mark_messages(namespace, ids, "failed", outcome.error)
            continue
        try:
            matrix = _embed_chunked(core, [_message_text(m) for m in group])
        except EmbeddingMismatchError:
            store.mark_messages(namespace, ids, None, None)
            raise
        except ProviderError as exc:
            outcome.error = str(exc)
            outcome.failed += store.mark_messages(namespace, ids, "failed", outcome.error)
            continue
        outcome.done += store.set_message_vectors(
            namespace, core.embedder.model_name, [(m.id, matrix[j]) for j, m in enumerate(group)]
        )
        outcome.embedded.extend(group)
    return outcome


def embed_pending(core: Core, *, namespace: str | None = None, limit: int = 1000) -> int:
    """Embed memories left pending (see ``Memory.embed_pending``); returns how many got vectors."""
    ns = None if namespace is None else core.ns(namespace)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInputError(f"limit must be a positive integer, got {limit!r}")
    worker = worker_id()
    done, remaining = 0, limit
    while remaining > 0:
        size = min(remaining, core.settings.limits.embed_batch_size)
        claimed, embedded, error = embed_item_batch(
            core, namespace=ns, limit=size, worker=worker, failed_status="pending"
        )
        done += embedded
        remaining -= claimed
        if error is not None or claimed == 0:
            break
    return done


def embed_item_batch(
    core: Core,
    *,
    namespace: str | None,
    limit: int,
    worker: str,
    lease_seconds: float = DEFAULT_LEASE_SECONDS,
    failed_status: str = "failed",
    embedded: list[MemoryItem] | None = None,
) -> tuple[int, int, str | None]:
    """Claim and embed up to ``limit`` memories still pending; returns (claimed, embedded, error).

    On an embedder failure the claimed memories get ``failed_status`` and the error.
    The memories embedded are appended to ``embedded`` when given.
    """
    backend = core.backend
    if not core.ensure_space(strict=False):
        try:
            core.ensure_space(strict=True)
        except ProviderError as exc:
            return 0, 0, str(exc)
    items: list[MemoryItem] = backend.claim_pending_embeddings(namespace, limit, worker, lease_seconds, core.now())
    done = 0
    by_ns: dict[str, list[MemoryItem]] = {}
    for item in items:
        by_ns.setdefault(item.namespace, []).append(item)
    groups = list(by_ns.items())
    for position, (ns, group) in enumerate(groups):
        try:
            matrix = _embed_chunked(core, [i.content for i in group])
        except ProviderError as exc:
            for rest_ns, rest in groups[position:]:
                backend.mark_embedding(rest_ns, [i.id for i in rest], failed_status, str(exc))
            return len(items), done, str(exc)
        done += backend.set_vectors(ns, core.embedder.model_name, [(i.id, matrix[j]) for j, i in enumerate(group)])
        if embedded is not None:
            embedded.extend(group)
        Windows(core).refresh(ns, [anchor_of(i) for i in group])  # window vectors need the new vectors
    return len(items), done, None


@dataclass
class SyncReport:
    """What one sync run did."""

    messages_done: int = 0
    messages_failed: int = 0
    messages_skipped: int = 0
    items_done: int = 0
    items_failed: int = 0
    batches: int = 0
    seconds: float = 0.0
    error: str | None = None
    stopped: bool = False
    released: int = 0
    messages_extracted: int = 0
    facts_stored: int = 0
    extraction_failed: int = 0
    extraction_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass
class SyncEstimate:
    """What a sync run would do now (``--dry-run``): nothing is claimed or written."""

    messages: int
    message_chars: int
    items: int
    item_chars: int
    batches: int
    approx_tokens: int
    embedder: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass
class SyncStatus:
    """Counts by embedding status plus the job's persisted state."""

    messages: dict[str, int]
    items: dict[str, int]
    state: JobState | None
    pending: int = field(default=0)
    claimed: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "messages": self.messages,
            "items": self.items,
            "pending": self.pending,
            "claimed": self.claimed,
            "state": None if self.state is None else self.state.model_dump(mode="json"),
        }


class SyncJob:
    """Embeds pending messages (then pending memories) in claimed batches; see the module docstring."""

    def __init__(
        self,
        core: Core,
        *,
        namespace: str | None = None,
        batch_size: int | None = None,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        worker: str | None = None,
        include_items: bool = True,
    ) -> None:
        """Configure a run over ``namespace`` (all when None). Raises InvalidInputError."""
        if batch_size is not None and (
            isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
        ):
            raise InvalidInputError(f"batch_size must be a positive integer, got {batch_size!r}")
        if isinstance(lease_seconds, bool) or not isinstance(lease_seconds, (int, float)) or not lease_seconds > 0:
            raise InvalidInputError(f"lease_seconds must be a positive number, got {lease_seconds!r}")
        self.core = core
        self.namespace = None if namespace is None else core.ns(namespace)
        self.batch_size = batch_size or core.settings.limits.embed_batch_size
        self.lease_seconds = float(lease_seconds)
        self.worker = worker or worker_id()
        self.include_items = include_items
        self.store = episodic_store(core.backend)

    @property
    def state_name(self) -> str:
        """The job-state key: ``semantic_sync`` or ``semantic_sync:<namespace>``."""
        return JOB_NAME if self.namespace is None else f"{JOB_NAME}:{self.namespace}"

    def _save(self, **changes: Any) -> None:
        """Add the counters in ``changes`` to the stored state and set its other fields, atomically."""

        def apply(current: JobState | None) -> JobState:
            state = current or JobState(name=self.state_name)
            update = dict(changes)
            for counter in ("processed", "failed", "skipped", "runs"):
                if counter in update:
                    update[counter] = getattr(state, counter) + update[counter]
            return state.model_copy(update=update)

        self.store.update_job_state(self.state_name, apply)

    def run(self, *, max_batches: int | None = None, should_stop: Callable[[], bool] | None = None) -> SyncReport:
        """Work until nothing is pending, an embedder error, ``max_batches`` or ``should_stop()``.

        ``should_stop`` is checked between batches (a batch in flight always
        finishes). Returns a SyncReport; the job state is updated after each batch.
        """
        started = time.perf_counter()
        report = SyncReport()
        # Rows claimed by a worker of this host that was killed go back now, not when the lease ends.
        report.released = self.store.release_claims(dead_local_workers(list(self.store.message_claims(self.namespace))))
        self._save(runs=1, last_started_at=self.core.now(), worker=self.worker)
        messages_left = True
        while True:
            if should_stop is not None and should_stop():
                report.stopped = True
                break
            if max_batches is not None and report.batches >= max_batches:
                break
            if messages_left:
                claimed = self.store.claim_pending_messages(
                    self.namespace, self.batch_size, self.worker, self.lease_seconds, self.core.now()
                )
                if not claimed:
                    messages_left = False
                    continue
                outcome = embed_messages(self.core, self.store, claimed)
                self._audit([
                    Embedded(m.id, m.namespace, "message", len(_message_text(m)), m.sensitivity, m.thread)
                    for m in outcome.embedded
                ])  # fmt: skip
                if self.core.settings.extraction.messages:
                    self._extract(claimed, outcome, report)
                report.batches += 1
                report.messages_done += outcome.done
                report.messages_failed += outcome.failed
                report.messages_skipped += outcome.skipped
                changes: dict[str, Any] = {
                    "processed": outcome.done, "failed": outcome.failed, "skipped": outcome.skipped,
                }  # fmt: skip
                if outcome.last is not None:
                    changes["cursor"] = f"{outcome.last.created_at.isoformat()}/{outcome.last.id}"
                if outcome.error is not None:
                    changes.update(last_error=outcome.error, last_error_at=self.core.now())
                self._save(**changes)
                if outcome.error is not None:
                    report.error = outcome.error
                    break
                continue
            if not self.include_items:
                break
            items: list[MemoryItem] = []
            claimed_items, done, error = embed_item_batch(
                self.core, namespace=self.namespace, limit=self.batch_size, worker=self.worker,
                lease_seconds=self.lease_seconds, embedded=items,
            )  # fmt: skip
            self._audit([Embedded(i.id, i.namespace, "memory", len(i.content), i.sensitivity, i.thread) for i in items])
            if claimed_items == 0 and error is None:
                break
            report.batches += 1
            report.items_done += done
            report.items_failed += claimed_items - done if error else 0
            if error is not None:
                report.error = error
                self._save(processed=done, failed=claimed_items - done, last_error=error, last_error_at=self.core.now())
                break
            self._save(processed=done)
        report.seconds = time.perf_counter() - started
        self._save(last_finished_at=self.core.now())
        return report

    def _audit(self, rows: Sequence[Embedded]) -> None:
        """Append one ``embed`` ledger entry per row embedded in this batch (memory.episodic.audit)."""
        if rows:
            embedder = self.core.embedder
            entries = audit_entries(
                rows, job=JOB_NAME, model=embedder.model_name, dim=embedder.dimension, batch=new_id(),
                worker=self.worker, at=self.core.now(),
            )  # fmt: skip
            write_audit(self.core.backend, entries)

    def _extract(self, claimed: Sequence[Message], outcome: _Outcome, report: SyncReport) -> None:
        """Store the facts of the messages this batch embedded (settings.extraction.messages); never raises LLMError."""
        from memory.episodic.extract import extract_messages, skip_reason

        del outcome
        by_ns: dict[str, list[str]] = {}
        for message in claimed:
            if skip_reason(self.core, message) is None:
                by_ns.setdefault(message.namespace, []).append(message.id)
        # only the ones embedded now: failed ones are extracted when a later run marks them done
        found = [m for ns, ids in by_ns.items() for m in self.store.get_messages(ns, ids)]
        ready = [m for m in found if m.embedding_status == "done"]
        for result in extract_messages(self.core, ready):
            if result.status == "done":
                report.messages_extracted += 1
                report.facts_stored += len(result.memory_ids)
            elif result.status == "failed":
                report.extraction_failed += 1
                report.extraction_error = result.error
                log.warning("extraction of message %s failed (message kept): %s", result.message_id, result.error)

    def estimate(self) -> SyncEstimate:
        """What a run would embed now; claims and writes nothing."""
        messages, message_chars = self.store.pending_message_volume(self.namespace, self.core.now())
        items = item_chars = 0
        if self.include_items:
            namespaces = [self.namespace] if self.namespace is not None else self.core.backend.namespaces()
            for ns in namespaces:
                for item in self.core.backend.pending_embeddings(ns, 1_000_000):
                    if item.sensitivity != "secret":
                        items += 1
                        item_chars += len(item.content)
        total = messages + items
        return SyncEstimate(
            messages=messages,
            message_chars=message_chars,
            items=items,
            item_chars=item_chars,
            batches=-(-total // self.batch_size) if total else 0,
            approx_tokens=(message_chars + item_chars) // 4,
            embedder=self.core.embedder.model_name,
        )

    def status(self) -> SyncStatus:
        """Messages and memories by embedding status, plus the persisted job state."""
        messages = self.store.message_status_counts(self.namespace)
        items: dict[str, int] = {}
        namespaces = [self.namespace] if self.namespace is not None else self.core.backend.namespaces()
        for ns in namespaces:
            flt = self.core.filter(ns, clearance="secret", include_expired=True, include_invalid=True)
            for key, count in self.core.backend.group_counts(flt, "embedding_status").items():
                items[key] = items.get(key, 0) + count
        pending = sum(messages.get(s, 0) + items.get(s, 0) for s in ("pending", "failed"))
        return SyncStatus(
            messages=messages,
            items=items,
            state=self.store.get_job_state(self.state_name),
            pending=pending,
            claimed=self.store.message_claims(self.namespace),
        )
