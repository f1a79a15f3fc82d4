"""PostgreSQL-specific tests against the real server (``MEMORY_TEST_DSN``, see scripts/pg.sh).

The behaviour shared by every backend is checked by ``tests/contract``; this
file covers what only the postgres backend has: recorded migrations, pgvector
and its HNSW index, SKIP LOCKED claims across processes, dedup races, SQL
filters equal to :func:`memory.filters.matches`, and BM25 equal to SQLite's.
"""

from __future__ import annotations

import multiprocessing
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_sqlite import (
    DIM,
    HOSTILE,
    MODEL,
    NOW,
    _random_filter,
    _random_items,
    add_marker,
    flt,
    make_item,
    record,
    unit,
)

from filter_reference import FilterReference
from memory.backends import open_backend
from memory.backends.base import ListOrder
from memory.backends.postgres import PostgresBackend
from memory.backends.postgres.migrations import MIGRATIONS
from memory.backends.sqlite import SQLiteBackend
from memory.errors import ConfigError, InvalidInputError, SchemaError, StorageError
from memory.records import ledger_entry, snapshot
from pg_support import drop_test_schemas, postgres_dsn, schema_for


@pytest.fixture(scope="module", autouse=True)
def _cleanup() -> Iterator[None]:
    yield
    import os

    if dsn := os.environ.get("MEMORY_TEST_DSN"):
        drop_test_schemas(dsn)


@pytest.fixture
def dsn() -> str:
    return postgres_dsn()


@pytest.fixture
def schema(tmp_path: Path) -> str:
    return schema_for(tmp_path)


@pytest.fixture
def backend(dsn: str, schema: str) -> Iterator[PostgresBackend]:
    instance = PostgresBackend(dsn, schema=schema)
    instance.ensure_vector_space(MODEL, DIM)
    yield instance
    instance.close()


def _sql(backend: PostgresBackend, query: str, params: Any = ()) -> list[tuple[Any, ...]]:
    with backend._tx() as conn:
        cur = conn.execute(query, params)
        return list(cur.fetchall()) if cur.description else []


# -- schema, migrations ----------------------------------------------------------
def test_migrations_are_recorded_and_reopening_is_idempotent(dsn: str, schema: str) -> None:
    with PostgresBackend(dsn, schema=schema) as first:
        names = [r[0] for r in _sql(first, "SELECT name FROM schema_migrations ORDER BY name")]
        assert names == [m.name for m in MIGRATIONS]
        assert first.pgvector_version >= "0.5"
    with PostgresBackend(dsn, schema=schema) as again:
        assert len(_sql(again, "SELECT name FROM schema_migrations")) == len(MIGRATIONS)


def test_store_from_a_newer_version_is_refused(dsn: str, schema: str) -> None:
    with PostgresBackend(dsn, schema=schema) as backend:
        _sql(backend, "INSERT INTO schema_migrations (name) VALUES ('9999_from_the_future') RETURNING name")
    with pytest.raises(SchemaError, match="newer version"):
        PostgresBackend(dsn, schema=schema)


