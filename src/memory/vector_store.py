"""Seed 001's API, as its ADR wrote it: three functions over the default store.

The simplest way in::

    from memory.vector_store import store_memory, search_memories, get_memory_context

    store_memory("User prefers dark mode", source="user", context_type="fact", agent_id="echo")
    results = search_memories("user preferences", agent_id="echo", limit=5)
    context = get_memory_context("what does user like?", max_tokens=1000)

Each entry carries the ADR's fields (id, content, source, context_type,
agent_id, task_id, session_id, metadata, timestamp, relevance_score). The
functions run on one :class:`~memory.Memory` per process, opened on first use
from the configuration (``MEMORY_DATABASE``, the config file, or
``./memory.db``); :func:`use` points them at another store.

Mapping onto memories: ``context_type`` is the memory's kind, ``agent_id`` its
agent, ``session_id`` its thread; ``source`` and ``task_id`` are kept in its
metadata under ``source`` and ``task_id`` (so a caller's own metadata may not
use those two keys). Search is the library's hybrid recall;
``relevance_score`` is its final score.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory.context.tokens import counter_for
from memory.errors import InvalidInputError
from memory.memory import Memory
from memory.types import Hit, MemoryItem

__all__ = [
    "CONTEXT_TYPES",
    "MemoryEntry",
    "store_memory",
    "search_memories",
    "get_memory_context",
    "get_memory",
    "use",
    "default_memory",
]

#: The ADR's context types (any other lowercase word is accepted too, as a memory kind).
CONTEXT_TYPES = ("conversation", "fact", "document")
_RESERVED = ("source", "task_id")

_lock = threading.Lock()
_memory: Memory | None = None


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    """One stored memory with the fields of ADR 019 (``relevance_score`` is set by searches)."""

    id: str
    content: str
    source: str
    context_type: str = "conversation"
    agent_id: str | None = None
    task_id: str | None = None
    session_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    timestamp: str = ""
    relevance_score: float | None = None

    @classmethod
    def from_item(cls, item: MemoryItem, score: float | None = None) -> MemoryEntry:
        """The entry for a stored memory (and its search score)."""
        meta = dict(item.metadata)
        source = meta.pop("source", None)
        task_id = meta.pop("task_id", None)
        return cls(
            id=item.id,
            content=item.content,
            source=str(source) if source is not None else "",
            context_type=item.kind,
            agent_id=item.agent,
            task_id=str(task_id) if task_id is not None else None,
            session_id=item.thread,
            metadata=meta,
            timestamp=item.created_at.isoformat(),
            relevance_score=score,
        )

    def to_dict(self) -> dict[str, Any]:
        """The entry as a JSON-ready dict."""
        return {
            "id": self.id, "content": self.content, "source": self.source, "context_type": self.context_type,
            "agent_id": self.agent_id, "task_id": self.task_id, "session_id": self.session_id,
            "metadata": dict(self.metadata), "timestamp": self.timestamp, "relevance_score": self.relevance_score,
        }  # fmt: skip


def use(memory: Memory | None) -> None:
    """Run the functions of this module on ``memory`` (None: reopen the configured store on next use).

    The caller keeps ownership of ``memory`` and closes it.
    """
    global _memory
    with _lock:
        _memory = memory


def default_memory() -> Memory:
    """The store these functions use: the one given to :func:`use`, else the configured default."""
    global _memory
    with _lock:
        if _memory is None:
            _memory = Memory()
        return _memory


def _text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{what} must be a non-empty string")
    return value


def store_memory(
    content: str,
    source: str,
    context_type: str = "conversation",
    agent_id: str | None = None,
    task_id: str | None = None,
    session_id: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> MemoryEntry:
    """Store ``content`` and return its entry. Raises InvalidInputError (nothing stored) for bad input.

    Storing the same content again with the same agent and session returns the existing entry.
    """
    _text(source, "source")
    if task_id is not None:
        _text(task_id, "task_id")
    extra = dict(metadata or {})
    clash = [key for key in _RESERVED if key in extra]
    if clash:
        raise InvalidInputError(f"metadata keys {clash} are reserved for the source and task_id arguments")
    extra["source"] = source
    if task_id is not None:
        extra["task_id"] = task_id
    mem = default_memory()
    memory_id = mem.remember(content, kind=context_type, agent=agent_id, thread=session_id, metadata=extra)
    return MemoryEntry.from_item(mem.get(memory_id))


def get_memory(memory_id: str) -> MemoryEntry:
    """The entry with this id. Raises NotFoundError."""
    return MemoryEntry.from_item(default_memory().get(memory_id))


def search_memories(
    query: str,
    context_type: str | None = None,
    agent_id: str | None = None,
    session_id: str | None = None,
    limit: int = 10,
    min_relevance: float = 0.0,
) -> list[MemoryEntry]:
    """Entries relevant to ``query``, best first, each with ``relevance_score`` >= ``min_relevance``.

    Raises InvalidInputError for an empty query, a bad limit or a non-numeric ``min_relevance``.
    """
    if isinstance(min_relevance, bool) or not isinstance(min_relevance, (int, float)):
        raise InvalidInputError(f"min_relevance must be a number, got {min_relevance!r}")
    hits: list[Hit] = default_memory().recall(query, limit=limit, kinds=context_type, agent=agent_id, thread=session_id)
    return [MemoryEntry.from_item(h.item, h.score) for h in hits if h.score >= min_relevance]


def _line(entry: MemoryEntry) -> str:
    when = datetime.fromisoformat(entry.timestamp).strftime("%Y-%m-%d") if entry.timestamp else ""
    label = f"[{entry.context_type}{', ' + entry.source if entry.source else ''}{', ' + when if when else ''}]"
    return f"- {label} {entry.content}"


def get_memory_context(query: str, max_tokens: int = 2000, **filters: Any) -> str:
    """The entries relevant to ``query`` as one text of at most ``max_tokens`` tokens, best first.

    ``filters`` are those of :func:`search_memories` (context_type, agent_id,
    session_id, limit, min_relevance) plus ``model`` (picks the tokenizer).
    Returns "" when nothing matches. Raises InvalidInputError for a bad budget or filter.
    """
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise InvalidInputError(f"max_tokens must be a positive integer, got {max_tokens!r}")
    counter = counter_for(filters.pop("model", None))
    unknown = set(filters) - {"context_type", "agent_id", "session_id", "limit", "min_relevance"}
    if unknown:
        raise InvalidInputError(f"unknown filter(s) {sorted(unknown)} for get_memory_context")
    entries = search_memories(query, **filters)
    header = "Relevant memories:\n"
    if not entries or counter.count(header) >= max_tokens:
        return ""
    text = header
    for entry in entries:
        candidate = text + _line(entry) + "\n"
        if counter.count(candidate) > max_tokens:
            if text == header:  # the best entry alone is over the budget: its start, cut to fit
                text = counter.truncate(text + _line(entry), max_tokens)
            break
        text = candidate
    return text.rstrip("\n") if text != header else ""
