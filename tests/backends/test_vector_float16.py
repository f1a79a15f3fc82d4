"""SQLite vector storage types (issue 22): new spaces store float16, spaces of older files keep float32.

A new space's blobs are 2 bytes a dimension and every search path scores
their float16 values exactly; a file written before migration 0016 (built
here the way that version wrote it: float32 blobs, no ``dtype`` column)
opens with its spaces marked float32, searches exactly as before, and its
new vectors (items and messages) stay float32.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_sqlite import MODEL, flt, make_item, raw_connect, record

from memory.backends.sqlite import SQLiteBackend
from memory.backends.sqlite import vectors as vectors_module
from memory.backends.sqlite.backend import _INSERT_ITEM
from memory.backends.sqlite.codec import item_values
from memory.backends.sqlite.migrations import MIGRATIONS, apply_migrations
from memory.episodic.types import Message, MessageQuery
from memory.ids import new_id
from memory.types import MemoryItem

DIM = 384  # MiniLM's size: the blob sizes of the README's disk table
COUNT = 2_500
#: The search paths that score exactly: a full scan (filter matches within exact_limit) and the float copy.
EXACT_PATHS = {"exact-scan": {"exact_limit": 10_000}, "float-copy": {"exact_limit": 0, "vector_cache_mb": 512}}


def _unit_rows(rng: np.random.Generator, n: int, dim: int = DIM) -> np.ndarray:
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _top(vectors: np.ndarray, query: np.ndarray, ids: list[str], k: int) -> list[tuple[str, float]]:
    """The float32 reference: cosines in numpy, best first, ties by id."""
    scores = vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))
    return sorted(((ids[n], float(s)) for n, s in enumerate(scores)), key=lambda p: (-p[1], p[0]))[:k]


def _as_reference(hits: list[Any], vectors: np.ndarray, query: np.ndarray, ids: list[str]) -> bool:
    """Check hits of a float16 space against the float32 reference; True when the ids are the same, in order.

    float16 moves a 384-d unit vector's cosines by less than 1e-4 (6e-5 at most over 200 queries on
    100k random vectors): the hits' scores are the reference's within 1e-3, and an order that differs
    swaps only items whose float32 cosines are within 1e-4 of each other (near-ties; 3 to 5 queries
    in 200 on 2,500 or 100k random vectors).
    """
    reference = _top(vectors, query, ids, len(hits))
    truth = dict(_top(vectors, query, ids, len(ids)))
    assert len(hits) == len(reference)
    assert [h.score for h in hits] == pytest.approx([s for _, s in reference], abs=1e-3)
    assert [truth[h.id] for h in hits] == pytest.approx([s for _, s in reference], abs=1e-4)
    return [h.id for h in hits] == [item_id for item_id, _ in reference]


def _blob_lengths(backend: SQLiteBackend, table: str) -> set[int]:
    return {int(r[0]) for r in backend._conn.execute(f"SELECT DISTINCT length(embedding) FROM {table}")}


def _dtypes(backend: SQLiteBackend) -> dict[str, str]:
    return {str(m): str(d) for m, d in backend._conn.execute("SELECT model, dtype FROM vector_spaces")}


def _messages(backend: SQLiteBackend, n: int) -> list[Message]:
    at = flt().now
    return backend.episodic.append_messages(
        [
            Message(id=new_id(), namespace="default", thread=f"t{i % 3}", role="user", content=f"m {i}", created_at=at)
            for i in range(n)
        ]
    )


# -- a new file ------------------------------------------------------------------
def test_a_new_space_stores_two_bytes_a_dimension(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    vectors = _unit_rows(rng, 20)
    with SQLiteBackend(tmp_path / "new.db") as backend:
        backend.ensure_vector_space(MODEL, DIM)
        items = [make_item(f"note {n}") for n in range(20)]
        backend.add([record(item, v) for item, v in zip(items, vectors, strict=True)])
        stored = _messages(backend, 5)
        backend.episodic.set_message_vectors("default", MODEL, [(m.id, vectors[n]) for n, m in enumerate(stored)])
        assert _dtypes(backend) == {MODEL: "float16"}
        assert _blob_lengths(backend, "vectors_1") == {2 * DIM} == _blob_lengths(backend, "msg_vectors_1")
        # read back as float32: the float16 rounding of what was given, exactly
        got = backend.get_vectors("default", MODEL, [items[3].id])[items[3].id]
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, vectors[3].astype(np.float16).astype(np.float32))
        message = backend.episodic.get_message_vectors("default", MODEL, [stored[2].id])[stored[2].id]
        assert message.dtype == np.float32
        np.testing.assert_array_equal(message, vectors[2].astype(np.float16).astype(np.float32))


@pytest.mark.parametrize("path", list(EXACT_PATHS))
def test_float16_search_matches_a_float32_reference(tmp_path: Path, path: str) -> None:
    """Both exact paths give the float32 reference's top ids (up to near-ties) and scores within 1e-3."""
    rng = np.random.default_rng(2)
    vectors = _unit_rows(rng, COUNT)
    with SQLiteBackend(tmp_path / "f16.db", **EXACT_PATHS[path]) as backend:
        backend.ensure_vector_space(MODEL, DIM)
        items = [make_item(f"note {n}") for n in range(COUNT)]
        backend.add([record(item, v) for item, v in zip(items, vectors, strict=True)])
        ids = [item.id for item in items]
        stored = vectors.astype(np.float16).astype(np.float32)
        same = 0
        for _ in range(40):
            query = _unit_rows(rng, 1)[0]
            hits = backend.search_vector(flt(), MODEL, query, 10)
            same += _as_reference(hits, vectors, query, ids)
            # exact cosines of the stored float16 values: the same hits and scores as numpy on them
            exact = _top(stored, query, ids, 10)
            assert [h.id for h in hits] == [item_id for item_id, _ in exact]
            assert [h.score for h in hits] == pytest.approx([s for _, s in exact], abs=1e-6)
        assert same >= 36
        if path == "float-copy":
            (index,) = backend._codes._indexes.values()
            # held as stored (half the bytes of float32), with a float32 length each
            assert index.exact and index.floats is not None and index.floats.dtype == np.float16
            assert index.float_bytes == index.floats.shape[0] * (DIM * 2 + 4)


