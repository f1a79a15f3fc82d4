"""SQLite-specific tests: schema and migrations, transactions, processes, vector search, hostile input.

The behaviour shared by every backend is checked by ``tests/contract``; this
file covers what only the SQLite backend has.
"""

from __future__ import annotations

import json
import multiprocessing
import random
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from filter_reference import FilterReference
from memory.backends import open_backend
from memory.backends.base import ListOrder, NewRecord
from memory.backends.sqlite import SQLiteBackend
from memory.backends.sqlite import vectors as vectors_module
from memory.backends.sqlite.connection import load_driver
from memory.backends.sqlite.migrations import MIGRATIONS, apply_migrations
from memory.errors import InvalidInputError, InvalidVectorError, NotFoundError, SchemaError, StorageError
from memory.filters import Filter
from memory.records import build_item, ledger_entry, snapshot
from memory.types import LedgerEntry, MemoryItem

MODEL = "test-model"
DIM = 16
NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


# -- helpers -------------------------------------------------------------------
def make_item(content: str, *, namespace: str = "default", model: str | None = MODEL, **fields: Any) -> MemoryItem:
    """A new item, marked embedded in ``model`` (pending when model is None)."""
    created = fields.pop("created_at", NOW)
    item = build_item(content=content, namespace=namespace, now=created, **fields)
    if model is not None:
        item = item.model_copy(update={"embedding_status": "done", "embedding_model": model})
    return item


def record(item: MemoryItem, vector: np.ndarray | None) -> NewRecord:
    """A NewRecord with its 'add' ledger entry."""
    return NewRecord(item, vector, ledger_entry("add", item.id, item.namespace, item.created_at, after=item))


def unit(rng: np.random.Generator, dim: int = DIM) -> np.ndarray:
    """A random unit vector."""
    v = rng.standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def stored(vectors: np.ndarray) -> np.ndarray:
    """What a new SQLite vector space holds for ``vectors``: float16 roundings (searches score these exactly)."""
    return np.asarray(vectors, dtype=np.float32).astype(np.float16).astype(np.float32)


def table_count(backend: SQLiteBackend, sql: str, params: Sequence[Any] = ()) -> int:
    """Run a count query on the backend's own connection."""
    return int(backend._conn.execute(sql, params).fetchone()[0])


def raw_connect(path: Path) -> Any:
    """A plain driver connection (no extensions, no migrations)."""
    return load_driver().connect(str(path), isolation_level=None)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def backend(db_path: Path) -> Iterator[SQLiteBackend]:
    instance = SQLiteBackend(db_path)
    instance.ensure_vector_space(MODEL, DIM)
    yield instance
    instance.close()


def flt(**fields: Any) -> Filter:
    fields.setdefault("namespace", "default")
    fields.setdefault("now", NOW + timedelta(hours=1))
    return Filter(**fields)


# -- schema, migrations, pragmas ---------------------------------------------
def test_migrations_are_recorded_and_reopening_is_idempotent(db_path: Path) -> None:
    SQLiteBackend(db_path).close()
    conn = raw_connect(db_path)
    try:
        first = conn.execute("SELECT name, applied_at FROM migrations ORDER BY rowid").fetchall()
        assert [name for name, _ in first] == [m.name for m in MIGRATIONS]
        assert all(isinstance(at, float) and at > 0 for _, at in first)
    finally:
        conn.close()
    SQLiteBackend(db_path).close()
    conn = raw_connect(db_path)
    try:
        assert conn.execute("SELECT name, applied_at FROM migrations ORDER BY rowid").fetchall() == first
        assert apply_migrations(conn) == []
    finally:
        conn.close()


def test_item_counts_are_read_from_an_index_alone(backend: SQLiteBackend) -> None:
    """stats' counts (one GROUP BY over kind, sensitivity and embedding status in a namespace) read the
    ``items_ns_counts`` index alone, not every row (migration 0018; 64 -> 9 ms at 100k memories)."""
    backend.concurrent_reads = False  # type: ignore[misc]  # on the main connection, to trace it
    statements: list[str] = []
    backend._conn.set_trace_callback(statements.append)
    for clearance in ("private", "secret"):  # as stats asks: expired and closed memories counted too
        filter_ = flt(include_expired=True, include_invalid=True, clearance=clearance)
        statements.clear()
        backend.item_counts(filter_)
        (counts,) = [s for s in statements if "GROUP BY" in s]
        plan = " ".join(str(row[3]) for row in backend._conn.execute("EXPLAIN QUERY PLAN " + counts))
        assert "COVERING INDEX items_ns_counts" in plan, plan


def test_opening_an_old_database_applies_the_missing_migrations(db_path: Path) -> None:
    conn = raw_connect(db_path)
    try:
        assert apply_migrations(conn, MIGRATIONS[:2]) == [m.name for m in MIGRATIONS[:2]]
    finally:
        conn.close()
    with SQLiteBackend(db_path) as backend:
        names = [r[0] for r in backend._conn.execute("SELECT name FROM migrations ORDER BY rowid")]
        assert names == [m.name for m in MIGRATIONS]
        backend.ensure_vector_space(MODEL, DIM)
        assert backend.add([record(make_item("works after upgrade"), None)])[0].created


def test_database_from_a_newer_version_is_refused(db_path: Path) -> None:
    SQLiteBackend(db_path).close()
    conn = raw_connect(db_path)
    try:
        conn.execute("INSERT INTO migrations (name, applied_at) VALUES ('9999_from_the_future', 1e9)")
    finally:
        conn.close()
    with pytest.raises(SchemaError, match="newer version of memory"):
        SQLiteBackend(db_path)


def test_another_applications_database_is_refused(db_path: Path) -> None:
    conn = raw_connect(db_path)
    try:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    finally:
        conn.close()
    with pytest.raises(SchemaError, match="other tables"):
        SQLiteBackend(db_path)


def test_non_sqlite_file_gives_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"this is not a database, just some text\n" * 200)
    with pytest.raises(SchemaError, match="not a usable SQLite database"):
        SQLiteBackend(path)
    with pytest.raises(SchemaError):
        open_backend(f"sqlite:///{path}")


def test_wal_and_pragmas(backend: SQLiteBackend) -> None:
    conn = backend._conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30_000


