"""Opaque keyset cursors for listings: (created_at, id) encoded as URL-safe base64."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime

from memory.errors import InvalidInputError
from memory.ids import from_epoch, to_epoch

__all__ = ["encode_cursor", "decode_cursor"]


def encode_cursor(created_at: datetime, item_id: str) -> str:
    """Cursor pointing just after the item (created_at, item_id)."""
    raw = json.dumps([to_epoch(created_at), item_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """Parse a cursor made by :func:`encode_cursor`. Raises InvalidInputError if malformed."""
    if not isinstance(cursor, str) or len(cursor) > 512:
        raise InvalidInputError("cursor is not valid; pass back the next_cursor of a previous page")
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        stamp, item_id = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if not isinstance(item_id, str) or not isinstance(stamp, (int, float)):
            raise ValueError("wrong types")
        return from_epoch(float(stamp)), item_id
    except (ValueError, TypeError, binascii.Error, json.JSONDecodeError, OverflowError) as exc:
        raise InvalidInputError("cursor is not valid; pass back the next_cursor of a previous page") from exc
