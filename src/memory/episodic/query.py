"""Pure evaluation of a :class:`~memory.episodic.types.MessageQuery` (the in-memory store uses it)."""

from __future__ import annotations

from memory.episodic.types import Message, MessageQuery
from memory.types import SENSITIVITY_LEVELS

__all__ = ["message_matches"]


def message_matches(query: MessageQuery, message: Message) -> bool:
    """True when ``message`` passes every predicate of ``query``."""
    if message.namespace != query.namespace:
        return False
    for name in ("thread", "user", "agent"):
        wanted = getattr(query, name)
        if wanted is not None and getattr(message, name) != wanted:
            return False
    if query.roles is not None and message.role not in query.roles:
        return False
    if query.after_turn is not None and message.turn <= query.after_turn:
        return False
    if query.before_turn is not None and message.turn >= query.before_turn:
        return False
    if query.created_after is not None and message.created_at < query.created_after:
        return False
    if query.created_before is not None and message.created_at >= query.created_before:
        return False
    if SENSITIVITY_LEVELS[message.sensitivity] > SENSITIVITY_LEVELS[query.clearance]:
        return False
    if not query.include_expired and message.expires_at is not None and message.expires_at <= query.now:
        return False
    return True