def test_relative_path_and_parent_directories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    backend = open_backend("sqlite:///nested/dirs/rel.db")
    try:
        assert isinstance(backend, SQLiteBackend)
        assert (tmp_path / "nested" / "dirs" / "rel.db").exists()
    finally:
        backend.close()


def test_close_is_idempotent_and_later_use_fails_clearly(db_path: Path) -> None:
    backend = SQLiteBackend(db_path)
    backend.close()
    backend.close()
    with pytest.raises(StorageError, match="closed"):
        backend.count(flt())


def test_locked_database_becomes_storage_error(db_path: Path) -> None:
    backend = SQLiteBackend(db_path, busy_timeout=0.2)
    other = raw_connect(db_path)
    try:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(StorageError, match="locked"):
            backend.add([record(make_item("blocked", model=None), None)])
        other.execute("ROLLBACK")
        assert backend.add([record(make_item("unblocked", model=None), None)])[0].created
    finally:
        other.close()
        backend.close()


def test_opening_a_new_file_waits_for_another_connection_switching_it_to_wal(db_path: Path) -> None:
    """Switching to WAL skips SQLite's busy handler; opening must wait anyway, not fail at once."""
    driver = load_driver()
    other = driver.connect(str(db_path), isolation_level=None, check_same_thread=False)  # fresh, rollback mode
    other.execute("BEGIN IMMEDIATE")
    other.execute("CREATE TABLE holding (x)")
    releaser = threading.Timer(0.3, lambda: other.execute("ROLLBACK"))
    releaser.start()
    try:
        backend = SQLiteBackend(db_path, busy_timeout=10)
    finally:
        releaser.join()
        other.close()
    with backend:
        assert backend.add([record(make_item("opened", model=None), None)])[0].created
        assert backend._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_opening_gives_up_after_the_busy_timeout(db_path: Path) -> None:
    driver = load_driver()
    other = driver.connect(str(db_path), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    other.execute("CREATE TABLE holding (x)")
    try:
        with pytest.raises(StorageError, match="locked"):
            SQLiteBackend(db_path, busy_timeout=0.2)
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_times_round_trip_to_the_microsecond(backend: SQLiteBackend) -> None:
    created = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
    item = make_item("precise", model=None, created_at=created, expires_at=created + timedelta(microseconds=1))
    backend.add([record(item, None)])
    (stored,) = backend.get("default", [item.id])
    assert stored == item


# -- transactions --------------------------------------------------------------
def _batch_leftovers(backend: SQLiteBackend, marker: str) -> dict[str, int]:
    fts = table_count(backend, "SELECT count(*) FROM items_key_fts WHERE items_key_fts MATCH ?", (marker,))
    return {
        "items": table_count(backend, "SELECT count(*) FROM items"),
        "fts": fts,
        "tags": table_count(backend, "SELECT count(*) FROM item_tags"),
        "ledger": table_count(backend, "SELECT count(*) FROM ledger"),
        "vectors": table_count(backend, "SELECT count(*) FROM vectors_1"),
        "codes": table_count(backend, "SELECT count(*) FROM vcodes_1"),
    }


def _assert_fts_consistent(backend: SQLiteBackend) -> None:
    backend._conn.execute("INSERT INTO items_key_fts (items_key_fts, rank) VALUES ('integrity-check', 1)")


def test_failed_batch_leaves_nothing_behind(backend: SQLiteBackend) -> None:
    rng = np.random.default_rng(0)
    backend.add([record(make_item("kept before the batch", tags=["old"]), unit(rng))])
    before = _batch_leftovers(backend, "zebracorn")
    records = [record(make_item(f"zebracorn number {n}", tags=["batch", f"t{n}"]), unit(rng)) for n in range(5)]
    bad_item = records[2].item
    records[2] = NewRecord(bad_item, unit(rng, DIM + 1), records[2].ledger)  # wrong dimension, third record
    with pytest.raises(InvalidVectorError):
        backend.add(records)
    assert _batch_leftovers(backend, "zebracorn") == before
    assert before["fts"] == 0 and before["items"] == 1
    _assert_fts_consistent(backend)
    assert backend.search_lexical(flt(), ["zebracorn"], 10) == []


def test_driver_failure_midway_rolls_back_the_batch(backend: SQLiteBackend) -> None:
    rng = np.random.default_rng(1)
    records = [record(make_item(f"quokka {n}", tags=["q"]), unit(rng)) for n in range(4)]
    # The third record reuses the first one's ledger id: the driver's UNIQUE constraint fails mid-batch.
    records[2] = NewRecord(
        records[2].item, records[2].vector, records[0].ledger.model_copy(update={"item_id": records[2].item.id})
    )
    with pytest.raises(StorageError, match="constraint"):
        backend.add(records)
    assert _batch_leftovers(backend, "quokka") == dict.fromkeys(
        ["items", "fts", "tags", "ledger", "vectors", "codes"], 0
    )
    assert table_count(backend, "SELECT coalesce(sum(last_seq), 0) FROM vector_counters") == 0
    _assert_fts_consistent(backend)
    assert backend.add(records[:2])[0].created  # the connection is usable afterwards


def test_existing_id_rejects_the_whole_batch(backend: SQLiteBackend) -> None:
    first = make_item("first")
    backend.add([record(first, None)])
    again = record(make_item("other").model_copy(update={"id": first.id}), None)
    with pytest.raises(InvalidInputError, match="already exists"):
        backend.add([record(make_item("new one"), None), again])
    assert backend.count(flt()) == 1


def test_batch_dedup_within_and_across_batches(backend: SQLiteBackend) -> None:
    a1, a2 = make_item("same text"), make_item("same text")
    results = backend.add([record(a1, None), record(a2, None)])
    assert [(r.id, r.created) for r in results] == [(a1.id, True), (a1.id, False)]
    assert backend.add([record(make_item("same text"), None)])[0].id == a1.id
    other_scope = make_item("same text", user="bob")
    assert backend.add([record(other_scope, None)])[0].created
    assert backend.ledger_count("default") == 2


# -- several processes, several threads -----------------------------------------
def _process_writer(path: str, worker: int, barrier: Any, queue: Any) -> None:
    """Add 200 own items and the 20 shared ones, interleaved, in small batches."""
    try:
        rng = np.random.default_rng(worker)
        barrier.wait()
        backend = SQLiteBackend(path)
        try:
            backend.ensure_vector_space(MODEL, DIM)
            entries = [f"worker {worker} item {n}" for n in range(200)] + [f"shared fact {n}" for n in range(20)]
            random.Random(worker).shuffle(entries)
            shared_ids: dict[str, str] = {}
            for start in range(0, len(entries), 5):
                batch = entries[start : start + 5]
                results = backend.add([record(make_item(text, tags=["mp"]), unit(rng)) for text in batch])
                for text, result in zip(batch, results, strict=True):
                    if text.startswith("shared"):
                        shared_ids[text] = result.id
            queue.put(("ok", worker, shared_ids))
        finally:
            backend.close()
    except BaseException as exc:  # report, never hang the parent
        queue.put(("error", worker, repr(exc)))


@pytest.mark.slow
def test_four_processes_write_one_file(db_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(4)
    queue = ctx.Queue()
    processes = [ctx.Process(target=_process_writer, args=(str(db_path), w, barrier, queue)) for w in range(4)]
    for p in processes:
        p.start()
    reports = [queue.get(timeout=120) for _ in processes]
    for p in processes:
        p.join(timeout=60)
        assert p.exitcode == 0
    queue.close()
    queue.join_thread()
    errors = [r for r in reports if r[0] != "ok"]
    assert not errors, errors
    with SQLiteBackend(db_path) as backend:
        everything = flt(now=NOW)
        assert backend.count(everything) == 4 * 200 + 20
        assert backend.ledger_count("default") == 4 * 200 + 20
        shared = "SELECT count(*) FROM items_key_fts WHERE items_key_fts MATCH '{content} : shared'"
        assert table_count(backend, shared) == 20
        assert table_count(backend, "SELECT count(*) FROM item_tags") == 820
        assert table_count(backend, "SELECT count(*) FROM vcodes_1") == 820
        assert table_count(backend, "SELECT last_seq FROM vector_counters") == 820
        # every process got the same id for each shared fact
        for text in (f"shared fact {n}" for n in range(20)):
            assert len({r[2][text] for r in reports}) == 1
        _assert_fts_consistent(backend)


def test_threads_share_one_backend(backend: SQLiteBackend) -> None:
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        rng = np.random.default_rng(worker)
        try:
            for n in range(40):
                backend.add([record(make_item(f"thread {worker} note {n}", user=f"u{worker}"), unit(rng))])
                backend.search_vector(flt(user=f"u{worker}"), MODEL, unit(rng), 5)
                backend.search_lexical(flt(), ["note"], 5)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert backend.count(flt()) == 160


# -- vector search ---------------------------------------------------------------
def _fill(backend: SQLiteBackend, vectors: np.ndarray, namespace: str = "default") -> list[MemoryItem]:
    items = [
        make_item(
            f"vector item {n}",
            namespace=namespace,
            user=f"u{n % 50}",
            kind="fact" if n % 3 else "trait",
            tags=[f"t{n % 5}"],
            metadata={"parity": n % 2 == 0, "n": n % 7},
            sensitivity="secret" if n % 11 == 0 else "normal",
            created_at=NOW + timedelta(seconds=n),
        )
        for n in range(len(vectors))
    ]
    backend.add([record(item, vector) for item, vector in zip(items, vectors, strict=True)])
    return items


def _brute_force(
    items: list[MemoryItem], vectors: np.ndarray, query: np.ndarray, f: Filter, k: int
) -> list[tuple[str, float]]:
    from memory.filters import matches

    vectors = stored(vectors)  # the reference scores the vectors the store holds
    scores = vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))
    ranked = sorted(
        ((float(scores[i]), item.id) for i, item in enumerate(items) if matches(f, item)), key=lambda p: (-p[0], p[1])
    )
    return [(item_id, score) for score, item_id in ranked[:k]]


