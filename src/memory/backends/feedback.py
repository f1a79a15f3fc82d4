"""The feedback storage contract: conversation records and prompt versions (seed 003 §2.4, §5).

A backend that stores feedback exposes a :class:`FeedbackStore` as
``backend.feedback`` (typed on :class:`~memory.backends.base.Backend`;
None when the backend keeps no feedback). Records are the frozen models of
:mod:`memory.feedback.types`, kept per namespace:

* one :class:`~memory.feedback.types.ConversationRecord` per (namespace, thread), upserted;
* prompt versions keyed by (namespace, name, version), version numbers
  assigned by the store (1, 2, …) so concurrent writers never collide;
  exactly one ``active`` version per name once any exists, and
  :meth:`FeedbackStore.promote` switches it in one transaction.

Rules (``tests/contract/test_feedback.py`` checks them on every backend):
nothing crosses a namespace; bad input raises
:class:`~memory.errors.InvalidInputError` and changes nothing (checked here,
once, by :func:`check_record` and :func:`check_prompt_text`); an unknown
version raises :class:`~memory.errors.NotFoundError`.
"""

from __future__ import annotations

import builtins
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from memory.errors import InvalidInputError
from memory.feedback.types import (
    MAX_PROMPT_CHARS,
    MAX_TEXT_CHARS,
    ConversationRecord,
    PromptOrigin,
    PromptVersion,
    VersionAggregate,
)
from memory.limits import MAX_VERSION
from memory.records import check_encodable, check_metadata, check_name

__all__ = [
    "FeedbackStore",
    "RecordQuery",
    "check_record",
    "check_prompt_text",
    "check_version",
    "check_origin",
    "MAX_LIST",
]

#: Most records one list call returns.
MAX_LIST = 10_000
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ORIGINS = ("manual", "suggested", "llm")


@dataclass(frozen=True)
class RecordQuery:
    """Which conversation records to list (all conditions must hold), oldest update first unless ``newest_first``."""

    prompt_name: str | None = None
    prompt_version: int | None = None
    reward_below: float | None = None
    scored: bool | None = None
    unreflected: bool = False
    user: str | None = None
    agent: str | None = None
    limit: int = 100
    newest_first: bool = False


def _check_text(value: object, what: str, limit: int) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__}")
    if len(value) > limit:
        raise InvalidInputError(f"{what} is {len(value)} characters, over the limit of {limit}")
    check_encodable(value, what)
    if _CONTROL.search(value):
        raise InvalidInputError(f"{what} contains control characters (e.g. NUL); remove them")


def check_version(version: object, what: str = "version") -> int:
    """A prompt version number (an integer ≥ 1). Raises InvalidInputError."""
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= MAX_VERSION:
        raise InvalidInputError(f"{what} must be an integer from 1 to {MAX_VERSION}, got {version!r}")
    return version


def check_origin(origin: object) -> PromptOrigin:
    """``manual``, ``suggested`` or ``llm``. Raises InvalidInputError."""
    if origin not in _ORIGINS:
        raise InvalidInputError(f"origin must be one of {', '.join(_ORIGINS)}, got {origin!r}")
    return origin  # type: ignore[return-value]


