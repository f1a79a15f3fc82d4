"""Named, recorded schema migrations of the SQLite backend.

Each migration runs once, in order, inside its own ``BEGIN IMMEDIATE``
transaction, and is recorded in the ``migrations`` table with the time it
was applied. Opening an older database applies the missing ones; opening a
database that records a migration this code does not know raises
SchemaError (it was written by a newer version of memory). Never edit a
released migration: append a new one.

Schema (times are REAL epoch seconds, UTC; list/dict fields are JSON text):

* ``items`` — one row per memory; ``rid`` links the index tables.
* ``item_tags`` — (namespace, tag, rid) for tag filters with ``=`` comparisons.
* ``items_key_fts`` — FTS5 over the index key: ``content``, ``items.index_window`` (the
  context window the library writes) and the time words of ``created_at`` (triggers); a
  content-only search restricts it to ``content`` (``items_fts``, a second index of the
  content alone, was dropped by migration 0020).
* ``ledger`` — every change, kept after the item is deleted.
* ``vector_spaces`` — one row per embedding model, with the storage type of its
  vectors (``dtype``: ``float16``, or ``float32`` for spaces made before
  migration 0016); each space has the tables ``vectors_<id>`` (its vectors) and
  ``vcodes_<id>`` (sign bits, for the coarse pass) created by :func:`create_space_tables`.
* ``vector_counters`` — per (space, namespace) sequence and deletion count,
  which lets each process refresh its in-memory copy of the sign bits.
* ``meta`` — key/value facts about the store.
* ``graph_*`` — entities (+ normalised name/alias keys), relations (+ their source
  memories), mentions and memory links; see :mod:`memory.backends.graph`.
* ``api_keys`` — hashed API keys of the servers (see :mod:`memory.backends.keys`).
* ``langgraph_checkpoints``, ``langgraph_blobs``, ``langgraph_writes`` — LangGraph
  checkpoints (:mod:`memory.backends.checkpoints`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from memory.backends.checkpoints import EARLIER_TABLES, checkpoint_tables
from memory.errors import SchemaError
from memory.index_layout import MONTHS

__all__ = ["Migration", "MIGRATIONS", "apply_migrations", "applied_migrations", "create_space_tables"]


@dataclass(frozen=True, slots=True)
class Migration:
    """A named schema step: SQL statements, or a function of the connection."""

    name: str
    apply: Sequence[str] | Callable[[Any], None]


_ITEMS = [
    """CREATE TABLE items (
        rid INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        namespace TEXT NOT NULL,
        user TEXT,
        agent TEXT,
        thread TEXT,
        kind TEXT NOT NULL,
        content TEXT NOT NULL,
        context TEXT,
        tags TEXT NOT NULL DEFAULT '[]',
        keywords TEXT NOT NULL DEFAULT '[]',
        entities TEXT NOT NULL DEFAULT '[]',
        metadata TEXT NOT NULL DEFAULT '{}',
        source_ids TEXT NOT NULL DEFAULT '[]',
        importance REAL NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        accessed_at REAL,
        access_count INTEGER NOT NULL DEFAULT 0,
        valid_from REAL,
        valid_to REAL,
        sensitivity TEXT NOT NULL,
        expires_at REAL,
        content_hash TEXT NOT NULL,
        embedding_model TEXT,
        embedding_status TEXT NOT NULL,
        embedding_error TEXT
    )""",
    "CREATE INDEX items_ns_created ON items (namespace, created_at, id)",
    "CREATE INDEX items_dedup ON items (namespace, content_hash, user, agent, thread)",
    "CREATE INDEX items_ns_user ON items (namespace, user, created_at)",
    "CREATE INDEX items_ns_agent ON items (namespace, agent, created_at)",
    "CREATE INDEX items_ns_thread ON items (namespace, thread, created_at)",
    "CREATE INDEX items_ns_kind ON items (namespace, kind, created_at)",
    "CREATE INDEX items_pending ON items (embedding_status, created_at, id)",
    """CREATE TABLE item_tags (
        namespace TEXT NOT NULL,
        tag TEXT NOT NULL,
        rid INTEGER NOT NULL REFERENCES items (rid) ON DELETE CASCADE,
        PRIMARY KEY (namespace, tag, rid)
    ) WITHOUT ROWID""",
    "CREATE INDEX item_tags_rid ON item_tags (rid)",
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "INSERT INTO meta (key, value) VALUES ('schema', 'memory-sqlite')",
]

_LEXICAL = [
    """CREATE VIRTUAL TABLE items_fts USING fts5 (
        content, content='items', content_rowid='rid',
        tokenize='porter unicode61 remove_diacritics 2'
    )""",
    """CREATE TRIGGER items_fts_insert AFTER INSERT ON items BEGIN
        INSERT INTO items_fts (rowid, content) VALUES (new.rid, new.content);
    END""",
    """CREATE TRIGGER items_fts_delete AFTER DELETE ON items BEGIN
        INSERT INTO items_fts (items_fts, rowid, content) VALUES ('delete', old.rid, old.content);
    END""",
    """CREATE TRIGGER items_fts_update AFTER UPDATE OF content ON items BEGIN
        INSERT INTO items_fts (items_fts, rowid, content) VALUES ('delete', old.rid, old.content);
        INSERT INTO items_fts (rowid, content) VALUES (new.rid, new.content);
    END""",
]

_LEDGER = [
    """CREATE TABLE ledger (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        namespace TEXT NOT NULL,
        item_id TEXT NOT NULL,
        op TEXT NOT NULL,
        at REAL NOT NULL,
        before TEXT,
        after TEXT,
        reason TEXT
    )""",
    "CREATE INDEX ledger_item ON ledger (namespace, item_id, seq)",
]

_VECTORS = [
    """CREATE TABLE vector_spaces (
        space_id INTEGER PRIMARY KEY AUTOINCREMENT,
        model TEXT NOT NULL UNIQUE,
        dim INTEGER NOT NULL CHECK (dim > 0),
        table_name TEXT NOT NULL,
        created_at REAL NOT NULL
    )""",
    """CREATE TABLE vector_counters (
        space_id INTEGER NOT NULL REFERENCES vector_spaces (space_id),
        namespace TEXT NOT NULL,
        last_seq INTEGER NOT NULL DEFAULT 0,
        deletions INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (space_id, namespace)
    ) WITHOUT ROWID""",
]

# Issue 4: embedding claims on items (leases, so several sync workers share the work).
_ITEM_CLAIMS = [
    "ALTER TABLE items ADD COLUMN claimed_by TEXT",
    "ALTER TABLE items ADD COLUMN claimed_until REAL",
]

# Issue 4: conversations (hot messages + archive), thread turn counters, blocks, job state.
_EPISODIC = [
    """CREATE TABLE messages (
        rid INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        namespace TEXT NOT NULL,
        thread TEXT NOT NULL,
        turn INTEGER NOT NULL,
        role TEXT NOT NULL,
        speaker TEXT,
        user TEXT,
        agent TEXT,
        content TEXT NOT NULL,
        content_type TEXT NOT NULL,
        media TEXT,
        tags TEXT NOT NULL DEFAULT '[]',
        metadata TEXT NOT NULL DEFAULT '{}',
        sensitivity TEXT NOT NULL,
        created_at REAL NOT NULL,
        expires_at REAL,
        embedding_status TEXT NOT NULL,
        embedding_model TEXT,
        embedding_error TEXT,
        claimed_by TEXT,
        claimed_until REAL,
        UNIQUE (namespace, thread, turn)
    )""",
    "CREATE INDEX messages_pending ON messages (embedding_status, created_at, id)",
    "CREATE INDEX messages_ns_created ON messages (namespace, created_at)",
    "CREATE INDEX messages_ns_user ON messages (namespace, user, thread)",
    "CREATE INDEX messages_expires ON messages (expires_at) WHERE expires_at IS NOT NULL",
    """CREATE VIRTUAL TABLE messages_fts USING fts5 (
        content, content='messages', content_rowid='rid',
        tokenize='porter unicode61 remove_diacritics 2'
    )""",
    """CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts (rowid, content) VALUES (new.rid, new.content);
    END""",
    """CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', old.rid, old.content);
    END""",
    """CREATE TABLE message_archive (
        id TEXT PRIMARY KEY,
        namespace TEXT NOT NULL,
        thread TEXT NOT NULL,
        turn INTEGER NOT NULL,
        expires_at REAL,
        archived_at REAL NOT NULL,
        data TEXT NOT NULL
    )""",
    "CREATE INDEX message_archive_thread ON message_archive (namespace, thread, turn)",
    """CREATE TABLE message_threads (
        namespace TEXT NOT NULL,
        thread TEXT NOT NULL,
        last_turn INTEGER NOT NULL,
        PRIMARY KEY (namespace, thread)
    ) WITHOUT ROWID""",
    """CREATE TABLE msg_vector_counters (
        space_id INTEGER NOT NULL REFERENCES vector_spaces (space_id),
        namespace TEXT NOT NULL,
        last_seq INTEGER NOT NULL DEFAULT 0,
        deletions INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (space_id, namespace)
    ) WITHOUT ROWID""",
    """CREATE TABLE blocks (
        namespace TEXT NOT NULL,
        user_key TEXT NOT NULL,
        agent_key TEXT NOT NULL,
        label TEXT NOT NULL,
        data TEXT NOT NULL,
        version INTEGER NOT NULL,
        PRIMARY KEY (namespace, user_key, agent_key, label)
    ) WITHOUT ROWID""",
    """CREATE TABLE block_history (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        namespace TEXT NOT NULL,
        user_key TEXT NOT NULL,
        agent_key TEXT NOT NULL,
        label TEXT NOT NULL,
        data TEXT NOT NULL
    )""",
    "CREATE INDEX block_history_key ON block_history (namespace, user_key, agent_key, label, seq)",
    "CREATE TABLE job_state (name TEXT PRIMARY KEY, data TEXT NOT NULL)",
]

# Knowledge graph (issue 5). Memory ids reference items(id) with ON DELETE CASCADE, and the
# triggers drop relations left without a source and entities left unused, so deleting items
# cleans the graph in the same transaction.
_GRAPH = [
    """CREATE TABLE graph_entities (
        id TEXT PRIMARY KEY,
        namespace TEXT NOT NULL,
        name TEXT NOT NULL,
        type TEXT NOT NULL,
        aliases TEXT NOT NULL DEFAULT '[]',
        model TEXT,
        embedding BLOB,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    )""",
    "CREATE INDEX graph_entities_ns ON graph_entities (namespace, name)",
    """CREATE TABLE graph_entity_keys (
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        entity_id TEXT NOT NULL REFERENCES graph_entities (id) ON DELETE CASCADE,
        PRIMARY KEY (namespace, key)
    ) WITHOUT ROWID""",
    "CREATE INDEX graph_entity_keys_entity ON graph_entity_keys (entity_id)",
    """CREATE TABLE graph_relations (
        id TEXT PRIMARY KEY,
        namespace TEXT NOT NULL,
        subject_id TEXT NOT NULL REFERENCES graph_entities (id) ON DELETE CASCADE,
        predicate TEXT NOT NULL,
        object_id TEXT NOT NULL REFERENCES graph_entities (id) ON DELETE CASCADE,
        model TEXT,
        embedding BLOB,
        valid_at REAL,
        invalid_at REAL,
        created_at REAL NOT NULL
    )""",
    "CREATE INDEX graph_relations_subject ON graph_relations (namespace, subject_id)",
    "CREATE INDEX graph_relations_object ON graph_relations (namespace, object_id)",
    """CREATE TABLE graph_relation_sources (
        relation_id TEXT NOT NULL REFERENCES graph_relations (id) ON DELETE CASCADE,
        memory_id TEXT NOT NULL REFERENCES items (id) ON DELETE CASCADE,
        PRIMARY KEY (relation_id, memory_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX graph_relation_sources_memory ON graph_relation_sources (memory_id)",
    """CREATE TABLE graph_mentions (
        namespace TEXT NOT NULL,
        entity_id TEXT NOT NULL REFERENCES graph_entities (id) ON DELETE CASCADE,
        memory_id TEXT NOT NULL REFERENCES items (id) ON DELETE CASCADE,
        PRIMARY KEY (entity_id, memory_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX graph_mentions_memory ON graph_mentions (memory_id)",
    """CREATE TABLE graph_links (
        namespace TEXT NOT NULL,
        source_id TEXT NOT NULL REFERENCES items (id) ON DELETE CASCADE,
        target_id TEXT NOT NULL REFERENCES items (id) ON DELETE CASCADE,
        type TEXT NOT NULL,
        created_at REAL NOT NULL,
        PRIMARY KEY (source_id, target_id, type)
    ) WITHOUT ROWID""",
    "CREATE INDEX graph_links_target ON graph_links (target_id)",
    """CREATE TRIGGER graph_relation_orphan AFTER DELETE ON graph_relation_sources
    WHEN NOT EXISTS (SELECT 1 FROM graph_relation_sources WHERE relation_id = old.relation_id)
    BEGIN
        DELETE FROM graph_relations WHERE id = old.relation_id;
    END""",
    """CREATE TRIGGER graph_entity_orphan_mention AFTER DELETE ON graph_mentions
    WHEN NOT EXISTS (SELECT 1 FROM graph_mentions WHERE entity_id = old.entity_id)
     AND NOT EXISTS (SELECT 1 FROM graph_relations WHERE subject_id = old.entity_id OR object_id = old.entity_id)
    BEGIN
        DELETE FROM graph_entities WHERE id = old.entity_id;
    END""",
    """CREATE TRIGGER graph_entity_orphan_relation AFTER DELETE ON graph_relations
    BEGIN
        DELETE FROM graph_entities WHERE id IN (old.subject_id, old.object_id)
          AND NOT EXISTS (SELECT 1 FROM graph_mentions m WHERE m.entity_id = graph_entities.id)
          AND NOT EXISTS (SELECT 1 FROM graph_relations r
                          WHERE r.subject_id = graph_entities.id OR r.object_id = graph_entities.id);
    END""",
]


def _month_name(epoch: str) -> str:
    """SQL for the English month name of an epoch-seconds expression (UTC)."""
    months = " ".join(f"WHEN {n} THEN '{name}'" for n, name in enumerate(MONTHS, 1))
    return f"CASE CAST(strftime('%m', {epoch}, 'unixepoch') AS INTEGER) {months} END"


def time_words_sql(epoch: str) -> str:
    """SQL giving ``retrieval.window.time_words`` of an epoch-seconds expression: ``'8 May 2023'``."""
    day = f"CAST(strftime('%d', {epoch}, 'unixepoch') AS INTEGER)"
    return f"({day} || ' ' || {_month_name(epoch)} || ' ' || strftime('%Y', {epoch}, 'unixepoch'))"


# The index key (retrieval.window): a second FTS5 table over the content, the context
# window text that the library writes to items.index_window, and the time words of
# created_at. items_fts stays as it was, so content-only search ranks exactly as before
# (and as the other backends). FTS5 cannot take an expression as an external-content
# column, so triggers fill this table (0015 makes it contentless: it keeps no copy).
_INDEX_WINDOW = [
    "ALTER TABLE items ADD COLUMN index_window TEXT NOT NULL DEFAULT ''",
    """CREATE VIRTUAL TABLE items_key_fts USING fts5 (
        content, window, time, tokenize='porter unicode61 remove_diacritics 2'
    )""",
    f"""CREATE TRIGGER items_key_fts_insert AFTER INSERT ON items BEGIN
        INSERT INTO items_key_fts (rowid, content, window, time)
        VALUES (new.rid, new.content, new.index_window, {time_words_sql("new.created_at")});
    END""",
    """CREATE TRIGGER items_key_fts_delete AFTER DELETE ON items BEGIN
        DELETE FROM items_key_fts WHERE rowid = old.rid;
    END""",
    f"""CREATE TRIGGER items_key_fts_update AFTER UPDATE OF content, index_window, created_at ON items BEGIN
        DELETE FROM items_key_fts WHERE rowid = old.rid;
        INSERT INTO items_key_fts (rowid, content, window, time)
        VALUES (new.rid, new.content, new.index_window, {time_words_sql("new.created_at")});
    END""",
    f"""INSERT INTO items_key_fts (rowid, content, window, time)
        SELECT rid, content, index_window, {time_words_sql("created_at")} FROM items""",
]

# Hierarchical memory (issue 6): STM pages, MTM segments, personas, system memory and
# tier configuration as JSON documents keyed by (namespace, kind, owner, id).
_TIERS = [
    """CREATE TABLE tier_records (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        namespace TEXT NOT NULL,
        kind TEXT NOT NULL,
        owner TEXT NOT NULL,
        id TEXT NOT NULL,
        data TEXT NOT NULL,
        UNIQUE (namespace, kind, owner, id)
    )""",
    "CREATE INDEX tier_records_owner ON tier_records (namespace, kind, owner, seq)",
]

# Feedback (issue 9): one conversation record per (namespace, thread) and prompt versions per
# (namespace, name); documents as JSON, the filtered columns beside them; times as epoch seconds.
_FEEDBACK = [
    """CREATE TABLE feedback_records (
        namespace TEXT NOT NULL,
        thread TEXT NOT NULL,
        user_id TEXT,
        agent TEXT,
        prompt_name TEXT,
        prompt_version INTEGER,
        reward REAL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        reflected_at REAL,
        revision INTEGER NOT NULL DEFAULT 0,
        data TEXT NOT NULL,
        PRIMARY KEY (namespace, thread)
    ) WITHOUT ROWID""",
    "CREATE INDEX feedback_records_prompt ON feedback_records (namespace, prompt_name, prompt_version)",
    "CREATE INDEX feedback_records_updated ON feedback_records (namespace, updated_at)",
    """CREATE TABLE prompt_versions (
        namespace TEXT NOT NULL,
        name TEXT NOT NULL,
        version INTEGER NOT NULL CHECK (version >= 1),
        status TEXT NOT NULL CHECK (status IN ('active', 'candidate', 'retired')),
        created_at REAL NOT NULL,
        promoted_at REAL,
        data TEXT NOT NULL,
        PRIMARY KEY (namespace, name, version)
    ) WITHOUT ROWID""",
    "CREATE UNIQUE INDEX prompt_versions_active ON prompt_versions (namespace, name) WHERE status = 'active'",
]

# The graph store is one SQL implementation over both engines (backends/graph_sql.py):
# relation sources carry their namespace, as in PostgreSQL.
_GRAPH_SOURCE_NAMESPACE = [
    "ALTER TABLE graph_relation_sources ADD COLUMN namespace TEXT NOT NULL DEFAULT ''",
    "UPDATE graph_relation_sources SET namespace = "
    "(SELECT r.namespace FROM graph_relations r WHERE r.id = graph_relation_sources.relation_id)",
]


# The episodic store is one SQL implementation over both engines (backends/episodic_sql.py):
# archived messages keep their creation time in a column, as in PostgreSQL.
_ARCHIVE_CREATED_AT = [
    "ALTER TABLE message_archive ADD COLUMN created_at REAL NOT NULL DEFAULT 0",
    "UPDATE message_archive SET created_at = (julianday(json_extract(data, '$.created_at')) - 2440587.5) * 86400.0",
]


# Issue 22 (bytes per memory): the key index stops keeping its own copy of the content and
# window (a contentless FTS5 table: bm25 and rowids are all the lexical channel reads), and
# the indexes that only serve a filter or the embedding queue cover only the rows that
# filter or queue can match (``x = ?`` implies ``x IS NOT NULL``, so SQLite still uses them).
# A row leaves the key index by FTS5's 'delete' command with the values it was indexed with
# (the old row's content, window and time words), as an external-content table does: its
# postings and the document counts BM25 reads go exactly. (``contentless_delete=1`` was
# tried: after updates its bm25 differed from a content table's, and LoCoMo R@5 fell 0.009.)
# The key index is rebuilt from the items table.
_KEY_VALUES_OLD = f"old.rid, old.content, old.index_window, {time_words_sql('old.created_at')}"
_KEY_VALUES_NEW = f"new.rid, new.content, new.index_window, {time_words_sql('new.created_at')}"
_LEAN_INDEXES = [
    "DROP TRIGGER IF EXISTS items_key_fts_insert",
    "DROP TRIGGER IF EXISTS items_key_fts_delete",
    "DROP TRIGGER IF EXISTS items_key_fts_update",
    "DROP TABLE IF EXISTS items_key_fts",
    """CREATE VIRTUAL TABLE items_key_fts USING fts5 (
        content, window, time, content='', tokenize='porter unicode61 remove_diacritics 2'
    )""",
    f"""CREATE TRIGGER items_key_fts_insert AFTER INSERT ON items BEGIN
        INSERT INTO items_key_fts (rowid, content, window, time) VALUES ({_KEY_VALUES_NEW});
    END""",
    f"""CREATE TRIGGER items_key_fts_delete AFTER DELETE ON items BEGIN
        INSERT INTO items_key_fts (items_key_fts, rowid, content, window, time) VALUES ('delete', {_KEY_VALUES_OLD});
    END""",
    f"""CREATE TRIGGER items_key_fts_update AFTER UPDATE OF content, index_window, created_at ON items BEGIN
        INSERT INTO items_key_fts (items_key_fts, rowid, content, window, time) VALUES ('delete', {_KEY_VALUES_OLD});
        INSERT INTO items_key_fts (rowid, content, window, time) VALUES ({_KEY_VALUES_NEW});
    END""",
    _INDEX_WINDOW[-1],  # the key index refilled from the items table
    "DROP INDEX IF EXISTS items_pending",
    "CREATE INDEX items_pending ON items (created_at, id) WHERE embedding_status IN ('pending', 'failed')",
    *(
        statement
        for column in ("user", "agent", "thread")
        for statement in (
            f"DROP INDEX IF EXISTS items_ns_{column}",
            f"CREATE INDEX items_ns_{column} ON items (namespace, {column}, created_at) WHERE {column} IS NOT NULL",
        )
    ),
]


# Issue 22 (bytes per memory): new vector spaces store float16 vectors (half the bytes of
# float32; see backends/sqlite/vectors.py). The registry records each space's type; the
# default is what every space made before this migration holds.
_VECTOR_DTYPE = [
    "ALTER TABLE vector_spaces ADD COLUMN dtype TEXT NOT NULL DEFAULT 'float32' "
    "CHECK (dtype IN ('float32', 'float16'))",
]
#: How a space's sign-bit codes are made: spaces made before keep the signs of the coordinates
#: ('sign'); new ones take them after a fixed random rotation ('rotated', backends/sqlite/vectors.py).
_VECTOR_CODE = [
    "ALTER TABLE vector_spaces ADD COLUMN code TEXT NOT NULL DEFAULT 'sign' CHECK (code IN ('sign', 'rotated'))",
]
#: The counts of ``stats`` (one GROUP BY over kind, sensitivity and embedding status in a namespace) read this
#: index alone instead of every row: 64 -> 9 ms at 100k memories, for 37 bytes a memory (`memory bench disk`).
_ITEM_COUNTS = [
    "CREATE INDEX IF NOT EXISTS items_ns_counts ON items (namespace, kind, sensitivity, embedding_status)",
]


#: The graph's similarity searches keep a namespace's entity and relation vectors in process (graph_sql.py)
#: while its version here is unchanged: every insert, delete or change of a vector (or of a relation's
#: validity) bumps it, in the writer's transaction, whichever path wrote (cascades and triggers included).
_GRAPH_VECTOR_VERSIONS = [
    """CREATE TABLE graph_vector_versions (
        namespace TEXT NOT NULL,
        kind TEXT NOT NULL,
        version INTEGER NOT NULL,
        PRIMARY KEY (namespace, kind)
    ) WITHOUT ROWID""",
    *[
        f"""CREATE TRIGGER graph_{kind}_vectors_{name} AFTER {event} ON graph_{kind} BEGIN
            INSERT INTO graph_vector_versions (namespace, kind, version) VALUES ({row}.namespace, '{kind}', 1)
            ON CONFLICT (namespace, kind) DO UPDATE SET version = version + 1;
        END"""
        for kind, changed in (("entities", "model, embedding"), ("relations", "model, embedding, invalid_at"))
        for name, event, row in (
            ("insert", "INSERT", "new"),
            ("update", f"UPDATE OF {changed}", "new"),
            ("delete", "DELETE", "old"),
        )
    ],
]


def _langgraph_checkpoints(conn: Any) -> None:
    """LangGraph's checkpoint tables; a store that made them on first use (as ``graph_*``) keeps its rows."""
    for old, new in EARLIER_TABLES.items():
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (old,)).fetchone():
            conn.execute(f"ALTER TABLE {old} RENAME TO {new}")
    conn.execute("DROP INDEX IF EXISTS graph_checkpoints_run")
    for statement in checkpoint_tables("BLOB"):
        conn.execute(statement)


# Issue 17 (ingest at the embedder's speed): the content had two full-text indexes, ``items_fts``
# (content only) and ``items_key_fts`` (content, window, time words), and every write
# tokenised and indexed it twice (13-15 % of a LongMemEval ingest). A content-only search now
# restricts the key index to its ``content`` column (``{content} : …``, ``bm25`` weights 1, 0,
# 0): the same documents match, with the same document frequencies; the one difference is
# BM25's length normalisation, which counts a row's window and time words too, as the default
# (content and window) search already does.
_ONE_CONTENT_INDEX = [
    "DROP TRIGGER IF EXISTS items_fts_insert",
    "DROP TRIGGER IF EXISTS items_fts_delete",
    "DROP TRIGGER IF EXISTS items_fts_update",
    "DROP TABLE IF EXISTS items_fts",
]


#: API keys (hashes only; see memory.keys): one table for the whole file, keyed by the key id.
API_KEYS_MIGRATION = [
    """CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        token_hash TEXT NOT NULL,
        namespaces TEXT NOT NULL,
        read_only INTEGER NOT NULL DEFAULT 0,
        secrets INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        revoked_at REAL
    )""",
]


#: Every migration this code knows, in the order they are applied.
MIGRATIONS: tuple[Migration, ...] = (
    Migration("0001_items", _ITEMS),
    Migration("0002_lexical_fts5", _LEXICAL),
    Migration("0003_ledger", _LEDGER),
    Migration("0004_vector_spaces", _VECTORS),
    Migration("0005_item_claims", _ITEM_CLAIMS),
    Migration("0006_episodic", _EPISODIC),
    Migration("0007_api_keys", API_KEYS_MIGRATION),
    Migration("0008_graph", _GRAPH),
    Migration("0009_index_window", _INDEX_WINDOW),
    Migration("0010_tiers", _TIERS),
    Migration("0011_feedback", _FEEDBACK),
    Migration("0012_graph_source_namespace", _GRAPH_SOURCE_NAMESPACE),
    Migration("0013_langgraph_checkpoints", _langgraph_checkpoints),
    Migration("0014_archive_created_at", _ARCHIVE_CREATED_AT),
    Migration("0015_lean_indexes", _LEAN_INDEXES),
    Migration("0016_vector_dtype", _VECTOR_DTYPE),
    Migration("0017_vector_code", _VECTOR_CODE),
    Migration("0018_item_counts", _ITEM_COUNTS),
    Migration("0019_graph_vector_versions", _GRAPH_VECTOR_VERSIONS),
    Migration("0020_one_content_index", _ONE_CONTENT_INDEX),
)


def space_tables(space_id: int) -> tuple[str, str]:
    """Names of the vector table and the sign-bit table of a space (derived from its integer id)."""
    return f"vectors_{int(space_id)}", f"vcodes_{int(space_id)}"


def create_space_tables(conn: Any, space_id: int, dtype: str, code: str = "rotated") -> None:
    """Create the tables of one vector space and record its storage type ``dtype`` and sign-bit ``code``.

    Runs inside the caller's transaction.
    """
    vectors, codes = space_tables(space_id)
    conn.execute("UPDATE vector_spaces SET dtype = ?, code = ? WHERE space_id = ?", (dtype, code, int(space_id)))
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {vectors} ("
        "rid INTEGER PRIMARY KEY REFERENCES items (rid) ON DELETE CASCADE, "
        "embedding BLOB NOT NULL)"
    )
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {codes} ("
        "namespace TEXT NOT NULL, seq INTEGER NOT NULL, rid INTEGER NOT NULL, code BLOB NOT NULL, "
        "PRIMARY KEY (namespace, seq)) WITHOUT ROWID"
    )
    conn.execute(f"CREATE INDEX IF NOT EXISTS {codes}_rid ON {codes} (rid)")


def applied_migrations(conn: Any) -> list[str]:
    """Names of the migrations recorded in the database, in the order applied ([] if none)."""
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'migrations'").fetchone()
    if not exists:
        return []
    return [row[0] for row in conn.execute("SELECT name FROM migrations ORDER BY applied_at, rowid")]


def _check_known(names: Sequence[str], migrations: Sequence[Migration]) -> None:
    known = {m.name for m in migrations}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise SchemaError(
            "database was written by a newer version of memory (it records migrations "
            f"{', '.join(unknown)} that this version does not know); upgrade memory to open it"
        )


def apply_migrations(conn: Any, migrations: Sequence[Migration] = MIGRATIONS) -> list[str]:
    """Apply the missing ``migrations`` in order; return the names applied now.

    Safe when several processes open a new file at once: each migration
    re-checks the record inside its immediate transaction. Raises SchemaError
    for a database from a newer version, or one that is not a memory store.
    """
    already = applied_migrations(conn)
    _check_known(already, migrations)
    if {m.name for m in migrations} <= set(already):
        return []  # an up-to-date store: no write transaction at all
    applied_now: list[str] = []
    for migration in migrations:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
            done = applied_migrations(conn)
            if not done:
                _check_empty(conn)
            _check_known(done, migrations)
            if migration.name not in done:
                if callable(migration.apply):
                    migration.apply(conn)
                else:
                    for statement in migration.apply:
                        conn.execute(statement)
                conn.execute("INSERT INTO migrations (name, applied_at) VALUES (?, ?)", (migration.name, time.time()))
                applied_now.append(migration.name)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return applied_now


def _check_empty(conn: Any) -> None:
    """Refuse to add memory's tables to a database that holds someone else's."""
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
        "AND name != 'migrations' LIMIT 5"
    ).fetchall()
    if rows:
        names = ", ".join(row[0] for row in rows)
        raise SchemaError(
            f"this SQLite file holds other tables ({names}) and no memory schema; "
            "point memory at a new file instead of another application's database"
        )
