"""`memory bench disk` on a small store: bytes by component add up, windows appear with threads, RSS is read."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from click.testing import CliRunner

from memory.bench.disk import COMPONENTS, components, run_disk
from memory.cli.main import cli


def test_components_classify_tables() -> None:
    tables = {
        "items": 100, "items_ns_user": 10, "item_tags": 1, "items_key_fts_data": 7, "items_key_fts_content": 9,
        "vectors_1": 50, "vcodes_1": 5, "vcodes_1_rid": 2, "vectors_2": 40, "vcodes_2": 4, "ledger": 30,
        "sqlite_autoindex_ledger_1": 3, "ledger_item": 2, "messages": 8,
    }  # fmt: skip
    parts = components(tables, {"vectors_1": "m", "vectors_2": "m+window"})
    assert parts == {
        "rows": 111, "fts_keys": 16, "vectors": 50, "sign_bits": 7, "window_vectors": 44,
        "ledger": 35, "other": 8,
    }  # fmt: skip
    assert sum(parts.values()) == sum(tables.values())


def test_small_store_with_threads() -> None:
    report = run_disk(size=400, queries=3, batch=100, thread_size=10)
    parts = report["components_bytes"]
    assert set(parts) == set(COMPONENTS)
    assert parts["vectors"] >= 400 * 384 * 2  # 384-d float16, one per memory
    assert parts["window_vectors"] >= 400 * 384 * 2  # memories in threads get window vectors too
    assert parts["rows"] > 0 and parts["ledger"] > 0 and parts["sign_bits"] >= 400 * 48
    assert sum(parts.values()) <= report["bytes_per_memory"] * 400 + 1
    if sys.platform.startswith("linux"):
        rss = report["rss_mb"]
        assert rss["after_load"] > 0 and rss["peak_during_searches"] >= rss["after_searches"] * 0.5


def test_cli(tmp_path: Path) -> None:
    out = tmp_path / "disk.json"
    result = CliRunner().invoke(
        cli, ["bench", "disk", "--size", "150", "--queries", "2", "--no-cache", "-q", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "bytes/memory" in result.output and "RSS MB" in result.output
    assert json.loads(out.read_text())["config"]["size"] == 150


def test_several_namespaces_are_stored_and_searched(tmp_path: Path) -> None:
    out = tmp_path / "disk.json"
    result = CliRunner().invoke(
        cli,
        ["bench", "disk", "--size", "120", "--namespaces", "3", "--vector-cache-total-mb", "0", "--queries", "6",
         "--no-cache", "-q", "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "3 namespaces of 120 memories" in result.output
    report = json.loads(out.read_text())
    assert report["config"]["namespaces"] == 3 and report["config"]["vector_cache_total_mb"] == 0
    # every namespace's rows are on disk: the vectors of 360 memories (384-d float16)
    assert report["components_bytes"]["vectors"] >= 360 * 384 * 2
    assert report["bytes_per_memory"] * 360 >= sum(report["components_bytes"].values()) - 1
