"""Pure record building: validation, normalisation, content hashing, ledger snapshots.

Nothing here does I/O. The facade calls these before anything reaches a backend,
so bad input is rejected before a transaction starts.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from memory.errors import InvalidInputError, InvalidVectorError
from memory.filters import METADATA_KEY_PATTERN
from memory.ids import new_id
from memory.limits import (
    KIND_PATTERN,
    MAX_CONTENT_CHARS,
    MAX_ITEM_CHARS,
    MAX_LIMIT,
    MAX_LINK_TYPE_CHARS,
    MAX_LIST_ITEMS,
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    MAX_NAME_CHARS,
    MAX_QUERY_CHARS,
    MAX_REASON_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    VISIBLE,
)
from memory.types import SENSITIVITY_LEVELS, LedgerEntry, LedgerOp, MemoryItem

__all__ = [
    "check_limit",
    "check_seconds",
    "offset_time",
    "content_hash",
    "normalise_content",
    "check_encodable",
    "check_query",
    "check_reason",
    "check_name",
    "check_kind",
    "check_link_type",
    "check_tags",
    "check_metadata",
    "check_importance",
    "check_datetime",
    "check_sensitivity",
    "check_vector",
    "snapshot",
    "ledger_entry",
    "build_item",
    "normalise_name",
    "DEFAULT_MAX_CONTENT_CHARS",
]

DEFAULT_MAX_CONTENT_CHARS = MAX_CONTENT_CHARS
_KIND = re.compile(KIND_PATTERN)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_VISIBLE = re.compile(VISIBLE)  # blank = no such character, as the schemas' patterns say
#: What ``json.dumps(metadata, ensure_ascii=False)`` writes, without building an encoder per call.
_METADATA_JSON = json.JSONEncoder(ensure_ascii=False)


def check_encodable(text: str, what: str) -> None:
    """Raise InvalidInputError when ``text`` cannot be encoded as UTF-8 (e.g. lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"{what} is not valid Unicode text (lone surrogate at {exc.start})") from exc


def check_query(query: object) -> str:
    """A search's query, stripped: text of at most MAX_QUERY_CHARS with a visible character, valid Unicode.

    What every search's schema says of its query (the servers' ``Query``); raises InvalidInputError otherwise,
    before any work.
    """
    if not isinstance(query, str):
        raise InvalidInputError(f"query must be a string, got {type(query).__name__}")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInputError(f"query is longer than {MAX_QUERY_CHARS} characters")
    text = query.strip()
    if not _VISIBLE.search(text):
        raise InvalidInputError("query is empty: give the text to search for")
    check_encodable(text, "query")
    return text


def check_reason(reason: object) -> str | None:
    """A change's reason as recorded in a history: None, or text of at most MAX_REASON_CHARS without NUL.

    Raises InvalidInputError otherwise (PostgreSQL cannot store a NUL in text).
    """
    if reason is None:
        return None
    if not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS:
        raise InvalidInputError(f"reason must be a string of at most {MAX_REASON_CHARS} characters")
    check_encodable(reason, "reason")
    if "\x00" in reason:
        raise InvalidInputError("reason contains NUL characters")
    return reason


def normalise_content(content: object, *, max_chars: int = DEFAULT_MAX_CONTENT_CHARS) -> str:
    """Validate memory content and return it NFC-normalised and stripped.

    Raises InvalidInputError for non-strings, empty or whitespace-only text,
    NUL/control characters, or text longer than ``max_chars``.
    """
    if not isinstance(content, str):
        raise InvalidInputError(f"content must be a string, got {type(content).__name__}")
    if len(content) > max_chars:  # before any work, on the text as given (as the schemas say)
        raise InvalidInputError(
            f"content is {len(content)} characters, over the limit of {max_chars} "
            "(raise limits.max_content_chars or split the text)"
        )
    check_encodable(content, "content")
    text = unicodedata.normalize("NFC", content).strip()
    if not _VISIBLE.search(text):
        raise InvalidInputError("content is empty: give the text to remember")
    if _CONTROL.search(text):
        raise InvalidInputError("content contains control characters (e.g. NUL); remove them")
    return text


def content_hash(text: str) -> str:
    """SHA-256 of content with whitespace runs collapsed and NFKC applied (case kept)."""
    canon = " ".join(unicodedata.normalize("NFKC", text).split())
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


def check_name(value: object, what: str, *, optional: bool = True) -> str | None:
    """Validate a scope name (namespace, user, agent, thread) or an id."""
    if value is None:
        if optional:
            return None
        raise InvalidInputError(f"{what} is required")
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__}")
    if not _VISIBLE.search(value):
        raise InvalidInputError(f"{what} must not be empty")
    if len(value) > MAX_NAME_CHARS:
        raise InvalidInputError(f"{what} is longer than {MAX_NAME_CHARS} characters")
    check_encodable(value, what)
    if _CONTROL.search(value) or "\n" in value or "\r" in value:
        raise InvalidInputError(f"{what} contains control characters")
    return value


