"""Recalls' access records kept in process and written in batches (memory.backends.access_log)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.backends.access_log import AccessLog
from memory.records import build_item

NOW = datetime(2026, 3, 1, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_due_at_the_batch_size_or_the_delay_after_the_oldest_access() -> None:
    clock = Clock()
    log = AccessLog(batch=3, delay=1.0, clock=clock)
    assert not log.add("ns", ["a", "b"], NOW)
    assert log.add("ns", ["c"], NOW)  # three memories
    assert len(log.take()) == 3 and len(log) == 0
    assert not log.add("ns", ["a"], NOW)
    clock.now += 0.5
    assert not log.add("ns", ["a"], NOW)  # the same memory again: still one
    clock.now += 0.6
    assert log.add("ns", ["b"], NOW)  # 1.1 s after the oldest kept access


def test_counts_and_latest_time_per_namespace_and_id() -> None:
    log = AccessLog()
    log.add("ns", ["a", "a", "b"], NOW)
    log.add("ns", ["a"], NOW - timedelta(hours=1))  # an older time does not move accessed_at back
    log.add("other", ["a"], NOW + timedelta(hours=1))
    assert log.take() == {
        ("ns", "a"): (3, NOW),
        ("ns", "b"): (1, NOW),
        ("other", "a"): (1, NOW + timedelta(hours=1)),
    }


def test_a_failed_write_gives_the_accesses_back_merged_with_new_ones() -> None:
    log = AccessLog()
    log.add("ns", ["a"], NOW)
    taken = log.take()
    log.add("ns", ["a", "b"], NOW + timedelta(minutes=1))
    log.give_back(taken)
    assert log.take() == {("ns", "a"): (2, NOW + timedelta(minutes=1)), ("ns", "b"): (1, NOW + timedelta(minutes=1))}


def test_a_read_item_shows_its_kept_accesses_and_discard_forgets_them() -> None:
    item = build_item(content="seen", namespace="ns", now=NOW)
    log = AccessLog()
    assert log.seen(item) is item
    log.add("ns", [item.id, item.id], NOW + timedelta(hours=1))
    seen = log.seen(item.model_copy(update={"access_count": 4, "accessed_at": NOW + timedelta(hours=2)}))
    assert (seen.access_count, seen.accessed_at) == (6, NOW + timedelta(hours=2))  # the later time stays
    assert log.seen(item).accessed_at == NOW + timedelta(hours=1)
    assert log.seen(item.model_copy(update={"namespace": "other"})).access_count == 0
    log.discard("ns", [item.id])
    assert log.seen(item) is item and len(log) == 0
