"""The EpisodicStore contract, against every backend that exposes ``backend.episodic``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memory.backends.base import Backend, NewRecord
from memory.backends.episodic import EpisodicStore
from memory.episodic.types import Block, BlockChange, JobState, Message, MessageQuery
from memory.errors import InvalidInputError
from memory.ids import new_id
from memory.records import build_item, ledger_entry
from vector_storage import as_stored

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def store(backend: Backend) -> EpisodicStore:
    """The backend's episodic store (the test is skipped for a backend without one)."""
    found = getattr(backend, "episodic", None)
    if found is None:
        pytest.skip(f"backend {backend.name} does not expose the EpisodicStore (backend.episodic) yet")
    assert isinstance(found, EpisodicStore)
    return found


def msg(content: str, *, thread: str = "t1", ns: str = "ns", at: datetime = T0, **fields: object) -> Message:
    return Message(id=new_id(), namespace=ns, thread=thread, role=str(fields.pop("role", "user")), content=content,
                   created_at=at, **fields)  # type: ignore[arg-type]  # fmt: skip


def q(ns: str = "ns", **fields: object) -> MessageQuery:
    return MessageQuery(namespace=ns, now=T0 + timedelta(hours=1), **fields)  # type: ignore[arg-type]


def unit(seed: int, dim: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def test_turns_are_assigned_per_thread_and_namespace(store: EpisodicStore) -> None:
    a = store.append_messages([msg("one"), msg("two"), msg("other", thread="t2"), msg("x", ns="ns2")])
    assert [m.turn for m in a] == [1, 2, 1, 1]
    b = store.append_messages([msg("three")])
    assert b[0].turn == 3
    assert [m.content for m in store.list_messages(q(thread="t1"), 10)] == ["one", "two", "three"]
    assert [m.turn for m in store.list_messages(q(thread="t1"), 2, newest_first=True)] == [3, 2]
    assert [m.turn for m in store.list_messages(q(thread="t1", after_turn=1), 10)] == [2, 3]


def test_a_batch_is_all_or_nothing(store: EpisodicStore) -> None:
    first = store.append_messages([msg("one")])[0]
    with pytest.raises(InvalidInputError):
        store.append_messages([msg("two"), first.model_copy(update={"turn": 0})])
    assert store.count_messages(q()) == 1
    assert store.append_messages([msg("two")])[0].turn == 2


def test_policy_secret_and_expired_are_hidden_by_default(store: EpisodicStore) -> None:
    store.append_messages([
        msg("plain"), msg("hidden", sensitivity="secret"), msg("gone", expires_at=T0 + timedelta(minutes=1)),
    ])  # fmt: skip
    assert [m.content for m in store.list_messages(q(), 10)] == ["plain"]
    assert len(store.list_messages(q(clearance="secret", include_expired=True), 10)) == 3
    assert [h.id for h in store.search_messages_lexical(q(), ["hidden", "gone", "plain"], 10)] == [
        store.list_messages(q(), 1)[0].id
    ]


def test_nothing_crosses_a_namespace(store: EpisodicStore) -> None:
    mine = store.append_messages([msg("the blue whale", ns="a")])[0]
    store.append_messages([msg("the blue whale", ns="b")])
    assert [h.id for h in store.search_messages_lexical(q("a"), ["whale"], 10)] == [mine.id]
    assert store.get_messages("b", [mine.id]) == []
    assert [t.thread for t in store.threads("a")] == ["t1"]
    assert store.count_messages(q("c")) == 0


def test_claims_never_overlap_and_leases_expire(store: EpisodicStore) -> None:
    stored = store.append_messages([msg(f"m{i}", at=T0 + timedelta(seconds=i)) for i in range(5)])
    first = store.claim_pending_messages(None, 3, "w1", 60, T0)
    second = store.claim_pending_messages(None, 3, "w2", 60, T0)
    assert [m.content for m in first] == ["m0", "m1", "m2"]
    assert [m.content for m in second] == ["m3", "m4"]
    assert store.claim_pending_messages(None, 3, "w3", 60, T0 + timedelta(seconds=59)) == []
    again = store.claim_pending_messages("ns", 10, "w3", 60, T0 + timedelta(seconds=61))
    assert len(again) == 5 and {m.id for m in again} == {m.id for m in stored}


def test_vectors_mark_done_and_release_failed_rows_return(store: EpisodicStore, backend: Backend) -> None:
    backend.ensure_vector_space("m8", 8)
    a, b = store.append_messages([msg("apples and pears"), msg("boats on rivers")])
    claimed = store.claim_pending_messages("ns", 10, "w", 60, T0)
    assert len(claimed) == 2
    assert store.set_message_vectors("ns", "m8", [(a.id, unit(1))]) == 1
    assert store.mark_messages("ns", [b.id], "failed", "boom") == 1
    got = {m.id: m for m in store.get_messages("ns", [a.id, b.id])}
    assert got[a.id].embedding_status == "done" and got[a.id].embedding_model == "m8"
    assert got[b.id].embedding_status == "failed" and got[b.id].embedding_error == "boom"
    assert store.message_status_counts("ns") == {"done": 1, "failed": 1}
    # the failed row is claimable again at once (its claim was released); the done one never
    assert [m.id for m in store.claim_pending_messages("ns", 10, "w", 60, T0)] == [b.id]
    hits = store.search_messages_vector(q(), "m8", unit(1), 5)
    assert [h.id for h in hits] == [a.id] and hits[0].score == pytest.approx(1.0, abs=1e-5)
    np.testing.assert_allclose(
        store.get_message_vectors("ns", "m8", [a.id])[a.id], as_stored(backend, unit(1)), rtol=1e-6
    )
    with pytest.raises(InvalidInputError):
        store.mark_messages("ns", [a.id], "bogus", None)


def test_pending_volume_counts_what_a_sync_would_embed(store: EpisodicStore) -> None:
    store.append_messages([msg("abcd"), msg("secret", sensitivity="secret"), msg("old", expires_at=T0)])
    assert store.pending_message_volume("ns", T0) == (1, 4)
    assert store.pending_message_volume("other", T0) == (0, 0)


def test_archive_moves_messages_out_of_the_hot_tables(store: EpisodicStore, backend: Backend) -> None:
    backend.ensure_vector_space("m8", 8)
    stored = store.append_messages([msg(f"word{i} shared", at=T0 + timedelta(minutes=i)) for i in range(5)])
    store.set_message_vectors("ns", "m8", [(m.id, unit(i)) for i, m in enumerate(stored)])
    assert store.archive_messages("ns", "t1", before_turn=4, older_than=None, at=T0) == 3
    assert [m.turn for m in store.list_messages(q(), 10)] == [4, 5]
    assert {h.id for h in store.search_messages_lexical(q(), ["shared"], 10)} == {stored[3].id, stored[4].id}
    assert {h.id for h in store.search_messages_vector(q(), "m8", unit(0), 10)} == {stored[3].id, stored[4].id}
    archived = list(store.iter_archived("ns"))
    assert [m.turn for m in archived] == [1, 2, 3] and archived[0] == stored[0].model_copy(
        update={"embedding_status": "done", "embedding_model": "m8"}
    )
    assert store.get_messages("ns", [stored[0].id]) == []
    assert store.get_messages("ns", [stored[0].id], include_archived=True)[0].id == stored[0].id
    assert store.append_messages([msg("next", at=T0 + timedelta(hours=1))])[0].turn == 6  # turns never reused
    info = store.threads("ns")[0]
    assert (info.messages, info.archived, info.last_turn) == (3, 3, 6)
    # delete: hot and archived, by age
    assert store.delete_messages("ns", "t1", before_turn=None, older_than=T0 + timedelta(minutes=2)) == 2
    assert [m.turn for m in store.iter_archived("ns")] == [3]


def test_purge_expired_hot_and_archived(store: EpisodicStore) -> None:
    store.append_messages([msg("a", expires_at=T0), msg("b", expires_at=T0 + timedelta(days=1)), msg("c")])
    store.archive_messages("ns", "t1", before_turn=3, older_than=None, at=T0)
    assert store.purge_expired_messages(None, T0 + timedelta(seconds=1)) == 1
    assert [m.content for m in store.iter_archived("ns")] == ["b"]
    assert store.purge_expired_messages("ns", T0 + timedelta(days=2)) == 1
    assert store.message_namespaces() == ["ns"]
    assert store.delete_messages("ns", "t1", before_turn=10, older_than=None) == 1
    assert store.message_namespaces() == []  # nothing left: the namespace is gone


def test_import_keeps_ids_and_turns_and_skips_known(store: EpisodicStore, backend: Backend) -> None:
    backend.ensure_vector_space("m8", 8)
    old = msg("imported", turn=7, embedding_status="done", embedding_model="m8")
    cold = msg("archived", turn=3)
    assert store.import_messages([(old, "m8", unit(3))]) == 1
    assert store.import_messages([(cold, None, None)], archived=True) == 1
    assert store.import_messages([(old, "m8", unit(3))]) == 0
    assert store.get_messages("ns", [old.id])[0] == old
    assert list(store.iter_archived("ns")) == [cold]
    assert store.append_messages([msg("after")])[0].turn == 8
    assert [h.id for h in store.search_messages_vector(q(), "m8", unit(3), 1)] == [old.id]


def test_blocks_compare_and_set_with_history(store: EpisodicStore) -> None:
    assert store.get_block("ns", "alice", None, "user_info") is None
    block = Block(
        namespace="ns", user="alice", label="user_info", value="likes tea", limit=100, version=1, updated_at=T0
    )
    change = BlockChange(namespace="ns", user="alice", label="user_info", version=1, op="replace", before="",
                         after="likes tea", at=T0)  # fmt: skip
    assert store.write_block(block, 0, change)
    assert not store.write_block(block.model_copy(update={"version": 2}), 0, change)  # stale writer loses
    assert store.get_block("ns", "alice", None, "user_info") == block
    assert store.get_block("ns", None, None, "user_info") is None  # another scope
    assert store.list_blocks("ns", "alice", None) == [block]
    assert store.iter_blocks("ns") == [block] and store.iter_blocks("other") == []
    assert store.block_history("ns", "alice", None, "user_info") == [change]
    assert "ns" in store.message_namespaces()


def test_job_state_round_trip(store: EpisodicStore) -> None:
    assert store.get_job_state("semantic_sync") is None
    state = JobState(name="semantic_sync", cursor="c1", runs=2, last_error="boom", last_error_at=T0)
    store.put_job_state(state)
    assert store.get_job_state("semantic_sync") == state
    store.put_job_state(state.model_copy(update={"runs": 3}))
    assert store.get_job_state("semantic_sync").runs == 3  # type: ignore[union-attr]


def test_item_claims_skip_secrets_and_never_overlap(backend: Backend) -> None:
    items = [build_item(content=f"fact {i}", namespace="ns", now=T0 + timedelta(seconds=i)) for i in range(4)]
    items.append(build_item(content="secret fact", namespace="ns", now=T0, sensitivity="secret"))
    backend.add([NewRecord(i, None, ledger_entry("add", i.id, "ns", T0, after=i)) for i in items])
    first = backend.claim_pending_embeddings("ns", 2, "w1", 30, T0)
    second = backend.claim_pending_embeddings(None, 5, "w2", 30, T0)
    assert [i.content for i in first] == ["fact 0", "fact 1"]
    assert [i.content for i in second] == ["fact 2", "fact 3"]
    backend.ensure_vector_space("m8", 8)
    backend.set_vectors("ns", "m8", [(first[0].id, unit(0))])
    backend.mark_embedding("ns", [first[1].id], "failed", "boom")
    assert [i.id for i in backend.claim_pending_embeddings("ns", 5, "w3", 30, T0)] == [first[1].id]
    later = backend.claim_pending_embeddings("ns", 5, "w3", 30, T0 + timedelta(seconds=31))
    assert {i.content for i in later} == {"fact 1", "fact 2", "fact 3"}


def test_pending_rows_are_claimed_before_failed_ones(store: EpisodicStore) -> None:
    old, new = store.append_messages([msg("old"), msg("new", at=T0 + timedelta(seconds=5))])
    store.claim_pending_messages("ns", 1, "w", 60, T0)
    store.mark_messages("ns", [old.id], "failed", "poison")
    assert [m.id for m in store.claim_pending_messages("ns", 1, "w", 60, T0)] == [new.id]
    assert [m.id for m in store.claim_pending_messages("ns", 1, "w", 60, T0)] == [old.id]


def test_claims_by_worker_and_release(store: EpisodicStore) -> None:
    store.append_messages([msg(f"m{i}") for i in range(4)])
    store.claim_pending_messages("ns", 3, "host:1:a", 300, T0)
    store.claim_pending_messages("ns", 3, "host:2:b", 300, T0)
    assert store.message_claims("ns") == {"host:1:a": 3, "host:2:b": 1}
    assert store.release_claims(["host:1:a"]) == 3
    assert store.message_claims(None) == {"host:2:b": 1}
    assert len(store.claim_pending_messages("ns", 10, "w", 300, T0)) == 3  # freed at once, lease or not


def test_job_state_updates_are_atomic_under_concurrency(store: EpisodicStore) -> None:
    import threading

    def bump(current: JobState | None) -> JobState:
        state = current or JobState(name="semantic_sync")
        return state.model_copy(update={"processed": state.processed + 1})

    def work() -> None:
        for _ in range(25):
            store.update_job_state("semantic_sync", bump)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert store.get_job_state("semantic_sync").processed == 100  # type: ignore[union-attr]


def test_delete_one_message_hot_or_archived_and_only_in_its_namespace(store: EpisodicStore, backend: Backend) -> None:
    backend.ensure_vector_space("m8", 8)
    stored = store.append_messages([msg(f"word{i} shared", at=T0 + timedelta(minutes=i)) for i in range(4)])
    store.set_message_vectors("ns", "m8", [(m.id, unit(i)) for i, m in enumerate(stored)])
    store.archive_messages("ns", "t1", before_turn=2, older_than=None, at=T0)
    assert store.delete_message("other-ns", stored[3].id) is False  # another namespace cannot delete it
    assert store.delete_message("ns", stored[3].id) is True
    assert store.delete_message("ns", stored[3].id) is False
    assert store.delete_message("ns", stored[0].id) is True  # an archived one
    assert [m.turn for m in store.list_messages(q(), 10)] == [2, 3]
    assert list(store.iter_archived("ns")) == []
    assert {h.id for h in store.search_messages_lexical(q(), ["shared"], 10)} == {stored[1].id, stored[2].id}
    assert stored[3].id not in {h.id for h in store.search_messages_vector(q(), "m8", unit(3), 10)}
    assert store.append_messages([msg("next")])[0].turn == 5  # turns never reused
