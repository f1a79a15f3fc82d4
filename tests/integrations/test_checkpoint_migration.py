"""LangGraph checkpoint tables come from the named migrations; a store that made them on first use keeps its rows.

Earlier versions created ``graph_checkpoints``/``graph_blobs``/``graph_writes``
with ``IF NOT EXISTS`` the first time a checkpointer opened the store. Opening
such a store now runs the checkpoint migration, which renames them, and the
checkpoints written before are still read back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memory import Memory
from memory.backends.checkpoints import EARLIER_TABLES, CheckpointRow, checkpoint_tables, open_checkpoint_store
from memory.embedders.hashing import HashingEmbedder
from memory.registry import create
from pg_support import postgres_dsn, schema_for


def _earlier_tables(blob: str) -> list[str]:
    """The statements earlier versions ran on first use (the same tables under their old names)."""
    statements = checkpoint_tables(blob)
    for old, new in EARLIER_TABLES.items():
        statements = [s.replace(new, old) for s in statements]
    return statements


def _write_old_checkpoint(conn: Any, blob: str, mark: str) -> None:
    for statement in _earlier_tables(blob):
        conn.execute(statement)
    conn.execute(
        "INSERT INTO graph_checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, type, checkpoint, "
        f"metadata_type, metadata) VALUES ({', '.join([mark] * 9)})",
        ("t1", "", "c1", None, "r1", "json", b'{"v": 1}', "json", b"{}"),
    )


def _check_upgraded(mem: Memory) -> None:
    store = open_checkpoint_store(mem.backend)
    assert store.get("t1", "", None) == CheckpointRow("t1", "", "c1", None, ("json", b'{"v": 1}'), ("json", b"{}"))
    store.delete_thread("t1")
    assert store.get("t1", "", None) is None


def test_a_sqlite_store_with_first_use_checkpoint_tables_upgrades(tmp_path: Path) -> None:
    from memory.backends.sqlite.connection import connect
    from memory.backends.sqlite.migrations import MIGRATIONS, apply_migrations

    db = tmp_path / "old.db"
    conn = connect(db)
    try:
        apply_migrations(conn, [m for m in MIGRATIONS if not m.name.endswith("_langgraph_checkpoints")])
        conn.execute("BEGIN IMMEDIATE")
        _write_old_checkpoint(conn, "BLOB", "?")
        conn.execute("COMMIT")
    finally:
        conn.close()
    with Memory(str(db), embedder=HashingEmbedder()) as mem:
        tables = {r[0] for r in mem.backend._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}  # type: ignore[attr-defined]
        assert set(EARLIER_TABLES.values()) <= tables and not set(EARLIER_TABLES) & tables
        _check_upgraded(mem)


def test_a_new_sqlite_store_has_the_checkpoint_tables_before_any_checkpointer(tmp_path: Path) -> None:
    with Memory(str(tmp_path / "new.db"), embedder=HashingEmbedder()) as mem:
        tables = {r[0] for r in mem.backend._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}  # type: ignore[attr-defined]
    assert set(EARLIER_TABLES.values()) <= tables


def test_a_postgres_store_with_first_use_checkpoint_tables_upgrades(tmp_path: Path) -> None:
    dsn = postgres_dsn()
    import psycopg

    from memory.backends.postgres.connection import session_options
    from memory.backends.postgres.migrations import MIGRATIONS, apply_migrations

    schema = schema_for(tmp_path)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    with psycopg.connect(dsn, autocommit=True, options=session_options(schema)) as conn:
        apply_migrations(conn, [m for m in MIGRATIONS if not m.name.endswith("_langgraph_checkpoints")])
        with conn.transaction():
            _write_old_checkpoint(conn, "BYTEA", "%s")
    backend = create("backend", "postgres", {"dsn": dsn, "schema": schema})
    with Memory(backend=backend, embedder=HashingEmbedder()) as mem:  # type: ignore[arg-type]
        with mem.backend._read() as conn:  # type: ignore[attr-defined]
            tables = {
                r[0]
                for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").fetchall()
            }
        assert set(EARLIER_TABLES.values()) <= tables and not set(EARLIER_TABLES) & tables
        _check_upgraded(mem)
