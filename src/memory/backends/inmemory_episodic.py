"""The in-process :class:`~memory.backends.episodic.EpisodicStore`: dicts, numpy and the shared BM25."""

from __future__ import annotations

import builtins
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta

import numpy as np

from memory.backends.base import ChannelHit, Vector
from memory.backends.episodic import MESSAGE_STATUSES
from memory.backends.inmemory import bm25_search
from memory.episodic.query import message_matches
from memory.episodic.types import Block, BlockChange, JobState, Message, MessageQuery, ThreadInfo
from memory.errors import InvalidInputError
from memory.retrieval.text import words

__all__ = ["InMemoryEpisodicStore"]

_BlockKey = tuple[str, str | None, str | None, str]


def _order(message: Message) -> tuple[str, int]:
    return (message.thread, message.turn)


class InMemoryEpisodicStore:
    """Conversations, blocks and job state in process memory; thread-safe."""

    def __init__(self) -> None:
        """Create an empty store."""
        self._lock = threading.RLock()
        self._messages: dict[str, Message] = {}
        self._archived: dict[str, Message] = {}
        self._tokens: dict[str, Counter[str]] = {}
        self._vectors: dict[str, dict[str, Vector]] = {}
        self._claims: dict[str, tuple[str, datetime]] = {}
        self._turns: dict[tuple[str, str], int] = {}
        self._blocks: dict[_BlockKey, Block] = {}
        self._block_log: list[BlockChange] = []
        self._jobs: dict[str, JobState] = {}

    # -- messages ----------------------------------------------------------
    def _store(self, message: Message) -> None:
        self._messages[message.id] = message
        self._tokens[message.id] = Counter(words(message.content))

    def _drop(self, message_id: str) -> None:
        self._messages.pop(message_id, None)
        self._tokens.pop(message_id, None)
        self._claims.pop(message_id, None)
        for space in self._vectors.values():
            space.pop(message_id, None)

    def append_messages(self, messages: Sequence[Message]) -> builtins.list[Message]:
        """Store messages with the next turns of their threads; all or nothing."""
        with self._lock:
            for message in messages:
                if message.id in self._messages or message.id in self._archived:
                    raise InvalidInputError(f"message id {message.id} already exists")
            out: builtins.list[Message] = []
            for message in messages:
                key = (message.namespace, message.thread)
                turn = self._turns.get(key, 0) + 1
                self._turns[key] = turn
                stored = message.model_copy(update={"turn": turn})
                self._store(stored)
                out.append(stored)
            return out

    def import_messages(
        self, entries: Sequence[tuple[Message, str | None, Vector | None]], *, archived: bool = False
    ) -> int:
        """Store exported messages as they are; skip known ids."""
        with self._lock:
            written = 0
            for message, model, vector in entries:
                if message.id in self._messages or message.id in self._archived:
                    continue
                key = (message.namespace, message.thread)
                self._turns[key] = max(self._turns.get(key, 0), message.turn)
                if archived:
                    self._archived[message.id] = message
                else:
                    self._store(message)
                    if model is not None and vector is not None:
                        self._vectors.setdefault(model, {})[message.id] = np.asarray(vector, dtype=np.float32)
                written += 1
            return written

    def get_messages(
        self, namespace: str, ids: Sequence[str], *, include_archived: bool = False
    ) -> builtins.list[Message]:
        """Messages by id, in the order asked."""
        with self._lock:
            out = []
            for message_id in ids:
                found = self._messages.get(message_id)
                if found is None and include_archived:
                    found = self._archived.get(message_id)
                if found is not None and found.namespace == namespace:
                    out.append(found)
            return out

    def _matching(self, query: MessageQuery) -> builtins.list[Message]:
        return [m for m in self._messages.values() if message_matches(query, m)]

    def list_messages(self, query: MessageQuery, limit: int, *, newest_first: bool = False) -> builtins.list[Message]:
        """Matching hot messages by (thread, turn)."""
        with self._lock:
            found = sorted(self._matching(query), key=_order, reverse=newest_first)
        return found[: max(int(limit), 0)]

    def count_messages(self, query: MessageQuery) -> int:
        """Number of matching hot messages."""
        with self._lock:
            return len(self._matching(query))

    def threads(
        self, namespace: str, *, user: str | None = None, agent: str | None = None, limit: int = 100
    ) -> builtins.list[ThreadInfo]:
        """Threads with hot or archived messages, most recent first."""
        with self._lock:
            groups: dict[str, list[Message]] = {}
            archived: Counter[str] = Counter()
            for message in self._messages.values():
                if message.namespace == namespace:
                    groups.setdefault(message.thread, []).append(message)
            for message in self._archived.values():
                if message.namespace == namespace:
                    archived[message.thread] += 1
                    groups.setdefault(message.thread, [])
            infos = []
            for thread, members in groups.items():
                if user is not None and not any(m.user == user for m in members):
                    continue
                if agent is not None and not any(m.agent == agent for m in members):
                    continue
                infos.append(
                    ThreadInfo(
                        namespace=namespace,
                        thread=thread,
                        messages=len(members),
                        last_turn=self._turns.get((namespace, thread), 0),
                        first_at=min((m.created_at for m in members), default=None),
                        last_at=max((m.created_at for m in members), default=None),
                        archived=archived[thread],
                    )
                )
        infos.sort(key=lambda t: (t.last_at is not None, t.last_at, t.thread), reverse=True)
        return infos[:limit]

    def search_messages_lexical(self, query: MessageQuery, terms: Sequence[str], k: int) -> builtins.list[ChannelHit]:
        """BM25 over the namespace's hot messages, restricted to matches of ``query``."""
        with self._lock:
            corpus = {i: self._tokens[i] for i, m in self._messages.items() if m.namespace == query.namespace}
            wanted = {m.id for m in self._matching(query)}
            return bm25_search(corpus, wanted, terms, k)

    def search_messages_vector(
        self, query: MessageQuery, model: str, vector: Vector, k: int
    ) -> builtins.list[ChannelHit]:
        """Exact cosine KNN over matching hot messages."""
        with self._lock:
            space = self._vectors.get(model, {})
            ids = [m.id for m in self._matching(query) if m.id in space]
            if not ids or k <= 0:
                return []
            matrix = np.vstack([space[i] for i in ids])
        sims = matrix @ np.asarray(vector, dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda j: (-float(sims[j]), ids[j]))[:k]
        return [ChannelHit(ids[j], float(sims[j])) for j in order]

    def get_message_vectors(self, namespace: str, model: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors by id."""
        with self._lock:
            space = self._vectors.get(model, {})
            return {
                i: space[i].copy()
                for i in ids
                if i in space and i in self._messages and self._messages[i].namespace == namespace
            }

    # -- the sync job ------------------------------------------------------
    def claim_pending_messages(
        self, namespace: str | None, limit: int, worker: str, lease_seconds: float, now: datetime
    ) -> builtins.list[Message]:
        """Lease up to ``limit`` unleased pending/failed messages, oldest first."""
        with self._lock:
            free = [
                m
                for m in self._messages.values()
                if m.embedding_status in ("pending", "failed")
                and (namespace is None or m.namespace == namespace)
                and (m.id not in self._claims or self._claims[m.id][1] <= now)
            ]
            free.sort(key=lambda m: (m.embedding_status == "failed", m.created_at, m.id))
            chosen = free[: max(int(limit), 0)]
            until = now + timedelta(seconds=lease_seconds)
            for message in chosen:
                self._claims[message.id] = (worker, until)
            return chosen

    def set_message_vectors(self, namespace: str, model: str, updates: Sequence[tuple[str, Vector]]) -> int:
        """Attach vectors, mark done, release claims."""
        with self._lock:
            count = 0
            for message_id, vector in updates:
                message = self._messages.get(message_id)
                if message is None or message.namespace != namespace:
                    continue
                for space in self._vectors.values():
                    space.pop(message_id, None)
                self._vectors.setdefault(model, {})[message_id] = np.asarray(vector, dtype=np.float32)
                self._messages[message_id] = message.model_copy(
                    update={"embedding_status": "done", "embedding_model": model, "embedding_error": None}
                )
                self._claims.pop(message_id, None)
                count += 1
            return count

    def mark_messages(self, namespace: str, ids: Sequence[str], status: str | None, error: str | None) -> int:
        """Set status/error and release claims."""
        if status is not None and status not in MESSAGE_STATUSES:
            raise InvalidInputError(f"embedding status must be one of {', '.join(MESSAGE_STATUSES)}; got {status!r}")
        with self._lock:
            count = 0
            for message_id in ids:
                message = self._messages.get(message_id)
                if message is None or message.namespace != namespace:
                    continue
                update: dict[str, object] = {"embedding_error": error}
                if status is not None:
                    update["embedding_status"] = status
                self._messages[message_id] = message.model_copy(update=update)
                self._claims.pop(message_id, None)
                count += 1
            return count

    def message_claims(self, namespace: str | None) -> dict[str, int]:
        """Claimed messages by worker."""
        with self._lock:
            return dict(
                Counter(
                    worker
                    for message_id, (worker, _) in self._claims.items()
                    if message_id in self._messages
                    and (namespace is None or self._messages[message_id].namespace == namespace)
                )
            )

    def release_claims(self, workers: Sequence[str]) -> int:
        """Drop the claims of ``workers``."""
        with self._lock:
            freed = [i for i, (worker, _) in self._claims.items() if worker in set(workers)]
            for message_id in freed:
                del self._claims[message_id]
            return len(freed)

    def message_status_counts(self, namespace: str | None) -> dict[str, int]:
        """Hot messages by embedding status."""
        with self._lock:
            return dict(
                Counter(
                    m.embedding_status for m in self._messages.values() if namespace is None or m.namespace == namespace
                )
            )

    def pending_message_volume(self, namespace: str | None, now: datetime) -> tuple[int, int]:
        """Count and characters of the messages a sync would embed now."""
        with self._lock:
            todo = [
                m
                for m in self._messages.values()
                if m.embedding_status in ("pending", "failed")
                and m.sensitivity != "secret"
                and (m.expires_at is None or m.expires_at > now)
                and (namespace is None or m.namespace == namespace)
            ]
            return len(todo), sum(len(m.content) for m in todo)

    # -- retention ---------------------------------------------------------
    @staticmethod
    def _selected(
        message: Message, namespace: str, thread: str, before_turn: int | None, older_than: datetime | None
    ) -> bool:
        if message.namespace != namespace or message.thread != thread:
            return False
        return (before_turn is not None and message.turn < before_turn) or (
            older_than is not None and message.created_at < older_than
        )

    def archive_messages(
        self, namespace: str, thread: str, *, before_turn: int | None, older_than: datetime | None, at: datetime
    ) -> int:
        """Move selected hot messages to the archive."""
        with self._lock:
            chosen = [
                m for m in self._messages.values() if self._selected(m, namespace, thread, before_turn, older_than)
            ]
            for message in chosen:
                self._drop(message.id)
                self._archived[message.id] = message
            return len(chosen)

    def delete_messages(
        self, namespace: str, thread: str, *, before_turn: int | None, older_than: datetime | None
    ) -> int:
        """Delete selected hot and archived messages."""
        with self._lock:
            hot = [
                m.id for m in self._messages.values() if self._selected(m, namespace, thread, before_turn, older_than)
            ]
            cold = [
                m.id for m in self._archived.values() if self._selected(m, namespace, thread, before_turn, older_than)
            ]
            for message_id in hot:
                self._drop(message_id)
            for message_id in cold:
                del self._archived[message_id]
            return len(hot) + len(cold)

    def delete_message(self, namespace: str, message_id: str) -> bool:
        """Delete one message (hot or archived) by id."""
        with self._lock:
            found = False
            hot = self._messages.get(message_id)
            if hot is not None and hot.namespace == namespace:
                self._drop(message_id)
                found = True
            cold = self._archived.get(message_id)
            if cold is not None and cold.namespace == namespace:
                del self._archived[message_id]
                found = True
            return found

    def iter_archived(self, namespace: str, thread: str | None = None) -> Iterator[Message]:
        """Archived messages by (thread, turn)."""
        with self._lock:
            found = [
                m
                for m in self._archived.values()
                if m.namespace == namespace and (thread is None or m.thread == thread)
            ]
        yield from sorted(found, key=_order)

    def purge_expired_messages(self, namespace: str | None, now: datetime) -> int:
        """Delete expired hot and archived messages."""
        with self._lock:

            def expired(m: Message) -> bool:
                return (namespace is None or m.namespace == namespace) and (
                    m.expires_at is not None and m.expires_at <= now
                )

            hot = [m.id for m in self._messages.values() if expired(m)]
            cold = [m.id for m in self._archived.values() if expired(m)]
            for message_id in hot:
                self._drop(message_id)
            for message_id in cold:
                del self._archived[message_id]
            return len(hot) + len(cold)

    def media_in_use(self, hashes: Sequence[str]) -> set[str]:
        """Referenced media hashes among ``hashes``."""
        wanted = set(hashes)
        with self._lock:
            messages = [*self._messages.values(), *self._archived.values()]
            return {m.media.sha256 for m in messages if m.media is not None and m.media.sha256 in wanted}

    def message_namespaces(self) -> builtins.list[str]:
        """Namespaces with messages or blocks."""
        with self._lock:
            found = {m.namespace for m in self._messages.values()} | {m.namespace for m in self._archived.values()}
            found |= {key[0] for key in self._blocks}
            return sorted(found)

    # -- blocks ------------------------------------------------------------
    def get_block(self, namespace: str, user: str | None, agent: str | None, label: str) -> Block | None:
        """The block, or None."""
        with self._lock:
            return self._blocks.get((namespace, user, agent, label))

    def list_blocks(self, namespace: str, user: str | None, agent: str | None) -> builtins.list[Block]:
        """Blocks of exactly this scope, by label."""
        with self._lock:
            found = [b for k, b in self._blocks.items() if k[:3] == (namespace, user, agent)]
        return sorted(found, key=lambda b: b.label)

    def iter_blocks(self, namespace: str) -> builtins.list[Block]:
        """Every block of the namespace."""
        with self._lock:
            found = [b for k, b in self._blocks.items() if k[0] == namespace]
        return sorted(found, key=lambda b: (b.user or "", b.agent or "", b.label))

    def write_block(self, block: Block, expected_version: int, change: BlockChange) -> bool:
        """Compare-and-set on the version; records the change."""
        key = (block.namespace, block.user, block.agent, block.label)
        with self._lock:
            current = self._blocks.get(key)
            if (current.version if current is not None else 0) != expected_version:
                return False
            self._blocks[key] = block
            self._block_log.append(change)
            return True

    def block_history(
        self, namespace: str, user: str | None, agent: str | None, label: str
    ) -> builtins.list[BlockChange]:
        """Changes of a block, oldest first."""
        with self._lock:
            return [
                c for c in self._block_log if (c.namespace, c.user, c.agent, c.label) == (namespace, user, agent, label)
            ]

    # -- job state ---------------------------------------------------------
    def get_job_state(self, name: str) -> JobState | None:
        """The job's state, or None."""
        with self._lock:
            return self._jobs.get(name)

    def put_job_state(self, state: JobState) -> None:
        """Replace the job's state."""
        with self._lock:
            self._jobs[state.name] = state

    def update_job_state(self, name: str, change: Callable[[JobState | None], JobState]) -> JobState:
        """Apply ``change`` to the job's state under the store's lock."""
        with self._lock:
            state = change(self._jobs.get(name))
            self._jobs[name] = state
            return state
