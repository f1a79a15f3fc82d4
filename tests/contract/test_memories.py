"""Facade behaviour every backend must give: writes, dedup, reads, history, filters."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import numpy as np
import pytest

from memory import InvalidInputError, Memory, NotFoundError
from vector_storage import as_stored


def test_remember_then_get_keeps_every_field(mem: Memory) -> None:
    memory_id = mem.remember(
        "Alice prefers dark mode",
        user="alice",
        agent="helper",
        thread="t1",
        kind="trait",
        context="said so in onboarding",
        tags=["ui", "prefs"],
        metadata={"source": "chat", "score": 3, "ok": True, "nested": {"a": [1, 2]}},
        source_ids=["msg-1"],
        importance=0.9,
        sensitivity="private",
    )
    item = mem.get(memory_id)
    assert item.content == "Alice prefers dark mode"
    assert (item.user, item.agent, item.thread, item.kind) == ("alice", "helper", "t1", "trait")
    assert item.context == "said so in onboarding"
    assert item.tags == ("ui", "prefs")
    assert item.metadata == {"source": "chat", "score": 3, "ok": True, "nested": {"a": [1, 2]}}
    assert item.source_ids == ("msg-1",)
    assert item.importance == 0.9
    assert item.sensitivity == "private"
    assert item.embedding_status == "done"
    assert item.embedding_model == mem.embedder.model_name
    assert item.created_at == item.updated_at
    assert len(item.content_hash) == 64


def test_batch_returns_ids_in_order(mem: Memory) -> None:
    ids = mem.remember(["one fact", {"content": "two fact", "tags": ["x"]}, "three fact"], user="u")
    assert [mem.get(i).content for i in ids] == ["one fact", "two fact", "three fact"]
    assert mem.get(ids[1]).tags == ("x",)
    assert mem.get(ids[0]).user == "u"


def test_batch_with_one_bad_entry_stores_nothing(mem: Memory) -> None:
    # The error names the bad entry: "entry 1" from the library, "items/1/…" from the REST schema (client).
    with pytest.raises(InvalidInputError, match=r"entry 1\b|items/1/"):
        mem.remember(["good one", "   ", "good two"])
    assert mem.stats().total == 0


def test_identical_content_in_same_scope_is_deduplicated(mem: Memory) -> None:
    first = mem.remember("Bob drinks tea", user="bob")
    assert mem.remember("Bob drinks tea", user="bob") == first
    assert mem.remember("  Bob   drinks tea ", user="bob") == first
    other_user = mem.remember("Bob drinks tea", user="carol")
    other_thread = mem.remember("Bob drinks tea", user="bob", thread="t9")
    assert len({first, other_user, other_thread}) == 3
    assert mem.stats().total == 3
    batch = mem.remember(["same", "same", "Bob drinks tea"], user="bob")
    assert batch[0] == batch[1] and batch[2] == first
    assert mem.stats().total == 4
    assert len(mem.history(first)) == 1


def test_update_records_before_and_after_and_reembeds(mem: Memory) -> None:
    memory_id = mem.remember("Carol lives in Paris", user="carol", tags=["home"])
    old_vector = mem.vector_of(memory_id)
    updated = mem.update(memory_id, content="Carol lives in Berlin", reason="moved")
    assert updated.content == "Carol lives in Berlin"
    assert mem.get(memory_id).content == "Carol lives in Berlin"
    new_vector = mem.vector_of(memory_id)
    assert old_vector is not None and new_vector is not None
    assert float(old_vector @ new_vector) < 0.999
    entries = mem.history(memory_id)
    assert [e.op for e in entries] == ["add", "update"]
    assert entries[1].before is not None and entries[1].after is not None
    assert entries[1].before["content"] == "Carol lives in Paris"
    assert entries[1].after["content"] == "Carol lives in Berlin"
    assert entries[1].reason == "moved"
    assert mem.recall("Berlin", user="carol")[0].id == memory_id
    assert not any(h.id == memory_id for h in mem.recall("Paris", user="carol", retrieval="lexical"))


def test_new_content_drops_the_keywords_and_entities_of_the_old(mem: Memory) -> None:
    """They were taken from the old text: kept, they would show it (e.g. a secret rewritten, then lowered)."""
    memory_id = mem.remember("Dana lives in Osaka", keywords=["osaka", "dana"], entities=["Dana", "Osaka"])
    updated = mem.update(memory_id, content="moved to Quito")
    assert updated.keywords == () and updated.entities == ()
    assert mem.get(memory_id).keywords == () and mem.get(memory_id).entities == ()
    given = mem.update(memory_id, content="moved to Lima", keywords=["lima"])
    assert given.keywords == ("lima",) and given.entities == ()
    kept = mem.update(memory_id, tags=["moves"])  # no new content: nothing dropped
    assert kept.keywords == ("lima",)
    same = mem.update(memory_id, content="moved to Lima")  # the same text: nothing dropped
    assert same.keywords == ("lima",)


def test_update_metadata_only_keeps_vector(mem: Memory) -> None:
    memory_id = mem.remember("Dave plays chess")
    before = mem.vector_of(memory_id)
    mem.update(memory_id, tags=["games"], importance=0.2)
    after = mem.vector_of(memory_id)
    assert before is not None and after is not None
    np.testing.assert_array_equal(before, after)
    assert mem.get(memory_id).tags == ("games",)


def test_update_rejects_bad_changes(mem: Memory) -> None:
    memory_id = mem.remember("Eve codes in Rust")
    with pytest.raises(InvalidInputError):
        mem.update(memory_id)
    with pytest.raises(InvalidInputError):
        mem.update(memory_id, colour="red")
    with pytest.raises(InvalidInputError):
        mem.update(memory_id, content="")
    with pytest.raises(InvalidInputError):
        mem.update(memory_id, importance=7)
    with pytest.raises(NotFoundError):
        mem.update("no-such-id", content="x")
    assert mem.get(memory_id).content == "Eve codes in Rust"
    assert len(mem.history(memory_id)) == 1


def test_forget_removes_from_every_channel_and_keeps_history(mem: Memory) -> None:
    memory_id = mem.remember("Frank owns a red bicycle")
    mem.remember("Grace owns a blue car")
    assert mem.forget(memory_id) == 1
    with pytest.raises(NotFoundError):
        mem.get(memory_id)
    assert all(h.id != memory_id for h in mem.recall("red bicycle"))
    assert [e.op for e in mem.history(memory_id)] == ["add", "delete"]
    with pytest.raises(NotFoundError):
        mem.forget(memory_id)
    assert mem.stats().total == 1


def test_forget_all_is_scoped(mem: Memory) -> None:
    mem.remember(["a1", "a2"], user="a")
    mem.remember(["a3"], user="a", sensitivity="secret")
    mem.remember(["b1"], user="b")
    mem.remember(["n1"], user="a", namespace="other")
    assert mem.forget_all(user="a") == 3
    assert mem.stats().total == 1
    assert mem.stats(namespace="other").total == 1


def test_list_filters_and_pagination(mem: Memory, clock: Callable[[], object]) -> None:
    ids = []
    for i in range(25):
        ids.append(mem.remember(f"note number {i}", tags=["even" if i % 2 == 0 else "odd", "all"], metadata={"i": i}))
        clock.advance(seconds=1)  # type: ignore[attr-defined]
    seen: list[str] = []
    cursor = None
    while True:
        page = mem.list(limit=7, cursor=cursor)
        seen.extend(i.id for i in page.items)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == list(reversed(ids))
    oldest = mem.list(limit=3, oldest_first=True)
    assert [i.id for i in oldest.items] == ids[:3]
    assert len(mem.list(tags=["even"]).items) == 13
    assert len(mem.list(tags_all=["even", "all"]).items) == 13
    assert len(mem.list(tags_all=["even", "odd"]).items) == 0
    assert [i.id for i in mem.list(metadata={"i": 4}).items] == [ids[4]]
    assert mem.list(metadata={"i": "4"}).items == ()


def test_list_time_range(mem: Memory, clock: Callable[[], object]) -> None:
    start = clock()  # type: ignore[operator]
    first = mem.remember("early")
    clock.advance(hours=2)  # type: ignore[attr-defined]
    second = mem.remember("late")
    assert [i.id for i in mem.list(since=start + timedelta(hours=1)).items] == [second]
    assert [i.id for i in mem.list(until=start + timedelta(hours=1)).items] == [first]


def test_metadata_types_are_not_confused(mem: Memory) -> None:
    as_true = mem.remember("flag true", metadata={"v": True})
    as_one = mem.remember("number one", metadata={"v": 1})
    as_text = mem.remember("text one", metadata={"v": "1"})
    as_null = mem.remember("null value", metadata={"v": None})
    mem.remember("no key")
    assert [i.id for i in mem.list(metadata={"v": True}).items] == [as_true]
    assert [i.id for i in mem.list(metadata={"v": 1}).items] == [as_one]
    assert [i.id for i in mem.list(metadata={"v": 1.0}).items] == [as_one]
    assert [i.id for i in mem.list(metadata={"v": "1"}).items] == [as_text]
    assert [i.id for i in mem.list(metadata={"v": None}).items] == [as_null]


def test_stats_counts(mem: Memory) -> None:
    mem.remember(["x1", "x2"], kind="fact")
    mem.remember("d1", kind="document", sensitivity="secret")
    stats = mem.stats(clearance="secret")
    assert stats.total == 3
    assert stats.by_kind == {"fact": 2, "document": 1}
    assert stats.by_sensitivity == {"normal": 2, "secret": 1}
    assert stats.by_embedding_status == {"done": 2, "skipped": 1}
    assert stats.ledger_entries == 3
    assert stats.embedding_dim == 384
    hidden = mem.stats()  # without secret clearance the secret is not counted, nor the ledger
    assert (hidden.total, hidden.by_kind, hidden.ledger_entries) == (2, {"fact": 2}, None)
    assert "secret" not in hidden.by_sensitivity and "skipped" not in hidden.by_embedding_status


def test_history_of_unknown_id(mem: Memory) -> None:
    with pytest.raises(NotFoundError):
        mem.history("missing")


def test_export_import_through_the_facade(mem: Memory) -> None:
    import io

    from memory.embedders.hashing import HashingEmbedder

    ids = mem.remember(["kept one", "kept two"], user="u", tags=["t"])
    mem.remember("hidden", sensitivity="secret")
    buffer = io.StringIO()
    assert mem.export(buffer) == 2
    target = Memory("memory://", embedder=HashingEmbedder())
    report = target.import_(io.StringIO(buffer.getvalue()))
    assert report.imported == 2 and report.reembedded == 0
    for memory_id in ids:
        assert target.get(memory_id) == mem.get(memory_id)
        original, copied = mem.vector_of(memory_id), target.vector_of(memory_id)
        # the copy holds what its store keeps of the original (memory:// is SQLite: float16; exact from SQLite)
        assert original is not None and copied is not None
        np.testing.assert_array_equal(copied, as_stored(target.backend, original))
    target.close()
