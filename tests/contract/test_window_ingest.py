"""Windows computed before the insert (memory.windows.Windows.add) equal windows recomputed from the store.

Every test ends by recomputing every window from the stored threads
(``Windows.rebuild``: the read-back path every write took before windows went
in with the rows) and checks that no window text or vector byte changes.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from memory import Memory
from memory.backends.base import Backend, NewRecord, NewWindow
from memory.config import Settings
from memory.errors import InvalidInputError
from memory.filters import Filter
from memory.records import build_item, ledger_entry
from memory.retrieval.window import window_model
from memory.windows import Windows

T0 = datetime(2024, 3, 16, 9, 0, tzinfo=UTC)
#: Turns of a few sessions: short and long ones, dates ("yesterday", "March 3rd"), a repeat.
SESSION = [
    "user: I went hiking with Maya yesterday near the lake",
    "assistant: That sounds lovely! How long was the trail?",
    "user: About 12 km, we started early in the morning on March 3rd " + "and walked along the ridge " * 12,
    "assistant: Great effort. Did you see any wildlife?",
    "user: a heron, and two deer last weekend",
    "assistant: That sounds lovely! How long was the trail?",  # repeats turn 1: stored once
    "user: next Friday we plan to go again",
]

Snapshot = dict[str, tuple[str, bytes | None]]


def _windows(mem: Memory) -> Snapshot:
    """Every memory's stored window text and window vector bytes, by content and thread (all namespaces)."""
    dialect = mem.backend.dialect
    assert dialect is not None
    with dialect.read() as conn:
        rows = dialect.rows(conn, "SELECT namespace, id, thread, content, index_window FROM items")
    space = window_model(mem.embedder.model_name)
    out: Snapshot = {}
    for namespace, item_id, thread, content, window in rows:
        vector = mem.backend.get_vectors(namespace, space, [item_id]).get(item_id)
        key = f"{namespace}/{thread}/{content}/{item_id}"
        out[key] = (str(window), None if vector is None else np.asarray(vector, dtype=np.float32).tobytes())
    return out


def _assert_as_recomputed(mem: Memory) -> Snapshot:
    """The stored windows equal those recomputed from the store; returns them."""
    stored = _windows(mem)
    Windows(mem.core).rebuild()
    again = _windows(mem)
    assert stored.keys() == again.keys()
    changed = {k: (stored[k], again[k]) for k in stored if stored[k] != again[k]}
    assert not changed
    return stored


def _turns(thread: str, start: datetime, texts: list[str], **fields: Any) -> list[dict[str, Any]]:
    return [
        {"content": text, "thread": thread, "created_at": start + timedelta(seconds=i), **fields}
        for i, text in enumerate(texts)
    ]


@pytest.mark.parametrize("fact_keys", ["extracted", "all"])
def test_batches_store_the_windows_a_recompute_gives(make_memory: Callable[..., Memory], fact_keys: str) -> None:
    mem = make_memory(settings=Settings(database="memory://", fact_keys=fact_keys))
    rng = np.random.default_rng(7)
    first = _turns("s1", T0, SESSION) + _turns("s2", T0 + timedelta(days=1), SESSION[:4])
    first[3]["sensitivity"] = "private"
    first[8]["sensitivity"] = "secret"
    first[2]["vector"] = rng.standard_normal(mem.embedder.dimension)  # a given vector beside embedded ones
    first.append({"content": "Ann: the vet visit was on 2024-03-01", "context": "pets"})  # thread-less, dated
    first.append({"content": "plain fact without any date"})
    mem.remember_batch(first[::-1])  # batch order is not thread order
    _assert_as_recomputed(mem)
    # appended to stored threads, one turn in the middle of s1, a new thread, another namespace
    later = _turns("s1", T0 + timedelta(seconds=30), ["user: and the day after tomorrow too"])
    later += _turns("s1", T0 + timedelta(seconds=2, milliseconds=500), ["assistant: between two turns"])
    later += _turns("s3", T0, ["user: brand new session", "assistant: welcome"])
    later += _turns("s2", T0 + timedelta(days=1), ["user: same time as s2's first turn"], namespace="other")
    mem.remember_batch(later)
    _assert_as_recomputed(mem)
    for turn in _turns("s2", T0 + timedelta(days=1, minutes=5), SESSION[3:]):  # one at a time
        mem.remember(turn.pop("content"), **turn)
    _assert_as_recomputed(mem)


def test_a_batch_equals_one_memory_at_a_time(make_memory: Callable[..., Memory]) -> None:
    batch, single = make_memory(namespace="batch"), make_memory(namespace="single")
    turns = _turns("s", T0, SESSION) + _turns("t", T0, SESSION[2:5])
    batch.remember_batch(turns)
    for turn in turns:
        single.remember(dict(turn).pop("content"), **{k: v for k, v in turn.items() if k != "content"})
    by_place = {}
    for mem in (batch, single):
        snapshot = _assert_as_recomputed(mem)
        by_place[mem.namespace] = {k.split("/", 1)[1].rsplit("/", 1)[0]: v for k, v in snapshot.items()}
    assert by_place["batch"] == by_place["single"]


