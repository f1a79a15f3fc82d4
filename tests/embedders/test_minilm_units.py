"""Pure helpers of the MiniLM embedder (no model needed)."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory.embedders.minilm import length_groups, mean_pool
from memory.errors import ConfigError


def test_length_groups_cover_every_index_once_shortest_first() -> None:
    lengths = [30, 5, 31, 6, 5, 100, 7, 33]
    groups = length_groups(lengths, max_size=3, slack=0.1)
    flat = [i for group in groups for i in group]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths)
    assert all(len(group) <= 3 for group in groups)
    for group in groups:
        shortest = min(lengths[i] for i in group)
        assert max(lengths[i] for i in group) <= shortest * 1.1 + 1


def test_length_groups_edge_cases() -> None:
    assert length_groups([]) == []
    assert length_groups([4]) == [[0]]
    assert length_groups([8] * 40, max_size=16) == [list(range(16)), list(range(16, 32)), list(range(32, 40))]


def test_mean_pool_ignores_padding_and_normalises() -> None:
    hidden = np.array([[[1.0, 0.0], [3.0, 0.0], [100.0, 100.0]]], dtype=np.float32)
    mask = np.array([[1, 1, 0]], dtype=np.int64)
    np.testing.assert_allclose(mean_pool(hidden, mask), [[1.0, 0.0]])


def test_bad_runtime_is_a_config_error() -> None:
    from memory.embedders.minilm import MiniLMEmbedder

    with pytest.raises(ConfigError, match="runtime"):
        MiniLMEmbedder(runtime="tf")


# -- the numpy runtime's pieces ---------------------------------------------------


def test_erf_matches_math_erf() -> None:
    import math

    from memory.embedders.bert_numpy import erf

    grid = np.linspace(-10.0, 10.0, 200_001)
    expected = np.array([math.erf(x) for x in grid])
    assert np.abs(erf(grid) - expected).max() < 1e-6
    assert erf(grid).dtype == np.float64
    as_float32 = erf(grid.astype(np.float32))
    assert as_float32.dtype == np.float32
    assert np.abs(as_float32.astype(np.float64) - expected).max() < 1e-6
    assert erf([0, 1]).tolist() == pytest.approx([0.0, math.erf(1.0)], abs=1e-7)


def test_gelu_is_the_erf_form_in_place() -> None:
    import math

    from memory.embedders.bert_numpy import gelu_

    values = np.random.default_rng(1).normal(scale=4.0, size=(70, 1000)).astype(np.float32)  # > one chunk
    expected = np.array([0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0))) for x in values.ravel().tolist()])
    out = gelu_(values)
    assert out is values
    np.testing.assert_allclose(out.ravel(), expected, rtol=1e-5, atol=1e-6)


def _write_safetensors(path: Path, tensors: dict[str, np.ndarray], header: bytes | None = None) -> Path:
    entries: dict[str, object] = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    codes = {np.dtype("float32"): "F32", np.dtype("int64"): "I64"}
    for name, array in tensors.items():
        data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
        span = [offset, offset + len(data)]
        entries[name] = {"dtype": codes[array.dtype], "shape": list(array.shape), "data_offsets": span}
        blobs.append(data)
        offset += len(data)
    raw = header if header is not None else json.dumps(entries).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))
    return path


def test_safetensors_round_trip(tmp_path: Path) -> None:
    from memory.embedders.bert_numpy import read_safetensors

    weights: dict[str, np.ndarray] = {
        "a.weight": np.arange(12, dtype=np.float32).reshape(3, 4),
        "ids": np.array([[1, 2, 3]], dtype=np.int64),
    }
    tensors = read_safetensors(_write_safetensors(tmp_path / "m.safetensors", weights))
    assert set(tensors) == {"a.weight", "ids"}
    np.testing.assert_array_equal(tensors["a.weight"], weights["a.weight"])
    np.testing.assert_array_equal(tensors["ids"], weights["ids"])
    assert not tensors["a.weight"].flags.writeable  # a read-only memory map


@pytest.mark.parametrize(
    "damage",
    ["empty", "short", "truncated", "garbage", "huge header", "not json", "not an object", "bad dtype", "bad offsets"],
)
def test_safetensors_rejects_bad_files(tmp_path: Path, damage: str) -> None:
    from memory.embedders.bert_numpy import read_safetensors

    path = _write_safetensors(tmp_path / "m.safetensors", {"w": np.ones((64, 64), dtype=np.float32)})
    good = path.read_bytes()
    header_len = struct.unpack("<Q", good[:8])[0]
    header = json.loads(good[8 : 8 + header_len])
    if damage == "empty":
        path.write_bytes(b"")
    elif damage == "short":
        path.write_bytes(good[:5])
    elif damage == "truncated":
        path.write_bytes(good[: len(good) // 2])
    elif damage == "garbage":
        path.write_bytes(np.random.default_rng(0).bytes(4096))
    elif damage == "huge header":
        path.write_bytes(struct.pack("<Q", 2**40) + good[8:])
    elif damage == "not json":
        _write_safetensors(path, {"w": np.ones((64, 64), dtype=np.float32)}, header=b"{not json" + b" " * 20)
    elif damage == "not an object":
        _write_safetensors(path, {"w": np.ones((64, 64), dtype=np.float32)}, header=b"[1, 2, 3]")
    elif damage == "bad dtype":
        header["w"]["dtype"] = "Q7"
        _write_safetensors(path, {"w": np.ones((64, 64), dtype=np.float32)}, header=json.dumps(header).encode())
    else:
        header["w"]["data_offsets"] = [0, 100]
        _write_safetensors(path, {"w": np.ones((64, 64), dtype=np.float32)}, header=json.dumps(header).encode())
    with pytest.raises(ConfigError):
        read_safetensors(path)
    with pytest.raises(ConfigError):
        read_safetensors(tmp_path / "missing.safetensors")


def _tiny_bert(tmp_path: Path) -> tuple[Path, dict[str, np.ndarray]]:
    """A random 2-layer BERT (hidden 8, 2 heads) saved like the real model folder."""
    hidden, inner, layers, vocab, positions = 8, 12, 2, 30, 16
    rng = np.random.default_rng(7)
    weights: dict[str, np.ndarray] = {
        "embeddings.word_embeddings.weight": rng.normal(size=(vocab, hidden)),
        "embeddings.position_embeddings.weight": rng.normal(size=(positions, hidden)),
        "embeddings.token_type_embeddings.weight": rng.normal(size=(2, hidden)),
        "embeddings.LayerNorm.weight": rng.normal(1.0, 0.1, size=hidden),
        "embeddings.LayerNorm.bias": rng.normal(size=hidden),
    }
    for i in range(layers):
        pre = f"encoder.layer.{i}"
        for name, shape in [
            ("attention.self.query", (hidden, hidden)), ("attention.self.key", (hidden, hidden)),
            ("attention.self.value", (hidden, hidden)), ("attention.output.dense", (hidden, hidden)),
            ("intermediate.dense", (inner, hidden)), ("output.dense", (hidden, inner)),
        ]:  # fmt: skip
            weights[f"{pre}.{name}.weight"] = rng.normal(scale=0.5, size=shape)
            weights[f"{pre}.{name}.bias"] = rng.normal(scale=0.1, size=shape[0])
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            weights[f"{pre}.{name}.weight"] = rng.normal(1.0, 0.1, size=hidden)
            weights[f"{pre}.{name}.bias"] = rng.normal(scale=0.1, size=hidden)
    weights = {name: array.astype(np.float32) for name, array in weights.items()}
    _write_safetensors(tmp_path / "model.safetensors", weights)
    config = {
        "hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": 2, "intermediate_size": inner,
        "max_position_embeddings": positions, "layer_norm_eps": 1e-12, "hidden_act": "gelu",
        "position_embedding_type": "absolute", "vocab_size": vocab,
    }  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return tmp_path, weights


def _reference_bert(weights: dict[str, np.ndarray], ids: list[int], heads: int = 2) -> np.ndarray:
    """BertModel's last hidden state for one text, token-major and in float64: the textbook formulas."""
    import math

    w = {name: array.astype(np.float64) for name, array in weights.items()}

    def norm(x: np.ndarray, name: str) -> np.ndarray:
        mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        normed: np.ndarray = (x - mean) / np.sqrt(var + 1e-12) * w[f"{name}.weight"] + w[f"{name}.bias"]
        return normed

    def dense(x: np.ndarray, name: str) -> np.ndarray:
        return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    n = len(ids)
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
    x = norm(x + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
    layer = 0
    while f"encoder.layer.{layer}.output.dense.weight" in w:
        pre = f"encoder.layer.{layer}"
        q, k, v = (dense(x, f"{pre}.attention.self.{p}") for p in ("query", "key", "value"))
        size = x.shape[1] // heads
        context = np.zeros_like(x)
        for h in range(heads):
            cols = slice(h * size, (h + 1) * size)
            scores = q[:, cols] @ k[:, cols].T / math.sqrt(size)
            probs = np.exp(scores - scores.max(-1, keepdims=True))
            context[:, cols] = probs / probs.sum(-1, keepdims=True) @ v[:, cols]
        x = norm(dense(context, f"{pre}.attention.output.dense") + x, f"{pre}.attention.output.LayerNorm")
        up = dense(x, f"{pre}.intermediate.dense")
        up = 0.5 * up * (1.0 + np.vectorize(math.erf)(up / math.sqrt(2.0)))
        x = norm(dense(up, f"{pre}.output.dense") + x, f"{pre}.output.LayerNorm")
        layer += 1
    return x


@pytest.mark.parametrize("threads", [1, 2])
def test_packed_encoder_matches_the_textbook_bert(tmp_path: Path, threads: int) -> None:
    from memory.embedders.bert_numpy import BertEncoder

    folder, weights = _tiny_bert(tmp_path)
    encoder = BertEncoder.from_dir(folder, threads=threads)
    texts = [[1, 5, 9, 2], [1, 2], [1, 7, 7, 7, 3, 2], [1, 4, 2], [1, 29, 28, 27, 26, 25, 24, 2], [1, 3, 3, 2]]
    lengths = [len(t) for t in texts]
    ids = np.array([i for t in texts for i in t], dtype=np.int64)
    expected = np.vstack([_reference_bert(weights, t) for t in texts])
    # One group per text; padded groups of mixed lengths (gathered); one group of equal lengths (contiguous).
    for groups in (None, [[0, 2, 4], [1, 3, 5]], [[0, 5], [1], [2], [3], [4]]):
        for split in (True, False):  # split=False: the whole pass on this thread, the same result
            hidden = encoder.forward_packed(ids, lengths, groups, split=split)
            assert hidden.shape == (8, len(ids)) and hidden.dtype == np.float32
            np.testing.assert_allclose(hidden.T, expected, atol=2e-4)
    with pytest.raises(ValueError):
        encoder.forward_packed(ids, lengths, [[0, 1]])
    with pytest.raises(ValueError):
        encoder.forward_packed(np.array([1, 99], dtype=np.int64), [2])
    with pytest.raises(ValueError):
        encoder.forward_packed(np.ones(17, dtype=np.int64), [17])  # longer than the 16 positions


def test_an_unsplit_pass_stays_on_the_calling_thread(tmp_path: Path) -> None:
    from memory.embedders.bert_numpy import SPLIT_TOKENS, BertEncoder

    folder, _ = _tiny_bert(tmp_path)
    encoder = BertEncoder.from_dir(folder, threads=2)
    assert encoder._pool is not None
    submitted: list[object] = []
    real_submit = encoder._pool.submit

    def counting_submit(*args: Any, **kwargs: Any) -> Any:
        submitted.append(args[0])
        return real_submit(*args, **kwargs)

    encoder._pool.submit = counting_submit  # type: ignore[method-assign]
    lengths = [10] * (SPLIT_TOKENS // 10 + 1)  # texts within the 16 positions, SPLIT_TOKENS or more in all
    ids = np.array([1, 5, 9, 7, 7, 3, 4, 6, 8, 2] * len(lengths), dtype=np.int64)
    encoder.forward_packed(ids, lengths, split=False)
    assert submitted == []
    encoder.forward_packed(ids, lengths)
    assert len(submitted) == 2 * 2  # two joins in each of the two layers, one helper each


def test_encoder_rejects_incomplete_models(tmp_path: Path) -> None:
    from memory.embedders.bert_numpy import BertConfig, BertEncoder, read_safetensors

    folder, weights = _tiny_bert(tmp_path)
    config = BertConfig.from_file(folder / "config.json")
    tensors = read_safetensors(folder / "model.safetensors")
    with pytest.raises(ConfigError, match="missing"):
        BertEncoder(config, {k: v for k, v in tensors.items() if "layer.1.output.dense" not in k})
    with pytest.raises(ConfigError, match="shape"):
        BertEncoder(config, {**tensors, "embeddings.LayerNorm.bias": np.zeros(3, dtype=np.float32)})
    (folder / "config.json").write_text('{"hidden_size": 8}', encoding="utf-8")
    with pytest.raises(ConfigError):
        BertConfig.from_file(folder / "config.json")


def test_packed_mean_pool_and_token_passes() -> None:
    from memory.embedders.minilm import _token_passes, packed_mean_pool

    hidden = np.array([[1.0, 3.0, 0.0, 5.0], [0.0, 0.0, 2.0, 0.0]], dtype=np.float32)  # (dim, tokens)
    np.testing.assert_allclose(packed_mean_pool(hidden, [2, 1, 1]), [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    passes = _token_passes([5, 1, 9, 3, 4], budget=8)
    assert sorted(i for p in passes for i in p) == list(range(5))
    assert passes == [[1, 3, 4], [0], [2]]  # shortest first; a text longer than the budget runs alone


def test_blas_cap_is_shared_and_restored_once() -> None:
    from memory.blas import SingleThreadBlas, single_thread_blas

    assert single_thread_blas() is single_thread_blas()
    cap = SingleThreadBlas()
    calls: list[str] = []

    def fake_cap() -> Callable[[], None]:
        calls.append("cap")
        return lambda: calls.append("restore")

    cap._cap = fake_cap
    with cap:
        with cap:  # nested or concurrent passes share the cap
            assert calls == ["cap"]
        assert calls == ["cap"]
    assert calls == ["cap", "restore"]
    with cap:
        pass
    assert calls == ["cap", "restore", "cap", "restore"]


def test_blas_cap_sets_one_openblas_thread() -> None:
    from memory.blas import single_thread_blas

    cap = single_thread_blas()
    if not cap.available:
        pytest.skip("no way to cap BLAS threads here (no threadpoolctl, no OpenBLAS found)")
    assert cap._cap is not None
    restore = cap._cap()
    restore()  # capping and restoring must not raise
    a = np.random.default_rng(0).random((300, 300))
    with cap:
        np.testing.assert_allclose(a @ np.eye(300), a)


def test_blas_cap_holds_in_any_thread() -> None:
    """threadpoolctl lets only the first thread that set a limit change OpenBLAS's; the cap must not depend on it."""
    import threading

    threadpoolctl = pytest.importorskip("threadpoolctl")
    from memory.blas import SingleThreadBlas

    blas = threadpoolctl.ThreadpoolController().select(internal_api="openblas")
    if not blas.lib_controllers:
        pytest.skip("numpy's BLAS is not OpenBLAS here")
    before = blas.info()[0]["num_threads"]
    if before < 2:
        pytest.skip("OpenBLAS runs one thread here: nothing to cap")
    blas.limit(limits=1).restore_original_limits()  # this (main) thread now holds threadpoolctl's control
    cap = SingleThreadBlas()
    seen: list[int] = []

    def a_pass() -> None:
        with cap:
            seen.append(blas.info()[0]["num_threads"])
        seen.append(blas.info()[0]["num_threads"])

    worker = threading.Thread(target=a_pass)
    worker.start()
    worker.join(10)
    assert seen == [1, before]
