"""Issue 15's findings, each at its cause in the library, on every backend.

B1 dedup oracle, B2 graph facts of secrets, B3 history of secrets, B5 tag lists,
B6 dates at the calendar's ends, B7 deep metadata, B8 forget(None), and the
decisions on stats and forget_all for a caller without secret clearance.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from memory import InvalidInputError, Memory, NotFoundError
from memory.limits import MAX_METADATA_DEPTH, MAX_TAGS


def _deep(depth: int) -> dict[str, object]:
    value: dict[str, object] = {}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


# -- B1: dedup never answers with a secret -----------------------------------------------------------


def test_dedup_never_returns_a_secrets_id(mem: Memory) -> None:
    secret = mem.remember("the vault PIN is 4711", user="alice", sensitivity="secret")
    guess = mem.remember("the vault PIN is 4711", user="alice")  # right guess by a caller without clearance
    wrong = mem.remember("the vault PIN is 0000", user="alice")
    assert guess != secret and wrong != secret
    assert mem.get(guess).content == "the vault PIN is 4711"  # the caller's own write is stored and readable
    # a batch, with the duplicate inside the batch too
    ids = mem.remember(["the vault PIN is 4711", "the vault PIN is 4711"], user="alice", sensitivity="private")
    assert secret not in ids and ids[0] == ids[1] == guess  # normal and private still dedup among themselves
    assert mem.stats(clearance="secret").by_sensitivity == {"secret": 1, "normal": 2}


def test_secret_writes_never_dedup(mem: Memory) -> None:
    plain = mem.remember("launch code 12345", user="bob")
    first = mem.remember("launch code 12345", user="bob", sensitivity="secret")
    second = mem.remember("launch code 12345", user="bob", sensitivity="secret")
    batch = mem.remember(["launch code 12345", "launch code 12345"], user="bob", sensitivity="secret")
    assert len({plain, first, second, *batch}) == 5
    assert mem.get(first, clearance="secret").sensitivity == "secret"


def test_a_memory_made_secret_leaves_dedup(mem: Memory) -> None:
    item = mem.remember("my diary entry", user="carol")
    mem.update(item, sensitivity="secret")
    again = mem.remember("my diary entry", user="carol")
    assert again != item and mem.get(again).sensitivity == "normal"


# -- B2: graph facts supported only by secrets stay hidden ---------------------------------------------


def test_graph_facts_of_a_secret_memory_stay_hidden(mem: Memory) -> None:
    if mem.backend.graph is None:
        pytest.skip(f"{mem.backend.name} has no graph store")
    memory_id = mem.remember("Alice lives in Berlin.", extract="inline")
    facts = mem.graph.facts_about("Alice")
    assert facts and any("Berlin" in r.text for r in facts)
    mem.update(memory_id, sensitivity="secret")
    assert mem.graph.facts_about("Alice") == []
    assert any("Berlin" in r.text for r in mem.graph.facts_about("Alice", clearance="secret"))
    prompt = mem.context("Where does Alice live?")
    assert "Berlin" not in str(prompt.messages)
    assert "Berlin" in str(mem.context("Where does Alice live?", clearance="secret").messages)


def test_entity_names_only_a_secret_holds_are_not_listed(mem: Memory) -> None:
    if mem.backend.graph is None:
        pytest.skip(f"{mem.backend.name} has no graph store")
    mem.remember("Bob works at Initech.", extract="inline")
    contact = mem.remember("Zorblax Quentworth works at Fraudbank.", extract="inline")
    assert any("Zorblax" in e.name for e in mem.graph.entities())
    mem.update(contact, sensitivity="secret")  # its extracted names now belong to a secret
    cleared = {e.name for e in mem.graph.entities(clearance="secret")}
    assert any("Zorblax" in name for name in cleared)  # the extraction did make an entity of the secret's name
    listed = {e.name for e in mem.graph.entities()}
    assert any("Bob" in name for name in listed)
    assert not any("Zorblax" in name or "Quentworth" in name for name in listed)
    name = next(n for n in cleared if "Zorblax" in n)
    assert mem.graph.query_graph(name, clearance="secret").entities[0].name == name
    with pytest.raises(NotFoundError) as hidden:  # looked up by its exact name: as unknown as a made-up one
        mem.graph.query_graph(name)
    with pytest.raises(NotFoundError) as unknown:
        mem.graph.query_graph("Nobody Atall")
    assert str(hidden.value).replace(name, "?") == str(unknown.value).replace("Nobody Atall", "?")


def test_an_entity_is_listed_when_one_visible_memory_names_it_however_many_secrets_do(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    if mem.backend.graph is None:
        pytest.skip(f"{mem.backend.name} has no graph store")
    from memory import graph as graph_view

    monkeypatch.setattr(graph_view, "KNOWN_PROBE", 2)  # the newest mentions are checked first: all secrets here
    store, now = mem.graph.store, mem.now()
    seen = store.upsert_entity(mem.namespace, "Quill Harrow", "person", now)
    hidden = store.upsert_entity(mem.namespace, "Vesna Orlov", "person", now)
    visible = mem.remember("Quill Harrow called.")
    store.add_mentions(mem.namespace, visible, [seen.id])
    for n in range(4):
        secret = mem.remember(f"Quill Harrow and Vesna Orlov met, {n}.", sensitivity="secret")
        store.add_mentions(mem.namespace, secret, [seen.id, hidden.id])
    assert {e.name for e in mem.graph.entities()} == {"Quill Harrow"}
    assert {e.name for e in mem.graph.entities(clearance="secret")} == {"Quill Harrow", "Vesna Orlov"}


# -- B3: history of secrets ------------------------------------------------------------------------------


def test_history_of_a_secret_is_unknown_without_clearance(mem: Memory) -> None:
    item = mem.remember("the safe combination is 12-34-56")
    mem.update(item, sensitivity="secret", reason="the combination is 12-34-56")
    with pytest.raises(NotFoundError) as caught:
        mem.history(item)
    with pytest.raises(NotFoundError) as unknown:
        mem.history("no-such-id")
    assert str(caught.value).replace(item, "X") == str(unknown.value).replace("no-such-id", "X")
    full = mem.history(item, clearance="secret")
    assert [e.op for e in full] == ["add", "update"] and "12-34-56" in str(full[0].after)
    mem.forget(item)  # deleted as a secret: still unknown
    with pytest.raises(NotFoundError):
        mem.history(item)


def test_history_redacts_text_that_was_secret(mem: Memory) -> None:
    item = mem.remember("token abc123")
    mem.update(item, sensitivity="secret")
    mem.update(item, content="token rotated", sensitivity="normal")
    entries = mem.history(item)
    assert "abc123" not in str([e.model_dump() for e in entries])
    assert entries[-1].after is not None and entries[-1].after["content"] == "token rotated"


# -- stats and forget_all without clearance --------------------------------------------------------------------


def test_stats_and_forget_all_leave_secrets_to_the_cleared(mem: Memory) -> None:
    before = mem.stats()
    mem.remember("a secret", user="dan", sensitivity="secret")
    assert mem.stats() == before  # nothing an uncleared caller sees changed
    mem.remember("a plain note", user="dan")
    assert mem.forget_all(user="dan", clearance="private") == 1
    assert mem.stats(clearance="secret").total == 1  # the secret is left to a cleared caller
    assert mem.forget_all(user="dan") == 1  # the library's default erases everything


# -- bad input: B5–B8 ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "when", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", datetime(1, 1, 1, tzinfo=UTC).isoformat()]
)
def test_dates_at_the_calendars_ends(mem: Memory, when: str) -> None:
    overflows = when != "0001-01-01T00:00:00+00:00"
    for call in (
        lambda: mem.remember("dated", expires_at=when, valid_from=when),
        lambda: mem.list(since=when),
        lambda: mem.recall("dated", until=when),
        lambda: mem.messages.search("dated", since=when),
    ):
        if overflows:
            with pytest.raises(InvalidInputError, match="calendar"):
                call()
        else:
            try:
                call()
            except InvalidInputError:
                pass  # e.g. expires in the past is refused: a clear error either way


def test_deep_metadata_is_refused(mem: Memory) -> None:
    mem.remember("shallow enough", metadata=_deep(MAX_METADATA_DEPTH))
    for depth in (MAX_METADATA_DEPTH + 1, 300, 5000):
        with pytest.raises(InvalidInputError, match="nested deeper"):
            mem.remember("too deep", metadata=_deep(depth))
    circular: dict[str, object] = {}
    circular["self"] = circular
    with pytest.raises(InvalidInputError, match="nested deeper"):
        mem.remember("circular", metadata=circular)


def test_forget_none_is_invalid_input(mem: Memory) -> None:
    for bad in (None, 42, b"id"):
        with pytest.raises(InvalidInputError):
            mem.forget(bad)  # type: ignore[arg-type]


def test_huge_tag_lists_are_refused_before_any_work(mem: Memory) -> None:
    many = ["t"] * 200_000  # duplicates: the old code scanned the list once per entry
    started = time.perf_counter()
    with pytest.raises(InvalidInputError, match="limit"):
        mem.recall("anything", tags=many)
    with pytest.raises(InvalidInputError, match="limit"):
        mem.remember("x", tags=many)
    with pytest.raises(InvalidInputError, match="limit"):
        mem.remember("x", keywords=["k"] * 100_000)
    assert time.perf_counter() - started < 1.0
    assert len(mem.get(mem.remember("ok", tags=[f"t{i}" for i in range(MAX_TAGS)])).tags) == MAX_TAGS