FILTERS = [
    {},
    {"user": "u7"},
    {"kinds": ("trait",)},
    {"tags_any": ("t1", "t3")},
    {"metadata": {"parity": True}},
    {"metadata": {"n": 3}, "clearance": "secret"},
    {"created_after": NOW + timedelta(seconds=1000), "created_before": NOW + timedelta(seconds=2000)},
]


@pytest.mark.parametrize(
    ("exact_limit", "cache_mb"),
    [(10_000, 512), (0, 512), (0, 0)],
    ids=["exact-scan", "float-copy-then-rescore", "sign-bits-then-rescore"],
)
@pytest.mark.parametrize("filter_fields", FILTERS, ids=[str(sorted(f)) for f in FILTERS])
def test_vector_search_matches_numpy(
    db_path: Path, exact_limit: int, cache_mb: int, filter_fields: dict[str, Any]
) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((3000, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    exact = exact_limit > 0 or cache_mb > 0
    with SQLiteBackend(db_path, exact_limit=exact_limit, vector_cache_mb=cache_mb) as backend:
        backend.ensure_vector_space(MODEL, DIM)
        items = _fill(backend, vectors)
        f = flt(**filter_fields)
        recalls = []
        for _ in range(20):
            query = unit(rng)
            hits = backend.search_vector(f, MODEL, query, 10)
            expected = _brute_force(items, vectors, query, f, 10)
            by_id = {item.id: item for item in items}
            # scores are exact cosines, best first, ties by id, and every hit passes the filter
            truth = dict(_brute_force(items, vectors, query, f, len(items)))
            for hit in hits:
                assert hit.score == pytest.approx(truth[hit.id], abs=1e-5)
            assert [(-h.score, h.id) for h in hits] == sorted((-h.score, h.id) for h in hits)
            assert len(hits) == len(expected)
            assert all(h.id in truth for h in hits) and all(by_id[h.id].namespace == "default" for h in hits)
            recalls.append(len({h.id for h in hits} & {e[0] for e in expected}) / max(len(expected), 1))
            if exact:
                assert [h.id for h in hits] == [e[0] for e in expected]
        # sign bits on structureless random vectors still find most true neighbours (0.94 unfiltered
        # here); a selective filter widens the candidate pool instead of losing neighbours. Ties in
        # Hamming distance are broken by position, so this does not depend on the CPU's SIMD code.
        assert np.mean(recalls) >= (1.0 if exact else 0.85)


SMALL_SCOPES = [
    {"user": "u7"},
    {"tags_any": ("t1",)},
    {"user": "u3", "kinds": ("trait",)},
    {"user": "u7", "clearance": "secret"},
]


SMALL_SCOPE_IDS = ["-".join(f"{k}={v}" for k, v in f.items()) for f in SMALL_SCOPES]


def _copy_matches_the_table(
    path: Path,
    monkeypatch: pytest.MonkeyPatch,
    f: Filter,
    seed: int,
    count: int,
    changed: list[int],
    *,
    exact_limit: int = vectors_module.DEFAULT_EXACT_LIMIT,
) -> None:
    """Searches scored from the float copy equal a reader with no copy and brute force, without the table's vectors.

    Five searches; then ``changed`` rows get new vectors (their first six) or are deleted (the next
    three), so the copy holds stale entries, and five more searches. The same hits, scores to the bit
    and rank fields; the searching reader never reads vectors from the table for them.
    """

    def not_from_the_table(*args: Any) -> None:
        raise AssertionError("vectors were read from the table")

    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, DIM)).astype(np.float32)
    with (
        SQLiteBackend(path, exact_limit=exact_limit) as copy,
        SQLiteBackend(path, exact_limit=exact_limit, vector_cache_mb=0) as table,
    ):
        copy.ensure_vector_space(MODEL, DIM)
        items = _fill(copy, vectors)

        def same_hits() -> None:
            for _ in range(5):
                query = unit(rng)
                with monkeypatch.context() as patched:
                    patched.setattr(vectors_module, "_exact", not_from_the_table)
                    patched.setattr(vectors_module, "_rescore", not_from_the_table)
                    got = copy.search_vector(f, MODEL, query, 10)
                want = table.search_vector(f, MODEL, query, 10)
                assert got and [(h.id, h.score, h.fields) for h in got] == [(h.id, h.score, h.fields) for h in want]
                assert [h.id for h in want] == [e[0] for e in _brute_force(items, vectors, query, f, 10)]

        same_hits()
        assert not table._codes._indexes  # without a float budget the table is read, as before
        for n in changed[:6]:  # new vectors for some: their old entries in the copy are stale now
            vectors[n] = rng.standard_normal(DIM).astype(np.float32)
            copy.replace(items[n], vectors[n], ledger_entry("update", items[n].id, "default", NOW, after=items[n]))
        gone = [items[n] for n in changed[6:9]]
        entries = [ledger_entry("delete", i.id, "default", NOW, before=i) for i in gone]
        copy.delete("default", [i.id for i in gone], entries)
        kept = [n for n, item in enumerate(items) if item not in gone]
        items, vectors = [items[n] for n in kept], vectors[kept]
        same_hits()