@pytest.mark.parametrize("path", list(EXACT_PATHS))
def test_float16_message_search_matches_a_float32_reference(tmp_path: Path, path: str) -> None:
    rng = np.random.default_rng(3)
    vectors = _unit_rows(rng, COUNT)
    with SQLiteBackend(tmp_path / "msg.db", **EXACT_PATHS[path]) as backend:
        backend.ensure_vector_space(MODEL, DIM)
        stored = _messages(backend, COUNT)
        backend.episodic.set_message_vectors("default", MODEL, [(m.id, vectors[n]) for n, m in enumerate(stored)])
        assert _blob_lengths(backend, "msg_vectors_1") == {2 * DIM}
        ids = [m.id for m in stored]
        query_of = MessageQuery(namespace="default", now=flt().now)
        same = 0
        for _ in range(20):
            query = _unit_rows(rng, 1)[0]
            same += _as_reference(
                backend.episodic.search_messages_vector(query_of, MODEL, query, 10), vectors, query, ids
            )
        assert same >= 18


def test_a_vector_float16_cannot_hold_is_stored_by_its_direction(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    direction = _unit_rows(rng, 2, 16)
    huge, tiny = direction[0] * 1e6, direction[1] * 1e-7  # beyond float16's range; below its normal values
    with SQLiteBackend(tmp_path / "range.db") as backend:
        backend.ensure_vector_space(MODEL, 16)
        items = [make_item("huge"), make_item("tiny")]
        backend.add([record(items[0], huge), record(items[1], tiny)])
        got = backend.get_vectors("default", MODEL, [i.id for i in items])
        for item, given in zip(items, (huge, tiny), strict=True):
            kept = got[item.id]
            assert np.all(np.isfinite(kept)) and float(np.max(np.abs(kept))) == 1.0
            assert float(kept @ given / (np.linalg.norm(kept) * np.linalg.norm(given))) == pytest.approx(1.0, abs=1e-6)
            assert backend.search_vector(flt(), MODEL, given, 1)[0].score == pytest.approx(1.0, abs=1e-6)


def test_an_unknown_storage_type_is_refused() -> None:
    with pytest.raises(ValueError, match="storage type"):
        vectors_module.Space(1, MODEL, 8, dtype="int8")


# -- a file written before float16 -------------------------------------------------
def _old_store(path: Path, items: list[MemoryItem], vectors: np.ndarray) -> None:
    """A store as the version before migration 0016 wrote it: float32 blobs, a registry without ``dtype``."""
    before = next(n for n, m in enumerate(MIGRATIONS) if m.name == "0016_vector_dtype")
    conn = raw_connect(path)
    try:
        apply_migrations(conn, MIGRATIONS[:before])
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO vector_spaces (model, dim, table_name, created_at) VALUES (?, ?, 'vectors_1', 0)",
            (MODEL, vectors.shape[1]),
        )
        conn.execute(
            "CREATE TABLE vectors_1 (rid INTEGER PRIMARY KEY REFERENCES items (rid) ON DELETE CASCADE, "
            "embedding BLOB NOT NULL)"
        )
        conn.execute(
            "CREATE TABLE vcodes_1 (namespace TEXT NOT NULL, seq INTEGER NOT NULL, rid INTEGER NOT NULL, "
            "code BLOB NOT NULL, PRIMARY KEY (namespace, seq)) WITHOUT ROWID"
        )
        conn.execute("CREATE INDEX vcodes_1_rid ON vcodes_1 (rid)")
        words = (vectors.shape[1] + 63) // 64
        for seq, (item, vector) in enumerate(zip(items, vectors, strict=True), start=1):
            rid = conn.execute(_INSERT_ITEM + " RETURNING rid", item_values(item)).fetchone()[0]
            conn.execute("INSERT INTO vectors_1 (rid, embedding) VALUES (?, ?)", (rid, vector.tobytes()))
            code = vectors_module.quantize(vector, words)
            conn.execute(
                "INSERT INTO vcodes_1 (namespace, seq, rid, code) VALUES (?, ?, ?, ?)", ("default", seq, rid, code)
            )
        conn.execute(
            "INSERT INTO vector_counters (space_id, namespace, last_seq, deletions) VALUES (1, 'default', ?, 0)",
            (len(items),),
        )
        conn.execute("COMMIT")
    finally:
        conn.close()


