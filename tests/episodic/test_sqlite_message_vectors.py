"""SQLite message vectors take the same two search paths as items: exact scan and sign-bit candidates."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np

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
