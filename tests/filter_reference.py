"""The Python reading of a Filter (:func:`memory.filters.matches`) over what a store holds.

SQL backends compile filters to SQL; these tests check the SQL against this
reference, item by item, over the very rows the store returns unfiltered.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from memory.backends.base import Backend, ListOrder
from memory.filters import Filter, matches
from memory.types import MemoryItem


class FilterReference:
    """Listing, counting and grouping done in Python over a snapshot of a store's items."""

    def __init__(self, backend: Backend, now: datetime) -> None:
        """Snapshot every item of every namespace of ``backend``."""
        self.items: list[MemoryItem] = []
        for ns in backend.namespaces():
            everything = Filter(namespace=ns, now=now, clearance="secret", include_expired=True, include_invalid=True)
            self.items += backend.iter_items(everything)

    def list(self, flt: Filter, limit: int, order: ListOrder) -> list[MemoryItem]:
        """Matching items in keyset order."""
        items = sorted((i for i in self.items if matches(flt, i)), key=lambda i: (i.created_at, i.id))
        if order.newest_first:
            items.reverse()
        if order.after_created_at is not None and order.after_id is not None:
            key = (order.after_created_at, order.after_id)
            if order.newest_first:
                items = [i for i in items if (i.created_at, i.id) < key]
            else:
                items = [i for i in items if (i.created_at, i.id) > key]
        return items[:limit]

    def find_ids(self, flt: Filter) -> list[str]:
        """Matching ids, newest first."""
        return [i.id for i in self.list(flt, len(self.items) + 1, ListOrder())]

    def iter_items(self, flt: Filter) -> list[MemoryItem]:
        """Matching items, oldest first."""
        return self.list(flt, len(self.items) + 1, ListOrder(newest_first=False))

    def group_counts(self, flt: Filter, column: str) -> dict[str, int]:
        """Counts of matching items by ``column``."""
        return dict(Counter(str(getattr(i, column)) for i in self.items if matches(flt, i)))