@pytest.mark.parametrize("path", [*EXACT_PATHS, "sign-bits"])
def test_an_old_float32_space_searches_as_before_and_stays_float32(tmp_path: Path, path: str) -> None:
    rng = np.random.default_rng(5)
    vectors = _unit_rows(rng, COUNT)
    items = [make_item(f"old {n}") for n in range(COUNT)]
    db = tmp_path / "old.db"
    _old_store(db, items, vectors)
    options: dict[str, Any] = EXACT_PATHS.get(path, {"exact_limit": 0, "vector_cache_mb": 0})
    with SQLiteBackend(db, **options) as backend:
        assert _dtypes(backend) == {MODEL: "float32"}  # the migration's default: what the space holds
        ids = [item.id for item in items]
        for _ in range(10):
            query = _unit_rows(rng, 1)[0]
            hits = backend.search_vector(flt(), MODEL, query, 10)
            reference = _top(vectors, query, ids, 10)
            if path != "sign-bits":  # sign-bit candidates are near-exact, not exact
                assert [h.id for h in hits] == [item_id for item_id, _ in reference]
            truth = dict(_top(vectors, query, ids, COUNT))
            assert all(h.score == pytest.approx(truth[h.id], abs=1e-6) for h in hits)  # float32: no rounding
        # new vectors in the old space stay float32, bit for bit: items, replaced ones, and messages
        fresh = _unit_rows(rng, 3)
        added = make_item("added later")
        backend.add([record(added, fresh[0])])
        backend.set_vectors("default", MODEL, [(items[0].id, fresh[1])])
        stored = _messages(backend, 1)
        backend.episodic.set_message_vectors("default", MODEL, [(stored[0].id, fresh[2])])
        assert _blob_lengths(backend, "vectors_1") == {4 * DIM} == _blob_lengths(backend, "msg_vectors_1")
        got = backend.get_vectors("default", MODEL, [added.id, items[0].id, items[1].id])
        np.testing.assert_array_equal(got[added.id], fresh[0])
        np.testing.assert_array_equal(got[items[0].id], fresh[1])
        np.testing.assert_array_equal(got[items[1].id], vectors[1])
        message = backend.episodic.get_message_vectors("default", MODEL, [stored[0].id])[stored[0].id]
        np.testing.assert_array_equal(message, fresh[2])
        assert backend.search_vector(flt(), MODEL, fresh[0], 1)[0].id == added.id
        # a space made now in the same file stores float16
        backend.ensure_vector_space("other-model", 8)
        assert _dtypes(backend) == {MODEL: "float32", "other-model": "float16"}