@pytest.mark.parametrize("filter_fields", SMALL_SCOPES, ids=SMALL_SCOPE_IDS)
def test_a_small_scope_of_a_large_namespace_is_scored_from_the_float_copy(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, filter_fields: dict[str, Any]
) -> None:
    """A scope of at most ``exact_limit`` rows (60 or 600 of 3,000) is ranked exactly, its vectors from the copy."""
    in_scope = [n for n in range(3000) if n % 50 in (3, 7)]  # users u3 and u7 (see _fill)
    _copy_matches_the_table(db_path, monkeypatch, flt(**filter_fields), 9, 3000, in_scope, exact_limit=700)


WHOLE_NAMESPACE = [
    {},
    {"clearance": "secret"},
    {"metadata": {"n": 3}},
    {"created_after": NOW + timedelta(seconds=100), "created_before": NOW + timedelta(seconds=160)},
]


@pytest.mark.parametrize("filter_fields", WHOLE_NAMESPACE, ids=["all", "secrets", "metadata", "time"])
def test_a_small_namespace_searched_whole_is_scored_from_the_float_copy(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, filter_fields: dict[str, Any]
) -> None:
    """A namespace under ``exact_limit`` vectors, with no indexed narrowing, is ranked from its copy.

    Its vectors are not read from the table for each search: every one is scored in the copy and the
    best are checked against the filter (those a filter turns away, policy, metadata or time, widen
    the check).
    """
    _copy_matches_the_table(db_path, monkeypatch, flt(**filter_fields), 12, 600, list(range(100, 109)))


def test_small_namespaces_leave_half_the_float_budget_to_large_ones(db_path: Path) -> None:
    """Copies of namespaces under ``exact_limit`` vectors are made only within half of the total float budget.

    Many small namespaces (one per user) would otherwise spend it all, first come first served, and a
    large namespace opened later would lose the copy it needs. Past the half a small one is scanned
    from the table, with the same results.
    """
    rng = np.random.default_rng(13)
    sizes = {"a": 600, "b": 1_500, "c": 2_500}  # 36 bytes a copied 16-d vector: 21,600, 54,000 and 90,000
    with SQLiteBackend(db_path) as backend:  # exact_limit 2,000: a and b are small
        backend.ensure_vector_space(MODEL, DIM)
        backend._codes.total_float_budget = 112_000  # half: 56,000
        data = {ns: rng.standard_normal((n, DIM)).astype(np.float32) for ns, n in sizes.items()}
        items = {ns: _fill(backend, data[ns], namespace=ns) for ns in sizes}
        for ns in sizes:
            f = flt(namespace=ns)
            query = unit(rng)
            hits = backend.search_vector(f, MODEL, query, 10)
            assert [h.id for h in hits] == [e[0] for e in _brute_force(items[ns], data[ns], query, f, 10)]
        copies = {key[2]: index for key, index in backend._codes._indexes.items()}
        assert copies["a"].exact  # 21,600 within half the budget
        assert "b" not in copies  # 54,000 more would pass half of it: scanned from the table, no copy made
        assert copies["c"].exact  # the large one still has room for its 90,000


@pytest.mark.parametrize("exact_limit", [10_000, 0], ids=["exact-scan", "float-copy"])
def test_vector_hits_carry_the_rank_fields_the_store_holds(db_path: Path, exact_limit: int) -> None:
    # Recall ranks on created_at and importance; the vector channel reads them with its hits so
    # recall need not ask again. They must be what rank_fields reads, for every hit, on both paths.
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((3000, DIM)).astype(np.float32)
    with SQLiteBackend(db_path, exact_limit=exact_limit) as backend:
        backend.ensure_vector_space(MODEL, DIM)
        _fill(backend, vectors)
        hits = backend.search_vector(flt(user="u3"), MODEL, unit(rng), 20) + backend.search_vector(
            flt(), MODEL, unit(rng), 50
        )
        assert hits and all(h.fields is not None for h in hits)
        assert {h.id: h.fields for h in hits} == backend.rank_fields("default", [h.id for h in hits])