def test_duplicates_of_stored_memories_leave_the_windows_right(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    mem.remember_batch(_turns("s", T0, SESSION[:4]))
    again = _turns("s", T0 + timedelta(minutes=1), [SESSION[1], "user: one more", SESSION[0]])
    ids = mem.remember_batch(again)
    assert len(set(ids)) == 3 and mem.stats().total == 5  # two duplicates answered with the stored ids
    _assert_as_recomputed(mem)


@pytest.mark.parametrize("meanwhile", ["add", "forget", "add to an empty namespace"])
def test_another_writer_between_the_read_and_the_insert(make_memory: Callable[..., Memory], meanwhile: str) -> None:
    """A thread changed by another writer after its windows were planned is recomputed from the store."""
    mem = make_memory()
    other = make_memory()
    stored = [] if meanwhile.endswith("namespace") else mem.remember_batch(_turns("s", T0, SESSION[:4]))
    backend = mem.backend
    real_add = backend.add

    def add_after_the_other_writer(records: Any) -> Any:
        if meanwhile.startswith("add"):
            other.remember("user: squeezed in by another process", thread="s", created_at=T0 + timedelta(seconds=5))
        else:
            other.forget(stored[3])
        return real_add(records)

    backend.add = add_after_the_other_writer  # type: ignore[method-assign]
    try:
        mem.remember_batch(_turns("s", T0 + timedelta(seconds=4), ["user: the next turn", "assistant: and a reply"]))
    finally:
        backend.add = real_add  # type: ignore[method-assign]
    _assert_as_recomputed(mem)


def test_new_memories_are_inserted_with_their_windows(
    make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch into a new thread writes no window afterwards: each row went in once, with its window."""
    mem = make_memory()
    index = mem.backend.windows
    assert index is not None
    written: list[int] = []
    real = index.set_windows

    def counted(namespace: str, model: str | None, updates: Any) -> int:
        written.append(len(updates))
        return real(namespace, model, updates)

    monkeypatch.setattr(index, "set_windows", counted)
    mem.remember_batch(_turns("s", T0, SESSION))
    assert written == []
    mem.remember_batch(_turns("s", T0 + timedelta(minutes=1), ["user: one more"]))
    assert written == [2]  # only the two stored turns before it get new windows
    _assert_as_recomputed(mem)


# -- the backend contract -----------------------------------------------------
def _record(content: str, window: NewWindow | None, *, thread: str = "t", **fields: Any) -> NewRecord:
    item = build_item(content=content, namespace="ns", now=T0, thread=thread, **fields)
    return NewRecord(item, None, ledger_entry("add", item.id, "ns", T0, after=item), window)


def test_add_stores_a_records_window_with_its_row(backend: Backend) -> None:
    space = window_model("m")
    backend.ensure_vector_space(space, 2)
    vector = np.array([0.6, 0.8], dtype=np.float32)
    first = _record("a heron by the lake", NewWindow("kite talk", space, vector))
    repeat = _record("a heron by the lake", NewWindow("zebra talk", space, vector))  # a duplicate: not stored
    plain = _record("no window here", None)
    results = backend.add([first, repeat, plain])
    assert [r.created for r in results] == [True, False, True]
    flt = Filter(namespace="ns", now=T0)
    assert [h.id for h in backend.search_lexical(flt, ["kite"], 10, fields={"window": 1.0})] == [first.item.id]
    assert backend.search_lexical(flt, ["zebra"], 10, fields={"window": 1.0}) == []
    stored = backend.get_vectors("ns", space, [first.item.id, plain.item.id])
    assert list(stored) == [first.item.id]
    np.testing.assert_array_equal(stored[first.item.id], backend.as_stored(space, [vector])[0])
    # the window is stored as set_windows stores it: writing the same text again changes nothing
    assert backend.set_windows("ns", None, [(first.item.id, "kite talk", None)]) == 1
    assert [h.id for h in backend.search_lexical(flt, ["kite"], 10, fields={"window": 1.0})] == [first.item.id]


def test_add_checks_windows_before_writing_anything(backend: Backend) -> None:
    backend.ensure_vector_space(window_model("m"), 2)
    good = _record("fine", NewWindow("fine window"))
    for bad in (
        _record("bad text", NewWindow("nul \x00 byte" if backend.name == "postgres" else "\ud800")),
        _record("bad vector", NewWindow("", window_model("m"), np.array([1.0, 0.0, 0.0], dtype=np.float32))),
        _record("no space", NewWindow("", "unregistered", np.array([1.0, 0.0], dtype=np.float32))),
    ):
        with pytest.raises(InvalidInputError):
            backend.add([good, bad])
    assert backend.count(Filter(namespace="ns", clearance="secret", now=T0)) == 0
