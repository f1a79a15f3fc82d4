"""Embedders over HTTP: any OpenAI-compatible ``/v1/embeddings`` server, and Ollama.

Both retry 429, 5xx, timeouts and connection errors with exponential backoff
(honouring a short ``Retry-After``), fail at once on other 4xx, and check every
response (JSON shape, count, numbers, one dimension) before returning it. Every
failure is an :class:`~memory.errors.EmbedderError` whose message names the
status and quotes the server. The vector length is the configured
``dimensions`` or is detected by embedding a probe text on first access.

The HTTP connection pool is opened on first use; :meth:`close` (or ``with``)
releases it, and it is released when the embedder is garbage-collected.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

import httpx
import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, field_validator

from memory.errors import EmbedderError
from memory.http_json import EXCERPT, LazyClient, checked_base_url, post_json
from memory.provider_options import parse_options

__all__ = ["OpenAIEmbedder", "OllamaEmbedder"]

#: The text embedded to learn a model's dimension.
PROBE_TEXT = "dimension probe"


class _CommonOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1, description="the model name the server knows")
    base_url: str
    timeout: float = Field(30.0, gt=0, le=3600, description="seconds per request (connect, read, write)")
    max_retries: int = Field(2, ge=0, le=10, description="retries after 429/5xx/timeouts/connection errors")
    batch_size: int = Field(128, ge=1, le=2048, description="texts per request")
    retry_backoff: float = Field(0.5, ge=0, le=60, description="first pause between retries; doubles each time")

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return checked_base_url(value)


class _HTTPEmbedder:
    """Shared plumbing: client, retries, response checks, dimension detection."""

    provider: ClassVar[str]

    def __init__(self, options: _CommonOptions, headers: dict[str, str], dimension: int | None) -> None:
        self._options = options
        self._dimension = dimension
        self._configured_dimension = dimension
        self.model_name = f"{self.provider}:{options.model}"
        self._client = LazyClient(self._options.timeout, headers)
        self._probe_lock = threading.Lock()

    # -- subclass hooks ------------------------------------------------------
    @property
    def url(self) -> str:
        """The endpoint embeddings are posted to."""
        raise NotImplementedError

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        raise NotImplementedError

    def _rows(self, body: Any) -> Any:
        """The vectors in a response body, in input order (validated by the caller)."""
        raise NotImplementedError

    # -- lifecycle -----------------------------------------------------------
    def _http(self) -> httpx.Client:
        return self._client.get()

    def close(self) -> None:
        """Close the connection pool. Idempotent; a later call opens a new one."""
        self._client.close()

    def __enter__(self) -> _HTTPEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self._options.model!r}, base_url={self._options.base_url!r})"

    # -- the contract ----------------------------------------------------------
    @property
    def dimension(self) -> int:
        """Vector length: configured, or detected once by embedding a probe text.

        Raises EmbedderError when the server cannot be reached to detect it.
        """
        if self._dimension is None:
            with self._probe_lock:
                if self._dimension is None:
                    self._embed_chunk([PROBE_TEXT])
        assert self._dimension is not None
        return self._dimension

    def embed_batch(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts`` in requests of ``batch_size``; returns float32 rows in input order.

        Raises EmbedderError after retries are exhausted, on a client error
        (4xx other than 429), or on a malformed response.
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        size = self._options.batch_size
        chunks = [self._embed_chunk(list(texts[i : i + size])) for i in range(0, len(texts), size)]
        return chunks[0] if len(chunks) == 1 else np.vstack(chunks)

    # -- internals -------------------------------------------------------------
    def _embed_chunk(self, texts: list[str]) -> npt.NDArray[np.float32]:
        body = self._post(self._payload(texts))
        return self._matrix(self._rows(body), len(texts))

    def _fail(self, message: str) -> EmbedderError:
        return EmbedderError(f"embedder {self.model_name} ({self.url}): {message}")

    def _matrix(self, rows: Any, count: int) -> npt.NDArray[np.float32]:
        if not isinstance(rows, list) or len(rows) != count:
            got = len(rows) if isinstance(rows, list) else type(rows).__name__
            raise self._fail(f"expected {count} embeddings in the response, got {got}")
        if not all(isinstance(row, list) and row for row in rows):
            raise self._fail("an embedding in the response is not a non-empty list of numbers")
        try:
            array = np.array(rows)
        except ValueError:
            lengths = sorted({len(row) for row in rows})
            raise self._fail(f"the embeddings in the response have different lengths {lengths}") from None
        if array.ndim != 2 or array.dtype.kind not in "iuf":
            raise self._fail("the response holds non-numeric values where an embedding was expected")
        if not np.all(np.isfinite(array)):
            raise self._fail("the response holds NaN or infinite values")
        dim = array.shape[1]
        if self._dimension is None:
            self._dimension = dim
        elif dim != self._dimension:
            source = "configured" if self._configured_dimension else "detected earlier"
            raise self._fail(f"the server returned {dim}-d vectors, expected {self._dimension} ({source})")
        return array.astype(np.float32)

    def _post(self, payload: dict[str, Any]) -> Any:
        """POST ``payload`` with retries (memory.http_json); returns the decoded JSON body."""
        o = self._options
        return post_json(
            self._http(), self.url, payload, max_retries=o.max_retries, timeout=o.timeout,
            retry_backoff=o.retry_backoff, fail=self._fail, hint=self._hint,
        )  # fmt: skip

    def _hint(self, status: int) -> str:
        if status in (401, 403):
            return " (check api_key)"
        if status == 404:
            return " (check base_url and model)"
        return ""


class OpenAIEmbedder(_HTTPEmbedder):
    """Embeddings from an OpenAI-compatible ``POST {base_url}/embeddings``.

    Works with OpenAI and with local servers speaking the same API (vLLM,
    llama.cpp, LM Studio, Ollama's /v1, ...).
    """

    provider = "openai"

    class Options(_CommonOptions):
        """Options of the ``openai`` embedder."""

        base_url: str = "https://api.openai.com/v1"
        api_key: str | None = Field(None, repr=False, description="default: $OPENAI_API_KEY; None for local servers")
        dimensions: int | None = Field(None, ge=1, le=65_536, description="ask for shorter vectors (sent as-is)")

    def __init__(
        self,
        *,
        model: str,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        dimensions: int | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        batch_size: int = 128,
        retry_backoff: float = 0.5,
    ) -> None:
        """Configure the client; no request is made. Raises ConfigError for bad options."""
        options = parse_options(
            self.Options,
            self.provider,
            {
                "model": model, "base_url": base_url, "api_key": api_key, "dimensions": dimensions,
                "timeout": timeout, "max_retries": max_retries, "batch_size": batch_size,
                "retry_backoff": retry_backoff,
            },
        )  # fmt: skip
        key = options.api_key if options.api_key is not None else os.environ.get("OPENAI_API_KEY") or None
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        super().__init__(options, headers, options.dimensions)
        self._model = options.model
        self._dimensions = options.dimensions

    @property
    def url(self) -> str:
        """``{base_url}/embeddings``."""
        return f"{self._options.base_url}/embeddings"

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self._model, "input": texts}
        if self._dimensions is not None:
            payload["dimensions"] = self._dimensions
        return payload

    def _rows(self, body: Any) -> Any:
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise self._fail(f"response has no 'data' list: {str(body)[:EXCERPT]}")
        if not all(isinstance(entry, dict) and "embedding" in entry for entry in data):
            raise self._fail("an entry of 'data' has no 'embedding'")
        if all("index" in entry for entry in data):
            indexes = [entry["index"] for entry in data]
            if not all(type(i) is int for i in indexes) or sorted(indexes) != list(range(len(data))):
                raise self._fail(f"response indexes {indexes[:20]} are not 0..{len(data) - 1}")
            data = sorted(data, key=lambda entry: entry["index"])
        return [entry["embedding"] for entry in data]


class OllamaEmbedder(_HTTPEmbedder):
    """Embeddings from Ollama's native ``POST {base_url}/api/embed``."""

    provider = "ollama"

    class Options(_CommonOptions):
        """Options of the ``ollama`` embedder."""

        base_url: str = "http://127.0.0.1:11434"
        timeout: float = Field(60.0, gt=0, le=3600, description="seconds per request; loading a model takes a while")
        batch_size: int = Field(64, ge=1, le=2048, description="texts per request")
        keep_alive: str | int | None = Field(None, description="how long Ollama keeps the model loaded, e.g. '10m'")

    def __init__(
        self,
        *,
        model: str,
        base_url: str = "http://127.0.0.1:11434",
        timeout: float = 60.0,
        max_retries: int = 2,
        keep_alive: str | int | None = None,
        batch_size: int = 64,
        retry_backoff: float = 0.5,
    ) -> None:
        """Configure the client; no request is made. Raises ConfigError for bad options."""
        options = parse_options(
            self.Options,
            self.provider,
            {
                "model": model, "base_url": base_url, "timeout": timeout, "max_retries": max_retries,
                "keep_alive": keep_alive, "batch_size": batch_size, "retry_backoff": retry_backoff,
            },
        )  # fmt: skip
        super().__init__(options, {}, None)
        self._model = options.model
        self._keep_alive = options.keep_alive

    @property
    def url(self) -> str:
        """``{base_url}/api/embed``."""
        return f"{self._options.base_url}/api/embed"

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self._model, "input": texts}
        if self._keep_alive is not None:
            payload["keep_alive"] = self._keep_alive
        return payload

    def _rows(self, body: Any) -> Any:
        rows = body.get("embeddings") if isinstance(body, dict) else None
        if not isinstance(rows, list):
            raise self._fail(f"response has no 'embeddings' list: {str(body)[:EXCERPT]}")
        return rows

    def _hint(self, status: int) -> str:
        if status == 404:
            return f" (is the model pulled? `ollama pull {self._model}`)"
        return super()._hint(status)
