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


def test_summary_compares_embedders() -> None:
    from memory.bench.serve import summary

    def run(name: str, rate: float) -> dict[str, object]:
        return {
            "embedder": name, "requests": 10, "duration_s": 1.0, "requests_per_s": rate, "clients": 2, "errors": 0,
            "p50_ms": 1.0, "p95_ms": 2.0, "p99_ms": 3.0, "writes_acknowledged": 4, "writes_verified": 4,
            "missing": 0, "operations": {}, "loadavg_before": [1.0], "loadavg_after": [1.0],
            "server_peak_rss_mb": 99.0,
        }  # fmt: skip

    text = summary({"runs": [run("minilm", 50.0), run("hashing", 100.0)], "relative": {"minilm": 1.0, "hashing": 2.0}})
    assert "== embedder minilm" in text and "== embedder hashing" in text
    assert "relative to minilm: minilm 1.0, hashing 2.0" in text and "server peak RSS 99.0 MB" in text


@pytest.mark.slow
def test_a_preloaded_namespace_is_searched_under_load() -> None:
    from memory.bench.serve import PRELOAD_NAMESPACE, summary

    report = run_load(clients=5, duration=1.5, preload=3000)
    assert report["preload"]["memories"] == 3000 and report["preload"]["namespace"] == PRELOAD_NAMESPACE
    assert report["errors"] == 0 and report["missing"] == 0, report["error_samples"]
    assert report["operations"]["recall"]["requests"] > 0
    assert 0 < report["server_rss_listening_mb"] <= report["server_peak_rss_mb"]
    assert report["preload"]["first_recall_ms"] > 0
    assert "preloaded 3000 memories into load-0" in summary(report)
    with pytest.raises(ValueError, match="preload"):
        run_load(url="http://127.0.0.1:1", key="k", preload=10)
