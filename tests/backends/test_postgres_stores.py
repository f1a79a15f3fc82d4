"""The conversation, graph and API-key stores on PostgreSQL under concurrency (real server, MEMORY_TEST_DSN).

Their behaviour is the contract suite's (``tests/contract``); here: several
backend objects (separate connection pools, as separate processes would have)
racing on one thread's turns, on claims and on one entity, and the schema
rules (namespace first, HNSW per message space, generated tsvector).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory.backends.postgres import PostgresBackend
from memory.episodic.types import Message
from memory.ids import new_id
from pg_support import drop_test_schemas, postgres_dsn, schema_for

T0 = datetime(2026, 1, 1, tzinfo=UTC)
N = 4


@pytest.fixture(scope="module", autouse=True)
def _cleanup() -> Iterator[None]:
    yield
    import os

    if dsn := os.environ.get("MEMORY_TEST_DSN"):
        drop_test_schemas(dsn)


@pytest.fixture
def backends(tmp_path: Path) -> Iterator[list[PostgresBackend]]:
    """N backend objects on one fresh schema (each with its own pool)."""
    dsn, schema = postgres_dsn(), schema_for(tmp_path)
    opened = [PostgresBackend(dsn, schema=schema, pool_size=2) for _ in range(N)]
    yield opened
    for backend in opened:
        backend.close()


def _race(work: Callable[[int], Any]) -> list[Any]:
    results: list[Any] = [None] * N
    errors: list[BaseException] = []
    start = threading.Barrier(N)

    def run(i: int) -> None:
        try:
            start.wait()
            results[i] = work(i)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(N)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    return results


def _msg(content: str, at: datetime = T0) -> Message:
    return Message(id=new_id(), namespace="ns", thread="shared", role="user", content=content, created_at=at)


def test_concurrent_appends_to_one_thread_never_share_a_turn(backends: list[PostgresBackend]) -> None:
    def append(i: int) -> list[int]:
        turns: list[int] = []
        for n in range(10):
            batch = backends[i].episodic.append_messages([_msg(f"p{i} m{n} a"), _msg(f"p{i} m{n} b")])
            turns += [m.turn for m in batch]
        return turns

    results = _race(append)
    assert sorted(t for turns in results for t in turns) == list(range(1, 2 * 10 * N + 1))
    assert all(turns == sorted(turns) for turns in results)
    assert backends[0].episodic.threads("ns")[0].last_turn == 2 * 10 * N


def test_concurrent_claims_hand_out_every_message_once(backends: list[PostgresBackend]) -> None:
    stored = backends[0].episodic.append_messages([_msg(f"m{i}", T0 + timedelta(milliseconds=i)) for i in range(200)])

    def claim(i: int) -> list[str]:
        got: list[str] = []
        while batch := backends[i].episodic.claim_pending_messages("ns", 7, f"w{i}", 300, T0):
            got += [m.id for m in batch]
        return got

    results = _race(claim)
    flat = [i for ids in results for i in ids]
    assert len(flat) == len(set(flat)) == len(stored)
    assert backends[0].episodic.message_claims("ns") == {f"w{i}": len(ids) for i, ids in enumerate(results) if ids}


def test_concurrent_upserts_of_one_entity_make_one(backends: list[PostgresBackend]) -> None:
    ids = _race(lambda i: backends[i].graph.upsert_entity("ns", "Alice" if i % 2 else " the alice ", "person", T0).id)
    assert len(set(ids)) == 1
    assert backends[0].graph.counts("ns")["entities"] == 1


def test_message_tables_are_keyed_by_namespace_with_hnsw_and_gin(backends: list[PostgresBackend]) -> None:
    backend = backends[0]
    backend.ensure_vector_space("m8", 8)
    (m,) = backend.episodic.append_messages([_msg("hello there")])
    backend.episodic.set_message_vectors("ns", "m8", [(m.id, np.ones(8, dtype=np.float32) / np.sqrt(8))])
    with backend._tx() as conn:
        rows = conn.execute(
            "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
            "AND (tablename LIKE 'message%%' OR tablename LIKE 'msg_%%' OR tablename LIKE 'block%%' "
            "OR tablename LIKE 'graph_%%')"
        ).fetchall()
        generated = conn.execute(
            "SELECT attgenerated FROM pg_attribute WHERE attrelid = 'messages'::regclass AND attname = 'tsv'"
        ).fetchone()
    indexes = {name: definition for _, name, definition in rows}
    assert "USING hnsw (embedding vector_cosine_ops)" in indexes["msg_vectors_1_hnsw"]
    assert "USING gin (tsv)" in indexes["messages_tsv"]
    assert generated == ("s",)
    for name, definition in indexes.items():
        if "USING hnsw" in definition or "USING gin" in definition:
            continue
        assert definition.split("(", 1)[1].startswith("namespace"), (name, definition)
    assert len({t for t, _, _ in rows}) >= 12
