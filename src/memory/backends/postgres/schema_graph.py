"""PostgreSQL schema of the knowledge graph (migration ``0005_graph``), appended to :mod:`.migrations`.

Every key and index starts with ``namespace``; every reference to a memory is
a composite foreign key to ``items (namespace, id)`` with ``ON DELETE
CASCADE``, and row triggers remove relations left without any source and
entities left with no mention and no relation. So the item backend's
``DELETE FROM items`` cleans the graph in the same statement and transaction.
Entity and relation vectors are ``real[]`` (any model, any dimension) and
ranked exactly, like SQLite's graph store.
"""

from __future__ import annotations

__all__ = ["GRAPH_STATEMENTS", "GRAPH_VECTOR_VERSIONS"]

GRAPH_STATEMENTS: list[str] = [
    """CREATE TABLE graph_entities (
        namespace text NOT NULL,
        id text NOT NULL,
        name text NOT NULL,
        type text NOT NULL,
        aliases jsonb NOT NULL DEFAULT '[]',
        model text,
        embedding real[],
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (namespace, id)
    )""",
    "CREATE INDEX graph_entities_ns_name ON graph_entities (namespace, lower(name), id)",
    """CREATE TABLE graph_entity_keys (
        namespace text NOT NULL,
        key text NOT NULL,
        entity_id text NOT NULL,
        PRIMARY KEY (namespace, key),
        FOREIGN KEY (namespace, entity_id) REFERENCES graph_entities (namespace, id) ON DELETE CASCADE
    )""",
    "CREATE INDEX graph_entity_keys_entity ON graph_entity_keys (namespace, entity_id)",
    """CREATE TABLE graph_relations (
        namespace text NOT NULL,
        id text NOT NULL,
        subject_id text NOT NULL,
        predicate text NOT NULL,
        object_id text NOT NULL,
        model text,
        embedding real[],
        valid_at timestamptz,
        invalid_at timestamptz,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (namespace, id),
        FOREIGN KEY (namespace, subject_id) REFERENCES graph_entities (namespace, id) ON DELETE CASCADE,
        FOREIGN KEY (namespace, object_id) REFERENCES graph_entities (namespace, id) ON DELETE CASCADE
    )""",
    "CREATE INDEX graph_relations_subject ON graph_relations (namespace, subject_id)",
    "CREATE INDEX graph_relations_object ON graph_relations (namespace, object_id)",
    """CREATE TABLE graph_relation_sources (
        namespace text NOT NULL,
        relation_id text NOT NULL,
        memory_id text NOT NULL,
        PRIMARY KEY (namespace, relation_id, memory_id),
        FOREIGN KEY (namespace, relation_id) REFERENCES graph_relations (namespace, id) ON DELETE CASCADE,
        FOREIGN KEY (namespace, memory_id) REFERENCES items (namespace, id) ON DELETE CASCADE
    )""",
    "CREATE INDEX graph_relation_sources_memory ON graph_relation_sources (namespace, memory_id)",
    """CREATE TABLE graph_mentions (
        namespace text NOT NULL,
        entity_id text NOT NULL,
        memory_id text NOT NULL,
        PRIMARY KEY (namespace, entity_id, memory_id),
        FOREIGN KEY (namespace, entity_id) REFERENCES graph_entities (namespace, id) ON DELETE CASCADE,
        FOREIGN KEY (namespace, memory_id) REFERENCES items (namespace, id) ON DELETE CASCADE
    )""",
    "CREATE INDEX graph_mentions_memory ON graph_mentions (namespace, memory_id)",
    """CREATE TABLE graph_links (
        namespace text NOT NULL,
        source_id text NOT NULL,
        target_id text NOT NULL,
        type text NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (namespace, source_id, target_id, type),
        FOREIGN KEY (namespace, source_id) REFERENCES items (namespace, id) ON DELETE CASCADE,
        FOREIGN KEY (namespace, target_id) REFERENCES items (namespace, id) ON DELETE CASCADE
    )""",
    "CREATE INDEX graph_links_target ON graph_links (namespace, target_id)",
    # A relation whose last source memory went is deleted (relations created without a source never are).
    """CREATE FUNCTION graph_relation_orphan() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NOT EXISTS (SELECT 1 FROM graph_relation_sources
                       WHERE namespace = OLD.namespace AND relation_id = OLD.relation_id) THEN
            DELETE FROM graph_relations WHERE namespace = OLD.namespace AND id = OLD.relation_id;
        END IF;
        RETURN NULL;
    END $$""",
    "CREATE TRIGGER graph_relation_orphan AFTER DELETE ON graph_relation_sources "
    "FOR EACH ROW EXECUTE FUNCTION graph_relation_orphan()",
    # An entity with no mention and no relation left is deleted.
    """CREATE FUNCTION graph_entity_orphans(ns text, ids text[]) RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM graph_entities e WHERE e.namespace = ns AND e.id = ANY(ids)
          AND NOT EXISTS (SELECT 1 FROM graph_mentions m WHERE m.namespace = ns AND m.entity_id = e.id)
          AND NOT EXISTS (SELECT 1 FROM graph_relations r WHERE r.namespace = ns
                          AND (r.subject_id = e.id OR r.object_id = e.id));
    END $$""",
    """CREATE FUNCTION graph_entity_orphan_mention() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM graph_entity_orphans(OLD.namespace, ARRAY[OLD.entity_id]);
        RETURN NULL;
    END $$""",
    "CREATE TRIGGER graph_entity_orphan_mention AFTER DELETE ON graph_mentions "
    "FOR EACH ROW EXECUTE FUNCTION graph_entity_orphan_mention()",
    """CREATE FUNCTION graph_entity_orphan_relation() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM graph_entity_orphans(OLD.namespace, ARRAY[OLD.subject_id, OLD.object_id]);
        RETURN NULL;
    END $$""",
    "CREATE TRIGGER graph_entity_orphan_relation AFTER DELETE ON graph_relations "
    "FOR EACH ROW EXECUTE FUNCTION graph_entity_orphan_relation()",
]


#: Versions of a namespace's entity and relation vectors, for the graph store's in-process copies
#: (graph_sql.py): every insert, delete or change of a vector (or of a relation's validity) bumps them.
GRAPH_VECTOR_VERSIONS: list[str] = [
    """CREATE TABLE graph_vector_versions (
        namespace text NOT NULL,
        kind text NOT NULL,
        version bigint NOT NULL,
        PRIMARY KEY (namespace, kind)
    )""",
    """CREATE FUNCTION graph_vector_version() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO graph_vector_versions (namespace, kind, version)
        VALUES (CASE WHEN TG_OP = 'DELETE' THEN OLD.namespace ELSE NEW.namespace END, TG_ARGV[0], 1)
        ON CONFLICT (namespace, kind) DO UPDATE SET version = graph_vector_versions.version + 1;
        RETURN NULL;
    END $$""",
    "CREATE TRIGGER graph_entities_vectors AFTER INSERT OR DELETE OR UPDATE OF model, embedding ON graph_entities "
    "FOR EACH ROW EXECUTE FUNCTION graph_vector_version('entities')",
    "CREATE TRIGGER graph_relations_vectors AFTER INSERT OR DELETE OR UPDATE OF model, embedding, invalid_at "
    "ON graph_relations FOR EACH ROW EXECUTE FUNCTION graph_vector_version('relations')",
]
