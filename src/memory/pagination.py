"""Keyset cursors for listings: the position ``(created_at, id)`` as ``"<epoch seconds>~<id>"``.

The format is plain so that a schema can describe it exactly
(:data:`memory.limits.CURSOR_PATTERN`): every string the pattern matches is a
valid position, and any other string is refused with InvalidInputError.
"""

from __future__ import annotations

import re
from datetime import datetime

from memory.errors import InvalidInputError
from memory.ids import from_epoch, to_epoch
from memory.limits import CURSOR_PATTERN

__all__ = ["encode_cursor", "decode_cursor"]

_CURSOR = re.compile(CURSOR_PATTERN)
_EARLIEST, _LATEST = -62129999999.0, 253399999999.0


def encode_cursor(created_at: datetime, item_id: str) -> str:
    """Cursor pointing just after the item (created_at, item_id); times in the first days of year 1 are
    and in the last days of 9999 are taken at the pattern's bounds, which only matters for items dated then."""
    return f"{min(max(to_epoch(created_at), _EARLIEST), _LATEST):.6f}~{item_id}"


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """Parse a cursor made by :func:`encode_cursor`. Raises InvalidInputError if malformed."""
    if not isinstance(cursor, str) or _CURSOR.fullmatch(cursor) is None:
        raise InvalidInputError("cursor is not valid; pass back the next_cursor of a previous page")
    stamp, item_id = cursor.split("~", 1)
    try:
        return from_epoch(float(stamp)), item_id
    except (ValueError, OverflowError, OSError) as exc:
        raise InvalidInputError("cursor is not valid; pass back the next_cursor of a previous page") from exc
