"""The MiniLM runtime comparison on a tiny LoCoMo-shaped file."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from memory.bench.embedders import load_texts, main, run_embedder_bench
from memory.embedders import local_model_available
from memory.errors import ConfigError


def _locomo(path: Path) -> Path:
    conversation = {
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a puppy last week."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! What breed is it?"},
            ],
            "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "A beagle called Max."}],
        },
        "qa": [{"question": "What pet did Ann adopt?", "answer": "a puppy", "evidence": ["D1:1"], "category": 4}],
    }
    path.write_text(json.dumps([conversation]), encoding="utf-8")
    return path


def test_load_texts(tmp_path: Path) -> None:
    turns, questions = load_texts(_locomo(tmp_path / "l.json"), 2, 5)
    assert turns == ["Ann: I adopted a puppy last week.", "Ben: Lovely! What breed is it?"]
    assert questions == ["What pet did Ann adopt?"]


def test_unreadable_data_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        load_texts(tmp_path / "missing.json", 1, 1)
    (tmp_path / "bad.json").write_text('{"not": "locomo"}', encoding="utf-8")
    with pytest.raises(ConfigError):
        load_texts(tmp_path / "bad.json", 1, 1)
    assert main(["--data", str(tmp_path / "missing.json")]) == 2


@pytest.mark.model
@pytest.mark.skipif(not local_model_available(), reason="local MiniLM model not installed")
def test_report_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _locomo(tmp_path / "l.json")
    report = run_embedder_bench(data, sentences=3, queries=1, batch_size=2, repeats=1, threads=1)
    onnx = report["runtimes"]["onnx"]
    assert set(onnx) == {"load_s", "batch_sentences_per_s", "query_p50_ms", "query_p95_ms"}
    assert report["sentences"] == 3 and report["machine"]["cores"] >= 1
    if importlib.util.find_spec("torch") is None:
        assert "pip install torch" in report["runtimes"]["torch"]["skipped"]
        assert "agreement" not in report
    else:
        assert all(agree["cosine_mean"] > 0.99 for agree in report["agreement"].values())
    assert main(["--data", str(data), "--sentences", "3", "--queries", "1", "--repeats", "1", "--runtime", "onnx"]) == 0
    assert "onnx" in capsys.readouterr().out
