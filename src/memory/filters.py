"""Filters as data, and their pure evaluation.

A :class:`Filter` is what every read path hands a backend. SQL backends
compile it to parameterised predicates (values are always bound, never
interpolated); the in-memory backend evaluates it with :func:`matches`.
Both must agree; the contract suite checks that they do.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from memory import limits
from memory.types import SENSITIVITY_LEVELS, MemoryItem, Sensitivity

__all__ = ["Filter", "matches", "METADATA_KEY_PATTERN", "MetadataScalar"]

#: Metadata keys usable in filters: letters, digits, ``_ - .``, up to 64 chars.
METADATA_KEY_PATTERN = re.compile(limits.METADATA_KEY_PATTERN)

MetadataScalar = str | int | float | bool | None


class Filter(BaseModel):
    """Which memories a read may see.

    ``user``/``agent``/``thread`` set to ``None`` mean "any"; a value means an
    exact match. Policy fields (``clearance``, ``include_expired``,
    ``include_invalid``) default to the safe choice: no secrets, no expired
    items, no facts whose validity ended before ``now``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    namespace: str
    user: str | None = None
    agent: str | None = None
    thread: str | None = None
    kinds: tuple[str, ...] | None = None
    tags_any: tuple[str, ...] | None = None
    tags_all: tuple[str, ...] | None = None
    metadata: dict[str, MetadataScalar] | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    ids: tuple[str, ...] | None = None
    clearance: Sensitivity = "private"
    include_expired: bool = False
    include_invalid: bool = False
    now: datetime

    @field_validator("metadata")
    @classmethod
    def _check_metadata_keys(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return value
        for key in value:
            if not METADATA_KEY_PATTERN.fullmatch(key):
                raise ValueError(f"metadata filter key {key!r} is not allowed: use letters, digits, '_', '-' or '.'")
        return value

    @property
    def max_sensitivity_level(self) -> int:
        """The highest sensitivity level this filter admits."""
        return SENSITIVITY_LEVELS[self.clearance]


def _metadata_equal(actual: Any, expected: Any) -> bool:
    # Booleans and numbers are distinct JSON types: True must not equal 1.
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and actual == expected
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return float(actual) == float(expected)
    return type(actual) is type(expected) and actual == expected


def matches(flt: Filter, item: MemoryItem) -> bool:
    """Return True when ``item`` passes every predicate of ``flt``."""
    if item.namespace != flt.namespace:
        return False
    for name in ("user", "agent", "thread"):
        wanted = getattr(flt, name)
        if wanted is not None and getattr(item, name) != wanted:
            return False
    if flt.kinds is not None and item.kind not in flt.kinds:
        return False
    if flt.ids is not None and item.id not in flt.ids:
        return False
    if flt.tags_any is not None and not set(flt.tags_any) & set(item.tags):
        return False
    if flt.tags_all is not None and not set(flt.tags_all) <= set(item.tags):
        return False
    if flt.metadata:
        for key, expected in flt.metadata.items():
            if key not in item.metadata:
                return False
            actual = item.metadata[key]
            if expected is None:
                if actual is not None:
                    return False
            elif not _metadata_equal(actual, expected):
                return False
    if flt.created_after is not None and item.created_at < flt.created_after:
        return False
    if flt.created_before is not None and item.created_at >= flt.created_before:
        return False
    if SENSITIVITY_LEVELS[item.sensitivity] > flt.max_sensitivity_level:
        return False
    if not flt.include_expired and item.expires_at is not None and item.expires_at <= flt.now:
        return False
    if not flt.include_invalid:
        if item.valid_to is not None and item.valid_to <= flt.now:
            return False
    return True
