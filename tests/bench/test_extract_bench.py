"""`memory bench extract`: the fixed scoring rule, hand-checked, and runs offline and through --llm."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from memory.bench.extract import THRESHOLD, score_session
from memory.cli.main import cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llms"))
from fake_llm_server import FakeLLMServer  # noqa: E402

TINY = [
    {
        "sample_id": "tiny-1",
        "conversation": {
            "speaker_a": "Maya", "speaker_b": "Tom",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Maya", "dia_id": "D1:1", "text": "Hi Tom! How are you?"},
                {"speaker": "Tom", "dia_id": "D1:2", "text": "Great! I moved to Porto last week."},
                {"speaker": "Maya", "dia_id": "D1:3", "text": "Wow! I started a new job at Feedzai."},
            ],
        },
        "observation": {"session_1_observation": {
            "Tom": [["Tom moved to Porto recently.", "D1:2"]],
            "Maya": [["Maya started a new job at Feedzai.", "D1:3"]],
        }},
        "qa": [],
    }
]  # fmt: skip


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY), encoding="utf-8")
    return path


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    fake = FakeLLMServer()
    yield fake
    fake.close()


def test_the_scoring_rule_hand_checked() -> None:
    refs = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    close = np.array([np.cos(0.7), np.sin(0.7)], dtype=np.float32)  # cosine 0.765 to the first reference only
    far = np.array([np.cos(1.2), np.sin(1.2)], dtype=np.float32)  # 0.362 and 0.932: supports the second
    off = np.array([-1.0, 0.0], dtype=np.float32)
    assert score_session(refs, np.stack([close])) == (1, 1)
    assert score_session(refs, np.stack([close, far, off])) == (2, 2)
    assert score_session(refs, np.zeros((0, 2), dtype=np.float32)) == (0, 0)
    assert THRESHOLD == 0.70


def test_cli_offline_raw_and_llm(tiny: Path, server: FakeLLMServer, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    args = ["bench", "extract", "--data", str(tiny), "--embedder", "hashing", "--json", "--out", str(out), "-q"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    report = json.loads(result.stdout)
    assert report == json.loads(out.read_text(encoding="utf-8"))
    overall = report["overall"]
    assert overall["references"] == 2 and overall["messages"] == 3 and overall["extracted"] == 2
    assert 0.0 <= overall["recall"] <= 1.0 and 0.0 <= overall["precision"] <= 1.0
    assert overall["ms_per_message"]["p95"] >= overall["ms_per_message"]["p50"] > 0
    assert [s["facts"] for s in report["samples"]["tiny-1"]] == [
        ["Tom moved to Porto."],
        ["Maya started a new job at Feedzai."],
    ]
    raw = json.loads(CliRunner().invoke(cli, [*args[:6], "--raw-turns", "--json", "-q"]).stdout)
    assert raw["overall"]["extracted"] == 3 and raw["config"]["extractor"] == "raw turns"
    llm = CliRunner().invoke(cli, [*args[:6], "--llm", f"{server.url}/v1", "--llm-model", "fake", "--json", "-q"])
    assert llm.exit_code == 0, (llm.stdout, llm.stderr)
    through = json.loads(llm.stdout)
    assert through["config"]["extractor"] == "openai:fake" and through["overall"]["llm_fallbacks"] == 0
    assert through["overall"]["extracted"] == 2 and len(server.requests) >= 2  # small talk is asked too
    server.default = "500"
    failing = json.loads(CliRunner().invoke(cli, [*args[:6], "--llm", f"{server.url}/v1", "--json", "-q"]).stdout)
    assert failing["overall"]["llm_fallbacks"] == 3 and failing["overall"]["extracted"] == 2  # nothing lost


def test_cli_rejects_data_without_observations(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"sample_id": "x", "conversation": {}}]), encoding="utf-8")
    result = CliRunner().invoke(cli, ["bench", "extract", "--data", str(bad), "--embedder", "hashing"])
    assert result.exit_code == 1 and "observation" in result.output


def test_facts_join_the_turns_index_key_and_both_recalls_are_measured(tmp_path: Path) -> None:
    from test_locomo_small import TINY as LOCOMO_TINY

    from memory.bench.extract import run_fact_index_ablation, with_fact_keys
    from memory.bench.locomo import load_conversations

    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(LOCOMO_TINY), encoding="utf-8")
    (conv,) = with_fact_keys(load_conversations(path))
    keys = {t.dia_id: t.content for t in conv.turns}
    assert keys["D1:1"] == "Ann: I adopted a grey kitten called Pixel.\nAnn adopted a grey kitten called Pixel."
    assert keys["D2:2"].startswith("Bob: Nice. My sister bakes sourdough bread.\n") and "Bob's sister" in keys["D2:2"]
    assert keys["D2:1"].startswith("Ann: Look at this. [shares image:")  # nothing to add: unchanged
    report = run_fact_index_ablation(path, embedder="hashing", backend="inmemory")
    assert set(report) == {"turns", "turns+facts"}
    for run in report.values():
        assert run["n"] == 3 and 0.0 <= run["overall"]["recall@10"] <= 1.0
