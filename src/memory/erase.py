"""Forgetting a whole scope (``Memory.forget_all``): its memories, what the tiers hold about its
users, and its feedback records. Messages stay (``mem.messages.clear`` deletes them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memory.filters import Filter

if TYPE_CHECKING:
    from memory.backends.feedback import FeedbackStore
    from memory.items import Items
    from memory.tiers.service import Tiers

__all__ = ["forget_scope"]


def forget_scope(
    items: Items,
    flt: Filter,
    *,
    tiers: Callable[[], Tiers] | None,
    feedback: FeedbackStore | None,
    reason: str | None = None,
) -> int:
    """Delete every memory ``flt`` sees and what belongs to its scope elsewhere; returns the memories deleted.

    ``tiers`` (None when the backend keeps no tiers) gives the tier service: without a
    thread in ``flt``, the tier records of the scope's users go (as ``tiers.forget``).
    ``feedback``: the scope's conversation records go, and its prompt versions when the
    whole namespace goes.
    """
    total = items.forget_matching(flt, reason=reason)
    if tiers is not None and flt.thread is None:
        service = tiers()
        owners = service.store.owners(flt.namespace)
        for name in sorted({u for a, u in owners if u and flt.user in (None, u) and flt.agent in (None, a)}):
            service.forget(user=name, agent=flt.agent, namespace=flt.namespace)
    if feedback is not None:
        feedback.delete_records(flt.namespace, thread=flt.thread, user=flt.user, agent=flt.agent)
        if flt.user is None and flt.agent is None and flt.thread is None:
            feedback.delete_prompts(flt.namespace)
    return total