@pytest.mark.parametrize("cache_mb", [512, 0], ids=["float-copy", "sign-bits"])
def test_coarse_path_is_exact_when_the_filter_is_selective_or_the_space_small(db_path: Path, cache_mb: int) -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((3000, DIM)).astype(np.float32)
    with SQLiteBackend(db_path, exact_limit=0, vector_cache_mb=cache_mb) as backend:
        backend.ensure_vector_space(MODEL, DIM)
        items = _fill(backend, vectors)
        small = _fill(backend, vectors[:500], namespace="small")
        for _ in range(5):
            query = unit(rng)
            selective = flt(user="u3")  # 60 of 3000 (~20 in the first 1000 candidates): widens until all are seen
            hits = backend.search_vector(selective, MODEL, query, 40)
            assert [h.id for h in hits] == [e[0] for e in _brute_force(items, vectors, query, selective, 40)]
            in_small = flt(namespace="small")  # 500 vectors: fewer than the candidate set
            hits = backend.search_vector(in_small, MODEL, query, 20)
            assert [h.id for h in hits] == [e[0] for e in _brute_force(small, vectors[:500], query, in_small, 20)]


@pytest.mark.parametrize("cache_mb", [512, 0], ids=["float-copy", "sign-bits"])
def test_near_duplicate_query_finds_its_item_on_the_coarse_path(db_path: Path, cache_mb: int) -> None:
    rng = np.random.default_rng(4)
    vectors = rng.standard_normal((3000, 64)).astype(np.float32)
    with SQLiteBackend(db_path, exact_limit=0, vector_cache_mb=cache_mb) as backend:
        backend.ensure_vector_space(MODEL, 64)
        items = _fill(backend, vectors)
        for n in rng.choice(3000, 20, replace=False):
            if items[n].sensitivity == "secret":
                continue
            query = vectors[n] + 0.05 * rng.standard_normal(64).astype(np.float32)
            assert backend.search_vector(flt(), MODEL, query, 5)[0].id == items[n].id


@pytest.mark.parametrize("cache_mb", [512, 0], ids=["float-copy", "sign-bits"])
def test_other_connections_see_new_replaced_and_deleted_vectors(db_path: Path, cache_mb: int) -> None:
    rng = np.random.default_rng(5)
    with SQLiteBackend(db_path) as writer, SQLiteBackend(db_path, exact_limit=0, vector_cache_mb=cache_mb) as reader:
        writer.ensure_vector_space(MODEL, DIM)
        first = [make_item(f"first {n}") for n in range(50)]
        writer.add([record(i, unit(rng)) for i in first])
        query = unit(rng)
        assert len(reader.search_vector(flt(), MODEL, query, 100)) == 50
        second = make_item("second")
        writer.add([record(second, query)])  # identical to the query: must come first
        assert reader.search_vector(flt(), MODEL, query, 1)[0].id == second.id
        writer.delete("default", [second.id], [ledger_entry("delete", second.id, "default", NOW, before=second)])
        assert second.id not in {h.id for h in reader.search_vector(flt(), MODEL, query, 100)}
        target = first[0]
        writer.replace(target, -query, ledger_entry("update", target.id, "default", NOW, after=target))
        hits = {h.id: h.score for h in reader.search_vector(flt(), MODEL, query, 100)}
        assert hits[target.id] == pytest.approx(-1.0, abs=1e-5)
        assert len(hits) == 50
        # The item stays, its vector goes (new text, embedding pending): the copy's entry must not answer.
        pending = target.model_copy(
            update={"content": "new text", "embedding_status": "pending", "embedding_model": None}
        )
        writer.replace(pending, None, ledger_entry("update", target.id, "default", NOW, after=pending))
        assert target.id not in {h.id for h in reader.search_vector(flt(), MODEL, -query, 100)}
        assert len(reader.search_vector(flt(), MODEL, query, 100)) == 49


def test_replace_keeps_or_removes_the_vector(backend: SQLiteBackend) -> None:
    rng = np.random.default_rng(6)
    item, vector = make_item("original"), unit(rng)
    backend.add([record(item, vector)])
    entry = ledger_entry("update", item.id, "default", NOW, after=item)
    renamed = item.model_copy(update={"tags": ("renamed",)})
    backend.replace(renamed, None, entry)
    np.testing.assert_array_equal(backend.get_vectors("default", MODEL, [item.id])[item.id], stored(vector))
    pending = renamed.model_copy(
        update={"content": "changed text", "embedding_status": "pending", "embedding_model": None}
    )
    backend.replace(pending, None, ledger_entry("update", item.id, "default", NOW, after=pending))
    assert backend.get_vectors("default", MODEL, [item.id]) == {}
    assert backend.search_vector(flt(), MODEL, vector, 5) == []
    assert [h.id for h in backend.search_lexical(flt(), ["changed"], 5)] == [item.id]
    assert backend.search_lexical(flt(), ["original"], 5) == []
    assert backend.search_lexical(flt(tags_any=("renamed",)), ["changed"], 5)[0].id == item.id
    with pytest.raises(NotFoundError):
        backend.replace(make_item("ghost"), None, entry)


def test_vector_space_dimension_is_enforced(backend: SQLiteBackend) -> None:
    from memory.errors import EmbeddingMismatchError

    with pytest.raises(EmbeddingMismatchError):
        backend.ensure_vector_space(MODEL, DIM + 1)
    with pytest.raises(InvalidVectorError):
        backend.search_vector(flt(), MODEL, np.ones(DIM + 1, dtype=np.float32), 3)
    assert backend.search_vector(flt(), "unknown-model", np.ones(DIM, dtype=np.float32), 3) == []


# -- filters: SQL reproduces memory.filters.matches ----------------------------------
HOSTILE = ["%", "_", "a%", "a_b", "'; DROP TABLE items; --", 'say "hi"', "it's", "\\", "*", "NULL", "ñandú"]


