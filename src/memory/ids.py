"""Time-ordered unique ids (UUIDv7 layout) and UTC clock helpers."""

from __future__ import annotations

import os
import threading
import time
import uuid
from datetime import UTC, datetime

__all__ = ["new_id", "utcnow", "to_epoch", "from_epoch"]


_last: list[int] = [0, 0]  # last millisecond and random part, for monotonic ids within a process
_lock = threading.Lock()


def new_id() -> str:
    """Return a new UUIDv7 string: 48-bit millisecond time, then randomness.

    Ids sort by creation time; within one process they are strictly increasing
    (the random part is incremented within a millisecond).
    """
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last[0]:
            ms = _last[0]
            rand = _last[1] + 1
        else:
            rand = int.from_bytes(os.urandom(10), "big") >> 6  # 74 random bits
        _last[0], _last[1] = ms, rand
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76  # version 7
    value |= ((rand >> 62) & 0xFFF) << 64
    value |= 0b10 << 62  # RFC 4122 variant
    value |= rand & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))


def utcnow() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)


def to_epoch(value: datetime) -> float:
    """Seconds since the epoch for an aware datetime (naive ones are taken as UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def from_epoch(value: float) -> datetime:
    """An aware UTC datetime from seconds since the epoch."""
    return datetime.fromtimestamp(value, UTC)
