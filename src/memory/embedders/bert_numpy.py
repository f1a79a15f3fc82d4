"""An exact fp32 forward pass of a BERT encoder (all-MiniLM-L6-v2) in plain numpy.

The weights are the model's own fp32 tensors from its ``model.safetensors``
(parsed and memory-mapped here), the sizes from its ``config.json``. The
computation is Hugging Face's ``BertModel`` in eval mode (absolute positions,
token type 0, erf GELU, post-LayerNorm), in float32 like PyTorch on CPU, so the
vectors agree with the PyTorch reference to float32 rounding (docs/embedders.md).
"""

from __future__ import annotations

import json
import math
import mmap
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memory.errors import ConfigError

__all__ = ["BertConfig", "BertEncoder", "read_safetensors", "erf", "gelu_"]

F32 = npt.NDArray[np.float32]

#: safetensors dtype names -> little-endian numpy dtypes (those a BERT checkpoint may hold).
_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1", "U8": "u1"}
#: A header larger than this is not a model's (safetensors itself caps it at 100 MB).
_MAX_HEADER = 100_000_000


def read_safetensors(path: Path) -> dict[str, npt.NDArray[Any]]:
    """The tensors of a safetensors file, as read-only arrays over a memory map.

    Raises ConfigError when the file cannot be read or is not a well-formed
    safetensors file (truncated, garbage header, unknown dtype, bad offsets).
    """
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, 2)
            if size < 8:
                raise ConfigError(f"{path} is not a safetensors file: only {size} bytes")
            buffer = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read model weights {path}: {exc}") from exc
    raw = np.frombuffer(buffer, dtype=np.uint8)
    header_len = int(raw[:8].view("<u8")[0])
    if header_len < 2 or header_len > min(_MAX_HEADER, size - 8):
        raise ConfigError(f"{path} is not a safetensors file: header length {header_len} for {size} bytes")
    try:
        header = json.loads(raw[8 : 8 + header_len].tobytes().decode("utf-8"))
        if not isinstance(header, dict):
            raise ValueError("not a JSON object")
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise ConfigError(f"{path} is not a safetensors file: bad header ({exc})") from exc
    data = raw[8 + header_len :]
    tensors: dict[str, npt.NDArray[Any]] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = np.dtype(_DTYPES[entry["dtype"]])
            shape = tuple(int(n) for n in entry["shape"])
            begin, end = (int(n) for n in entry["data_offsets"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{path}: bad safetensors entry for {name!r}: {entry!r}") from exc
        if any(n < 0 for n in shape) or not 0 <= begin <= end <= data.size:
            raise ConfigError(f"{path}: tensor {name!r} lies outside the file (truncated?)")
        if end - begin != math.prod(shape) * dtype.itemsize:
            raise ConfigError(f"{path}: tensor {name!r} has {end - begin} bytes for shape {list(shape)}")
        tensors[name] = data[begin:end].view(dtype).reshape(shape)
    return tensors


# erf(x) ~= x * P(x^2) / Q(x^2) on [-4, 4] and +-1 beyond: the rational approximation
# of Eigen / XLA (absolute error < 1e-7 in float64, float32 rounding in float32).
_ERF_P = (
    -2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
    -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02,
)  # fmt: skip
_ERF_Q = (
    -1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
    -1.42647390514189e-02,
)  # fmt: skip
#: Elements per GELU chunk: the temporaries stay in cache (4x faster than whole arrays).
_CHUNK = 32768


def _erf_into(z: npt.NDArray[Any], p: npt.NDArray[Any], q: npt.NDArray[Any]) -> None:
    """``p = erf(z)`` for the argument in ``z`` (clobbered), using ``q`` as scratch."""
    np.clip(z, -4.0, 4.0, out=z)
    np.multiply(z, z, out=q)  # q = z^2 while p is built
    p.fill(_ERF_P[0])
    for c in _ERF_P[1:]:
        p *= q
        p += c
    p *= z
    np.copyto(z, q)  # z = z^2 from here on
    q.fill(_ERF_Q[0])
    for c in _ERF_Q[1:]:
        q *= z
        q += c
    p /= q


def erf(x: npt.ArrayLike) -> npt.NDArray[Any]:
    """The error function, elementwise, in the input's float precision (float64 for others)."""
    z = np.array(x, dtype=np.float32 if np.asarray(x).dtype == np.float32 else np.float64)
    p, q = np.empty_like(z), np.empty_like(z)
    _erf_into(z, p, q)
    return p


def gelu_(h: F32) -> F32:
    """GELU in place: ``h * (1 + erf(h / sqrt(2))) / 2`` (PyTorch's exact GELU); returns ``h``."""
    flat = h.reshape(-1)  # a view: ``h`` is C-contiguous
    z, p, q = (np.empty(min(_CHUNK, flat.size), dtype=h.dtype) for _ in range(3))
    for start in range(0, flat.size, _CHUNK):
        x, m = flat[start : start + _CHUNK], min(_CHUNK, flat.size - start)
        np.multiply(x, 1.0 / math.sqrt(2.0), out=z[:m])
        _erf_into(z[:m], p[:m], q[:m])
        p[:m] += 1.0
        p[:m] *= 0.5
        x *= p[:m]
    return h


#: Passes of fewer tokens run every part of a layer on the calling thread: for a query, the
#: hand-offs to the pool cost more than they save (docs/embedders.md).
SPLIT_TOKENS = 24
#: OpenBLAS multiplies without packing when rows * inner * tokens <= 1e6 (its "small matrix"
#: kernels); for the few tokens of a query, weights cut in row blocks that small are ~30 % faster.
_SMALL_GEMM = 1_000_000


def _matmul(weight: F32, x: F32) -> F32:
    """``weight @ x``, in row blocks when ``x`` has few columns (see ``_SMALL_GEMM``)."""
    rows, inner = weight.shape
    tokens = x.shape[1]
    if tokens > 16 or rows * inner * tokens <= _SMALL_GEMM:
        return weight @ x
    step = max(16, _SMALL_GEMM // (inner * tokens) // 16 * 16)
    out = np.empty((rows, tokens), dtype=np.float32)
    for start in range(0, rows, step):
        np.matmul(weight[start : start + step], x, out=out[start : start + step])
    return out


@dataclass(frozen=True)
class BertConfig:
    """The sizes of a BERT encoder, from its ``config.json``."""

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int
    layer_norm_eps: float

    @classmethod
    def from_file(cls, path: Path) -> BertConfig:
        """Read ``config.json``; raises ConfigError if it is unreadable or not a plain BERT."""
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            sizes = {name: int(raw[name]) for name in cls.__dataclass_fields__ if name != "layer_norm_eps"}
            config = cls(**sizes, layer_norm_eps=float(raw.get("layer_norm_eps", 1e-12)))
            kinds = (raw.get("hidden_act", "gelu"), raw.get("position_embedding_type", "absolute"))
        except (OSError, KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"cannot read the model configuration {path}: {exc}") from exc
        if kinds != ("gelu", "absolute"):
            raise ConfigError(f"{path}: only BERT with erf GELU and absolute positions is supported")
        if config.hidden_size % config.num_attention_heads:
            raise ConfigError(f"{path}: hidden_size is not a multiple of num_attention_heads")
        return config


@dataclass(frozen=True)
class _Part:
    """One thread's share of a layer: some heads and some feed-forward neurons, (out, in) weights."""

    heads: int
    qkv_w: F32  # (3 * heads * head_dim, hidden): the heads' query, key and value rows stacked
    qkv_b: F32  # biases are columns: (rows, 1)
    out_w: F32  # (hidden, heads * head_dim): the matching columns of the output projection
    up_w: F32
    up_b: F32
    down_w: F32


def _share(w: dict[str, F32], b: dict[str, F32], heads: range, neurons: slice, head_dim: int) -> _Part:
    """The part of a layer (weights ``w``, biases ``b``) with these heads and feed-forward neurons."""
    rows = slice(heads.start * head_dim, heads.stop * head_dim)
    qkv = [f"attention.self.{p}" for p in ("query", "key", "value")]
    return _Part(
        heads=len(heads),
        qkv_w=np.concatenate([w[name][rows] for name in qkv]),
        qkv_b=np.concatenate([b[name][rows] for name in qkv]).reshape(-1, 1),
        out_w=np.ascontiguousarray(w["attention.output.dense"][:, rows]),
        up_w=w["intermediate.dense"][neurons],
        up_b=b["intermediate.dense"][neurons].reshape(-1, 1),
        down_w=np.ascontiguousarray(w["output.dense"][:, neurons]),
    )


@dataclass(frozen=True)
class _Layer:
    whole: _Part  # every head and neuron: for passes run on one thread
    parts: list[_Part]  # one share per thread
    out_b: F32
    ln1: tuple[F32, F32]
    down_b: F32
    ln2: tuple[F32, F32]


def _layer_norm_(x: F32, weight: F32, bias: F32, eps: float) -> F32:
    """LayerNorm over the features (axis 0) of a (features, tokens) array, in place; returns ``x``."""
    inverse = np.float32(1.0 / x.shape[0])
    x -= np.add.reduce(x, axis=0) * inverse
    x /= np.sqrt(np.add.reduce(np.square(x), axis=0) * inverse + np.float32(eps))
    x *= weight
    x += bias
    return x


class BertEncoder:
    """A BERT encoder's forward pass over fp32 weights; safe to share between threads.

    Activations are feature-major, (features, tokens): ``weight @ activations``
    is much faster in OpenBLAS than ``activations @ weight.T`` for a query's few
    tokens. With ``threads`` > 1, passes of many tokens split each layer over
    threads by attention heads and feed-forward neurons (two joins per layer);
    run BLAS single-threaded then.
    """

    def __init__(self, config: BertConfig, tensors: Mapping[str, npt.NDArray[Any]], threads: int = 1) -> None:
        """Take the weights from ``tensors`` (Hugging Face names); raises ConfigError if any is missing or misshapen."""
        self.config = config
        hidden, inner, heads = config.hidden_size, config.intermediate_size, config.num_attention_heads
        head_dim = hidden // heads

        def get(name: str, *shape: int) -> F32:  # float32, a view where possible; -1 matches any size
            if name not in tensors:
                raise ConfigError(f"model tensor {name!r} is missing from the weights")
            found = tensors[name].shape
            if len(found) != len(shape) or any(s not in (-1, n) for s, n in zip(shape, found, strict=True)):
                raise ConfigError(f"model tensor {name!r} has shape {found}, expected {shape}")
            return np.asarray(tensors[name], dtype=np.float32)

        def column(name: str, size: int = hidden) -> F32:
            return get(name, size).reshape(size, 1)

        def norm(name: str) -> tuple[F32, F32]:
            return column(f"{name}.LayerNorm.weight"), column(f"{name}.LayerNorm.bias")

        self._words = get("embeddings.word_embeddings.weight", -1, hidden)  # memory-mapped
        # Position and token-type-0 embeddings are added to every text: fold them together.
        positions = get("embeddings.position_embeddings.weight", config.max_position_embeddings, hidden)
        self._positions = positions + get("embeddings.token_type_embeddings.weight", -1, hidden)[0]
        self._emb_ln = norm("embeddings")
        self._scale = np.float32(1.0 / math.sqrt(head_dim))
        self.threads = max(1, min(threads, heads))
        head_split = np.array_split(np.arange(heads), self.threads)
        neuron_split = np.array_split(np.arange(inner), self.threads)
        self._layers: list[_Layer] = []
        shapes = {"attention.self.query": hidden, "attention.self.key": hidden, "attention.self.value": hidden,
                  "attention.output.dense": hidden, "intermediate.dense": inner, "output.dense": hidden}  # fmt: skip
        for i in range(config.num_hidden_layers):
            pre = f"encoder.layer.{i}"
            w = {name: get(f"{pre}.{name}.weight", rows, inner if name == "output.dense" else hidden)
                 for name, rows in shapes.items()}  # fmt: skip
            b = {name: get(f"{pre}.{name}.bias", rows) for name, rows in shapes.items()}
            whole = _share(w, b, range(heads), slice(0, inner), head_dim)
            parts = [
                _share(w, b, range(int(share[0]), int(share[-1]) + 1), slice(int(cut[0]), int(cut[-1]) + 1), head_dim)
                for share, cut in zip(head_split, neuron_split, strict=True)
            ] if self.threads > 1 else [whole]  # fmt: skip
            out_b, down_b = column(f"{pre}.attention.output.dense.bias"), column(f"{pre}.output.dense.bias")
            ln1, ln2 = norm(f"{pre}.attention.output"), norm(f"{pre}.output")
            self._layers.append(_Layer(whole, parts, out_b, ln1, down_b, ln2))
        self._pool = ThreadPoolExecutor(self.threads - 1, "bert-numpy") if self.threads > 1 else None

    @classmethod
    def from_dir(cls, model_dir: Path, threads: int = 1) -> BertEncoder:
        """Load ``config.json`` and ``model.safetensors`` from a model folder; raises ConfigError."""
        tensors = read_safetensors(model_dir / "model.safetensors")
        return cls(BertConfig.from_file(model_dir / "config.json"), tensors, threads)

    def forward_packed(
        self,
        ids: npt.NDArray[np.int64],
        lengths: Sequence[int],
        groups: Sequence[Sequence[int]] | None = None,
        *,
        split: bool = True,
    ) -> F32:
        """The last hidden state of texts given back to back, feature-major: (hidden, sum(lengths)).

        ``ids`` holds every text's token ids, one text after the other, ``lengths``
        their counts; dense layers run on all tokens at once, unpadded. Attention
        runs per group of texts (``groups``: indexes into ``lengths``, each text
        once; default: one per text), padded to the group's longest. ``split=False``
        runs the whole pass on the calling thread, however many tokens it has
        (the same result). Raises ValueError.
        """
        cfg = self.config
        total = int(sum(lengths))
        if ids.shape != (total,) or any(n < 1 for n in lengths):
            raise ValueError(f"{ids.shape} token ids for lengths summing to {total} (each must be >= 1)")
        if lengths and max(lengths) > cfg.max_position_embeddings:
            raise ValueError(f"{max(lengths)} tokens; the model takes at most {cfg.max_position_embeddings}")
        if total and (ids.min() < 0 or ids.max() >= self._words.shape[0]):
            raise ValueError("token id outside the vocabulary")
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        x = self._words[ids]
        x += self._positions[np.arange(total) - np.repeat(starts, lengths)]
        x = _layer_norm_(np.ascontiguousarray(x.T), *self._emb_ln, cfg.layer_norm_eps)
        groups = [[i] for i in range(len(lengths))] if groups is None else groups
        if sorted(i for group in groups for i in group) != list(range(len(lengths))):
            raise ValueError("groups must hold every text exactly once")
        plans = [_AttentionPlan(starts[list(group)], [lengths[i] for i in group]) for group in groups]
        join = self._join if split else self._whole
        for layer in self._layers:
            attended = join(self._attention, layer, x, plans)
            attended += layer.out_b
            attended += x
            x = _layer_norm_(attended, *layer.ln1, cfg.layer_norm_eps)
            out = join(self._feed_forward, layer, x, plans)
            out += layer.down_b
            out += x
            x = _layer_norm_(out, *layer.ln2, cfg.layer_norm_eps)
        return x

    def _whole(self, work: Any, layer: _Layer, x: F32, plans: list[_AttentionPlan]) -> F32:
        """``work`` over the whole layer on this thread."""
        return work(layer.whole, x, plans)  # type: ignore[no-any-return]

    def _join(self, work: Any, layer: _Layer, x: F32, plans: list[_AttentionPlan]) -> F32:
        """Sum of ``work(part, x, plans)`` over the layer's parts, the first on this thread, the rest on the pool."""
        if self._pool is None or len(layer.parts) == 1 or x.shape[1] < SPLIT_TOKENS:
            return self._whole(work, layer, x, plans)
        futures = [self._pool.submit(work, part, x, plans) for part in layer.parts[1:]]
        total: F32 = work(layer.parts[0], x, plans)
        for future in futures:
            total += future.result()
        return total

    def _attention(self, part: _Part, x: F32, plans: list[_AttentionPlan]) -> F32:
        """This part's heads: projections, attention, and their share of the output projection."""
        qkv = _matmul(part.qkv_w, x)
        qkv += part.qkv_b
        width = part.qkv_w.shape[0] // 3
        qkv[:width] *= self._scale
        context = np.empty((width, x.shape[1]), dtype=np.float32)
        for plan in plans:
            plan.attend(qkv, context, part.heads)
        return _matmul(part.out_w, context)

    def _feed_forward(self, part: _Part, x: F32, plans: list[_AttentionPlan]) -> F32:
        """This part's neurons of the feed-forward block (before the output bias)."""
        inner = _matmul(part.up_w, x)
        inner += part.up_b
        return _matmul(part.down_w, gelu_(inner))


class _AttentionPlan:
    """Self-attention of a group of packed texts, padded to the longest of them."""

    def __init__(self, starts: npt.NDArray[np.int64], lengths: list[int]) -> None:
        self.width = max(lengths)
        self.count = len(lengths)
        self.start = int(starts[0])
        # Texts of one length that lie back to back (the usual case) need no gather.
        self.contiguous = len(set(lengths)) == 1 and bool(np.all(np.diff(starts) == self.width))
        if not self.contiguous:
            sizes = np.asarray(lengths)[:, None]
            offsets = np.arange(self.width)[None, :]
            self.valid = (offsets < sizes).reshape(-1)
            # Padding slots repeat a real token: masked as keys, dropped as queries.
            self.index = (starts[:, None] + np.minimum(offsets, sizes - 1)).reshape(-1)
            self.targets = self.index[self.valid]
            # The most negative float32 on padded keys, as transformers does: exp() makes them 0.
            bias = np.where(offsets < sizes, 0.0, np.finfo(np.float32).min).astype(np.float32)
            self.key_bias = bias[:, None, None, :]

    def attend(self, qkv: F32, context: F32, heads: int) -> None:
        """Write the attention output of this group's tokens into the columns of ``context``."""
        width = context.shape[0]
        n, size = self.count, self.width
        stop = self.start + n * size
        cols = qkv[:, self.start : stop] if self.contiguous else qkv[:, self.index]
        # (3 * width, n * size) -> (3, heads, head_dim, n, size)
        q, k, v = cols.reshape(3, heads, width // heads, n, size)
        scores = np.ascontiguousarray(q.transpose(2, 0, 3, 1)) @ np.ascontiguousarray(k.transpose(2, 0, 1, 3))
        if not self.contiguous:
            scores += self.key_bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        # (n, heads, size, head_dim) -> (heads, head_dim, n, size) -> (width, n * size)
        out = (scores @ np.ascontiguousarray(v.transpose(2, 0, 3, 1))).transpose(1, 3, 0, 2).reshape(width, -1)
        if self.contiguous:
            context[:, self.start : stop] = out
        else:
            context[:, self.targets] = out[:, self.valid]