def test_hostile_strings_are_literal(backend: SQLiteBackend) -> None:
    items = {
        text: make_item(f"hostile {n} {text}", model=None, user=text, tags=[text], metadata={"k": text})
        for n, text in enumerate(HOSTILE)
    }
    backend.add([record(item, None) for item in items.values()])
    plain = make_item("plain abc", model=None, user="abc", tags=["abc", "aXb"], metadata={"k": "abc"})
    backend.add([record(plain, None)])
    for text, item in items.items():
        for f in (flt(user=text), flt(tags_any=(text,)), flt(tags_all=(text,)), flt(metadata={"k": text})):
            assert backend.find_ids(f) == [item.id], (text, f)
    assert backend.find_ids(flt(kinds=("%",))) == []
    assert backend.find_ids(flt(ids=("%",))) == []
    assert backend.search_lexical(flt(), ['"', "drop", "items", "'"], 20)
    assert backend.search_lexical(flt(), ['" OR content:*', "NEAR("], 20) == []
    assert backend.count(flt(namespace="'; DROP TABLE items; --")) == 0
    assert backend.count(flt()) == len(HOSTILE) + 1
    assert backend.group_counts(flt(), "kind") == {"fact": len(HOSTILE) + 1}
    with pytest.raises(InvalidInputError):
        backend.group_counts(flt(), "kind FROM items; --")


def _random_items(rng: random.Random, count: int) -> list[MemoryItem]:
    values: list[Any] = [True, False, 1, 0, 1.0, 2.5, "1", "true", "", None, "x", [1], {"a": 1}]
    out = []
    for n in range(count):
        metadata = {key: rng.choice(values) for key in ("a", "b", "c.d", "e-f") if rng.random() < 0.7}
        created = NOW + timedelta(seconds=rng.randrange(0, 5000), microseconds=rng.randrange(0, 10**6))
        out.append(
            make_item(
                f"random item {n}",
                model=None,
                namespace=rng.choice(["default", "default", "other"]),
                user=rng.choice([None, "alice", "bob"]),
                agent=rng.choice([None, "a1"]),
                thread=rng.choice([None, "t1", "t2"]),
                kind=rng.choice(["fact", "trait", "document"]),
                tags=rng.sample(["x", "y", "z", "%"], rng.randrange(0, 4)),
                metadata=metadata,
                sensitivity=rng.choice(["normal", "private", "secret"]),
                created_at=created,
                expires_at=rng.choice([None, NOW + timedelta(seconds=rng.randrange(-3000, 9000))]),
                valid_to=rng.choice([None, NOW + timedelta(seconds=rng.randrange(-3000, 9000))]),
            )
        )
    return out


def _random_filter(rng: random.Random, items: list[MemoryItem]) -> Filter:
    fields: dict[str, Any] = {
        "namespace": rng.choice(["default", "other", "none"]),
        "now": NOW + timedelta(seconds=rng.randrange(0, 6000)),
    }
    maybe = lambda p: rng.random() < p  # noqa: E731
    if maybe(0.3):
        fields["user"] = rng.choice(["alice", "bob", "carol"])
    if maybe(0.2):
        fields["thread"] = rng.choice(["t1", "t2"])
    if maybe(0.1):
        fields["agent"] = "a1"
    if maybe(0.3):
        fields["kinds"] = tuple(rng.sample(["fact", "trait", "document", "x"], rng.randrange(0, 3)))
    if maybe(0.3):
        fields["tags_any"] = tuple(rng.sample(["x", "y", "z", "%", "_"], rng.randrange(0, 3)))
    if maybe(0.3):
        fields["tags_all"] = tuple(rng.sample(["x", "y", "z", "%"], rng.randrange(0, 3)))
    if maybe(0.5):
        scalars: list[Any] = [True, False, 1, 0, 1.0, 2.5, "1", "true", "", None, "x", 3]
        fields["metadata"] = {key: rng.choice(scalars) for key in rng.sample(["a", "b", "c.d", "e-f", "zz"], 2)}
    if maybe(0.3):
        fields["created_after"] = rng.choice(items).created_at
    if maybe(0.3):
        fields["created_before"] = rng.choice(items).created_at
    if maybe(0.2):
        fields["ids"] = tuple(i.id for i in rng.sample(items, 5))
    fields["clearance"] = rng.choice(["normal", "private", "secret"])
    fields["include_expired"] = maybe(0.3)
    fields["include_invalid"] = maybe(0.3)
    return Filter(**fields)


def test_sql_filters_agree_with_matches(backend: SQLiteBackend) -> None:
    rng = random.Random(11)
    items = _random_items(rng, 300)
    backend.add([record(item, None) for item in items])
    reference = FilterReference(backend, NOW)
    for _ in range(400):
        f = _random_filter(rng, items)
        expected = reference.find_ids(f)
        assert backend.find_ids(f) == expected, f
        assert backend.count(f) == len(expected)
    f = Filter(namespace="default", now=NOW, clearance="secret", include_expired=True, include_invalid=True)
    assert [i.id for i in backend.iter_items(f, batch_size=7)] == [i.id for i in reference.iter_items(f)]
    page = backend.list(f, 10, ListOrder(newest_first=True))
    assert page == reference.list(f, 10, ListOrder(newest_first=True))
    after = ListOrder(newest_first=True, after_created_at=page[-1].created_at, after_id=page[-1].id)
    assert backend.list(f, 10, after) == reference.list(f, 10, after)
    assert backend.group_counts(f, "sensitivity") == reference.group_counts(f, "sensitivity")
    assert backend.namespaces() == ["default", "other"]


def test_ledger_survives_deletion(backend: SQLiteBackend) -> None:
    item = make_item("to be forgotten", model=None, tags=["gone"])
    backend.add([record(item, None)])
    gone: LedgerEntry = ledger_entry("delete", item.id, "default", NOW, before=item, reason="test")
    assert backend.delete("default", [item.id, "unknown"], [gone]) == 1
    assert [e.op for e in backend.history("default", item.id)] == ["add", "delete"]
    assert table_count(backend, "SELECT count(*) FROM item_tags") == 0
    assert backend.search_lexical(flt(), ["forgotten"], 5) == []
    _assert_fts_consistent(backend)


