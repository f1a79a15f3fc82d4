"""The LongMemEval benchmark end to end on a tiny hand-made file (both interfaces, baselines)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memory.bench.longmemeval import load_questions, measure_ingest, run_longmemeval
from memory.cli.main import cli
from memory.embedders import create_embedder

LME = Path(__file__).resolve().parents[3] / "shared" / "bench" / "longmemeval_dev.json"


def _question(qid: str, kind: str, question: str, needle: str) -> dict[str, Any]:
    filler = [
        {"role": "user", "content": "Can you suggest a pasta recipe?"},
        {"role": "assistant", "content": "Try spaghetti aglio e olio with garlic and chili. " * 40},
    ]
    answer = [
        {"role": "user", "content": f"By the way, my cat is called {needle}.", "has_answer": True},
        {"role": "assistant", "content": "How lovely!"},
    ]
    return {
        "question_id": qid,
        "question_type": kind,
        "question": question,
        "answer": needle,
        "question_date": "2023/06/01 (Thu) 10:00",
        "answer_session_ids": ["s-answer"],
        "haystack_session_ids": ["s-filler", "s-answer", "s-other"],
        "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/10 (Wed) 18:30", "2023/05/20 (Sat) 12:00"],
        "haystack_sessions": [filler, answer, [{"role": "user", "content": "x" * 40_000 + " long turn"}]],
    }


@pytest.fixture
def tiny_file(tmp_path: Path) -> Path:
    data = [
        _question("q1", "single-session-user", "What is my cat called, Zorblax?", "Zorblax"),
        _question("q2", "temporal-reasoning", "Which pet did I mention, Quibble?", "Quibble"),
    ]
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("backend", ["inmemory", "sqlite"])
def test_tiny_run_hand_checked(tiny_file: Path, backend: str) -> None:
    report = run_longmemeval(
        tiny_file,
        embedder=create_embedder("hashing"),
        presets=("lexical", "balanced"),
        baseline=True,
        backend=backend,
    )
    names = [r["name"] for r in report["results"]]
    assert names == [
        "lexical / memories", "balanced / memories", "lexical / messages", "balanced / messages",
        "BM25", "dense", "RRF(k=60)",
    ]  # fmt: skip
    by_name = {r["name"]: r for r in report["results"]}
    # the unique cat name is found first by words: the answer turn and its session at rank 1
    for name in ("lexical / memories", "lexical / messages", "BM25"):
        overall = by_name[name]["overall"]
        assert overall["turn R@1"] == 1.0 and overall["session R@1"] == 1.0, name
    assert set(by_name["balanced / memories"]["by_type"]) == {"single-session-user", "temporal-reasoning"}
    assert report["ingest"]["memories"]["turns"] == 2 * 5  # the 40,000-character turn is valid input
    assert by_name["balanced / memories"]["latency_ms"]["p50"] > 0


def test_cli_table_and_json(tiny_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    args = ["longmemeval", "--data", str(tiny_file), "--embedder", "hashing", "--backend", "inmemory"]
    result = CliRunner().invoke(cli, ["bench", *args, "--baseline", "--out", str(out)])
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    assert "balanced / memories" in result.stdout and "RRF(k=60)" in result.stdout
    assert "turn R@5 / R@10 per type" in result.stdout
    assert json.loads(out.read_text(encoding="utf-8"))["questions"] == 2
    bad = CliRunner().invoke(cli, ["bench", *args, "--preset", "nope"])
    assert bad.exit_code == 1 and "unknown retrieval preset 'nope'" in bad.stderr


def test_cli_reranks_recall_with_the_local_cross_encoder(tiny_file: Path, tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    out = tmp_path / "report.json"
    args = ["longmemeval", "--data", str(tiny_file), "--embedder", "hashing", "--backend", "inmemory"]
    args += ["--interface", "memories", "--reranker", "local", "--rerank-weight", "0.5", "--out", str(out)]
    result = CliRunner().invoke(cli, ["bench", *args])
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    assert "reranker=local (top 20, weight 0.5)" in result.stdout
    assert json.loads(out.read_text(encoding="utf-8"))["reranker"]["provider"] == "local"


def test_not_longmemeval_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('[{"question_id": "x"}]', encoding="utf-8")
    result = CliRunner().invoke(cli, ["bench", "longmemeval", "--data", str(path), "--embedder", "hashing"])
    assert result.exit_code == 1 and "does not look like LongMemEval data" in result.stderr


def test_measure_ingest_reports_the_cost_split(tiny_file: Path) -> None:
    report = measure_ingest(tiny_file, embedder=create_embedder("hashing"))
    assert report["turns"] == 10 and report["turns_per_cpu_second"] > 0
    assert {"validate", "store rows + vectors"} <= set(report["first_question_split_seconds"])


@pytest.mark.skipif(not LME.is_file(), reason="shared/bench/longmemeval_dev.json not present")
def test_the_dev_file_loads() -> None:
    questions = load_questions(LME)
    assert len(questions) == 60
    assert all(q.answer_turns for q in questions)
    assert max(len(t.content) for q in questions for s in q.sessions for t in s.turns) > 32_000


def test_ablation_runs_each_step_on_its_store(tiny_file: Path, tmp_path: Path) -> None:
    from memory.bench.ablation import STEPS
    from memory.bench.lme_ablation import LME_STEPS, format_lme_ablation, run_lme_ablation

    steps = [s for s in LME_STEPS if s.name.startswith(("plain:", "+ fact keys", "lexical channel only"))]
    assert len(steps) == 3 and all(s.threads == "session" for s in LME_STEPS) and len(LME_STEPS) < len(STEPS)
    rows = run_lme_ablation(tiny_file, embedder=create_embedder("hashing"), steps=steps)
    assert [r["step"] for r in rows] == [s.name for s in steps] + ["baseline RRF(k=60) of BM25 + dense"]
    assert rows[1]["fact_keys"] == "all" and all(r["n"] == 2 for r in rows)
    lexical = rows[2]["overall"]
    assert lexical["turn R@1"] == 1.0  # the unique cat name, by its words
    assert "questions: 2" in format_lme_ablation(rows) and format_lme_ablation(rows, markdown=True).startswith("| step")
    out = tmp_path / "ablation.json"
    args = ["bench", "longmemeval", "--data", str(tiny_file), "--embedder", "hashing", "--no-cache"]
    result = CliRunner().invoke(cli, [*args, "--ablation", "--limit-questions", "1", "--out", str(out), "-q"])
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    assert "+ window vectors = balanced (default)" in result.stdout
    assert json.loads(out.read_text(encoding="utf-8"))[0]["n"] == 1


def test_cli_ingest_only(tiny_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "ingest.json"
    args = ["bench", "longmemeval", "--data", str(tiny_file), "--embedder", "hashing", "--no-cache", "--ingest"]
    result = CliRunner().invoke(cli, [*args, "--out", str(out)])
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    report = json.loads(result.stdout)
    assert report["turns"] == 10 and report["questions"] == 2 and report["turns_per_cpu_second"] > 0
    assert report["machine"]["cores"] >= 1 and "load_avg_end" in report["machine"]
    assert json.loads(out.read_text(encoding="utf-8")) == report  # --out writes what it prints
