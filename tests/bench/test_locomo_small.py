"""The LoCoMo benchmark end to end: a tiny hand-made file, and one real conversation."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memory.bench.locomo import load_conversations, run_locomo, turn_content
from memory.bench.metrics import METRIC_KEYS
from memory.cli.bench import bench

LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "bench" / "locomo_dev.json"
BACKENDS = ["inmemory"] + (["sqlite"] if importlib.util.find_spec("memory.backends.sqlite") else [])

TINY: list[dict[str, Any]] = [
    {
        "sample_id": "tiny-1",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a grey kitten called Pixel."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Lovely! I am training for a marathon in Oslo."},
            ],
            "session_2_date_time": "9:00 am on 1 June, 2023",
            "session_2": [
                {
                    "speaker": "Ann",
                    "dia_id": "D2:1",
                    "text": "Look at this.",
                    "img_url": ["http://example.invalid/x.jpg"],
                    "blip_caption": "a photo of a violin on a table",
                },
                {"speaker": "Bob", "dia_id": "D2:2", "text": "Nice. My sister bakes sourdough bread."},
            ],
        },
        "qa": [
            {"question": "What is the name of the kitten?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
            {"question": "Where is the marathon?", "answer": "Oslo", "evidence": ["D1:2", "D"], "category": 1},
            {
                "question": "Which instrument was in the photo, a violin?",
                "answer": "violin",
                "evidence": ["D2:1; D9:9"],
                "category": 2,
            },
            {"question": "Unanswerable?", "adversarial_answer": "x", "evidence": ["D1:1"], "category": 5},
            {"question": "No evidence?", "answer": "x", "evidence": [], "category": 3},
        ],
    }
]


@pytest.fixture
def tiny_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY), encoding="utf-8")
    return path


def test_turn_content_adds_the_image_caption() -> None:
    assert turn_content({"speaker": "Ann", "text": "Hi"}) == "Ann: Hi"
    captioned = {"speaker": "Ann", "text": "Look", "blip_caption": "a dog"}
    assert turn_content(captioned) == "Ann: Look [shares image: a dog]"


def test_load_conversations_parses_turns_and_evidence(tiny_file: Path) -> None:
    (conv,) = load_conversations(tiny_file)
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D2:1", "D2:2"]
    assert conv.turns[2].session == 2
    assert conv.turns[2].session_date == "9:00 am on 1 June, 2023"
    assert conv.turns[2].content.endswith("[shares image: a photo of a violin on a table]")
    assert conv.questions[1].evidence == ("D1:2",)
    assert conv.questions[1].dropped == ("D",)
    assert conv.questions[2].evidence == ("D2:1",)
    assert conv.questions[2].dropped == ("D9:9",)


@pytest.mark.parametrize("backend", BACKENDS)
def test_tiny_run_hand_checked(tiny_file: Path, backend: str) -> None:
    result = run_locomo(tiny_file, embedder="hashing", backend=backend)
    report = result.to_json()
    # categories 1, 2 and 4 have evidence; 3 has none and 5 is skipped
    assert report["n"] == 3
    assert sorted(report["by_category"]) == ["1", "2", "4"]
    assert report["dropped_evidence"] == 2
    assert sorted(piece for _, piece in result.dropped) == ["D", "D9:9"]
    for row in result.rows:
        # 4 turns, limit 20: every turn comes back, so recall@5 is 1 for every question
        assert sorted(row["ranked"]) == ["D1:1", "D1:2", "D2:1", "D2:2"]
        assert row["recall@5"] == 1.0
    kitten = next(row for row in result.rows if row["category"] == 4)
    assert kitten["ranked"][0] == "D1:1"
    assert kitten["mrr"] == 1.0
    assert report["config"] == {
        "embedder": "hashing-ngram-35-d384",
        "backend": backend,
        "preset": "balanced",
        "rrf_k": 5.0,
    }


def _check_report(report: dict[str, Any]) -> None:
    assert set(report) - {"dated_questions"} == {
        "n",
        "overall",
        "by_category",
        "dropped_evidence",
        "latency_ms",
        "config",
    }
    if "dated_questions" in report:  # a full run (not an ablation step) reports questions naming a date apart
        assert set(report["dated_questions"]) == {*METRIC_KEYS, "n"}
    assert set(report["overall"]) == set(METRIC_KEYS)
    assert report["n"] > 0
    assert set(report["config"]) == {"embedder", "backend", "preset", "rrf_k"}
    assert report["latency_ms"]["p95"] >= report["latency_ms"]["p50"] > 0
    assert sum(cat["n"] for cat in report["by_category"].values()) == report["n"]
    for metrics in [report["overall"], *report["by_category"].values()]:
        for key in METRIC_KEYS:
            assert 0.0 <= metrics[key] <= 1.0
        assert metrics["recall@1"] <= metrics["recall@5"] <= metrics["recall@10"] <= metrics["recall@20"]


@pytest.mark.skipif(not LOCOMO.is_file(), reason="shared/bench/locomo_dev.json not present")
@pytest.mark.parametrize("backend", BACKENDS)
def test_cli_one_real_conversation_json(tmp_path: Path, backend: str) -> None:
    out = tmp_path / "report.json"
    args = ["locomo", "--data", str(LOCOMO), "--embedder", "hashing", "--backend", backend]
    args += ["--limit-conversations", "1", "--json", "--out", str(out)]
    result = CliRunner().invoke(bench, args)
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    report = json.loads(result.stdout)
    _check_report(report)
    assert report["config"]["backend"] == backend
    assert report["by_category"].keys() <= {"1", "2", "3", "4"}
    assert json.loads(out.read_text(encoding="utf-8")) == report


def test_cli_table_and_errors(tiny_file: Path) -> None:
    args = ["locomo", "--data", str(tiny_file), "--embedder", "hashing", "--backend", "inmemory"]
    result = CliRunner().invoke(bench, args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "overall" in result.stdout and "dropped evidence ids: 2" in result.stdout
    bad = CliRunner().invoke(bench, ["locomo", "--data", str(tiny_file), "--embedder", "hashing", "--preset", "nope"])
    assert bad.exit_code == 1
    assert "unknown retrieval preset 'nope'" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_cli_rejects_a_file_that_is_not_locomo(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"not": "a list"}', encoding="utf-8")
    result = CliRunner().invoke(bench, ["locomo", "--data", str(path), "--embedder", "hashing"])
    assert result.exit_code == 1
    assert "LoCoMo" in result.stderr


def test_ablation_runs_each_step_off_shared_stores(tiny_file: Path) -> None:
    from memory.bench.ablation import STEPS, ablation_json, format_ablation, run_ablation

    steps = [STEPS[0], STEPS[3], STEPS[5]]
    notes: list[str] = []
    rows = ablation_json(run_ablation(tiny_file, embedder="hashing", backend="inmemory", steps=steps,
                                      progress=notes.append))  # fmt: skip
    assert [row["step"] for row in rows] == [s.name for s in steps]
    assert len(notes) == 3  # three stores: windows 0, 2 and 1
    for row in rows:
        _check_report({k: row[k] for k in ("n", "overall", "by_category", "dropped_evidence", "latency_ms")}
                      | {"config": {"embedder": 1, "backend": 1, "preset": 1, "rrf_k": 1}})  # fmt: skip
        assert row["n"] == 3
    table = format_ablation(rows, markdown=True)
    assert table.count("\n") == 1 + len(rows) and steps[1].name in table


def test_ablation_without_rows_take_one_idea_from_the_default() -> None:
    """Each "default without X" row is the default preset with X alone taken away, on the default's store."""
    from memory.bench.ablation import STEPS
    from memory.retrieval.config import PRESETS

    default = PRESETS["balanced"].model_dump()
    changed = {
        s.name: {k for k, v in s.config.model_dump().items() if v != default[k]}
        for s in STEPS
        if s.name.startswith("default without")
    }
    assert changed == {
        "default without feedback (where the turns are short)": {"channels", "weights"},
        "default without speaker-aware ranking": {"speaker_penalty"},
        "default without named speakers": {"named_speaker_penalty"},
        "default without amounts": {"quantity_penalty"},
    }
    without_feedback = next(s for s in STEPS if s.name.startswith("default without feedback"))
    assert "feedback" in PRESETS["balanced"].channels and "feedback" not in without_feedback.config.channels
    assert all(s.context_window == 2 and s.fact_keys == "extracted" for s in STEPS if s.name in changed)


def test_cli_ablation_table(tiny_file: Path) -> None:
    args = ["locomo", "--data", str(tiny_file), "--embedder", "hashing", "--backend", "inmemory", "--ablation"]
    result = CliRunner().invoke(bench, args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "window vectors = balanced (default)" in result.stdout
    assert "R@5/R@10/NDCG" in result.stdout


def test_cli_reranks_with_the_local_cross_encoder(tiny_file: Path) -> None:
    pytest.importorskip("onnxruntime")
    args = ["locomo", "--data", str(tiny_file), "--embedder", "hashing", "--backend", "inmemory"]
    result = CliRunner().invoke(bench, [*args, "--reranker", "local", "--rerank-top-n", "5", "--json"])
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    report = json.loads(result.stdout)
    assert report["config"]["reranker"] == {"provider": "local", "options": {}, "top_n": 5, "weight": 0.4}
    table = CliRunner().invoke(bench, [*args, "--reranker", "local"])
    assert "reranker=local (top 20, weight 0.4)" in table.stdout
    bad = CliRunner().invoke(bench, [*args, "--reranker", "nope"])
    assert bad.exit_code == 1 and "unknown reranker 'nope'" in bad.stderr