# -- the ledger: adds stored by reference (issue 22) -------------------------------
def raw_after(backend: SQLiteBackend, entry_id: str) -> Any:
    """The ``after`` column of a ledger entry as stored (decoded JSON, or None)."""
    raw = backend._conn.execute("SELECT after FROM ledger WHERE id = ?", (entry_id,)).fetchone()[0]
    return None if raw is None else json.loads(raw)


def add_marker(item: MemoryItem) -> dict[str, Any]:
    """The marker an add of ``item`` stores: the key and the add-time values of the volatile fields."""
    return {
        "$item": 1, "access_count": item.access_count, "accessed_at": None, "embedding_model": item.embedding_model,
        "embedding_status": item.embedding_status, "embedding_error": item.embedding_error,
    }  # fmt: skip


def test_an_add_stores_a_marker_and_the_other_entries_whole(backend: SQLiteBackend) -> None:
    item = make_item("stored by reference", tags=["t"], metadata={"k": [1, 2.5]})
    rec = record(item, unit(np.random.default_rng(0)))
    backend.add([rec])
    assert raw_after(backend, rec.ledger.id) == add_marker(item)
    backend.record_access("default", [item.id], NOW + timedelta(hours=1))
    changed = item.model_copy(update={"content": "changed", "updated_at": NOW + timedelta(hours=2)})
    (stored,) = backend.get("default", [item.id])
    update = ledger_entry("update", item.id, "default", NOW, before=stored, after=changed)
    backend.replace(changed, None, update)
    gone = ledger_entry("delete", item.id, "default", NOW, before=changed)
    backend.delete("default", [item.id], [gone])
    assert raw_after(backend, update.id) == snapshot(changed)  # stored whole, as every entry but an add
    assert [e.after for e in backend.history("default", item.id)] == [snapshot(item), snapshot(changed), None]
    copied = ledger_entry("add", "copied", "default", NOW, after=item)
    backend.write_ledger([copied])  # a raw copy stores what it is given
    assert raw_after(backend, copied.id) == snapshot(item)


def test_a_full_add_snapshot_of_an_older_store_reads_as_stored(backend: SQLiteBackend) -> None:
    item = make_item("written before markers existed", model=None)
    rec = record(item, None)
    backend.add([rec])
    full = dict(snapshot(item), context="as the older version stored it")  # not the row: read from the column
    backend._conn.execute("UPDATE ledger SET after = ? WHERE id = ?", (json.dumps(full), rec.ledger.id))
    backend.record_access("default", [item.id], NOW + timedelta(hours=1))
    backend.set_vectors("default", MODEL, [(item.id, unit(np.random.default_rng(1)))])
    assert [e.after for e in backend.history("default", item.id)] == [full]
    assert [e.after for e in backend.iter_ledger()] == [full]


def test_a_marker_with_neither_its_item_nor_a_later_entry_reads_as_none(backend: SQLiteBackend) -> None:
    item = make_item("an entry whose item never was stored")
    backend._conn.execute(
        "INSERT INTO ledger (id, namespace, item_id, op, at, after) VALUES ('orphan', 'default', ?, 'add', 0, ?)",
        (item.id, json.dumps(add_marker(item))),
    )
    (entry,) = backend.history("default", item.id)
    assert entry.op == "add" and entry.after is None
    assert [e.after for e in backend.iter_ledger()] == [None]


@pytest.mark.parametrize(
    "fields",
    [
        {"expires_at": datetime(9000, 1, 1, 0, 0, 0, 123457, tzinfo=UTC)},  # epoch seconds lose the microseconds
        {"importance": -0.0},  # SQLite's REAL reads back 0.0
        {"valid_from": datetime(2026, 1, 1, 14, tzinfo=timezone(timedelta(hours=2)))},  # rows read back in UTC
    ],
)
def test_an_item_whose_row_reads_back_otherwise_keeps_its_add_whole(
    backend: SQLiteBackend, fields: dict[str, Any]
) -> None:
    item = make_item("a row that does not read back as the item", **fields)
    rec = record(item, None)
    backend.add([rec])
    (stored,) = backend.get("default", [item.id])
    as_added = json.dumps(snapshot(item))  # JSON text: -0.0 == 0.0 in Python
    assert json.dumps(snapshot(stored)) != as_added
    assert json.dumps(raw_after(backend, rec.ledger.id)) == as_added
    assert [json.dumps(e.after) for e in backend.history("default", item.id)] == [as_added]


def test_float_copy_falls_back_to_sign_bits_past_its_budget() -> None:
    from memory.backends.sqlite.vectors import CodeIndex, quantize

    rng = np.random.default_rng(8)
    vectors = rng.standard_normal((100, 16)).astype(np.float32)
    index = CodeIndex(words=1, dim=16, float_budget=50 * (16 * 4 + 4))  # 50 float32 vectors and lengths
    rows = [(n + 1, n, quantize(v, 1), v.tobytes()) for n, v in enumerate(vectors)]
    index.extend(rows[:50])
    assert index.exact
    best = int(np.argmax(vectors[:50] @ vectors[7]))
    assert index.nearest(vectors[7], 1) == [best]
    index.extend(rows[50:])
    assert not index.exact and index.size == 100
    assert len(index.nearest(vectors[7], 10)) == 10