def test_another_applications_schema_is_refused(dsn: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.items (x int)")
    with pytest.raises(SchemaError, match="no memory migrations"):
        PostgresBackend(dsn, schema=schema)


def test_bad_options_and_unreachable_server_fail_clearly(dsn: str) -> None:
    with pytest.raises(ConfigError):
        PostgresBackend(dsn, schema="Robert'); DROP")
    with pytest.raises(InvalidInputError):
        PostgresBackend(dsn, pool_size=0)
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    with pytest.raises(StorageError, match="not reachable"):
        PostgresBackend(f"postgresql://postgres@127.0.0.1:{port}/x", connect_timeout=2)


def test_registry_and_url_open_postgres(dsn: str) -> None:
    backend = open_backend(dsn)
    try:
        assert isinstance(backend, PostgresBackend) and backend.name == "postgres"
    finally:
        backend.close()


def test_close_is_idempotent_and_later_use_fails_clearly(dsn: str, schema: str) -> None:
    backend = PostgresBackend(dsn, schema=schema)
    backend.close()
    backend.close()
    with pytest.raises(StorageError, match="closed"):
        backend.count(flt())


def test_schema_is_keyed_by_namespace_with_hnsw_and_gin(backend: PostgresBackend, schema: str) -> None:
    indexes = dict(_sql(backend, "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s", (schema,)))
    assert "USING hnsw (embedding vector_cosine_ops)" in indexes["vectors_1_hnsw"]
    assert "USING gin (key_tsv)" in indexes["items_key_tsv"]
    assert "items_tsv" not in indexes  # content-only searches read key_tsv (migration 0013)
    for name, definition in indexes.items():
        if "hnsw" in definition or "gin" in definition or name in ("vector_spaces_pkey", "vector_spaces_model_key"):
            continue
        if name in ("schema_migrations_pkey", "meta_pkey", "job_state_pkey", "api_keys_pkey"):
            continue  # small tables keyed by name/id: reference tables on Citus
        if name.startswith("langgraph_"):
            continue  # LangGraph checkpoints are keyed by thread (a migration since 0011; before, made on first use)
        columns = definition.split("(", 1)[1]
        assert columns.startswith("namespace"), (name, definition)
    generated = _sql(
        backend,
        "SELECT attname, attgenerated FROM pg_attribute WHERE attrelid = 'items'::regclass AND attname LIKE '%%tsv'",
    )
    assert generated == [("key_tsv", "s")]


# -- writes --------------------------------------------------------------------
def test_times_and_json_round_trip_exactly(backend: PostgresBackend) -> None:
    item = make_item(
        "exact times",
        created_at=NOW + timedelta(microseconds=123457),
        metadata={"a": 1, "b": 1.5, "c": [1, "x"], "d": {"e": None}, "big": 10**18},
        tags=["z", "a", "m"],
        keywords=["k1"],
    )
    backend.add([record(item, unit(np.random.default_rng(0)))])
    assert backend.get("default", [item.id]) == [item]


def test_adds_are_stored_by_reference_and_read_back_whole(backend: PostgresBackend) -> None:
    from psycopg.types.json import Jsonb

    item = make_item("stored by reference", tags=["t"], metadata={"k": [1, 2.5], "big": 10**18})
    rec = record(item, unit(np.random.default_rng(0)))
    backend.add([rec])
    after = "SELECT after FROM ledger WHERE namespace = 'default' AND id = %s"
    assert _sql(backend, after, (rec.ledger.id,)) == [(add_marker(item),)]
    backend.record_access("default", [item.id], NOW + timedelta(hours=1))
    assert [e.after for e in backend.history("default", item.id)] == [snapshot(item)]
    (stored,) = backend.get("default", [item.id])
    gone = ledger_entry("delete", item.id, "default", NOW, before=stored)
    backend.delete("default", [item.id], [gone])
    assert _sql(backend, after, (gone.id,)) == [(None,)]
    assert [e.after for e in backend.iter_ledger()] == [snapshot(item), None]
    # a full snapshot (as stores written before markers hold) reads as stored; a lone marker reads as None
    full = dict(snapshot(item), context="as the older version stored it")
    _sql(backend, "UPDATE ledger SET after = %s WHERE id = %s", (Jsonb(full), rec.ledger.id))
    assert [e.after for e in backend.history("default", item.id)] == [full, None]
    _sql(
        backend, "INSERT INTO ledger (id, namespace, item_id, op, at, after) VALUES ('orphan', 'default', 'ghost', "
        "'add', now(), %s)", (Jsonb(add_marker(item)),),
    )  # fmt: skip
    assert [e.after for e in backend.history("default", "ghost")] == [None]


def test_an_add_whose_row_reads_back_otherwise_is_stored_whole(backend: PostgresBackend) -> None:
    item = make_item("kept whole", valid_from=datetime(2026, 1, 1, 14, tzinfo=timezone(timedelta(hours=2))))
    rec = record(item, None)
    backend.add([rec])
    (stored,) = backend.get("default", [item.id])
    assert snapshot(stored) != snapshot(item)  # read back in UTC
    assert _sql(backend, "SELECT after FROM ledger WHERE id = %s", (rec.ledger.id,)) == [(snapshot(item),)]
    assert [e.after for e in backend.history("default", item.id)] == [snapshot(item)]


def test_failed_batch_leaves_nothing_behind(backend: PostgresBackend) -> None:
    good = make_item("good one")
    bad = make_item("bad one")
    with pytest.raises(InvalidInputError):
        backend.add([record(good, unit(np.random.default_rng(1))), record(bad, np.ones(DIM + 1, np.float32))])
    assert backend.count(flt()) == 0 and backend.ledger_count("default") == 0
    assert _sql(backend, "SELECT count(*) FROM lexical_stats WHERE docs > 0") == [(0,)]


def test_lexical_statistics_follow_adds_replaces_and_deletes(backend: PostgresBackend) -> None:
    a, b = make_item("one two three"), make_item("four five")
    backend.add([record(a, None), record(b, None)])
    assert _sql(backend, "SELECT docs, words FROM lexical_stats") == [(2, 5)]
    changed = a.model_copy(update={"content": "one"})
    backend.replace(changed, None, record(changed, None).ledger)
    assert _sql(backend, "SELECT docs, words FROM lexical_stats") == [(2, 3)]
    backend.delete("default", [b.id], [])
    assert _sql(backend, "SELECT docs, words FROM lexical_stats") == [(1, 1)]


def _process_adder(dsn: str, schema: str, worker: int, barrier: Any, queue: Any) -> None:
    """Add 100 own items and 20 shared ones, interleaved, in batches of 5."""
    try:
        rng = np.random.default_rng(worker)
        backend = PostgresBackend(dsn, schema=schema, pool_size=2)
        try:
            backend.ensure_vector_space(MODEL, DIM)
            barrier.wait()
            texts = [f"worker {worker} item {n}" for n in range(100)] + [f"shared fact {n}" for n in range(20)]
            random.Random(worker).shuffle(texts)
            shared: dict[str, str] = {}
            for start in range(0, len(texts), 5):
                batch = texts[start : start + 5]
                results = backend.add([record(make_item(t, tags=["mp"]), unit(rng)) for t in batch])
                shared.update({t: r.id for t, r in zip(batch, results, strict=True) if t.startswith("shared")})
            queue.put(("ok", worker, shared))
        finally:
            backend.close()
    except BaseException as exc:  # report, never hang the parent
        queue.put(("error", worker, repr(exc)))


@pytest.mark.slow
def test_four_processes_dedup_atomically(dsn: str, schema: str) -> None:
    PostgresBackend(dsn, schema=schema).close()
    ctx = multiprocessing.get_context("spawn")
    barrier, queue = ctx.Barrier(4), ctx.Queue()
    processes = [ctx.Process(target=_process_adder, args=(dsn, schema, w, barrier, queue)) for w in range(4)]
    for p in processes:
        p.start()
    reports = [queue.get(timeout=120) for _ in processes]
    for p in processes:
        p.join(timeout=60)
    assert all(r[0] == "ok" for r in reports), reports
    with PostgresBackend(dsn, schema=schema) as backend:
        assert backend.count(flt()) == 4 * 100 + 20
        assert _sql(backend, "SELECT docs FROM lexical_stats") == [(420,)]
        assert _sql(backend, "SELECT count(*) FROM vectors_1") == [(420,)]
    for text in (f"shared fact {n}" for n in range(20)):
        assert len({r[2][text] for r in reports}) == 1


# -- claims --------------------------------------------------------------------
def _process_claimer(dsn: str, schema: str, worker: int, barrier: Any, queue: Any) -> None:
    """Claim batches of 7 until nothing is left; report every id claimed."""
    try:
        backend = PostgresBackend(dsn, schema=schema, pool_size=1)
        try:
            barrier.wait()
            claimed: list[str] = []
            while batch := backend.claim_pending_embeddings(None, 7, f"w{worker}", 300.0, NOW):
                claimed += [i.id for i in batch]
                assert all(i.sensitivity != "secret" for i in batch)
            queue.put(("ok", worker, claimed))
        finally:
            backend.close()
    except BaseException as exc:
        queue.put(("error", worker, repr(exc)))


@pytest.mark.slow
def test_four_processes_claim_every_pending_item_exactly_once(backend: PostgresBackend, dsn: str, schema: str) -> None:
    items = [make_item(f"pending {n}", model=None, namespace=f"ns{n % 3}") for n in range(400)]
    secrets = [make_item(f"secret {n}", model=None, sensitivity="secret") for n in range(10)]
    done = [make_item(f"done {n}") for n in range(10)]
    rng = np.random.default_rng(5)
    backend.add([record(i, None) for i in items + secrets] + [record(i, unit(rng)) for i in done])
    # a live lease held by someone else keeps 5 items out; an expired one does not
    held = backend.claim_pending_embeddings("ns0", 5, "earlier", 3600.0, NOW - timedelta(seconds=10))
    stale = backend.claim_pending_embeddings("ns1", 5, "crashed", 5.0, NOW - timedelta(seconds=60))
    assert len(held) == len(stale) == 5
    ctx = multiprocessing.get_context("spawn")
    barrier, queue = ctx.Barrier(4), ctx.Queue()
    processes = [ctx.Process(target=_process_claimer, args=(dsn, schema, w, barrier, queue)) for w in range(4)]
    for p in processes:
        p.start()
    reports = [queue.get(timeout=120) for _ in processes]
    for p in processes:
        p.join(timeout=60)
    assert all(r[0] == "ok" for r in reports), reports
    claimed = [i for r in reports for i in r[2]]
    assert len(claimed) == len(set(claimed)), "an item was claimed twice"
    expected = {i.id for i in items} - {i.id for i in held}
    assert set(claimed) == expected
    assert sum(1 for r in reports if r[2]) >= 2, "the work was not shared"
    owners = dict(_sql(backend, "SELECT id, claimed_by FROM items WHERE claimed_by IS NOT NULL"))
    assert {owners[i] for i in claimed} <= {"w0", "w1", "w2", "w3"}
    # set_vectors and mark_embedding clear the claim
    first, second = claimed[0], claimed[1]
    ns_of = {i.id: i.namespace for i in items}
    backend.set_vectors(ns_of[first], MODEL, [(first, unit(rng))])
    backend.mark_embedding(ns_of[second], [second], "failed", "boom")
    cleared = dict(_sql(backend, "SELECT id, claimed_by FROM items WHERE id = ANY(%s)", ([first, second],)))
    assert cleared == {first: None, second: None}
    again = backend.claim_pending_embeddings(ns_of[second], 50, "retry", 60.0, NOW)
    assert [i.id for i in again] == [second]


def test_claim_rejects_bad_arguments(backend: PostgresBackend) -> None:
    for kwargs in ({"limit": -1}, {"worker": ""}, {"lease_seconds": 0}):
        args = {"namespace": None, "limit": 5, "worker": "w", "lease_seconds": 10.0, "now": NOW} | kwargs
        with pytest.raises(InvalidInputError):
            backend.claim_pending_embeddings(**args)  # type: ignore[arg-type]


# -- reads ---------------------------------------------------------------------
def test_hostile_strings_are_literal(backend: PostgresBackend) -> None:
    items = {
        text: make_item(f"hostile {n} {text}", model=None, user=text, tags=[text], metadata={"k": text})
        for n, text in enumerate(HOSTILE)
    }
    backend.add([record(item, None) for item in items.values()])
    backend.add([record(make_item("plain abc", model=None, user="abc", tags=["abc"], metadata={"k": "abc"}), None)])
    for text, item in items.items():
        for f in (flt(user=text), flt(tags_any=(text,)), flt(tags_all=(text,)), flt(metadata={"k": text})):
            assert backend.find_ids(f) == [item.id], (text, f)
    assert backend.find_ids(flt(kinds=("%",))) == []
    assert backend.find_ids(flt(user="nul\x00byte")) == []
    assert backend.find_ids(flt(namespace="bad\x00ns")) == []
    assert backend.search_lexical(flt(), ["drop", "items", "'", "\\", "'\\''"], 20)
    assert backend.search_lexical(flt(), ["' | !", "&", "x:*"], 20) == []
    assert backend.count(flt(namespace="'; DROP TABLE items; --")) == 0
    assert backend.count(flt()) == len(HOSTILE) + 1


def test_sql_filters_agree_with_matches(backend: PostgresBackend) -> None:
    rng = random.Random(11)
    items = _random_items(rng, 300)
    backend.add([record(item, None) for item in items])
    reference = FilterReference(backend, NOW)
    for _ in range(300):
        f = _random_filter(rng, items)
        expected = reference.find_ids(f)
        assert backend.find_ids(f) == expected, f
        assert backend.count(f) == len(expected)
    f = flt(clearance="secret", include_expired=True, include_invalid=True)
    assert [i.id for i in backend.iter_items(f, batch_size=7)] == [i.id for i in reference.iter_items(f)]
    page = backend.list(f, 10, ListOrder(newest_first=True))
    assert page == reference.list(f, 10, ListOrder(newest_first=True))
    after = ListOrder(newest_first=True, after_created_at=page[-1].created_at, after_id=page[-1].id)
    assert backend.list(f, 10, after) == reference.list(f, 10, after)
    assert backend.group_counts(f, "sensitivity") == reference.group_counts(f, "sensitivity")
    assert backend.namespaces() == ["default", "other"]


def test_hnsw_path_is_used_and_finds_the_neighbours(dsn: str, schema: str) -> None:
    rng = np.random.default_rng(7)
    with PostgresBackend(dsn, schema=schema, exact_limit=100) as backend:
        backend.ensure_vector_space(MODEL, DIM)
        vectors = [unit(rng) for _ in range(1500)]
        records = [record(make_item(f"v {n}", user="even" if n % 2 == 0 else "odd"), v) for n, v in enumerate(vectors)]
        backend.add(records)
        _sql(backend, "ANALYZE items")
        matrix = np.vstack(vectors)
        plan = _sql(
            backend,
            "EXPLAIN SELECT id FROM vectors_1 ORDER BY embedding <=> %s::vector LIMIT 10",
            ("[" + ",".join(["0.25"] * DIM) + "]",),
        )
        assert "vectors_1_hnsw" in " ".join(r[0] for r in plan)
        found = total = 0
        for _ in range(20):
            q = unit(rng)
            for user in (None, "odd"):
                hits = backend.search_vector(flt(user=user), MODEL, q, 10)
                allowed = [n for n in range(len(vectors)) if user is None or n % 2 == 1]
                best = sorted(allowed, key=lambda n: -float(matrix[n] @ q))[:10]
                ids = {records[n].item.id for n in best}
                assert len(hits) == 10 and all(h.id in {records[n].item.id for n in allowed} for h in hits)
                assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
                found += len(ids & {h.id for h in hits})
                total += 10
        assert found / total >= 0.9


def test_bm25_ranks_like_sqlite(backend: PostgresBackend, tmp_path: Path) -> None:
    rng = random.Random(3)
    vocab = "apple banana cherry delta echo fox golf hotel india juliet kilo lima".split()
    docs = [" ".join(rng.choice(vocab) for _ in range(rng.randrange(3, 15))) for _ in range(200)]
    items = [make_item(text, model=None) for text in docs]
    with SQLiteBackend(tmp_path / "ref.db") as sqlite:
        for store in (backend, sqlite):
            store.add([record(i, None) for i in items])
        for terms in (["apple"], ["fox", "golf"], ["kilo", "lima", "india"], ["banana", "zulu"]):
            ours = backend.search_lexical(flt(), terms, 20)
            theirs = sqlite.search_lexical(flt(), terms, 20)
            assert [h.id for h in ours] == [h.id for h in theirs], terms
            assert [h.score for h in ours] == pytest.approx([h.score for h in theirs], rel=1e-6)


def test_field_weighted_bm25_ranks_like_sqlite(backend: PostgresBackend, tmp_path: Path) -> None:
    """Content, window and time words weighted per field: same ids and scores as bm25(items_key_fts, ...)."""
    rng = random.Random(5)
    vocab = "apple banana cherry delta echo fox golf hotel india juliet kilo lima may".split()
    days = [NOW - timedelta(days=rng.randrange(0, 900)) for _ in range(12)]

    def text(low: int, high: int) -> str:
        return " ".join(rng.choice(vocab) for _ in range(rng.randrange(low, high)))

    items = [make_item(text(3, 12), model=None, created_at=rng.choice(days)) for _ in range(150)]
    windows = [(item.id, text(0, 30), None) for item in items if rng.random() < 0.8]
    later = [(item.id, text(2, 20), None) for item in items[:40]]  # rewritten windows change the lengths
    with SQLiteBackend(tmp_path / "ref.db") as sqlite:
        for store in (backend, sqlite):
            store.add([record(i, None) for i in items])
            assert store.set_windows("default", None, windows) == len(windows)
            assert store.set_windows("default", None, later) == len(later)
            store.delete("default", [i.id for i in items[140:]], [])
        years = sorted({str(d.year) for d in days})
        fields_cases: list[dict[str, float] | None] = [
            None,  # content only: the key index restricted to the content, its length counting every field
            {"content": 1.0, "window": 0.3, "time": 0.5},
            {"content": 1.0, "window": 0.3},
            {"window": 1.0},
            {"time": 1.0},
            {"content": 2.0, "time": 0.25},
        ]
        compared = 0
        for fields in fields_cases:
            for terms in (["apple"], ["fox", "golf"], ["kilo", "lima", "may"], [years[0], "banana"], ["zulu"]):
                ours = backend.search_lexical(flt(), terms, 25, fields=fields)
                theirs = sqlite.search_lexical(flt(), terms, 25, fields=fields)
                compared += len(theirs)
                assert [h.id for h in ours] == [h.id for h in theirs], (fields, terms)
                assert [h.score for h in ours] == pytest.approx([h.score for h in theirs], rel=1e-6)
        assert compared > 300  # most cases rank a full page
        assert backend.search_lexical(flt(), ["apple"], 25, fields={"time": 1.0}) == []


def test_window_words_follow_set_windows_replace_and_delete(backend: PostgresBackend) -> None:
    items = [make_item(f"note {n}", model=None) for n in range(3)]
    backend.add([record(i, None) for i in items])
    backend.set_windows("default", None, [(items[0].id, "one two three", None), (items[1].id, "four", None)])
    assert _sql(backend, "SELECT window_words FROM lexical_stats WHERE namespace = 'default'") == [(4,)]
    changed = items[0].model_copy(update={"content": "changed note"})
    backend.replace(changed, None, ledger_entry("update", changed.id, "default", NOW, before=items[0], after=changed))
    backend.set_windows("default", None, [(items[1].id, "four five", None)])
    assert _sql(backend, "SELECT window_words FROM lexical_stats WHERE namespace = 'default'") == [(5,)]
    backend.delete("default", [items[0].id], [])
    assert _sql(backend, "SELECT window_words FROM lexical_stats WHERE namespace = 'default'") == [(2,)]
    assert _sql(backend, "SELECT sum(window_len) FROM items WHERE namespace = 'default'") == [(2,)]


def test_index_window_migration_indexes_rows_of_an_older_store(dsn: str, schema: str) -> None:
    """A store written before 0007_index_window: opening it adds the key index over its existing rows."""
    import psycopg

    from memory.backends.postgres.backend import _INSERT_ITEM
    from memory.backends.postgres.codec import item_values
    from memory.backends.postgres.connection import session_options
    from memory.backends.postgres.migrations import apply_migrations

    older = [m for m in MIGRATIONS if m.name < "0007"]
    item = make_item("the red kite", model=None, created_at=datetime(2023, 5, 8, tzinfo=UTC))
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    with psycopg.connect(dsn, autocommit=True, options=session_options(schema)) as conn:
        assert apply_migrations(conn, older) == [m.name for m in older]
        conn.execute(_INSERT_ITEM, item_values(item))
        conn.execute("INSERT INTO lexical_stats (namespace, docs, words) VALUES ('default', 1, 3)")
    with PostgresBackend(dsn, schema=schema) as backend:
        assert len(_sql(backend, "SELECT name FROM schema_migrations")) == len(MIGRATIONS)
        assert [h.id for h in backend.search_lexical(flt(), ["may"], 5, fields={"time": 1.0})] == [item.id]
        assert [h.id for h in backend.search_lexical(flt(), ["kite"], 5, fields={"content": 1.0, "window": 1.0})] == [
            item.id
        ]
        assert backend.tiers.owners("default") == []


def test_a_graph_written_before_its_vector_versions_upgrades(dsn: str, schema: str) -> None:
    """Relations stored before 0012_graph_vector_versions are searched, and later changes are seen."""
    import psycopg

    from memory.backends.postgres.connection import session_options
    from memory.backends.postgres.migrations import apply_migrations

    older = [m for m in MIGRATIONS if m.name < "0012"]
    at = datetime(2024, 1, 2, tzinfo=UTC)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    with psycopg.connect(dsn, autocommit=True, options=session_options(schema)) as conn:
        apply_migrations(conn, older)
        conn.execute(
            "INSERT INTO graph_entities (namespace, id, name, type, aliases, created_at, updated_at) VALUES "
            "('default', 'e1', 'Alice', 'person', '[]', %s, %s), "
            "('default', 'e2', 'Acme', 'organisation', '[]', %s, %s)",
            (at, at, at, at),
        )
        conn.execute(
            "INSERT INTO graph_relations (namespace, id, subject_id, predicate, object_id, model, embedding, "
            "created_at) VALUES ('default', 'r1', 'e1', 'works at', 'e2', 'm', %s, %s)",
            ([0.0, 1.0, 0.0], at),
        )
    query = np.array([0, 1, 0.2], np.float32)
    with PostgresBackend(dsn, schema=schema) as backend:
        assert len(_sql(backend, "SELECT name FROM schema_migrations")) == len(MIGRATIONS)
        store = backend.graph
        assert [r.id for r, _ in store.search_relations("default", "m", query, 3)] == ["r1"]
        later = store.upsert_relation(
            "default", "e2", "employs", "e1", at, vector=np.array([0, 1, 0.2], np.float32), model="m"
        )
        assert [r.id for r, _ in store.search_relations("default", "m", query, 3)] == [later.id, "r1"]
        assert store.invalidate_relations("default", [later.id], at) == 1
        assert [r.id for r, _ in store.search_relations("default", "m", query, 3)] == ["r1"]


# -- exact document frequencies (lexical_terms) -----------------------------------
_TRUE_TERMS = """
SELECT i.namespace, t.lexeme, memory_weight_mask(t.weights), count(*)
FROM items i CROSS JOIN LATERAL unnest(i.key_tsv) AS t GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
"""


def _terms(backend: PostgresBackend) -> list[tuple[Any, ...]]:
    return _sql(backend, "SELECT namespace, lexeme, mask, df FROM lexical_terms ORDER BY 1, 2, 3")


def test_document_frequencies_stay_exact_through_every_write(backend: PostgresBackend) -> None:
    """lexical_terms equals a recount of key_tsv after adds, replaces, window updates and deletes."""
    items = [make_item(f"apple pie number {n}", model=None) for n in range(4)]
    other = make_item("apple tart", namespace="other", model=None)
    backend.add([record(i, None) for i in [*items, other]])
    assert _terms(backend) == _sql(backend, _TRUE_TERMS)
    assert ("default", "appl", 1, 4) in _terms(backend)  # in the content (mask 1) of four items
    backend.set_windows("default", None, [(items[0].id, "pear juice apple", None), (items[1].id, "pear", None)])
    assert _terms(backend) == _sql(backend, _TRUE_TERMS)
    changed = items[2].model_copy(update={"content": "plum crumble"})
    backend.replace(changed, None, ledger_entry("update", changed.id, "default", NOW, before=items[2], after=changed))
    backend.set_windows("default", None, [(items[0].id, "", None)])
    assert _terms(backend) == _sql(backend, _TRUE_TERMS)
    backend.delete("default", [items[1].id, items[3].id], [])
    assert _terms(backend) == _sql(backend, _TRUE_TERMS)
    assert not any(row[3] <= 0 for row in _terms(backend))


def test_nothing_of_forgotten_memories_stays_in_the_frequencies(backend: PostgresBackend) -> None:
    items = [make_item(f"zanzibar holiday {n}", model=None) for n in range(3)]
    backend.add([record(i, None) for i in items])
    backend.set_windows("default", None, [(items[0].id, "secret plans", None)])
    backend.delete("default", [i.id for i in items], [])
    assert _terms(backend) == []


def test_frequencies_are_exact_under_concurrent_writers(backend: PostgresBackend, dsn: str, schema: str) -> None:
    """Four threads adding, replacing, re-windowing and deleting in one namespace: no deadlock, no drift."""
    import threading

    errors: list[BaseException] = []

    def writer(worker: int) -> None:
        try:
            rng = random.Random(worker)
            mine: list[Any] = []
            for step in range(25):
                batch = [make_item(f"w{worker} common word {rng.randrange(50)} step {step}", model=None)]
                backend.add([record(i, None) for i in batch])
                mine += batch
                target = rng.choice(mine)
                backend.set_windows("default", None, [(target.id, f"common window {rng.randrange(9)}", None)])
                if step % 5 == 4:
                    gone = mine.pop(rng.randrange(len(mine)))
                    backend.delete("default", [gone.id], [])
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert _terms(backend) == _sql(backend, _TRUE_TERMS)


def test_lexical_terms_migration_counts_an_older_store(dsn: str, schema: str) -> None:
    """A store written before 0009_lexical_terms: opening it counts the frequencies of its rows."""
    import psycopg

    from memory.backends.postgres.backend import _INSERT_ITEM
    from memory.backends.postgres.codec import item_values
    from memory.backends.postgres.connection import session_options
    from memory.backends.postgres.migrations import apply_migrations

    older = [m for m in MIGRATIONS if m.name < "0009"]
    items = [make_item("the red kite", model=None), make_item("a red fox", model=None)]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    with psycopg.connect(dsn, autocommit=True, options=session_options(schema)) as conn:
        apply_migrations(conn, older)
        for item in items:
            conn.execute(_INSERT_ITEM, item_values(item))
        conn.execute("INSERT INTO lexical_stats (namespace, docs, words) VALUES ('default', 2, 5)")
    with PostgresBackend(dsn, schema=schema) as backend:
        assert _terms(backend) == _sql(backend, _TRUE_TERMS)
        assert ("default", "red", 1, 2) in _terms(backend)
        hits = backend.search_lexical(flt(), ["kite"], 5, fields={"content": 1.0})
        assert [h.id for h in hits] == [items[0].id]


def test_iterative_scan_is_asked_for_only_where_pgvector_has_it() -> None:
    from memory.backends.postgres.connection import has_iterative_scan, session_options

    assert not has_iterative_scan("0.6.2") and not has_iterative_scan("0.7.4")
    assert has_iterative_scan("0.8.0") and has_iterative_scan("0.8.2") and has_iterative_scan("1.0")
    assert "iterative_scan" not in session_options(None)
    assert "-c hnsw.iterative_scan=relaxed_order" in session_options(None, iterative_scan=True)
