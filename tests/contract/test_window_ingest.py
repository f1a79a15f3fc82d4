"""Windows stored with the rows that ``Backend.add`` inserts (``NewRecord.window``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from memory.backends.base import Backend, NewRecord, NewWindow
from memory.errors import InvalidInputError
from memory.filters import Filter
from memory.records import build_item, ledger_entry
from memory.retrieval.window import window_model

T0 = datetime(2024, 3, 16, 9, 0, tzinfo=UTC)


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
    np.testing.assert_array_equal(stored[first.item.id], vector)
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