def check_prompt_text(text: object) -> str:
    """Non-empty prompt text of at most MAX_PROMPT_CHARS characters. Raises InvalidInputError."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError("prompt text must be a non-empty string")
    _check_text(text, "prompt text", MAX_PROMPT_CHARS)
    return text


def check_record(record: ConversationRecord, namespace: str | None = None) -> None:
    """Refuse a record that cannot be stored: bad names, texts, reward, components. Raises InvalidInputError."""
    if not isinstance(record, ConversationRecord):
        raise InvalidInputError(f"a conversation record is a ConversationRecord, got {type(record).__name__}")
    check_name(record.namespace, "namespace", optional=False)
    check_name(record.thread, "thread", optional=False)
    check_name(record.user, "user")
    check_name(record.agent, "agent")
    check_name(record.prompt_name, "prompt name")
    if namespace is not None and record.namespace != namespace:
        raise InvalidInputError(f"record of namespace {record.namespace!r} written to {namespace!r}")
    if record.prompt_version is not None:
        check_version(record.prompt_version, "prompt_version")
        if record.prompt_name is None:
            raise InvalidInputError("a prompt version needs its prompt name")
    for what in ("summary", "feedback", "example", "suggestion"):
        _check_text(getattr(record, what), what, MAX_TEXT_CHARS)
    for what in ("reward", "rating"):
        value = getattr(record, what)
        if value is not None and (not math.isfinite(value) or not 0.0 <= value <= 1.0):
            raise InvalidInputError(f"{what} must be a number from 0 to 1, got {value!r}")
    check_metadata(record.reward_components)
    if len(record.message_ids) > MAX_LIST:
        raise InvalidInputError(f"a record cites at most {MAX_LIST} messages")
    for message_id in record.message_ids:
        check_name(message_id, "message id", optional=False)


def check_query(query: RecordQuery) -> RecordQuery:
    """Validate a :class:`RecordQuery`. Raises InvalidInputError."""
    check_name(query.prompt_name, "prompt name")
    check_name(query.user, "user")
    check_name(query.agent, "agent")
    if query.prompt_version is not None:
        check_version(query.prompt_version, "prompt_version")
    if query.reward_below is not None and (
        isinstance(query.reward_below, bool)
        or not isinstance(query.reward_below, (int, float))
        or not math.isfinite(query.reward_below)
    ):
        raise InvalidInputError(f"reward_below must be a finite number, got {query.reward_below!r}")
    if isinstance(query.limit, bool) or not isinstance(query.limit, int) or not 1 <= query.limit <= MAX_LIST:
        raise InvalidInputError(f"limit must be an integer from 1 to {MAX_LIST}, got {query.limit!r}")
    return query


def record_json(record: ConversationRecord) -> str:
    """The stored document of a record (``reflected_at`` and ``revision`` live in their own columns)."""
    return json.dumps(
        record.model_dump(mode="json", exclude={"reflected_at", "revision"}), ensure_ascii=False, sort_keys=True
    )


def prompt_json(version: PromptVersion) -> str:
    """The stored document of a prompt version (``status``/``promoted_at`` live in their own columns)."""
    return json.dumps(
        version.model_dump(mode="json", exclude={"status", "promoted_at"}), ensure_ascii=False, sort_keys=True
    )


def check_new_prompt(
    namespace: str, name: str, text: str, origin: PromptOrigin, parent: int | None, note: object
) -> None:
    """Validate the arguments of :meth:`FeedbackStore.add_prompt`; raises InvalidInputError."""
    check_name(namespace, "namespace", optional=False)
    check_name(name, "prompt name", optional=False)
    check_prompt_text(text)
    check_origin(origin)
    if parent is not None:
        check_version(parent, "parent")
    if not isinstance(note, str) or len(note) > 2000:
        raise InvalidInputError("note must be a string of at most 2000 characters")


@runtime_checkable
class FeedbackStore(Protocol):
    """Storage of conversation records and prompt versions of one backend."""

    def put_record(self, record: ConversationRecord) -> None:
        """Insert or replace the record of (namespace, thread) (``reflected_at`` as given)."""
        ...

    def save_record(self, record: ConversationRecord, expected: int | None) -> bool:
        """Write ``record`` only if the stored one is still at revision ``expected`` (None: only if absent).

        Returns False, changing nothing, when another writer got there first
        (the caller rereads and retries). ``record.revision`` is stored as given.
        """
        ...

    def get_record(self, namespace: str, thread: str) -> ConversationRecord | None:
        """The record of a thread, or None."""
        ...

    def namespaces(self) -> builtins.list[str]:
        """Namespaces that hold conversation records or prompt versions, sorted."""
        ...

    def iter_records(self, namespace: str, batch_size: int = 1000) -> Iterator[ConversationRecord]:
        """Every record of a namespace, by thread, read ``batch_size`` at a time (export, migrate)."""
        ...

    def list_records(self, namespace: str, query: RecordQuery) -> builtins.list[ConversationRecord]:
        """Records matching ``query``, ordered by last update (oldest first unless ``newest_first``), then thread."""
        ...

    def mark_reflected(self, namespace: str, threads: builtins.list[str], at: datetime) -> int:
        """Set ``reflected_at`` of these threads' records (bumping their revision); returns how many changed."""
        ...

    def delete_records(
        self, namespace: str, *, thread: str | None = None, user: str | None = None, agent: str | None = None
    ) -> int:
        """Delete the records of a scope (every record of the namespace when no scope is given)."""
        ...

    def add_prompt(
        self,
        namespace: str,
        name: str,
        text: str,
        *,
        at: datetime,
        origin: PromptOrigin = "manual",
        parent: int | None = None,
        note: str = "",
        activate: bool = False,
    ) -> PromptVersion:
        """Store the next version of ``name`` (1 for a new name, always active); ``activate`` makes it the active one.

        Raises NotFoundError for an unknown ``parent`` version.
        """
        ...

    def put_prompt(self, version: PromptVersion) -> bool:
        """Store a version exactly as given (import); False when (namespace, name, version) exists.

        An ``active`` version is stored ``retired`` when the name already has an active one.
        """
        ...

    def get_prompt(self, namespace: str, name: str, version: int | None = None) -> PromptVersion | None:
        """One version, or the active one when ``version`` is None; None when there is none."""
        ...

    def prompt_versions(self, namespace: str, name: str) -> builtins.list[PromptVersion]:
        """Every version of ``name``, oldest first."""
        ...

    def prompt_names(self, namespace: str) -> builtins.list[str]:
        """Names of the prompts of a namespace, sorted."""
        ...

    def promote(self, namespace: str, name: str, version: int, at: datetime) -> PromptVersion:
        """Make ``version`` the active one (the former active one becomes ``retired``) atomically.

        Raises NotFoundError for an unknown version.
        """
        ...

    def aggregates(self, namespace: str, name: str) -> builtins.list[tuple[VersionAggregate, int]]:
        """Per version of ``name``: (scored count, sum, sum of squares of rewards) and all attributed records."""
        ...

    def delete_prompts(self, namespace: str) -> int:
        """Delete every prompt version of a namespace; returns how many."""
        ...
