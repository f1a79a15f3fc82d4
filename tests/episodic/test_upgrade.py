"""A store written before conversations existed upgrades in place: items keep working and get claims."""

from __future__ import annotations

from pathlib import Path

from memory import Memory
from memory.backends.sqlite.connection import connect
from memory.backends.sqlite.migrations import MIGRATIONS, apply_migrations
from memory.embedders.hashing import HashingEmbedder


def test_a_pre_episodic_database_upgrades(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    first_new = next(i for i, m in enumerate(MIGRATIONS) if m.name.endswith("_item_claims"))
    before = MIGRATIONS[:first_new]  # everything up to the claims/conversations migrations
    conn = connect(db)
    try:
        apply_migrations(conn, before)
    finally:
        conn.close()
    with Memory(str(db), embedder=HashingEmbedder()) as mem:
        names = [r[0] for r in mem.backend._conn.execute("SELECT name FROM migrations ORDER BY rowid")]  # type: ignore[attr-defined]
        assert names == [m.name for m in MIGRATIONS]
        memory_id = mem.remember("old style fact")
        mem.backend.mark_embedding(mem.namespace, [memory_id], "pending", None)
        assert [i.id for i in mem.backend.claim_pending_embeddings(None, 5, "w", 60, mem.now())] == [memory_id]
        assert mem.messages.append("t1", "first message").turn == 1
        assert mem.messages.search("first message")[0].message.turn == 1


def test_a_store_from_before_feedback_upgrades(tmp_path: Path) -> None:
    db = tmp_path / "tiers-era.db"
    first_new = next(i for i, m in enumerate(MIGRATIONS) if m.name.endswith("_feedback"))
    conn = connect(db)
    try:
        apply_migrations(conn, MIGRATIONS[:first_new])
    finally:
        conn.close()
    with Memory(str(db), embedder=HashingEmbedder()) as mem:
        names = [r[0] for r in mem.backend._conn.execute("SELECT name FROM migrations ORDER BY rowid")]  # type: ignore[attr-defined]
        assert names == [m.name for m in MIGRATIONS]
        mem.prompts.create("p", "text")
        assert mem.feedback.record("t1", rating=5, prompt="p").reward == 1.0


def test_graph_relation_sources_get_their_namespace(tmp_path: Path) -> None:
    db = tmp_path / "graph-era.db"
    first_new = next(i for i, m in enumerate(MIGRATIONS) if m.name.endswith("_graph_source_namespace"))
    conn = connect(db)
    try:
        apply_migrations(conn, MIGRATIONS[:first_new])
        conn.execute("PRAGMA foreign_keys = OFF")  # the source memory is not needed to read the relation back
        conn.execute("BEGIN IMMEDIATE")
        for entity in ("e1", "e2"):
            conn.execute(
                "INSERT INTO graph_entities (id, namespace, name, type, created_at, updated_at) "
                "VALUES (?, 'ns', ?, 'person', 1.0, 1.0)",
                (entity, entity.upper()),
            )
        conn.execute(
            "INSERT INTO graph_relations (id, namespace, subject_id, predicate, object_id, created_at) "
            "VALUES ('r1', 'ns', 'e1', 'knows', 'e2', 1.0)"
        )
        conn.execute("INSERT INTO graph_relation_sources (relation_id, memory_id) VALUES ('r1', 'm1')")
        conn.execute("COMMIT")
    finally:
        conn.close()
    with Memory(str(db), embedder=HashingEmbedder()) as mem:
        assert mem.backend.graph is not None
        (relation,) = mem.backend.graph.relations("ns")
        assert (relation.text, relation.source_ids) == ("E1 knows E2", ("m1",))
        assert mem.backend.graph.relations("other") == []


def test_archived_messages_keep_their_creation_time_as_a_column(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from memory.episodic.types import Message

    db = tmp_path / "archive-era.db"
    first_new = next(i for i, m in enumerate(MIGRATIONS) if m.name.endswith("_archive_created_at"))
    old = Message(id="m-old", namespace="ns", thread="t", turn=1, role="user", content="old",
                  created_at=datetime(2020, 5, 1, 12, 0, 0, 250000, tzinfo=UTC))  # fmt: skip
    new = old.model_copy(update={"id": "m-new", "turn": 2, "created_at": datetime(2024, 1, 1, tzinfo=UTC)})
    conn = connect(db)
    try:
        apply_migrations(conn, MIGRATIONS[:first_new])
        conn.execute("BEGIN IMMEDIATE")
        for m in (old, new):  # archived as the store wrote them before the column existed
            conn.execute(
                "INSERT INTO message_archive (id, namespace, thread, turn, expires_at, archived_at, data) "
                "VALUES (?, ?, ?, ?, NULL, 1.0, ?)",
                (m.id, m.namespace, m.thread, m.turn, m.model_dump_json()),
            )
        conn.execute("INSERT INTO message_threads (namespace, thread, last_turn) VALUES ('ns', 't', 2)")
        conn.execute("COMMIT")
    finally:
        conn.close()
    with Memory(str(db), embedder=HashingEmbedder()) as mem:
        store = mem.backend.episodic
        assert store is not None
        assert [m.id for m in store.iter_archived("ns")] == ["m-old", "m-new"]
        cutoff = datetime(2020, 5, 1, 12, 0, 1, tzinfo=UTC)
        assert store.delete_messages("ns", "t", before_turn=None, older_than=cutoff) == 1
        assert [m.id for m in store.iter_archived("ns")] == ["m-new"]
        assert store.append_messages([new.model_copy(update={"id": "m3"})])[0].turn == 3
