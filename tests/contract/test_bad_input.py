"""Bad input gets a clear memory.errors error and changes nothing, on every backend."""

from __future__ import annotations

import math
from typing import Any

import pytest

from memory import InvalidInputError, InvalidVectorError, Memory, NotFoundError

HOSTILE = ["it's", 'say "hi"', "100%", "a_b", "'; DROP TABLE items; --", "%_%", "\\", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "x OR 1=1"]


def _snapshot(mem: Memory) -> tuple[int, int | None]:
    stats = mem.stats(clearance="secret")
    return stats.total, stats.ledger_entries


@pytest.mark.parametrize(
    ("content", "fields", "message"),
    [
        ("", {}, "empty"),
        ("   \n\t ", {}, "empty"),
        (42, {}, "must be a string"),
        (None, {}, "must be a string"),
        (b"bytes", {}, "string or a list"),
        ("x" * 500_001, {}, "over the limit"),
        ("nul\x00byte", {}, "control"),
        ("lone \ud800 surrogate", {}, "Unicode"),
        ("ok", {"tags": ["\udfff"]}, "Unicode"),
        ("ok", {"metadata": {"k": "\ud800"}}, "Unicode"),
        ("ok", {"user": "\ud800"}, "Unicode"),
        ("ok", {"tags": "not-a-list"}, "list of strings"),
        ("ok", {"tags": [1, 2]}, "must be a string"),
        ("ok", {"tags": [""]}, "1 to"),
        ("ok", {"metadata": ["a"]}, "JSON object"),
        ("ok", {"metadata": {"bad key!": 1}}, "not allowed"),
        ("ok", {"metadata": {"x": math.nan}}, "finite"),
        ("ok", {"metadata": {"x": object()}}, "unsupported type"),
        ("ok", {"importance": 2}, "between 0 and 1"),
        ("ok", {"importance": "high"}, "number"),
        ("ok", {"sensitivity": "top-secret"}, "sensitivity"),
        ("ok", {"kind": "Not A Kind"}, "kind"),
        ("ok", {"user": ""}, "empty"),
        ("ok", {"user": 7}, "string"),
        ("ok", {"namespace": "a\nb"}, "control"),
        ("ok", {"ttl": -5}, "positive"),
        ("ok", {"ttl": "soon"}, "ttl"),
        ("ok", {"expires_at": "not a date"}, "ISO 8601"),
        ("ok", {"valid_from": "2026-01-02", "valid_to": "2026-01-01"}, "later"),
        ("ok", {"colour": "red"}, "unknown field"),
        ("ok", {"vector": [0.1, 0.2]}, "shape"),
        ("ok", {"vector": [math.nan] * 384}, "NaN"),
        ("ok", {"vector": [math.inf] + [0.0] * 383}, "NaN or infinite"),
        ("ok", {"vector": [0.0] * 384}, "all zeros"),
        ("ok", {"vector": "abc"}, "sequence"),
        ("ok", {"vector": ["a"] * 384}, "sequence"),
    ],
)
def test_rejected_writes_change_nothing(mem: Memory, content: Any, fields: dict[str, Any], message: str) -> None:
    mem.remember("existing memory")
    before = _snapshot(mem)
    with pytest.raises(InvalidInputError, match=message):
        mem.remember(content, **fields)
    assert _snapshot(mem) == before


def test_vector_errors_are_vector_errors(mem: Memory) -> None:
    with pytest.raises(InvalidVectorError):
        mem.remember("x", vector=[1.0, 2.0, 3.0])


def test_empty_batch_and_wrong_batch_type(mem: Memory) -> None:
    with pytest.raises(InvalidInputError):
        mem.remember([])
    with pytest.raises(InvalidInputError):
        mem.remember_batch("not a list")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        mem.remember([{"tags": ["no content"]}])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query": ""}, "empty"),
        ({"query": "   "}, "empty"),
        ({"query": 5}, "string"),
        ({"query": "q" * 5000}, "longer"),
        ({"query": "bad \ud800"}, "Unicode"),
        ({"query": "ok", "limit": 0}, "limit"),
        ({"query": "ok", "limit": 100_000}, "limit"),
        ({"query": "ok", "limit": "10"}, "limit"),
        ({"query": "ok", "metadata": {"k": [1]}}, "metadata filter"),
        ({"query": "ok", "metadata": {"bad key": 1}}, "not allowed"),
        ({"query": "ok", "metadata": "k=v"}, "mapping"),
        ({"query": "ok", "kinds": ["NOPE!"]}, "kind"),
        ({"query": "ok", "tags": "solo"}, "list"),
        ({"query": "ok", "since": "yesterday"}, "ISO"),
        ({"query": "ok", "clearance": "root"}, "sensitivity"),
        ({"query": "ok", "retrieval": "warp-speed"}, "preset"),
    ],
)
def test_bad_recall_arguments(mem: Memory, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        mem.recall(**kwargs)


def test_bad_list_arguments(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="cursor"):
        mem.list(cursor="!!!not-a-cursor")
    with pytest.raises(InvalidInputError, match="cursor"):
        mem.list(cursor="WzEsMl0")  # valid base64 JSON, wrong types


def test_unknown_ids(mem: Memory) -> None:
    for call in (mem.get, mem.forget, mem.history):
        with pytest.raises(NotFoundError):
            call("00000000-0000-7000-8000-000000000000")
    with pytest.raises(InvalidInputError):
        mem.get("")
    with pytest.raises(InvalidInputError):
        mem.get(123)  # type: ignore[arg-type]


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_strings_are_literal(mem: Memory, hostile: str) -> None:
    plain = mem.remember("plain memory", tags=["plain"], metadata={"k": "plain"})
    odd = mem.remember(f"odd memory {hostile}", tags=[hostile], metadata={"k": hostile}, user=hostile)
    assert [i.id for i in mem.list(tags=[hostile]).items] == [odd]
    assert [i.id for i in mem.list(tags_all=[hostile]).items] == [odd]
    assert [i.id for i in mem.list(metadata={"k": hostile}).items] == [odd]
    assert [i.id for i in mem.list(user=hostile).items] == [odd]
    hits = mem.recall(hostile, limit=5)
    assert plain in {i.id for i in mem.list().items}
    assert all(h.item.namespace == "default" for h in hits)
    assert mem.stats().total == 2
    assert mem.get(odd).tags == (hostile,)


def test_wildcards_match_nothing_extra(mem: Memory) -> None:
    mem.remember("one", tags=["abc"], metadata={"k": "abc"})
    for pattern in ("%", "_", "a%", "a_c", "*", "abc'--"):
        assert mem.list(tags=[pattern]).items == ()
        assert mem.list(metadata={"k": pattern}).items == ()


def test_query_syntax_is_not_interpreted(mem: Memory) -> None:
    target = mem.remember("NEAR the AND gate OR the NOT gate")
    for query in ('"unbalanced', "NEAR(a b)", "a AND OR NOT", "col:value", "*", "^start", "a -b +c", "()"):
        hits = mem.recall(query, limit=5)
        assert all(h.item.namespace == "default" for h in hits)
    assert mem.recall("AND gate", limit=1)[0].id == target
