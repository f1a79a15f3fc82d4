"""The benchmarks on PostgreSQL: LoCoMo recall equals SQLite's; the speed run measures a scratch database."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.bench.locomo import run_locomo
from memory.bench.metrics import METRIC_KEYS
from memory.bench.speed import run_speed
from memory.embedders.hashing import HashingEmbedder
from pg_support import postgres_dsn

LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "bench" / "locomo_dev.json"


@pytest.mark.slow
@pytest.mark.skipif(not LOCOMO.exists(), reason="the LoCoMo dev split is not beside the repository")
def test_locomo_recall_on_postgres_matches_sqlite() -> None:
    dsn = postgres_dsn()
    embedder = HashingEmbedder()
    reports = {
        # the default preset: context windows, time words and window vectors on both backends
        backend: run_locomo(LOCOMO, embedder=embedder, backend=backend, limit_conversations=1, dsn=dsn).to_json()
        for backend in ("sqlite", "postgres")
    }
    sqlite, postgres = reports["sqlite"]["overall"], reports["postgres"]["overall"]
    assert reports["postgres"]["n"] == reports["sqlite"]["n"] > 50
    # Each engine stems its own way (Porter in FTS5, PostgreSQL's English config); feedback expands from each
    # engine's own top hits, so on one conversation a question or two may move at rank 20 (over all five dev
    # conversations the two give the same R@5 and R@10, README).
    for key in METRIC_KEYS:
        assert abs(sqlite[key] - postgres[key]) <= 0.015, (key, sqlite[key], postgres[key])


def test_speed_runs_on_a_scratch_postgres_database(tmp_path: Path) -> None:
    import psycopg

    dsn = postgres_dsn()
    report = run_speed(
        sizes=[300],
        backend="postgres",
        peer="none",
        queries=5,
        sample=50,
        batch=100,
        embedder=HashingEmbedder(),
        dsn=dsn,
        index_after_load=True,
    )
    row = report["sizes"][0]["memory"]
    assert row["add_bulk"]["items"] == 250 and row["add_bulk"]["index_build_seconds"] is not None
    assert row["add_bulk"]["settle_seconds"] is not None  # VACUUM (ANALYZE) and CHECKPOINT ran
    assert row["recall"]["search_p95_ms"] <= row["recall"]["p95_ms"]
    assert row["disk_mb"] > 0
    with psycopg.connect(dsn) as conn:  # the scratch database is gone
        left = conn.execute("SELECT count(*) FROM pg_database WHERE datname LIKE 'memory_bench_speed%'").fetchone()
        assert left == (0,)
