"""The speed benchmark on tiny sizes, its text generator and its embedding cache."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from click.testing import CliRunner

from memory.bench.corpus import (
    GENERATOR_VERSION,
    cached_vectors,
    corpus_cache_key,
    corpus_queries,
    generate_texts,
    load_corpus,
)
from memory.bench.peers import peer_available
from memory.bench.speed import TimedEmbedder
from memory.cli.bench import bench
from memory.embedders.hashing import HashingEmbedder

LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "bench" / "locomo_dev.json"
BACKENDS = ["inmemory"] + (["sqlite"] if importlib.util.find_spec("memory.backends.sqlite") else [])
PEERS = ["none"] + [name for name in ("chroma", "lancedb") if peer_available(name)]

ADD_KEYS = {"items", "seconds", "items_per_s", "embed_seconds", "store_seconds", "overhead_pct"}
LATENCY_KEYS = {"p50_ms", "p95_ms", "embed_p50_ms", "embed_share"}


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting the texts it embeds."""

    def __init__(self) -> None:
        super().__init__(dim=64)
        self.embedded = 0

    def embed_batch(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.embedded += len(texts)
        return super().embed_batch(texts)


def test_generated_texts_are_distinct_deterministic_and_prefix_stable() -> None:
    corpus = load_corpus(None)
    texts = generate_texts(corpus, 500, seed=3)
    assert len(set(texts)) == 500
    assert texts == generate_texts(corpus, 500, seed=3)
    assert generate_texts(corpus, 120, seed=3) == texts[:120]
    assert generate_texts(corpus, 50, seed=4) != texts[:50]
    assert all(": " in text for text in texts)
    assert len(corpus_queries(corpus, 30)) == 30


def test_generator_output_is_pinned() -> None:
    # Cached embeddings are keyed by GENERATOR_VERSION: if this fails, the
    # generator changed — bump GENERATOR_VERSION and update the digest.
    texts = generate_texts(load_corpus(None), 50, seed=0)
    assert GENERATOR_VERSION == 1
    assert hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest()[:16] == "72901216da31be3b"


def test_cache_key_names_the_source_its_contents_generator_and_seed() -> None:
    corpus = load_corpus(None)
    key = corpus_cache_key(corpus, seed=3)
    assert key == f"{corpus.source}-{corpus.fingerprint}-g{GENERATOR_VERSION}-s3"  # caches written so far stay valid
    assert corpus_cache_key(corpus, seed=0) != key


@pytest.mark.skipif(not LOCOMO.is_file(), reason="shared/bench/locomo_dev.json not present")
def test_locomo_corpus_has_sentences_and_questions() -> None:
    corpus = load_corpus(LOCOMO)
    assert len(corpus.sentences) > 1000
    assert len(corpus.questions) > 500
    assert corpus.source == "locomo:locomo_dev.json"


def test_cache_reuses_matching_prefix_and_ignores_other_texts(tmp_path: Path) -> None:
    corpus = load_corpus(None)
    texts = generate_texts(corpus, 300)
    embedder = CountingEmbedder()
    first = cached_vectors(embedder, texts[:200], tmp_path, "k")
    assert embedder.embedded == 200
    again = cached_vectors(embedder, texts[:100], tmp_path, "k")  # a shorter prefix: all cached
    assert embedder.embedded == 200
    np.testing.assert_array_equal(again, first[:100])
    longer = cached_vectors(embedder, texts, tmp_path, "k")  # only the 100 missing are embedded
    assert embedder.embedded == 300
    np.testing.assert_allclose(longer[:200], first, atol=1e-6)
    other = ["something else entirely"] + texts[1:50]
    cached_vectors(embedder, other, tmp_path, "k")  # first text differs: nothing reused
    assert embedder.embedded == 350


def test_timed_embedder_counts_seconds() -> None:
    timed = TimedEmbedder(HashingEmbedder())
    assert timed.embed_batch(["a b c"]).shape == (1, 384)
    assert timed.seconds > 0
    assert timed.reset() > 0
    assert timed.seconds == 0


def _check(report: dict[str, Any], sizes: list[int], peer: str) -> None:
    assert set(report) == {"machine", "config", "prepare_seconds", "sizes"}
    assert {"cores", "cpu", "python"} <= set(report["machine"])
    assert [row["size"] for row in report["sizes"]] == sizes
    for row in report["sizes"]:
        memory = row["memory"]
        assert ADD_KEYS <= set(memory["add_live"])
        assert {"items", "seconds", "items_per_s"} <= set(memory["embed_bare"])
        assert {"items", "seconds", "items_per_s", "ms_per_item"} <= set(memory["add_bulk"])
        assert memory["add_bulk"]["settle_seconds"] >= 0  # every backend settles (memory:// is SQLite too)
        assert LATENCY_KEYS <= set(memory["recall"]) and LATENCY_KEYS <= set(memory["recall_vector_only"])
        assert LATENCY_KEYS <= set(memory["recall_after_write"])  # a write before each recall
        assert memory["recall"]["p95_ms"] >= memory["recall"]["p50_ms"] > 0
        assert 0 <= memory["recall"]["embed_share"] <= 1
        # Small stores are searched exactly: the vector-only results are the exact neighbours (float16 roundings aside).
        assert memory["recall_vector_only"]["exact_agreement"] >= 0.95
        if peer == "none":
            assert "peer" not in row
        else:
            assert ADD_KEYS <= set(row["peer"]["add_live"])
            assert LATENCY_KEYS <= set(row["peer"]["query"])
            assert 0.5 <= row["peer"]["query"]["exact_agreement"] <= 1
            assert row["peer"]["name"].startswith({"chroma": "chromadb", "lancedb": "lancedb"}[peer])
    first = report["sizes"][0]["memory"]
    assert first["add_live"]["items"] + first["add_bulk"]["items"] == sizes[0]


@pytest.mark.parametrize("peer", PEERS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_cli_speed_tiny(tmp_path: Path, backend: str, peer: str) -> None:
    out = tmp_path / "speed.json"
    args = ["speed", "--sizes", "300,450", "--backend", backend, "--peer", peer, "--queries", "10"]
    args += ["--sample", "100", "--batch", "64", "--embedder", "hashing", "--cache-dir", str(tmp_path / "cache")]
    args += ["--json", "--out", str(out), "--quiet"]
    if LOCOMO.is_file():
        args += ["--data", str(LOCOMO)]
    result = CliRunner().invoke(bench, args)
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    report = json.loads(result.stdout)
    _check(report, [300, 450], peer)
    assert report["config"]["backend"] == backend
    assert json.loads(out.read_text(encoding="utf-8")) == report


def test_cli_speed_table_with_builtin_sentences(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ../shared/bench here: the built-in sentences are used
    args = ["speed", "--sizes", "200", "--backend", "inmemory", "--peer", "none", "--queries", "5"]
    args += ["--embedder", "hashing", "--cache-dir", str(tmp_path / "cache")]
    result = CliRunner().invoke(bench, args)
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    assert "bare embedder" in result.stdout and "memory (balanced)" in result.stdout
    assert "generating 200 texts from builtin" in result.stderr
    assert "corpus: the built-in sentences" in result.stderr and "pass --data FILE" in result.stderr


def test_cli_speed_errors_are_one_line(tmp_path: Path) -> None:
    bad_sizes = CliRunner().invoke(bench, ["speed", "--sizes", "ten"])
    assert bad_sizes.exit_code == 2
    bad_preset = CliRunner().invoke(
        bench, ["speed", "--sizes", "50", "--embedder", "hashing", "--preset", "nope", "--peer", "none", "--quiet"]
    )
    assert bad_preset.exit_code == 1
    assert "unknown retrieval preset" in bad_preset.stderr


def test_agreement_counts_results_as_near_as_the_exact_kth() -> None:
    from memory.bench.speed import _agreement, _Stage

    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((200, 16)).astype(np.float32)
    model = HashingEmbedder(dim=16)
    queries = ["alpha beta", "gamma delta"]
    stage = _Stage([f"t{n}" for n in range(200)], vectors, queries, batch=10, k=10)
    exact = []
    for query in model.embed_batch(queries):
        scores = (vectors @ query) / np.linalg.norm(vectors, axis=1)
        exact.append([int(n) for n in np.argsort(-scores)[:10]])
    assert _agreement(stage, model, vectors, exact) == 1.0
    worst = [
        [int(n) for n in np.argsort((vectors @ q) / np.linalg.norm(vectors, axis=1))[:10]]
        for q in model.embed_batch(queries)
    ]
    assert _agreement(stage, model, vectors, worst) == 0.0
    one_off = [found[:9] + [-1] for found in exact]  # a result that is no corpus text, and one short
    assert _agreement(stage, model, vectors, one_off) == 0.9
    assert _agreement(stage, model, vectors, [found[:5] for found in exact]) == 0.5
