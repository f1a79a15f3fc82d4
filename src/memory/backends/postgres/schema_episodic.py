"""PostgreSQL schema of the episodic store (migration ``0004_episodic``), appended to :mod:`.migrations`.

Every key and btree index starts with ``namespace`` (Citus can distribute
these tables by namespace, co-located with ``items``), except ``job_state``,
a small table keyed by job name that Citus would keep as a reference table.

* ``messages`` — hot messages, primary key ``(namespace, id)``, ``UNIQUE
  (namespace, thread, turn)``; ``tsv`` is a GENERATED tsvector (the items'
  ``memory_english`` configuration) with a GIN index; ``doc_len`` feeds BM25;
  ``claimed_by``/``claimed_until`` hold a sync worker's lease.
* ``message_lexical_stats`` — per namespace: documents and words (BM25's N, avgdl).
* ``message_threads`` — the last turn handed out per (namespace, thread); its
  row lock serialises appends to one thread, so turns are never shared or reused.
* ``message_archive`` — archived messages as JSON, kept for export.
* ``blocks``/``block_history`` — working-memory blocks (user/agent unset stored
  as ``''`` in the key) and every change of them.
* ``msg_vectors_<space_id>`` — per embedding space, like ``vectors_<space_id>``
  of items: ``vector(dim)`` with an HNSW index, created on first use by
  :func:`create_message_space_table`.
"""

from __future__ import annotations

from typing import Any

from memory.backends.postgres.sql import HNSW_MAX_DIM

__all__ = ["EPISODIC_STATEMENTS", "message_space_table", "create_message_space_table"]

EPISODIC_STATEMENTS: list[str] = [
    """CREATE TABLE messages (
        namespace text NOT NULL,
        id text NOT NULL,
        thread text NOT NULL,
        turn integer NOT NULL,
        role text NOT NULL,
        speaker text,
        "user" text,
        agent text,
        content text NOT NULL,
        content_type text NOT NULL,
        media jsonb,
        tags jsonb NOT NULL DEFAULT '[]',
        metadata jsonb NOT NULL DEFAULT '{}',
        sensitivity text NOT NULL,
        created_at timestamptz NOT NULL,
        expires_at timestamptz,
        embedding_status text NOT NULL,
        embedding_model text,
        embedding_error text,
        claimed_by text,
        claimed_until timestamptz,
        doc_len integer NOT NULL DEFAULT 0,
        tsv tsvector GENERATED ALWAYS AS (to_tsvector('memory_english'::regconfig, content)) STORED,
        PRIMARY KEY (namespace, id),
        UNIQUE (namespace, thread, turn)
    )""",
    "CREATE INDEX messages_ns_created ON messages (namespace, created_at, id)",
    'CREATE INDEX messages_ns_user ON messages (namespace, "user", thread)',
    "CREATE INDEX messages_pending ON messages (namespace, created_at, id) "
    "WHERE embedding_status IN ('pending', 'failed')",
    "CREATE INDEX messages_claimed ON messages (namespace, claimed_by) WHERE claimed_by IS NOT NULL",
    "CREATE INDEX messages_expires ON messages (namespace, expires_at) WHERE expires_at IS NOT NULL",
    "CREATE INDEX messages_tsv ON messages USING gin (tsv)",
    """CREATE TABLE message_lexical_stats (
        namespace text PRIMARY KEY,
        docs bigint NOT NULL DEFAULT 0,
        words bigint NOT NULL DEFAULT 0
    )""",
    """CREATE TABLE message_threads (
        namespace text NOT NULL,
        thread text NOT NULL,
        last_turn integer NOT NULL,
        PRIMARY KEY (namespace, thread)
    )""",
    """CREATE TABLE message_archive (
        namespace text NOT NULL,
        id text NOT NULL,
        thread text NOT NULL,
        turn integer NOT NULL,
        created_at timestamptz NOT NULL,
        expires_at timestamptz,
        archived_at timestamptz NOT NULL,
        data text NOT NULL,
        PRIMARY KEY (namespace, id)
    )""",
    "CREATE INDEX message_archive_thread ON message_archive (namespace, thread, turn)",
    "CREATE INDEX message_archive_expires ON message_archive (namespace, expires_at) WHERE expires_at IS NOT NULL",
    """CREATE TABLE blocks (
        namespace text NOT NULL,
        user_key text NOT NULL,
        agent_key text NOT NULL,
        label text NOT NULL,
        data text NOT NULL,
        version integer NOT NULL,
        PRIMARY KEY (namespace, user_key, agent_key, label)
    )""",
    """CREATE TABLE block_history (
        namespace text NOT NULL,
        seq bigint GENERATED ALWAYS AS IDENTITY,
        user_key text NOT NULL,
        agent_key text NOT NULL,
        label text NOT NULL,
        data text NOT NULL,
        PRIMARY KEY (namespace, seq)
    )""",
    "CREATE INDEX block_history_key ON block_history (namespace, user_key, agent_key, label, seq)",
    "CREATE TABLE job_state (name text PRIMARY KEY, data text NOT NULL)",
]


def message_space_table(space_id: int) -> str:
    """Name of the message vector table of a space (derived from its integer id only)."""
    return f"msg_vectors_{int(space_id)}"


def create_message_space_table(conn: Any, space_id: int, dim: int) -> None:
    """Create one space's message vector table and its HNSW index (inside the caller's transaction)."""

    table = message_space_table(space_id)
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {table} ("
        "namespace text NOT NULL, id text NOT NULL, "
        f"embedding vector({int(dim)}) NOT NULL, "
        "PRIMARY KEY (namespace, id), "
        "FOREIGN KEY (namespace, id) REFERENCES messages (namespace, id) ON DELETE CASCADE)"
    )
    if int(dim) <= HNSW_MAX_DIM:
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS {table}_hnsw ON {table} "
            "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
        )