def test_lexical_search_falls_back_when_the_filter_is_selective(backend: SQLiteBackend) -> None:
    # 250 short documents of user a outrank 50 long ones of user b: the fast path's pool holds no b.
    short = [make_item(f"common word {n}", user="a") for n in range(250)]
    long = [make_item(f"common word {n} " + "padding " * 30, user="b") for n in range(50)]
    backend.add([record(item, None) for item in short + long])
    hits = backend.search_lexical(flt(user="b"), ["common"], 10)
    b_ids = {item.id for item in long}
    assert len(hits) == 10 and all(h.id in b_ids for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    everyone = backend.search_lexical(flt(), ["common"], 10)
    assert len(everyone) == 10 and all(h.id not in b_ids for h in everyone)


def test_index_window_migration_keeps_old_rows_searchable(db_path: Path) -> None:
    """A store written before the index_window migration is re-indexed: content, and time words."""
    from memory.backends.sqlite.backend import _INSERT_ITEM
    from memory.backends.sqlite.codec import item_values

    conn = raw_connect(db_path)
    try:
        before = next(i for i, m in enumerate(MIGRATIONS) if m.name.endswith("_index_window"))
        apply_migrations(conn, MIGRATIONS[:before])
        old = make_item("the old heron", model=None, created_at=datetime(2023, 5, 8, 13, 56, tzinfo=UTC))
        conn.execute(_INSERT_ITEM, item_values(old))
    finally:
        conn.close()
    with SQLiteBackend(db_path) as backend:
        assert [h.id for h in backend.search_lexical(flt(), ["heron"], 5)] == [old.id]
        assert [h.id for h in backend.search_lexical(flt(), ["may"], 5, fields={"time": 1.0})] == [old.id]
        # The key index keeps no text (contentless), so the time words are checked as a phrase.
        found = backend._conn.execute(
            "SELECT rowid FROM items_key_fts WHERE items_key_fts MATCH 'time : \"8 may 2023\"'"
        ).fetchall()
        assert found == [(1,)]
        wrong = backend._conn.execute(
            "SELECT rowid FROM items_key_fts WHERE items_key_fts MATCH 'time : \"9 may 2023\"'"
        ).fetchall()
        assert wrong == []


def test_new_store_has_lean_indexes_and_8k_pages(db_path: Path) -> None:
    """A new file: 8 KB pages, a contentless key index, partial filter and queue indexes."""
    with SQLiteBackend(db_path) as backend:
        conn = backend._conn
        assert conn.execute("PRAGMA page_size").fetchone()[0] == 8192
        sql = {name: text for name, text in conn.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL")}
        assert "content=''" in sql["items_key_fts"]
        assert "WHERE embedding_status IN" in sql["items_pending"]
        assert all("IS NOT NULL" in sql[f"items_ns_{c}"] for c in ("user", "agent", "thread"))
        item = make_item("a heron by the lake", model=None)
        backend.add([NewRecord(item, None, ledger_entry("add", item.id, item.namespace, NOW, after=item))])
        assert [h.id for h in backend.search_lexical(flt(), ["heron"], 5)] == [item.id]
        backend.delete(item.namespace, [item.id], [])
        assert backend.search_lexical(flt(), ["heron"], 5) == []
        assert conn.execute("SELECT count(*) FROM items_key_fts WHERE items_key_fts MATCH 'heron'").fetchone()[0] == 0


def test_key_index_ranks_as_a_content_table_after_updates_and_deletes(db_path: Path) -> None:
    """The contentless key index leaves rows by FTS5's 'delete' command with their indexed values, so its
    BM25 (document counts included) equals that of a content table holding the items' current rows."""
    from memory.backends.sqlite.migrations import time_words_sql

    rnd = random.Random(11)
    words = "heron lake tram tea kite moon river stone bread lamp".split()
    with SQLiteBackend(db_path) as backend:
        items = [make_item(" ".join(rnd.choices(words, k=rnd.randint(2, 12))), model=None) for _ in range(120)]
        backend.add([NewRecord(i, None, ledger_entry("add", i.id, i.namespace, NOW, after=i)) for i in items])
        for _ in range(3):  # windows rewritten, as every write around a thread does
            backend.set_windows(
                "default", None, [(i.id, " ".join(rnd.choices(words, k=rnd.randint(0, 20))), None) for i in items]
            )
        gone = items[:30]
        backend.delete("default", [i.id for i in gone], [])
        edited = items[30].model_copy(update={"content": "a brand new heron text"})
        backend.replace(edited, None, ledger_entry("update", edited.id, "default", NOW, after=edited))
        conn = backend._conn
        conn.execute(
            "CREATE VIRTUAL TABLE ref USING fts5 "
            "(content, window, time, tokenize='porter unicode61 remove_diacritics 2')"
        )
        conn.execute(
            f"INSERT INTO ref (rowid, content, window, time) SELECT rid, content, index_window, "
            f"{time_words_sql('created_at')} FROM items"
        )
        for query in ("heron", "tram OR tea", "moon OR river OR lamp", "brand"):
            match = "{content window time} : (" + query + ")"
            got, want = (
                conn.execute(
                    f"SELECT rowid, bm25({t}, 1.0, 0.5, 0.3) FROM {t} WHERE {t} MATCH ? ORDER BY 2, 1", (match,)
                ).fetchall()
                for t in ("items_key_fts", "ref")
            )
            assert got == want and got, query


def test_existing_file_keeps_its_page_size(db_path: Path) -> None:
    """``PRAGMA page_size`` only shapes a new file; a 4 KB store opens and stays 4 KB."""
    conn = raw_connect(db_path)
    try:
        conn.execute("PRAGMA page_size = 4096")
        conn.execute("CREATE TABLE t (x)")
        conn.execute("DROP TABLE t")
    finally:
        conn.close()
    with SQLiteBackend(db_path) as backend:
        assert backend._conn.execute("PRAGMA page_size").fetchone()[0] == 4096


def test_planner_statistics_follow_a_store_that_grows_in_one_process(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store created empty gets fresh statistics as it grows (stale ones slowed bulk loads down steadily)."""
    import memory.backends.sqlite.backend as sqlite_backend

    monkeypatch.setattr(sqlite_backend, "_OPTIMIZE_EVERY", 500)
    rng = np.random.default_rng(7)
    with SQLiteBackend(db_path) as backend:
        backend.ensure_vector_space(MODEL, DIM)
        for start in range(0, 6000, 250):
            backend.add([record(make_item(f"growing store item {n}"), unit(rng)) for n in range(start, start + 250)])
        rows = backend._conn.execute("SELECT tbl, stat FROM sqlite_stat1").fetchall()
    counted: dict[str, int] = {}
    for table, stat in rows:
        counted[table] = max(counted.get(table, 0), int(stat.split()[0]))
    # every table the writes touch, not only those the connection queried (FTS5 shadow tables, ledger,
    # vector tables): plain `PRAGMA optimize` left these at their first, tiny counts (250). PRAGMA
    # optimize re-analyses a table once its row count has grown enough, so the last count may lag
    # the 6,000 rows by a step or two.
    for table in ("items", "ledger", "vcodes_1", "vectors_1", "items_key_fts_docsize"):
        assert counted.get(table, 0) >= 3000, (table, counted)