def test_libsql_native_index_reads_float16_and_float32_spaces(tmp_path: Path) -> None:
    """libSQL's index holds float32: a float16 space's blobs are converted in its triggers, old ones copied."""
    pytest.importorskip("libsql")
    from memory.backends.libsql import LibSQLBackend

    rng = np.random.default_rng(6)
    old_vectors = _unit_rows(rng, 300, 32)
    old_items = [make_item(f"old {n}") for n in range(300)]
    db = tmp_path / "both.db"
    _old_store(db, old_items, old_vectors)
    new_vectors = _unit_rows(rng, 300, 32)
    new_items = [make_item(f"new {n}", model="new-model") for n in range(300)]
    with LibSQLBackend(db, vector_index=True, exact_limit=20) as backend:
        backend.ensure_vector_space("new-model", 32)
        backend.add([record(item, v) for item, v in zip(new_items, new_vectors, strict=True)])
        assert _dtypes(backend) == {MODEL: "float32", "new-model": "float16"}
        for space_id, expected in ((1, old_vectors), (2, new_vectors.astype(np.float16).astype(np.float32))):
            rows = backend._conn.execute(f"SELECT vector_extract(embedding) FROM lvec_{space_id} ORDER BY rid")
            indexed = np.array([[float(x) for x in r[0].strip("[]").split(",")] for r in rows], dtype=np.float32)
            np.testing.assert_allclose(indexed, expected, rtol=1e-5)  # vector_extract prints 6 digits
        for model, vectors, items in ((MODEL, old_vectors, old_items), ("new-model", new_vectors, new_items)):
            for n in (3, 150, 299):
                hits = backend.search_vector(flt(), model, vectors[n], 3)
                assert hits[0].id == items[n].id and hits[0].score == pytest.approx(1.0, abs=1e-3)


def test_float16_blobs_widen_exactly() -> None:
    """The bit arithmetic that widens float16 gives numpy's cast for every finite float16 value."""
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    finite = every[np.isfinite(every)]
    space = vectors_module.Space(1, MODEL, finite.shape[0], dtype=vectors_module.FLOAT16)
    widened = vectors_module.decode(space, finite.tobytes())
    assert widened.dtype == np.float32
    np.testing.assert_array_equal(widened.view(np.uint32), finite.astype(np.float32).view(np.uint32))


def test_ranking_float16_rows_gives_the_widened_dot_products_to_the_bit() -> None:
    """The copy ranks float16 rows without the bias pass (scaled query): the same float32 products and sums."""
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    finite = every[np.isfinite(every)]
    rows = finite[: (finite.shape[0] // 64) * 64].reshape(-1, 64)  # subnormals, zeros, the largest values
    rng = np.random.default_rng(23)
    query = rng.standard_normal(64).astype(np.float32)
    query /= np.linalg.norm(query)
    query[:3] = (1e-40, -1e-39, 0.0)  # float32 subnormals in the query too
    widened = np.einsum("ij,j->i", vectors_module._widen(rows), query)
    folded = np.einsum("ij,j->i", vectors_module._shifted(rows), query * vectors_module._F16_TO_F32)
    np.testing.assert_array_equal(folded.view(np.uint32), widened.view(np.uint32))


def _stored_alone(space: vectors_module.Space, vector: np.ndarray) -> np.ndarray:
    """One vector as a space stores it, written out value by value (the rule the batch code must keep)."""
    array = np.ascontiguousarray(vector, dtype=np.float32)
    if space.dtype == vectors_module.FLOAT32:
        return array
    top = float(np.max(np.abs(array))) if array.size else 0.0
    if top > float(np.finfo(np.float16).max) or 0.0 < top < float(np.finfo(np.float16).smallest_normal):
        array = array / np.float32(top)
    return array.astype(np.float16)


def test_vectors_written_in_a_batch_are_stored_as_one_by_one() -> None:
    """A batch's vectors are rounded, rescaled and coded in a few passes: the same bytes as each on its own."""
    rng = np.random.default_rng(24)
    given = [rng.standard_normal(70).astype(np.float32) * scale for scale in (1.0, 1e5, 1e-7, 0.0, 3e4, 7e4, 1e-5)]
    for dtype in (vectors_module.FLOAT16, vectors_module.FLOAT32):
        space = vectors_module.Space(1, MODEL, 70, dtype=dtype, code=vectors_module.ROTATED)
        one_by_one = np.stack([_stored_alone(space, v) for v in given])
        batch = vectors_module.storable_rows(space, given)
        assert batch.dtype == one_by_one.dtype
        np.testing.assert_array_equal(batch.view(np.uint8), one_by_one.view(np.uint8))
        turned = vectors_module.coded(batch, space.code)
        assert vectors_module.quantize_rows(turned, 2) == [vectors_module.quantize(row, 2) for row in turned]
