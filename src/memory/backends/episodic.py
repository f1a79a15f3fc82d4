"""The episodic storage contract: threads, messages, media references, blocks, job state.

A backend that supports conversations exposes an object implementing
:class:`EpisodicStore` as ``backend.episodic`` (typed on :class:`~memory.backends.base.Backend`);
the facade raises a clear error when it is None. Rules every implementation follows (``tests/contract/test_episodic*``
checks them against every backend):

* ``append_messages`` assigns turn numbers per (namespace, thread) atomically:
  two processes appending to one thread never get the same turn, and turns
  are never reused (also after messages are archived, cleared or purged).
  A batch is written whole or not at all.
* Claims (``claim_pending_messages``) are leases: a claimed message is not
  handed out again until its lease ends; ``set_message_vectors`` and
  ``mark_messages`` clear the claim. Two concurrent callers never get the
  same message (SQL backends: inside one write transaction / SKIP LOCKED).
* Archived messages leave the hot tables (listing, search, sync) but are kept,
  with their turn, for export (``iter_archived``).
* Nothing crosses a namespace; reads obey :class:`MessageQuery` policy
  (clearance, expiry) inside the store.
* ``write_block`` is compare-and-set on the block's version and records the
  change in the block history in the same transaction.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from memory.backends.values import ChannelHit, Vector
from memory.episodic.types import Block, BlockChange, JobState, Message, MessageQuery, ThreadInfo

__all__ = ["EpisodicStore", "MESSAGE_STATUSES"]

MESSAGE_STATUSES = ("pending", "done", "failed", "skipped")


@runtime_checkable
class EpisodicStore(Protocol):
    """Storage of conversations, working-memory blocks and job state. See the module docstring."""

    # -- messages ----------------------------------------------------------
    def append_messages(self, messages: Sequence[Message]) -> builtins.list[Message]:
        """Store new messages (their ``turn`` is ignored) and return them with turns assigned, in order."""
        ...

    def import_messages(
        self, entries: Sequence[tuple[Message, str | None, Vector | None]], *, archived: bool = False
    ) -> int:
        """Store exported messages as they are (id, turn, status; vector of model if given).

        Ids already stored (hot or archived) are skipped; thread turn counters
        move past the imported turns. Returns how many were written.
        """
        ...

    def get_messages(
        self, namespace: str, ids: Sequence[str], *, include_archived: bool = False
    ) -> builtins.list[Message]:
        """Messages by id in ``namespace``, in the order asked; unknown ids omitted."""
        ...

    def list_messages(self, query: MessageQuery, limit: int, *, newest_first: bool = False) -> builtins.list[Message]:
        """Hot messages matching ``query``, by (thread, turn) — oldest first unless ``newest_first``."""
        ...

    def count_messages(self, query: MessageQuery) -> int:
        """Number of hot messages matching ``query``."""
        ...

    def threads(
        self, namespace: str, *, user: str | None = None, agent: str | None = None, limit: int = 100
    ) -> builtins.list[ThreadInfo]:
        """Threads of ``namespace`` (optionally having messages of ``user``/``agent``), most recent first."""
        ...

    def search_messages_lexical(
        self, query: MessageQuery, terms: Sequence[str], k: int, *, exact_only: bool = False
    ) -> builtins.list[ChannelHit]:
        """BM25-ranked hot messages matching ``query`` that contain any of ``terms``, best first.

        ``exact_only``: nothing where the engine would bound its work (as ``Backend.search_lexical``).
        """
        ...

    def search_messages_vector(
        self, query: MessageQuery, model: str, vector: Vector, k: int
    ) -> builtins.list[ChannelHit]:
        """Hot messages matching ``query`` nearest ``vector`` in ``model``'s space; score = cosine."""
        ...

    def get_message_vectors(self, namespace: str, model: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors of messages (missing ones omitted)."""
        ...

    # -- the sync job ------------------------------------------------------
    def claim_pending_messages(
        self, namespace: str | None, limit: int, worker: str, lease_seconds: float, now: datetime
    ) -> builtins.list[Message]:
        """Claim up to ``limit`` hot messages whose status is 'pending' or 'failed' and no live lease holds.

        Pending before failed (a row that keeps failing cannot starve new
        work), oldest first within each; any namespace when ``namespace`` is
        None. Secret and expired ones are claimed too, so the job can mark
        them 'skipped'.
        """
        ...

    def set_message_vectors(self, namespace: str, model: str, updates: Sequence[tuple[str, Vector]]) -> int:
        """Store vectors, mark the messages 'done' and clear their claims; returns rows updated."""
        ...

    def mark_messages(self, namespace: str, ids: Sequence[str], status: str | None, error: str | None) -> int:
        """Set embedding status and error (``status=None`` keeps it) and clear claims; returns rows updated."""
        ...

    def message_claims(self, namespace: str | None) -> dict[str, int]:
        """Claimed (not yet finished) messages by the worker holding them, expired leases included."""
        ...

    def release_claims(self, workers: Sequence[str]) -> int:
        """Clear the claims ``workers`` hold (e.g. workers known to be dead); statuses stay. Returns rows freed."""
        ...

    def message_status_counts(self, namespace: str | None) -> dict[str, int]:
        """Hot messages by embedding status (any namespace when None)."""
        ...

    def pending_message_volume(self, namespace: str | None, now: datetime) -> tuple[int, int]:
        """(count, total characters) of the messages a sync run would embed now (not secret, not expired)."""
        ...

    # -- retention ---------------------------------------------------------
    def archive_messages(
        self, namespace: str, thread: str, *, before_turn: int | None, older_than: datetime | None, at: datetime
    ) -> int:
        """Move a thread's messages with turn < ``before_turn`` or created before ``older_than`` to the archive."""
        ...

    def delete_messages(
        self, namespace: str, thread: str, *, before_turn: int | None, older_than: datetime | None
    ) -> int:
        """Delete (hot and archived) messages with turn < ``before_turn`` or created before ``older_than``."""
        ...

    def delete_message(self, namespace: str, message_id: str) -> bool:
        """Delete one message (hot or archived) by id; False when the namespace holds none with that id."""
        ...

    def iter_archived(self, namespace: str, thread: str | None = None) -> Iterator[Message]:
        """Archived messages of ``namespace`` (one thread if given), by (thread, turn)."""
        ...

    def purge_expired_messages(self, namespace: str | None, now: datetime) -> int:
        """Delete hot and archived messages whose ``expires_at`` <= ``now``; returns how many."""
        ...

    def media_in_use(self, hashes: Sequence[str]) -> set[str]:
        """Which of these media hashes a hot or archived message (any namespace) still references."""
        ...

    def message_namespaces(self) -> builtins.list[str]:
        """Namespaces that hold messages (hot or archived) or blocks."""
        ...

    # -- blocks ------------------------------------------------------------
    def get_block(self, namespace: str, user: str | None, agent: str | None, label: str) -> Block | None:
        """The block of a scope and label, or None if never written."""
        ...

    def list_blocks(self, namespace: str, user: str | None, agent: str | None) -> builtins.list[Block]:
        """Blocks of exactly this scope, by label."""
        ...

    def iter_blocks(self, namespace: str) -> builtins.list[Block]:
        """Every block of ``namespace`` (all scopes)."""
        ...

    def write_block(self, block: Block, expected_version: int, change: BlockChange) -> bool:
        """Store ``block`` if the stored version is ``expected_version`` (0: none yet); record ``change``.

        Returns False (nothing written) when another writer got there first.
        """
        ...

    def block_history(
        self, namespace: str, user: str | None, agent: str | None, label: str
    ) -> builtins.list[BlockChange]:
        """Recorded changes of a block, oldest first."""
        ...

    # -- job state ---------------------------------------------------------
    def get_job_state(self, name: str) -> JobState | None:
        """The persisted state of job ``name``, or None."""
        ...

    def put_job_state(self, state: JobState) -> None:
        """Persist the state of a job (replacing the previous one)."""
        ...

    def update_job_state(self, name: str, change: Callable[[JobState | None], JobState]) -> JobState:
        """Replace job ``name``'s state by ``change(current)`` atomically and return it.

        Read and write happen in one transaction holding the row (SQL
        backends), so concurrent workers adding to the counters lose nothing.
        """
        ...
