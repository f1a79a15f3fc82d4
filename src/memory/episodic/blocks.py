"""`mem.blocks`: labelled working-memory blocks per scope, with size limits and history.

The standard labels (seed 003, DESIGN §2) are :data:`STANDARD_LIMITS`; other
labels (lowercase identifiers) may be used with :data:`DEFAULT_LIMIT` or a
limit given when the block is first written. Writes are compare-and-set on the
block's version (retried on a race), so two writers appending at once both
land. Every change is kept in the block's history.
"""

from __future__ import annotations

import builtins
import re

from memory import limits
from memory.backends.episodic import EpisodicStore
from memory.episodic.types import Block, BlockChange
from memory.errors import BlockLimitError, InvalidInputError, StorageError
from memory.records import check_encodable, check_name, check_reason
from memory.services import Core, episodic_store

__all__ = ["Blocks", "STANDARD_LIMITS", "DEFAULT_LIMIT", "MAX_LIMIT", "check_label"]

#: Size limits (characters) of the standard blocks.
STANDARD_LIMITS: dict[str, int] = {
    "user_info": 2_000,
    "last_conversation_summary": 2_000,
    "goals_and_status": 2_000,
    "important_context": 2_000,
    "agent_beliefs": 2_000,
    "agent_info": 2_000,
}
DEFAULT_LIMIT = 2_000
MAX_LIMIT = 100_000
_LABEL = re.compile(limits.LABEL_PATTERN)
_RETRIES = 20


def check_label(label: object) -> str:
    """Validate a block label: a lowercase identifier such as ``user_info``."""
    if not isinstance(label, str) or not _LABEL.fullmatch(label):
        raise InvalidInputError(
            f"block label {label!r} is not valid: use a lowercase identifier like {', '.join(sorted(STANDARD_LIMITS))}"
        )
    return label


def _check_text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__}")
    check_encodable(value, what)
    if "\x00" in value:
        raise InvalidInputError(f"{what} contains NUL characters")
    return value


def _check_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInputError(f"block limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
    return limit


class Blocks:
    """Working-memory blocks of a :class:`~memory.Memory` (``mem.blocks``)."""

    def __init__(self, core: Core) -> None:
        """Bind to the store's backend, clock and default namespace."""
        self._core = core

    @property
    def store(self) -> EpisodicStore:
        """The backend's episodic store (StoreUnavailableError if it has none)."""
        return episodic_store(self._core.backend)

    def _scope(self, namespace: str | None, user: str | None, agent: str | None) -> tuple[str, str | None, str | None]:
        return self._core.ns(namespace), check_name(user, "user"), check_name(agent, "agent")

    def get(
        self, label: str, *, user: str | None = None, agent: str | None = None, namespace: str | None = None
    ) -> Block:
        """The block (an empty one with its default limit if never written)."""
        label = check_label(label)
        ns, user, agent = self._scope(namespace, user, agent)
        found = self.store.get_block(ns, user, agent, label)
        if found is not None:
            return found
        return Block(namespace=ns, user=user, agent=agent, label=label, limit=STANDARD_LIMITS.get(label, DEFAULT_LIMIT))

    def all(
        self, *, user: str | None = None, agent: str | None = None, namespace: str | None = None, standard: bool = True
    ) -> builtins.list[Block]:
        """The blocks of a scope by label; with ``standard`` the standard labels are included even if empty."""
        ns, user, agent = self._scope(namespace, user, agent)
        stored = {b.label: b for b in self.store.list_blocks(ns, user, agent)}
        if standard:
            for label, limit in STANDARD_LIMITS.items():
                stored.setdefault(label, Block(namespace=ns, user=user, agent=agent, label=label, limit=limit))
        return [stored[label] for label in sorted(stored)]

    def _write(
        self,
        label: str,
        op: str,
        make: object,
        *,
        user: str | None,
        agent: str | None,
        namespace: str | None,
        limit: int | None,
        reason: str | None,
    ) -> Block:
        label = check_label(label)
        if limit is not None:
            limit = _check_limit(limit)
        reason = check_reason(reason)
        ns, user, agent = self._scope(namespace, user, agent)
        store = self.store
        for _ in range(_RETRIES):
            current = store.get_block(ns, user, agent, label)
            old_value = current.value if current is not None else ""
            old_version = current.version if current is not None else 0
            cap = limit or (current.limit if current is not None else STANDARD_LIMITS.get(label, DEFAULT_LIMIT))
            new_value = make(old_value) if callable(make) else str(make)
            if len(new_value) > cap:
                raise BlockLimitError(
                    f"block {label!r} would be {len(new_value)} characters, over its limit of {cap}; "
                    "shorten the text, replace the block, or give a larger limit"
                )
            now = self._core.now()
            block = Block(
                namespace=ns, user=user, agent=agent, label=label, value=new_value, limit=cap,
                version=old_version + 1, updated_at=now,
            )  # fmt: skip
            change = BlockChange(
                namespace=ns, user=user, agent=agent, label=label, version=block.version, op=op,
                before=old_value, after=new_value, at=now, reason=reason,
            )  # fmt: skip
            if store.write_block(block, old_version, change):
                return block
        raise StorageError(f"block {label!r} kept changing under concurrent writers; retry")

    def replace(
        self,
        label: str,
        value: str,
        *,
        user: str | None = None,
        agent: str | None = None,
        namespace: str | None = None,
        limit: int | None = None,
        reason: str | None = None,
    ) -> Block:
        """Set a block's text (and optionally its limit). Raises BlockLimitError when it does not fit."""
        text = _check_text(value, "block value")
        return self._write(
            label, "replace", text, user=user, agent=agent, namespace=namespace, limit=limit, reason=reason
        )

    def append(
        self,
        label: str,
        text: str,
        *,
        user: str | None = None,
        agent: str | None = None,
        namespace: str | None = None,
        separator: str = "\n",
        reason: str | None = None,
    ) -> Block:
        """Add ``text`` to the end of a block (after ``separator`` if not empty). Raises BlockLimitError."""
        addition = _check_text(text, "text")
        if not addition.strip():
            raise InvalidInputError("text to append is empty")

        def grow(old: str) -> str:
            return old + separator + addition if old else addition

        return self._write(
            label, "append", grow, user=user, agent=agent, namespace=namespace, limit=None, reason=reason
        )

    def history(
        self, label: str, *, user: str | None = None, agent: str | None = None, namespace: str | None = None
    ) -> builtins.list[BlockChange]:
        """Every change of a block, oldest first."""
        label = check_label(label)
        ns, user, agent = self._scope(namespace, user, agent)
        return self.store.block_history(ns, user, agent, label)

    def write_summary(
        self, label: str, value: str, *, user: str | None, agent: str | None, namespace: str | None, reason: str
    ) -> Block:
        """Set a block from a conversation summary, cutting it to the block's limit (used by end_conversation)."""
        text = _check_text(value, "block value")

        def fit(old: str) -> str:
            del old
            return text

        current = self.get(label, user=user, agent=agent, namespace=namespace)
        if len(text) > current.limit:
            text = text[: current.limit - 1].rstrip() + "…"
        return self._write(
            label, "summary", fit, user=user, agent=agent, namespace=namespace, limit=None, reason=reason
        )