def check_link_type(value: object) -> str:
    """A link's type: a name's characters (not blank, no control character or line break), at most 64 of them."""
    if isinstance(value, str) and len(value) > MAX_LINK_TYPE_CHARS:
        raise InvalidInputError(f"link type is longer than {MAX_LINK_TYPE_CHARS} characters")
    checked = check_name(value, "link type", optional=False)
    assert checked is not None  # required
    return checked


def check_kind(value: object) -> str:
    """Validate a kind: lowercase identifier such as 'fact', 'conversation', 'document'."""
    if not isinstance(value, str) or not _KIND.fullmatch(value):
        raise InvalidInputError(
            f"kind {value!r} is not valid: use a lowercase word like 'fact', 'conversation' or 'document'"
        )
    return value


def _bounded(values: object, what: str, most: int) -> list[object]:
    """``values`` as a list of at most ``most`` entries, counted before any other work (a generator is
    read no further than ``most + 1``). Raises InvalidInputError for a string or a non-iterable."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InvalidInputError(f"{what} must be a list of strings")
    if isinstance(values, Sequence):
        if len(values) > most:
            raise InvalidInputError(f"{what} has {len(values)} entries, over the limit of {most}")
        return list(values)
    out = list(itertools.islice(values, most + 1))
    if len(out) > most:
        raise InvalidInputError(f"{what} has more than {most} entries")
    return out


def check_tags(tags: object) -> tuple[str, ...]:
    """Validate tags: at most 64 strings of 1–100 characters; returns them deduplicated in order.

    The count is checked before anything else (duplicates count too), so the work is bounded.
    """
    if tags is None:
        return ()
    out: dict[str, None] = {}
    for tag in _bounded(tags, "tags", MAX_TAGS):
        if not isinstance(tag, str):
            raise InvalidInputError(f"tag {tag!r:.80} must be a string")
        if len(tag) > MAX_TAG_CHARS:
            raise InvalidInputError(f"tag {tag[:40]!r}… must be 1 to {MAX_TAG_CHARS} characters")
        tag = tag.strip()
        check_encodable(tag, "tag")
        if not _VISIBLE.search(tag):
            raise InvalidInputError(f"tag {tag!r} must be 1 to {MAX_TAG_CHARS} characters")
        if _CONTROL.search(tag) or "\n" in tag or "\r" in tag:
            raise InvalidInputError(f"tag {tag!r} contains control characters")
        out.setdefault(tag)
    return tuple(out)


def check_strings(values: object, what: str) -> tuple[str, ...]:
    """Validate a list of at most 256 non-empty strings of at most 200 characters (source ids, keywords, entities)."""
    if values is None:
        return ()
    out: list[str] = []
    for value in _bounded(values, what, MAX_LIST_ITEMS):
        if not isinstance(value, str) or not _VISIBLE.search(value):
            raise InvalidInputError(f"{what} must hold non-empty strings, got {value!r:.80}")
        if len(value) > MAX_ITEM_CHARS:
            raise InvalidInputError(f"{what} entries must be at most {MAX_ITEM_CHARS} characters")
        check_encodable(value, what)
        out.append(value)
    return tuple(out)


def _check_json(value: Any, path: str, depth: int = 1) -> None:
    if value is None or isinstance(value, (str, bool, int)):
        return
    if depth > MAX_METADATA_DEPTH:
        raise InvalidInputError(f"metadata is nested deeper than {MAX_METADATA_DEPTH} levels (at {path:.200})")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(f"metadata {path} is {value}: only finite numbers are allowed")
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInputError(f"metadata keys must be strings (at {path})")
            _check_json(item, f"{path}.{key}", depth + 1)
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_json(item, f"{path}[{index}]", depth + 1)
        return
    raise InvalidInputError(f"metadata {path} has unsupported type {type(value).__name__}")


def check_metadata(metadata: object) -> dict[str, Any]:
    """Validate metadata: a JSON object with safe top-level keys, finite numbers, ≤ 64 kB, ≤ 32 levels deep."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidInputError("metadata must be a JSON object (a dict)")
    for key in metadata:
        if not isinstance(key, str) or not METADATA_KEY_PATTERN.fullmatch(key):
            raise InvalidInputError(
                f"metadata key {key!r} is not allowed: use letters, digits, '_', '-' or '.' (max 64)"
            )
    _check_json(metadata, "$")
    encoded = _METADATA_JSON.encode(metadata)
    check_encodable(encoded, "metadata")
    if len(encoded.encode("utf-8")) > MAX_METADATA_BYTES:
        raise InvalidInputError(f"metadata is larger than {MAX_METADATA_BYTES} bytes")
    result: dict[str, Any] = json.loads(encoded)
    return result


def check_importance(value: object) -> float:
    """Validate importance: a finite number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"importance must be a number between 0 and 1, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise InvalidInputError(f"importance must be between 0 and 1, got {value!r}")
    return number


def check_datetime(value: object, what: str) -> datetime | None:
    """Validate an optional datetime (aware, or naive taken as UTC; ISO strings accepted)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError as exc:
            raise InvalidInputError(f"{what} {value!r} is not an ISO 8601 date-time") from exc
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{what} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:  # year 1 with a positive offset, year 9999 with a negative one
        raise InvalidInputError(f"{what} {value.isoformat()} is outside the calendar once converted to UTC") from None


