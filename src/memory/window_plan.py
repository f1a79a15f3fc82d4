"""What :meth:`memory.windows.Windows.add` plans before an insert and checks after it.

A batch's windows are computed before the insert from the batch and the
stored thread around each new memory (:func:`thread_slice`, read once). The
plan holds, per namespace and thread, the new memories in thread order
(:func:`new_in_thread`: the batch's own duplicates left out), the stored
slice read and the new windows of its stored neighbours. After the insert
the plan holds for a thread when every new memory was inserted and the
stored thread around them is the slice read plus them (:func:`unchanged`);
otherwise the thread's windows are recomputed from the store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from memory.backends.base import Backend, ListOrder, NewRecord, NewWindow, Vector
from memory.filters import Filter
from memory.types import MemoryItem

__all__ = [
    "Update",
    "Slice",
    "ThreadPlan",
    "NamespacePlan",
    "Plan",
    "thread_slice",
    "new_in_thread",
    "reads_back",
    "unchanged",
]

#: A window to store: (id, window text, window vector or None), as ``WindowIndex.set_windows`` takes it.
Update = tuple[str, str, Vector | None]
#: Memories read per page of a thread.
_PAGE = 500


@dataclass(frozen=True, slots=True)
class Slice:
    """Stored memories of a thread around some points, in order, and whether they reach its first and last."""

    items: list[MemoryItem]
    from_start: bool
    to_end: bool


@dataclass(slots=True)
class ThreadPlan:
    """A thread's new memories (in order), the ids of the batch's repeats, the stored ones read around them
    (None: not read, the thread is recomputed after the insert) and its stored neighbours' new windows."""

    new: list[MemoryItem]
    repeats: list[str]
    stored: Slice | None = None
    updates: list[Update] = field(default_factory=list)


@dataclass(slots=True)
class NamespacePlan:
    """A namespace's memories with windows to plan, whether it held none before, their windows and threads' plans."""

    new_ids: set[str] = field(default_factory=set)
    empty: bool = False
    windows: dict[str, NewWindow] = field(default_factory=dict)
    threads: dict[str, ThreadPlan] = field(default_factory=dict)


@dataclass(slots=True)
class Plan:
    """What ``Windows.add`` inserts (the records with their windows) and does after the insert."""

    model: str | None
    space: str | None
    upgrade: bool
    namespaces: dict[str, NamespacePlan] = field(default_factory=dict)
    records: list[NewRecord] = field(default_factory=list)


def thread_slice(backend: Backend, flt: Filter, points: list[tuple[datetime, str]], reach: int) -> Slice:
    """The thread's memories from ``reach`` before the first point to ``reach`` after the last, in order."""
    first, last = points[0], points[-1]
    before = backend.list(flt, reach, ListOrder(newest_first=True, after_created_at=first[0], after_id=first[1]))
    before.reverse()
    sequence = list(before)
    cursor = (before[-1].created_at, before[-1].id) if before else None
    beyond = 0
    while True:
        order = ListOrder(
            newest_first=False,
            after_created_at=cursor[0] if cursor else None,
            after_id=cursor[1] if cursor else None,
        )
        page = backend.list(flt, _PAGE, order)
        for item in page:
            sequence.append(item)
            if (item.created_at, item.id) > last:
                beyond += 1
        if len(page) < _PAGE or beyond >= reach:
            return Slice(sequence, len(before) < reach, len(page) < _PAGE)
        cursor = (page[-1].created_at, page[-1].id)


def new_in_thread(batch: Sequence[MemoryItem]) -> tuple[list[MemoryItem], list[str]]:
    """A thread's memories of a batch that ``add`` will insert, in thread order, and the ids of those it will not.

    A non-secret memory whose content repeats an earlier one of the batch in
    its scope is a duplicate (``Backend.add``). Duplicates of stored memories
    are found after the insert.
    """
    seen: set[tuple[str | None, str | None, str]] = set()
    new: list[MemoryItem] = []
    repeats: list[str] = []
    for item in batch:
        key = (item.user, item.agent, item.content_hash)
        if item.sensitivity != "secret":
            if key in seen:
                repeats.append(item.id)
                continue
            seen.add(key)
        new.append(item)
    new.sort(key=lambda i: (i.created_at, i.id))
    return new, repeats


def reads_back(backend: Backend, moment: datetime) -> bool:
    """Whether the store reads ``moment`` back unchanged (it orders a thread by the times it reads)."""
    dialect = backend.dialect
    return dialect is None or dialect.time_value(dialect.time_param(moment)) == moment


def unchanged(
    backend: Backend,
    namespace: str,
    plan: ThreadPlan,
    scope: Callable[[datetime | None, datetime | None], Filter],
) -> bool:
    """Whether the stored thread around the new memories is what the plan read plus them (no other writer).

    ``scope(since, until)`` filters the thread's memories (secret, expired and
    closed ones too) created in [since, until). Compares the ids stored in the
    range read (open where it reached the thread's first or last memory) with
    those expected; a memory at a bound's time but outside the range by id
    does not count.
    """
    stored = plan.stored
    assert stored is not None
    expected = {i.id for i in stored.items} | {i.id for i in plan.new}
    low = None if stored.from_start or not stored.items else stored.items[0]
    high = None if stored.to_end or not stored.items else stored.items[-1]
    flt = scope(
        low.created_at if low is not None else None,
        high.created_at + timedelta(microseconds=1) if high is not None else None,
    )
    found = set(backend.find_ids(flt))
    if expected - found:
        return False
    extra = found - expected
    if not extra:
        return True
    for item_id, fields in backend.rank_fields(namespace, sorted(extra)).items():
        key = (fields.created_at, item_id)
        if (low is None or key > (low.created_at, low.id)) and (high is None or key < (high.created_at, high.id)):
            return False
    return True
