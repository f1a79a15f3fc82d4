"""SQLite message vectors take the same two search paths as items: exact scan and sign-bit candidates."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memory.backends.sqlite import SQLiteBackend
from memory.episodic.types import Message, MessageQuery
from memory.ids import new_id

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_candidate_path_matches_brute_force_and_keeps_items_apart(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((300, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    with SQLiteBackend(tmp_path / "v.db", exact_limit=20) as backend:
        backend.ensure_vector_space("m32", 32)
        store = backend.episodic
        stored = store.append_messages([
            Message(id=new_id(), namespace="ns", thread=f"t{i % 4}", role="user", content=f"text {i}", created_at=T0)
            for i in range(300)
        ])  # fmt: skip
        store.set_message_vectors("ns", "m32", [(m.id, vectors[i]) for i, m in enumerate(stored)])
        query = MessageQuery(namespace="ns", now=T0)
        for probe in range(5):
            target = vectors[probe * 37]
            hits = store.search_messages_vector(query, "m32", target, 5)
            expected = np.argsort(-(vectors @ target))[:5]
            assert [h.id for h in hits] == [stored[j].id for j in expected]
        in_thread = store.search_messages_vector(query.model_copy(update={"thread": "t1"}), "m32", vectors[1], 3)
        assert in_thread[0].id == stored[1].id and all(h.id in {m.id for m in stored[1::4]} for h in in_thread)
        # items in the same space see none of the message vectors
        from memory.filters import Filter

        assert backend.search_vector(Filter(namespace="ns", now=T0), "m32", vectors[0], 5) == []
        assert store.archive_messages("ns", "t0", before_turn=10**6, older_than=None, at=T0) == 75
        after = store.search_messages_vector(query, "m32", vectors[0], 5)
        assert stored[0].id not in {h.id for h in after} and len(after) == 5


def test_a_small_namespace_of_messages_searched_whole_is_ranked_in_its_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under ``exact_limit`` vectors, a search of every thread scores the namespace's copy, not the table.

    The same hits and scores as a reader with no float copy, and archived messages stay out; a search
    narrowed to a thread still scans that thread's rows exactly.
    """
    from memory.backends.sqlite import vectors as vector_store

    def not_from_the_table(*args: object) -> None:
        raise AssertionError("the namespace's vectors were read from the table")

    rng = np.random.default_rng(8)
    vectors = rng.standard_normal((400, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    with SQLiteBackend(tmp_path / "m.db") as copy, SQLiteBackend(tmp_path / "m.db", vector_cache_mb=0) as table:
        copy.ensure_vector_space("m32", 32)
        stored = copy.episodic.append_messages([
            Message(id=new_id(), namespace="ns", thread=f"t{i % 4}", role="user", content=f"text {i}", created_at=T0)
            for i in range(400)
        ])  # fmt: skip
        copy.episodic.set_message_vectors("ns", "m32", [(m.id, vectors[i]) for i, m in enumerate(stored)])
        assert copy.episodic.archive_messages("ns", "t0", before_turn=10**6, older_than=None, at=T0) == 100
        query = MessageQuery(namespace="ns", now=T0)
        hot = [i for i, m in enumerate(stored) if m.thread != "t0"]
        for _ in range(5):
            target = rng.standard_normal(32).astype(np.float32)
            with monkeypatch.context() as patched:
                patched.setattr(vector_store, "_exact", not_from_the_table)
                patched.setattr(vector_store, "_rescore", not_from_the_table)
                got = copy.episodic.search_messages_vector(query, "m32", target, 8)
            want = table.episodic.search_messages_vector(query, "m32", target, 8)
            assert [(h.id, h.score) for h in got] == [(h.id, h.score) for h in want]
            rows = vectors[hot].astype(np.float16).astype(np.float32)  # as stored
            scores = rows @ target / np.linalg.norm(rows, axis=1)
            assert [h.id for h in got] == [stored[hot[j]].id for j in np.argsort(-scores)[:8]]
        calls: list[int] = []
        scan = vector_store._exact
        monkeypatch.setattr(vector_store, "_exact", lambda *args: calls.append(1) or scan(*args))
        in_thread = copy.episodic.search_messages_vector(query.model_copy(update={"thread": "t1"}), "m32", target, 3)
        assert calls and all(h.id in {m.id for m in stored[1::4]} for h in in_thread)
