"""Recalls' access records kept in process and written in batches (memory.backends.access_log)."""

from __future__ import annotations

import gc
import os
import signal
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from memory.backends.access_log import AccessLog, WriteBehind
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


class _Store:
    """Something a WriteBehind writes for: counts its writes, can be made to fail or to wait."""

    def __init__(self) -> None:
        self.writes = 0
        self.fail = False
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()

    def write(self) -> None:
        self.entered.set()
        self.gate.wait(30.0)
        self.writes += 1
        if self.fail:
            raise RuntimeError("the store broke")


def _write(store: _Store) -> None:
    store.write()


def test_write_behind_runs_a_due_write_on_its_own_thread_and_shares_wakes() -> None:
    store = _Store()
    writer = WriteBehind(store, _write, idle=30.0)
    try:
        store.gate.clear()  # the first write waits: wakes meanwhile share the next
        writer.wake()
        assert store.entered.wait(10.0)  # the first write is under way
        for _ in range(5):
            writer.wake()
        assert not writer.settle(0.1)
        store.gate.set()
        assert writer.settle(10.0)
        assert store.writes == 2 and writer.runs == 2
    finally:
        writer.close()


def test_write_behind_survives_a_failed_write_and_ends_when_idle() -> None:
    store = _Store()
    store.fail = True
    writer = WriteBehind(store, _write, idle=0.05)
    writer.wake()
    assert writer.settle(10.0)
    store.fail = False
    writer.wake()  # a new thread if the last one ended, the same one otherwise
    assert writer.settle(10.0) and store.writes == 2
    deadline = time.monotonic() + 10.0
    while writer._thread is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert writer._thread is None  # idle: ended
    writer.close()


def test_write_behind_holds_its_store_weakly_and_stops_on_close() -> None:
    store = _Store()
    writer = WriteBehind(store, _write, idle=30.0)
    del store
    gc.collect()
    writer.wake()  # the store is gone: nothing to write, no error
    assert writer.settle(10.0) and writer.runs == 0
    writer.close()
    live = _Store()
    closed = WriteBehind(live, _write, idle=30.0)
    closed.close()
    closed.wake()  # closed: nothing is written any more (the store writes what is left itself)
    assert closed.settle(10.0) and live.writes == 0 and closed.runs == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_write_behind_in_a_forked_child_starts_afresh() -> None:
    # Another thread holds the writer's state lock at the fork: the child must not inherit it held.
    store = _Store()
    writer = WriteBehind(store, _write, idle=30.0)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with writer._state:
            held.set()
            release.wait(30.0)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(10.0)
    pid = os.fork()
    if pid == 0:  # the child: no thread of the parent's runs here; a wake must run a write
        code = 1
        try:
            signal.alarm(10)  # a lock inherited held would hang the child: end it instead
            writer.wake()
            code = 0 if writer.settle(10.0) and store.writes == 1 else 2
        finally:
            os._exit(code)
    release.set()
    holder.join()
    _, status = os.waitpid(pid, 0)
    writer.close()
    assert os.waitstatus_to_exitcode(status) == 0
