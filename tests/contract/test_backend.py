"""The storage contract, exercised directly on each backend."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memory.backends.base import Backend, ListOrder, NewRecord
from memory.errors import Error, NotFoundError
from memory.filters import Filter
from memory.records import build_item, ledger_entry
from vector_storage import as_stored

NOW = datetime(2026, 3, 1, tzinfo=UTC)
DIM = 16
MODEL = "test-model"


def _record(content: str, vector: np.ndarray | None = None, **fields: object) -> NewRecord:
    item = build_item(content=content, namespace=str(fields.pop("namespace", "ns")), now=NOW, **fields)  # type: ignore[arg-type]
    if vector is not None:
        item = item.model_copy(update={"embedding_status": "done", "embedding_model": MODEL})
    return NewRecord(item, vector, ledger_entry("add", item.id, item.namespace, NOW, after=item))


def _unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def _flt(**kw: object) -> Filter:
    kw.setdefault("namespace", "ns")
    return Filter(now=NOW, **kw)  # type: ignore[arg-type]


def test_vector_space_registration(backend: Backend) -> None:
    assert backend.vector_spaces() == []
    space = backend.ensure_vector_space(MODEL, DIM)
    assert (space.model, space.dim) == (MODEL, DIM)
    assert backend.ensure_vector_space(MODEL, DIM) == space
    with pytest.raises(Error):
        backend.ensure_vector_space(MODEL, DIM + 1)
    assert [s.model for s in backend.vector_spaces()] == [MODEL]


def test_has_vector_space_sees_a_space_another_connection_registers(
    backend: Backend, open_backend: Callable[[], Backend]
) -> None:
    """A no is asked again (another process may register the space); a yes stays (spaces are never removed)."""
    assert not backend.has_vector_space(MODEL)
    other = open_backend()
    try:
        other.ensure_vector_space(MODEL, DIM)
        assert other.has_vector_space(MODEL)
    finally:
        other.close()
    assert backend.has_vector_space(MODEL)
    assert not backend.has_vector_space(MODEL + "-other")
    assert [s.model for s in backend.vector_spaces()] == [MODEL]


def test_as_stored_is_what_get_vectors_returns(backend: Backend) -> None:
    """``as_stored`` gives, before a write, exactly the vector ``get_vectors`` reads back after it."""
    backend.ensure_vector_space(MODEL, DIM)
    rng = np.random.default_rng(3)
    records = [_record(f"text {n}", _unit(rng)) for n in range(5)]
    backend.add(records)
    given = [r.vector for r in records if r.vector is not None]
    expected = backend.as_stored(MODEL, given)
    stored = backend.get_vectors("ns", MODEL, [r.item.id for r in records])
    for record, vector in zip(records, expected, strict=True):
        assert vector.dtype == np.float32
        np.testing.assert_array_equal(stored[record.item.id], vector)
    with pytest.raises(Error):
        backend.as_stored("unregistered", given)
    with pytest.raises(Error):
        backend.as_stored(MODEL, [np.ones(DIM + 1, dtype=np.float32)])


def test_add_dedups_and_reports(backend: Backend) -> None:
    backend.ensure_vector_space(MODEL, DIM)
    rng = np.random.default_rng(0)
    a = _record("alpha", _unit(rng), user="u")
    b = _record("alpha", _unit(rng), user="u")
    c = _record("alpha", _unit(rng), user="v")
    results = backend.add([a, b, c])
    assert [r.created for r in results] == [True, False, True]
    assert results[1].id == a.item.id
    assert backend.count(_flt()) == 2
    assert backend.ledger_count("ns") == 2


def test_vector_search_is_exact_and_filtered(backend: Backend) -> None:
    backend.ensure_vector_space(MODEL, DIM)
    rng = np.random.default_rng(1)
    records = [_record(f"doc {i}", _unit(rng), user="even" if i % 2 == 0 else "odd") for i in range(300)]
    backend.add(records)
    query = _unit(rng)
    # exact cosines of the vectors the store holds (float16 roundings on the SQLite engine)
    matrix = np.vstack([as_stored(backend, r.vector) for r in records if r.vector is not None])
    sims = matrix @ query / np.linalg.norm(matrix, axis=1)
    for user in (None, "even"):
        hits = backend.search_vector(_flt(user=user), MODEL, query, 10)
        allowed = [i for i, r in enumerate(records) if user is None or r.item.user == user]
        expected = sorted(allowed, key=lambda i: -sims[i])[:10]
        assert [h.id for h in hits] == [records[i].item.id for i in expected]
        assert [h.score for h in hits] == pytest.approx([float(sims[i]) for i in expected], abs=1e-5)
    assert backend.search_vector(_flt(namespace="other"), MODEL, query, 10) == []


def test_lexical_search_filters_and_ranks(backend: Backend) -> None:
    backend.add(
        [
            _record("the quick brown fox", user="a"),
            _record("a fox, a fox, a fox!", user="b"),
            _record("lazy dogs sleep", user="a"),
        ]
    )
    hits = backend.search_lexical(_flt(), ["fox"], 10)
    assert len(hits) == 2 and all(h.score > 0 for h in hits)
    only_a = backend.search_lexical(_flt(user="a"), ["fox"], 10)
    assert len(only_a) == 1
    assert backend.search_lexical(_flt(), ["unicorn"], 10) == []
    assert backend.search_lexical(_flt(), [], 10) == []


def test_replace_delete_history(backend: Backend) -> None:
    backend.ensure_vector_space(MODEL, DIM)
    rng = np.random.default_rng(2)
    rec = _record("original text", _unit(rng))
    backend.add([rec])
    new = rec.item.model_copy(update={"content": "changed text", "updated_at": NOW + timedelta(seconds=1)})
    backend.replace(new, None, ledger_entry("update", new.id, "ns", NOW, before=rec.item, after=new))
    assert backend.get("ns", [new.id])[0].content == "changed text"
    assert backend.search_lexical(_flt(), ["changed"], 5)[0].id == new.id
    assert backend.search_lexical(_flt(), ["original"], 5) == []
    assert set(backend.get_vectors("ns", MODEL, [new.id])) == {new.id}
    ghost = new.model_copy(update={"id": "ghost"})
    with pytest.raises(NotFoundError):
        backend.replace(ghost, None, ledger_entry("update", "ghost", "ns", NOW))
    assert backend.delete("ns", [new.id], [ledger_entry("delete", new.id, "ns", NOW, before=new)]) == 1
    assert backend.get("ns", [new.id]) == []
    assert backend.get_vectors("ns", MODEL, [new.id]) == {}
    assert [e.op for e in backend.history("ns", new.id)] == ["add", "update", "delete"]
    assert backend.history("other", new.id) == []


def test_replace_rewrites_tags_and_ends_the_embedding_claim(backend: Backend) -> None:
    rec = _record("to be embedded", tags=["old", "kept"])
    backend.add([rec])
    assert [i.id for i in backend.claim_pending_embeddings("ns", 10, "w1", 60, NOW)] == [rec.item.id]
    assert backend.claim_pending_embeddings("ns", 10, "w2", 60, NOW) == []
    changed = rec.item.model_copy(update={"content": "changed before it was embedded", "tags": ("kept", "new")})
    backend.replace(changed, None, ledger_entry("update", changed.id, "ns", NOW, before=rec.item, after=changed))
    assert backend.count(_flt(tags_any=["old"])) == 0
    assert backend.count(_flt(tags_all=["kept", "new"])) == 1
    claimed = backend.claim_pending_embeddings("ns", 10, "w2", 60, NOW)  # the new content is new work
    assert [i.content for i in claimed] == ["changed before it was embedded"]


def test_delete_takes_tags_words_and_vectors_along(backend: Backend) -> None:
    backend.ensure_vector_space(MODEL, DIM)
    rng = np.random.default_rng(5)
    keep, gone, also = (_record(f"tagged note {n}", _unit(rng), tags=["t"]) for n in range(3))
    backend.add([keep, gone, also])
    assert backend.delete("ns", [gone.item.id, also.item.id, gone.item.id, "missing"], []) == 2
    assert backend.count(_flt(tags_any=["t"])) == 1
    assert gone.vector is not None
    assert [h.id for h in backend.search_vector(_flt(), MODEL, gone.vector, 10)] == [keep.item.id]
    assert [h.id for h in backend.search_lexical(_flt(), ["tagged"], 10)] == [keep.item.id]
    assert backend.delete("ns", [], []) == 0


def test_namespace_isolation_on_every_read(backend: Backend) -> None:
    backend.ensure_vector_space(MODEL, DIM)
    rng = np.random.default_rng(3)
    rec = _record("shared words here", _unit(rng), namespace="a")
    backend.add([rec])
    other = _flt(namespace="b")
    assert backend.get("b", [rec.item.id]) == []
    assert backend.get_vectors("b", MODEL, [rec.item.id]) == {}
    assert backend.count(other) == 0
    assert backend.list(other, 10, ListOrder()) == []
    assert backend.search_lexical(other, ["shared"], 10) == []
    assert backend.delete("b", [rec.item.id], []) == 0
    assert backend.get("a", [rec.item.id]) != []


def test_group_counts_refuses_unknown_columns(backend: Backend) -> None:
    with pytest.raises(Error):
        backend.group_counts(_flt(), "content; DROP TABLE items")


def test_item_counts_equal_a_count_and_three_groupings(backend: Backend) -> None:
    """item_counts (one scan) answers what count plus group_counts by each column answer, under every filter."""
    backend.ensure_vector_space(MODEL, DIM)
    rng = np.random.default_rng(3)
    backend.add([
        _record("f1", _unit(rng), kind="fact", user="u"), _record("f2", kind="fact", user="v"),
        _record("d1", _unit(rng), kind="document", sensitivity="private", user="u"),
        _record("s1", kind="fact", sensitivity="secret", user="u"),
        _record("gone", kind="fact", user="u", expires_at=NOW - timedelta(days=1)),
        _record("elsewhere", kind="fact", namespace="other"),
    ])  # fmt: skip
    backend.mark_embedding("ns", [backend.find_ids(_flt(user="v"))[0]], "failed", "boom")
    filters = [
        _flt(), _flt(clearance="secret"), _flt(clearance="normal"), _flt(user="u", clearance="secret"),
        _flt(clearance="secret", include_expired=True, include_invalid=True), _flt(namespace="empty"),
        _flt(kinds=("document",)),
    ]  # fmt: skip
    for flt in filters:
        expected = {
            "total": backend.count(flt),
            "by_kind": backend.group_counts(flt, "kind"),
            "by_sensitivity": backend.group_counts(flt, "sensitivity"),
            "by_embedding_status": backend.group_counts(flt, "embedding_status"),
        }
        assert dict(backend.item_counts(flt)) == expected, flt
    counts = backend.item_counts(_flt())
    assert counts["total"] == 3 and "secret" not in counts["by_sensitivity"]
    assert counts["by_embedding_status"] == {"done": 2, "failed": 1}


def test_access_and_pending(backend: Backend) -> None:
    rec = _record("not embedded yet")
    backend.add([rec])
    assert [i.id for i in backend.pending_embeddings("ns", 10)] == [rec.item.id]
    backend.record_access("ns", [rec.item.id], NOW + timedelta(hours=1))
    item = backend.get("ns", [rec.item.id])[0]
    assert item.access_count == 1 and item.accessed_at == NOW + timedelta(hours=1)
    assert backend.mark_embedding("ns", [rec.item.id], "failed", "boom") == 1
    assert backend.get("ns", [rec.item.id])[0].embedding_error == "boom"
    assert list(backend.iter_items(_flt())) == backend.get("ns", [rec.item.id])


def test_record_access_counts_each_listing_and_stays_in_its_namespace(backend: Backend) -> None:
    twice, once, elsewhere = _record("seen twice"), _record("seen once"), _record("seen twice", namespace="other")
    backend.add([twice, once, elsewhere])
    later = NOW + timedelta(hours=2)
    backend.record_access("ns", [twice.item.id, once.item.id, twice.item.id, elsewhere.item.id], later)
    seen = {i.id: (i.access_count, i.accessed_at) for i in backend.get("ns", [twice.item.id, once.item.id])}
    assert seen == {twice.item.id: (2, later), once.item.id: (1, later)}
    untouched = backend.get("other", [elsewhere.item.id])[0]
    assert (untouched.access_count, untouched.accessed_at) == (0, None)
    backend.record_access("ns", [], later)
    assert backend.get("ns", [once.item.id])[0].access_count == 1


def _counts(backend: Backend, rec: NewRecord) -> tuple[int, datetime | None]:
    item = backend.get("ns", [rec.item.id])[0]
    return item.access_count, item.accessed_at


def test_accesses_are_written_in_batches_and_when_the_store_closes(
    backend: Backend, open_backend: Callable[[], Backend]
) -> None:
    from memory.backends.access_log import AccessLog

    rec, other = _record("recalled"), _record("recalled too")
    backend.add([rec, other])
    backend.__dict__["_access_log"] = AccessLog(batch=2, delay=3600.0)  # due at two memories
    later = NOW + timedelta(hours=1)
    backend.record_access("ns", [rec.item.id], later)
    reader = open_backend()
    try:
        assert _counts(backend, rec) == (1, later)  # this store reads its own kept accesses
        assert _counts(reader, rec) == (0, None)  # not written yet
        backend.record_access("ns", [other.item.id, rec.item.id], later + timedelta(minutes=1))  # due: written
        assert backend.access_written(10.0)  # type: ignore[attr-defined]  # behind the recall, on the store's thread
        assert _counts(reader, rec) == (2, later + timedelta(minutes=1)) and _counts(reader, other)[0] == 1
        assert _counts(backend, rec) == (2, later + timedelta(minutes=1))  # counted once, not again
        backend.record_access("ns", [other.item.id], later + timedelta(minutes=2))
        assert _counts(reader, other)[0] == 1
        backend.close()  # writes what it kept
        assert _counts(reader, other) == (2, later + timedelta(minutes=2))
    finally:
        reader.close()


def test_a_rewritten_item_keeps_its_accesses_counted_once(
    backend: Backend, open_backend: Callable[[], Backend]
) -> None:
    rec = _record("recalled, then edited")
    backend.add([rec])
    backend.record_access("ns", [rec.item.id], NOW + timedelta(hours=1))
    read = backend.get("ns", [rec.item.id])[0]  # the kept access counted
    edited = read.model_copy(update={"content": "edited"})
    backend.replace(edited, None, ledger_entry("update", rec.item.id, "ns", NOW, before=read, after=edited))
    backend.close()
    reader = open_backend()
    try:
        assert _counts(reader, rec) == (1, NOW + timedelta(hours=1))
    finally:
        reader.close()


def test_rank_fields_are_what_get_returns_without_whole_rows(backend: Backend) -> None:
    early = NOW - timedelta(days=3)
    records = [
        _record("first", importance=0.9, created_at=early),
        _record("second", importance=0.1),
        _record("elsewhere", namespace="other"),
    ]
    backend.add(records)
    ids = [r.item.id for r in records]
    fields = backend.rank_fields("ns", [*ids, "missing"])
    assert set(fields) == set(ids[:2])  # unknown ids and other namespaces' items are omitted
    for item in backend.get("ns", ids[:2]):
        assert (fields[item.id].created_at, fields[item.id].importance) == (item.created_at, item.importance)
    assert fields[ids[0]].created_at == early and fields[ids[0]].importance == 0.9
    assert backend.rank_fields("ns", []) == {} and backend.rank_fields("nobody", ids) == {}


def test_contents_are_what_get_returns_without_whole_rows(backend: Backend) -> None:
    records = [_record("Ünïcode — 12 apples"), _record("second"), _record("elsewhere", namespace="other")]
    backend.add(records)
    ids = [r.item.id for r in records]
    contents = backend.contents("ns", [*ids, "missing", "bad\x00id"])
    assert contents == {item.id: item.content for item in backend.get("ns", ids)}  # other namespaces omitted
    assert set(contents) == set(ids[:2]) and contents[ids[0]] == "Ünïcode — 12 apples"
    assert backend.contents("ns", []) == {} and backend.contents("nobody", ids) == {}
    assert backend.contents("bad\x00namespace", ids) == {}


def test_rank_fields_carry_the_metadata_role_as_stored(backend: Backend) -> None:
    # Speaker-aware ranking reads a memory's chat side with the rank fields (retrieval/speaker.py).
    records = [
        _record("said by the user", metadata={"role": "user"}),
        _record("said by the assistant", metadata={"role": "Assistant", "other": 1}),
        _record("a note", metadata={"topic": "role"}),
        _record("a numbered role", metadata={"role": 3}),
    ]
    backend.add(records)
    fields = backend.rank_fields("ns", [r.item.id for r in records])
    roles = [fields[r.item.id].role for r in records]
    assert roles[:3] == ["user", "Assistant", None]
    assert roles[3] in (3, "3")  # a non-text role comes back as the engine reads JSON; role_of ignores it


def test_rank_fields_carry_the_metadata_speaker_as_stored(backend: Backend) -> None:
    # A question naming one speaker prefers that speaker's turns (retrieval/speaker.py, named_speaker).
    records = [
        _record("Caroline: I looked into agencies", metadata={"speaker": "Caroline"}),
        _record("Melanie: I painted a lake", metadata={"speaker": "Melanie", "role": "user"}),
        _record("a note", metadata={"topic": "speaker"}),
    ]
    backend.add(records)
    fields = backend.rank_fields("ns", [r.item.id for r in records])
    assert [fields[r.item.id].speaker for r in records] == ["Caroline", "Melanie", None]
    assert fields[records[1].item.id].role == "user"
