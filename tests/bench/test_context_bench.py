"""`memory bench context` on a tiny hand-made LoCoMo file and one real conversation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_locomo_small import LOCOMO, TINY

from memory.bench.context import run_context_bench
from memory.cli.main import cli
from memory.embedders.hashing import HashingEmbedder


def test_tiny_file_through_the_cli(tmp_path: Path) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(TINY), encoding="utf-8")
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        cli, ["bench", "context", "--data", str(data), "--embedder", "hashing", "--budget", "400", "--json",
              "--out", str(out), "--quiet"],
    )  # fmt: skip
    assert result.exit_code == 0, (result.stdout, result.stderr)
    report = json.loads(result.stdout)
    assert report == json.loads(out.read_text(encoding="utf-8"))
    assert report["n"] == 3 and report["conversations"] == 1
    assert report["evidence_in_context"] == 1.0  # four turns fit the budget: every evidence turn is in the prompt
    assert 0 < report["tokens_used_mean"] <= 400
    assert report["assembly_ms"]["p95"] >= report["assembly_ms"]["p50"] > 0
    assert report["recall_ms"]["p50"] > 0


@pytest.mark.slow
@pytest.mark.skipif(not LOCOMO.is_file(), reason="the LoCoMo dev split is not next to the checkout")
def test_one_real_conversation_stays_in_budget() -> None:
    result = run_context_bench(LOCOMO, embedder=HashingEmbedder(), backend="inmemory", budget=1000,
                               recall_limit=60, limit_conversations=1)  # fmt: skip
    report = result.to_json()
    assert max(result.tokens_used) <= 1000
    assert report["tokens_ratio"] < 0.1  # far smaller than sending the whole conversation
    assert report["sections_cut_mean"] > 0 and 0 < report["evidence_in_context"] < 1
