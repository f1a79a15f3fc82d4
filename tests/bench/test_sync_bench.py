"""`memory bench sync` on both SQL backends (tiny sizes, hashing embedder): it runs, syncs everything, cleans up."""

from __future__ import annotations

import pytest

from memory.bench.sync import format_sync_bench, run_sync_bench
from memory.errors import InvalidInputError
from pg_support import postgres_dsn


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_sync_bench_runs_and_embeds_everything(backend: str) -> None:
    import psycopg

    dsn = postgres_dsn() if backend == "postgres" else None
    before = set()
    if dsn:
        with psycopg.connect(dsn) as conn:
            before = {r[0] for r in conn.execute("SELECT datname FROM pg_database")}
    report = run_sync_bench(messages=40, embedder="hashing", batch_size=8, rounds=2, backend=backend, dsn=dsn)
    assert report["backend"] == backend
    assert report["append"]["embedded_by_worker"] == 40  # the worker process drained everything
    assert report["sync"]["batches"] == 6 and report["sync"]["sync_per_second"] > 0  # 2 rounds of 20, batch 8
    assert backend in format_sync_bench(report)
    if dsn:  # the scratch databases are gone
        with psycopg.connect(dsn) as conn:
            assert {r[0] for r in conn.execute("SELECT datname FROM pg_database")} == before


def test_sync_bench_refuses_an_unknown_backend() -> None:
    with pytest.raises(InvalidInputError, match="unknown backend"):
        run_sync_bench(messages=40, embedder="hashing", backend="oracle")
