"""`memory bench tiers` end to end on a tiny hand-made LoCoMo file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from memory.bench.tiers import format_tiers_report, run_tiers_bench
from memory.cli.bench import bench
from memory.embedders.hashing import HashingEmbedder

TURNS = [
    ("Ann", "I adopted a grey kitten called Pixel."),
    ("Bob", "Lovely! I am training for a marathon in Oslo."),
    ("Ann", "Pixel sleeps on my violin case."),
    ("Bob", "My sister bakes sourdough bread."),
    ("Ann", "I play the violin in an orchestra."),
    ("Bob", "The marathon in Oslo is in September."),
] * 3
TINY: list[dict[str, Any]] = [
    {
        "sample_id": "tiny-1",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": s, "dia_id": f"D1:{i + 1}", "text": t} for i, (s, t) in enumerate(TURNS)],
        },
        "qa": [
            {"question": "What is the kitten called?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
            {"question": "Where is the marathon?", "answer": "Oslo", "evidence": ["D1:2"], "category": 1},
            {"question": "Who is adversarial?", "answer": "-", "evidence": ["D1:3"], "category": 5},
        ],
    }
]


def test_tiers_bench_reports_both_runs(tmp_path: Path) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(TINY), encoding="utf-8")
    report = run_tiers_bench(data, embedder=HashingEmbedder(), backend="inmemory")
    assert report["n"] == 2 and report["turns"] == 18 and report["pages"] == 9
    assert set(report["flat"]["by_category"]) == set(report["tiers"]["by_category"]) == {"1", "4"}
    for part in ("flat", "tiers"):
        assert 0.0 <= report[part]["overall"]["recall@20"] <= 1.0
    # 9 pages, STM of 7: both evidence turns are reachable, within 20 turn ids
    assert report["tiers"]["overall"]["recall@20"] == 1.0
    assert report["per_turn_ms"]["consolidation"] >= 0.0 and report["per_turn_ms"]["add_page"] > 0.0
    seg = report["segments"]
    assert seg["within_pairs"] + seg["across_pairs"] >= 1 and 0.0 <= seg["join_rate_within_sessions"] <= 1.0
    assert seg["segments"] >= 1 and seg["mtm_pages"] == 2  # 9 pages, 7 stay in STM
    ctx = report["context"]
    assert ctx["with_tiers"]["n"] == ctx["without_tiers"]["n"] == 2
    # the turns are memories of the same user and agent: the default context finds them without tiers too
    assert 0.0 < ctx["without_tiers"]["evidence_in_context"] <= ctx["with_tiers"]["evidence_in_context"] <= 1.0
    text = format_tiers_report(report)
    assert "tiers overall" in text and "join rate within sessions" in text and "with tiers" in text
    result = CliRunner().invoke(
        bench, ["tiers", "--data", str(data), "--embedder", "hashing", "--backend", "sqlite", "--json", "-q"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["pages"] == 9
