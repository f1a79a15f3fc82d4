"""Named, recorded schema migrations of the PostgreSQL backend.

Each migration runs once, in order, in its own transaction, and is recorded
in ``schema_migrations``. Opening an older store applies the missing ones;
a store that records a migration this code does not know raises SchemaError
(written by a newer version of memory). A transaction-scoped advisory lock
serialises processes that open a new store at the same time. Never edit a
released migration: append a new one.

Schema (every key and every btree index starts with ``namespace``, so Citus
can distribute all tables by ``namespace`` and co-locate them):

* ``items`` — one row per memory, primary key ``(namespace, id)``; times are
  ``timestamptz``; lists and metadata are ``jsonb``; ``doc_len`` (the content's
  word count) feeds BM25 (the content's own ``tsv`` column and its GIN index were
  dropped by 0013: ``key_tsv`` serves content-only searches too);
  ``claimed_by``/``claimed_until`` hold a worker's lease on pending embedding work.
* ``item_tags`` — ``(namespace, tag, item_id)`` for tag filters.
* ``lexical_stats`` — per namespace: documents and words, BM25's N and avgdl.
* ``ledger`` — every change, kept after the item is deleted.
* ``vector_spaces`` — one row per embedding model with its dimension; each
  space has its own table ``vectors_<space_id>`` (``vector(dim)``) with its own
  HNSW index (cosine), created by :func:`create_space_table`. One table per
  (model, dimension) keeps every HNSW graph to one vector space.
* ``items.index_window``/``window_len``/``key_tsv`` (0007) — the context window text the
  library computes (``retrieval.window``) and a generated tsvector (``memory_english``:
  English stems, no stopword list) over content (label A),
  window (B) and ``memory_time_words(created_at)`` (C) with a GIN index;
  ``lexical_stats.window_words`` completes BM25's average length over the three fields.
* ``tier_records`` (0008) — hierarchical-memory documents keyed by
  ``(namespace, kind, owner, id)``.
* ``lexical_terms`` (0009) — BM25's document frequencies, exact and kept in the writing
  transaction: per namespace and lexeme of ``key_tsv``, how many items hold the lexeme
  with each set of field labels (``mask``: 1 content, 2 window, 4 time). A query's df
  is the sum over the masks that meet its fields, so it never counts postings.
* ``feedback_records`` and ``prompt_versions`` (0010) — conversation records
  keyed by ``(namespace, thread)``, prompt versions by ``(namespace, name, version)``.
* ``langgraph_checkpoints``, ``langgraph_blobs``, ``langgraph_writes`` (0011) — LangGraph
  checkpoints (:mod:`memory.backends.checkpoints`), keyed by thread (not namespaced).
* ``graph_vector_versions`` (0012) — per namespace and kind (``entities``, ``relations``),
  a version that triggers bump on every insert, delete or change of a graph vector (or a
  relation's validity): the graph store keeps a namespace's vectors in process while it holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memory.backends.checkpoints import EARLIER_TABLES, checkpoint_tables
from memory.backends.postgres.schema_episodic import EPISODIC_STATEMENTS
from memory.backends.postgres.schema_graph import GRAPH_STATEMENTS, GRAPH_VECTOR_VERSIONS
from memory.backends.postgres.sql import HNSW_MAX_DIM
from memory.errors import ConfigError, SchemaError
from memory.index_layout import MONTHS

__all__ = [
    "Migration",
    "MIGRATIONS",
    "apply_migrations",
    "applied_migrations",
    "create_space_table",
    "space_table",
    "HNSW_MAX_DIM",
]

#: Key of the advisory lock that serialises migrations (any constant bigint).
_MIGRATION_LOCK = 7_361_120_100
#: Whether a table exists in the store's own schema (the first on the search path), not elsewhere.
_IN_SCHEMA = "SELECT to_regclass(format('%%I.%%I', current_schema(), %s::text)) IS NOT NULL"


@dataclass(frozen=True, slots=True)
class Migration:
    """A named schema step: SQL statements run in order in one transaction."""

    name: str
    statements: Sequence[str]


_ITEMS = [
    "CREATE EXTENSION IF NOT EXISTS vector",
    # English stemming without a stopword list, like SQLite's FTS5 porter tokenizer.
    "CREATE TEXT SEARCH DICTIONARY memory_english_stem (TEMPLATE = snowball, Language = english)",
    "CREATE TEXT SEARCH CONFIGURATION memory_english (COPY = english)",
    "ALTER TEXT SEARCH CONFIGURATION memory_english ALTER MAPPING FOR asciiword, asciihword, "
    "hword_asciipart, word, hword, hword_part WITH memory_english_stem",
    """CREATE TABLE items (
        namespace text NOT NULL,
        id text NOT NULL,
        "user" text,
        agent text,
        thread text,
        kind text NOT NULL,
        content text NOT NULL,
        context text,
        tags jsonb NOT NULL DEFAULT '[]',
        keywords jsonb NOT NULL DEFAULT '[]',
        entities jsonb NOT NULL DEFAULT '[]',
        metadata jsonb NOT NULL DEFAULT '{}',
        source_ids jsonb NOT NULL DEFAULT '[]',
        importance double precision NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        accessed_at timestamptz,
        access_count integer NOT NULL DEFAULT 0,
        valid_from timestamptz,
        valid_to timestamptz,
        sensitivity text NOT NULL,
        expires_at timestamptz,
        content_hash text NOT NULL,
        embedding_model text,
        embedding_status text NOT NULL,
        embedding_error text,
        claimed_by text,
        claimed_until timestamptz,
        doc_len integer NOT NULL DEFAULT 0,
        tsv tsvector GENERATED ALWAYS AS (to_tsvector('memory_english'::regconfig, content)) STORED,
        PRIMARY KEY (namespace, id)
    )""",
    "CREATE INDEX items_ns_created ON items (namespace, created_at, id)",
    'CREATE INDEX items_dedup ON items (namespace, content_hash, "user", agent, thread)',
    'CREATE INDEX items_ns_user ON items (namespace, "user", created_at)',
    "CREATE INDEX items_ns_agent ON items (namespace, agent, created_at)",
    "CREATE INDEX items_ns_thread ON items (namespace, thread, created_at)",
    "CREATE INDEX items_ns_kind ON items (namespace, kind, created_at)",
    "CREATE INDEX items_pending ON items (namespace, created_at, id) WHERE embedding_status IN ('pending', 'failed')",
    "CREATE INDEX items_tsv ON items USING gin (tsv)",
    """CREATE TABLE item_tags (
        namespace text NOT NULL,
        tag text NOT NULL,
        item_id text NOT NULL,
        PRIMARY KEY (namespace, tag, item_id),
        FOREIGN KEY (namespace, item_id) REFERENCES items (namespace, id) ON DELETE CASCADE
    )""",
    "CREATE INDEX item_tags_item ON item_tags (namespace, item_id)",
    """CREATE TABLE lexical_stats (
        namespace text PRIMARY KEY,
        docs bigint NOT NULL DEFAULT 0,
        words bigint NOT NULL DEFAULT 0
    )""",
]

_LEDGER = [
    """CREATE TABLE ledger (
        namespace text NOT NULL,
        seq bigint GENERATED ALWAYS AS IDENTITY,
        id text NOT NULL,
        item_id text NOT NULL,
        op text NOT NULL,
        at timestamptz NOT NULL,
        "before" jsonb,
        "after" jsonb,
        reason text,
        PRIMARY KEY (namespace, seq)
    )""",
    "CREATE INDEX ledger_item ON ledger (namespace, item_id, seq)",
    "CREATE UNIQUE INDEX ledger_id ON ledger (namespace, id)",
]

_VECTORS = [
    """CREATE TABLE vector_spaces (
        space_id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        model text NOT NULL UNIQUE,
        dim integer NOT NULL CHECK (dim > 0),
        table_name text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
    )""",
    "CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL)",
    "INSERT INTO meta (key, value) VALUES ('schema', 'memory-postgres')",
]

_MONTHS_SQL = ", ".join(f"'{name}'" for name in MONTHS)

# The index key (retrieval.window), as SQLite's items_key_fts: content, the context window
# the library writes to items.index_window, and the time words of created_at, in one
# generated tsvector whose weight labels name the field (A content, B window, C time), so
# a tsquery restricted to labels matches only the weighted fields and the per-field term
# frequencies come from the labels. ``window_len`` and ``lexical_stats.window_words`` give
# BM25 the document length over all three fields, as FTS5 counts it.
_INDEX_WINDOW = [
    f"""CREATE FUNCTION memory_time_words(t timestamptz) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        RETURN extract(day FROM t AT TIME ZONE 'UTC')::int::text || ' '
            || (ARRAY[{_MONTHS_SQL}])[extract(month FROM t AT TIME ZONE 'UTC')::int] || ' '
            || extract(year FROM t AT TIME ZONE 'UTC')::int::text""",
    "ALTER TABLE items ADD COLUMN index_window text NOT NULL DEFAULT ''",
    "ALTER TABLE items ADD COLUMN window_len integer NOT NULL DEFAULT 0",
    """ALTER TABLE items ADD COLUMN key_tsv tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('memory_english'::regconfig, content), 'A')
        || setweight(to_tsvector('memory_english'::regconfig, index_window), 'B')
        || setweight(to_tsvector('memory_english'::regconfig, memory_time_words(created_at)), 'C')
    ) STORED""",
    "CREATE INDEX items_key_tsv ON items USING gin (key_tsv)",
    "ALTER TABLE lexical_stats ADD COLUMN window_words bigint NOT NULL DEFAULT 0",
]

# Hierarchical memory (issue 6): tier documents keyed by (namespace, kind, owner, id),
# as SQLite's tier_records; ``seq`` keeps insertion order.
_TIERS = [
    """CREATE TABLE tier_records (
        namespace text NOT NULL,
        kind text NOT NULL,
        owner text NOT NULL,
        id text NOT NULL,
        seq bigint GENERATED ALWAYS AS IDENTITY,
        data text NOT NULL,
        PRIMARY KEY (namespace, kind, owner, id)
    )""",
    "CREATE INDEX tier_records_owner ON tier_records (namespace, kind, owner, seq)",
    "CREATE INDEX tier_records_kind ON tier_records (namespace, kind, seq)",
]

# BM25 document frequencies (issue 10, search at 1M items): counting a frequent term's
# postings per query was the lexical channel's main cost. The backend keeps these rows
# exact in every transaction that changes ``key_tsv`` (add, replace, window updates,
# delete), under a per-namespace advisory lock; this migration fills them for a store
# that already holds items (one pass over ``key_tsv``).
_LEXICAL_TERMS = [
    """CREATE FUNCTION memory_weight_mask(weights text[]) RETURNS smallint
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        RETURN (SELECT coalesce(bit_or(CASE w WHEN 'A' THEN 1 WHEN 'B' THEN 2 WHEN 'C' THEN 4 ELSE 8 END), 0)
                FROM unnest(weights) AS w)::smallint""",
    """CREATE TABLE lexical_terms (
        namespace text NOT NULL,
        lexeme text NOT NULL,
        mask smallint NOT NULL,
        df bigint NOT NULL,
        PRIMARY KEY (namespace, lexeme, mask)
    )""",
    """INSERT INTO lexical_terms (namespace, lexeme, mask, df)
        SELECT i.namespace, t.lexeme, memory_weight_mask(t.weights), count(*)
        FROM items i CROSS JOIN LATERAL unnest(i.key_tsv) AS t
        GROUP BY 1, 2, 3""",
]

# Feedback (issue 9): conversation records per (namespace, thread) and prompt versions per
# (namespace, name), namespace first in every key and index; times as epoch seconds like the
# SQLite tables, so one SQL implementation serves both (memory.backends.feedback_sql).
_FEEDBACK = [
    """CREATE TABLE feedback_records (
        namespace text NOT NULL,
        thread text NOT NULL,
        user_id text,
        agent text,
        prompt_name text,
        prompt_version integer,
        reward double precision,
        created_at double precision NOT NULL,
        updated_at double precision NOT NULL,
        reflected_at double precision,
        revision integer NOT NULL DEFAULT 0,
        data text NOT NULL,
        PRIMARY KEY (namespace, thread)
    )""",
    "CREATE INDEX feedback_records_prompt ON feedback_records (namespace, prompt_name, prompt_version)",
    "CREATE INDEX feedback_records_updated ON feedback_records (namespace, updated_at)",
    """CREATE TABLE prompt_versions (
        namespace text NOT NULL,
        name text NOT NULL,
        version integer NOT NULL CHECK (version >= 1),
        status text NOT NULL CHECK (status IN ('active', 'candidate', 'retired')),
        created_at double precision NOT NULL,
        promoted_at double precision,
        data text NOT NULL,
        PRIMARY KEY (namespace, name, version)
    )""",
    "CREATE UNIQUE INDEX prompt_versions_active ON prompt_versions (namespace, name) WHERE status = 'active'",
]

# LangGraph checkpoint tables that earlier versions made on first use, renamed in the store's own schema.
_EARLIER_CHECKPOINTS = [
    f"""DO $$ BEGIN
        IF to_regclass(format('%I.%I', current_schema(), '{old}')) IS NOT NULL THEN
            EXECUTE format('ALTER TABLE %I.{old} RENAME TO {new}', current_schema());
        END IF;
        IF to_regclass(format('%I.%I', current_schema(), '{old}_run')) IS NOT NULL THEN
            EXECUTE format('ALTER INDEX %I.{old}_run RENAME TO {new}_run', current_schema());
        END IF;
    END $$"""
    for old, new in EARLIER_TABLES.items()
]

#: API keys (hashes only; see memory.keys). Keys are not namespaced (one key may cover
#: several namespaces, or ``*``): keyed by the key id alone; on Citus a reference table.
API_KEYS_STATEMENTS: list[str] = [
    """CREATE TABLE api_keys (
        id text PRIMARY KEY,
        name text NOT NULL,
        token_hash text NOT NULL,
        namespaces jsonb NOT NULL,
        read_only boolean NOT NULL DEFAULT false,
        secrets boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL,
        revoked_at timestamptz
    )""",
]


# As SQLite's 0020: the content was indexed twice (``tsv`` and label A of ``key_tsv``) and
# every write built both; a content-only search now reads ``key_tsv`` restricted to label A.
_ONE_CONTENT_INDEX = ["DROP INDEX IF EXISTS items_tsv", "ALTER TABLE items DROP COLUMN IF EXISTS tsv"]

#: Every migration this code knows, in the order they are applied.
MIGRATIONS: tuple[Migration, ...] = (
    Migration("0001_items", _ITEMS),
    Migration("0002_ledger", _LEDGER),
    Migration("0003_vector_spaces", _VECTORS),
    Migration("0004_episodic", EPISODIC_STATEMENTS),
    Migration("0005_graph", GRAPH_STATEMENTS),
    Migration("0006_api_keys", API_KEYS_STATEMENTS),
    Migration("0007_index_window", _INDEX_WINDOW),
    Migration("0008_tiers", _TIERS),
    Migration("0009_lexical_terms", _LEXICAL_TERMS),
    Migration("0010_feedback", _FEEDBACK),
    # LangGraph checkpoints; a store that made them on first use (as graph_*) keeps its rows.
    Migration("0011_langgraph_checkpoints", [*_EARLIER_CHECKPOINTS, *checkpoint_tables("BYTEA")]),
    Migration("0012_graph_vector_versions", GRAPH_VECTOR_VERSIONS),
    Migration("0013_one_content_index", _ONE_CONTENT_INDEX),
)


def space_table(space_id: int) -> str:
    """Name of the vector table of a space (derived from its integer id only)."""
    return f"vectors_{int(space_id)}"


def create_space_table(conn: Any, space_id: int, dim: int) -> None:
    """Create one vector space's table and its HNSW index (inside the caller's transaction).

    Dimensions above :data:`HNSW_MAX_DIM` get no HNSW index (pgvector's
    limit); their searches scan exactly.
    """
    table = space_table(space_id)
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {table} ("
        "namespace text NOT NULL, id text NOT NULL, "
        f"embedding vector({int(dim)}) NOT NULL, "
        "PRIMARY KEY (namespace, id), "
        "FOREIGN KEY (namespace, id) REFERENCES items (namespace, id) ON DELETE CASCADE)"
    )
    if int(dim) <= HNSW_MAX_DIM:
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS {table}_hnsw ON {table} "
            "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
        )


def applied_migrations(conn: Any) -> list[str]:
    """Names of the migrations recorded in the store, in the order applied ([] if none)."""
    exists = conn.execute(_IN_SCHEMA, ("schema_migrations",)).fetchone()[0]
    if not exists:
        return []
    return [str(r[0]) for r in conn.execute("SELECT name FROM schema_migrations ORDER BY applied_at, name")]


def _check_known(names: Sequence[str], migrations: Sequence[Migration]) -> None:
    known = {m.name for m in migrations}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise SchemaError(
            "database was written by a newer version of memory (it records migrations "
            f"{', '.join(unknown)} that this version does not know); upgrade memory to open it"
        )


def _check_empty(conn: Any) -> None:
    """Refuse to add memory's tables to a schema that holds someone else's ``items``."""
    row = conn.execute(_IN_SCHEMA, ("items",)).fetchone()
    if row[0]:
        raise SchemaError(
            "this PostgreSQL schema holds an 'items' table but no memory migrations; "
            "point memory at another database or schema"
        )


def apply_migrations(conn: Any, migrations: Sequence[Migration] = MIGRATIONS) -> list[str]:
    """Apply the missing ``migrations`` in order on ``conn`` (autocommit); return the names applied now.

    Raises SchemaError for a store from a newer version, ConfigError when the
    ``vector`` extension is missing and cannot be created by this role.
    """
    import psycopg

    _check_known(applied_migrations(conn), migrations)
    applied_now: list[str] = []
    for migration in migrations:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, "
                "applied_at timestamptz NOT NULL DEFAULT clock_timestamp())"
            )
            done = applied_migrations(conn)
            if not done:
                _check_empty(conn)
            _check_known(done, migrations)
            if migration.name in done:
                continue
            for statement in migration.statements:
                try:
                    conn.execute(statement)
                except psycopg.errors.InsufficientPrivilege as exc:
                    if "EXTENSION" in statement:
                        raise ConfigError(
                            "the pgvector extension is not installed in this database and this role may not "
                            "create it: run `CREATE EXTENSION vector;` as a superuser (pgvector >= 0.5)"
                        ) from exc
                    raise
                except (psycopg.errors.FeatureNotSupported, psycopg.errors.UndefinedFile) as exc:
                    if "EXTENSION" in statement:
                        raise ConfigError(
                            f"the pgvector extension is not available on this server ({exc}); install pgvector "
                            ">= 0.5 (e.g. the official pgvector/pgvector images)"
                        ) from exc
                    raise
            conn.execute("INSERT INTO schema_migrations (name) VALUES (%s)", (migration.name,))
            applied_now.append(migration.name)
    return applied_now
