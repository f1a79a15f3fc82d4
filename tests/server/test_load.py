"""A short load run of `memory serve`: the harness reports latencies and verifies every acknowledged write."""

from __future__ import annotations

import pytest

from memory.bench.serve import percentile, run_load


def test_percentile() -> None:
    assert percentile([], 50) == 0.0
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile(list(map(float, range(1, 101))), 95) == 95.0


@pytest.mark.slow
def test_short_load_run_loses_nothing() -> None:
    report = run_load(clients=8, duration=2.0)
    assert report["requests"] > 20 and report["errors"] == 0, report["error_samples"]
    assert report["writes_acknowledged"] > 0 and report["missing"] == 0
    assert report["writes_verified"] == report["writes_acknowledged"]
    assert set(report["operations"]) <= {"remember", "recall", "get", "list"}
    assert 0 < report["p50_ms"] <= report["p95_ms"] <= report["p99_ms"]