def check_seconds(value: object, what: str) -> float:
    """A positive, finite duration in seconds from a number or a timedelta; InvalidInputError otherwise."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise InvalidInputError(f"{what} must be seconds (a number) or a timedelta")
    if not seconds > 0 or seconds == float("inf"):
        raise InvalidInputError(f"{what} must be a positive, finite number of seconds")
    return seconds


def offset_time(at: datetime, seconds: float, what: str) -> datetime:
    """``at`` moved by ``seconds`` (may be negative); InvalidInputError when it leaves the calendar."""
    try:
        return at + timedelta(seconds=seconds)
    except OverflowError:
        raise InvalidInputError(f"{what} of {abs(seconds):g} seconds is too large for the calendar") from None


def check_sensitivity(value: object) -> str:
    """Validate a sensitivity level: 'normal', 'private' or 'secret'."""
    if value not in SENSITIVITY_LEVELS:
        raise InvalidInputError(f"sensitivity must be one of normal, private, secret; got {value!r}")
    return str(value)


def check_vector(vector: object, dim: int) -> np.ndarray:
    """Validate one vector of length ``dim``: finite numbers; returns float32, unit length.

    Raises InvalidVectorError for the wrong type or length, NaN/inf, or a zero vector.
    """
    if isinstance(vector, (str, bytes)) or vector is None:
        raise InvalidVectorError(f"vector must be a sequence of {dim} numbers")
    try:
        array = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidVectorError(f"vector must be a sequence of {dim} numbers: {exc}") from exc
    if array.ndim != 1 or array.shape[0] != dim:
        raise InvalidVectorError(f"vector has shape {array.shape}, expected ({dim},)")
    if not np.isfinite(array).all():
        raise InvalidVectorError("vector contains NaN or infinite values")
    norm = float(np.linalg.norm(array))
    if norm == 0.0:
        raise InvalidVectorError("vector is all zeros; it has no direction to compare")
    normalised: np.ndarray = (array / norm).astype(np.float32)
    return normalised


def snapshot(item: MemoryItem) -> dict[str, Any]:
    """A JSON-ready dict of an item, for ledger before/after."""
    data: dict[str, Any] = item.model_dump(mode="json")
    return data


def ledger_entry(
    op: LedgerOp,
    item_id: str,
    namespace: str,
    at: datetime,
    *,
    before: MemoryItem | None = None,
    after: MemoryItem | None = None,
    reason: str | None = None,
) -> LedgerEntry:
    """Build a ledger entry for a change to one item. Raises InvalidInputError for a reason check_reason refuses."""
    reason = check_reason(reason)
    return LedgerEntry(
        id=new_id(),
        namespace=namespace,
        item_id=item_id,
        op=op,
        at=at,
        before=snapshot(before) if before is not None else None,
        after=snapshot(after) if after is not None else None,
        reason=reason,
    )


def build_item(
    *,
    content: str,
    namespace: str,
    now: datetime,
    user: str | None = None,
    agent: str | None = None,
    thread: str | None = None,
    kind: str = "fact",
    context: str | None = None,
    tags: Sequence[str] = (),
    keywords: Sequence[str] = (),
    entities: Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None,
    source_ids: Sequence[str] = (),
    importance: float = 0.5,
    valid_from: datetime | None = None,
    valid_to: datetime | None = None,
    sensitivity: str = "normal",
    expires_at: datetime | None = None,
    created_at: datetime | None = None,
    item_id: str | None = None,
) -> MemoryItem:
    """Build a new MemoryItem from already-validated parts (embedding still pending)."""
    return MemoryItem(
        id=item_id or new_id(),
        namespace=namespace,
        user=user,
        agent=agent,
        thread=thread,
        kind=kind,
        content=content,
        context=context,
        tags=tuple(tags),
        keywords=tuple(keywords),
        entities=tuple(entities),
        metadata=dict(metadata or {}),
        source_ids=tuple(source_ids),
        importance=importance,
        created_at=created_at or now,
        updated_at=now,
        valid_from=valid_from,
        valid_to=valid_to,
        sensitivity=sensitivity,
        expires_at=expires_at,
        content_hash=content_hash(content),
        embedding_status="pending",
    )


def check_limit(limit: object, what: str = "limit") -> int:
    """``limit`` as an int from 1 to MAX_LIMIT; InvalidInputError otherwise."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInputError(f"{what} must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
    return limit


def normalise_name(name: str) -> str:
    """Lower-case, single-spaced, without surrounding punctuation or a leading article: the merge key.

    The graph store keys entities by it (one entity per name), so it lives with the record rules.
    """
    text = re.sub(r"\s+", " ", name.replace("’", "'")).strip(" \t\n.,;:!?\"'()[]{}").lower()
    return re.sub(r"^(?:the|a|an) ", "", text)
