"""A reranker over HTTP: the ``POST {base_url}/rerank`` API that Cohere, Jina, Infinity, TEI and others serve.

Two request shapes exist in the wild, chosen by ``flavor``:

- ``cohere`` (Cohere v1/v2, Jina, Infinity, Voyage, vLLM, llama.cpp server):
  ``{"model", "query", "documents": [...], "top_n"}`` answered by
  ``{"results": [{"index", "relevance_score"}, ...]}``;
- ``tei`` (Hugging Face text-embeddings-inference):
  ``{"query", "texts": [...], "raw_scores": false}`` answered by
  ``[{"index", "score"}, ...]``.

The response is checked before it is used: every document scored exactly once,
indexes in range, finite numbers. Retries, backoff and Retry-After follow
:mod:`memory.http_json`; every failure is a :class:`~memory.errors.RerankerError`
naming the status and quoting the server.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memory.errors import RerankerError
from memory.http_json import EXCERPT, LazyClient, checked_base_url, post_json
from memory.provider_options import parse_options

__all__ = ["HTTPReranker"]


class HTTPReranker:
    """Scores documents with a remote cross-encoder behind ``POST {base_url}/rerank``."""

    provider = "http"

    class Options(BaseModel):
        """Options of the ``http`` reranker."""

        model_config = ConfigDict(extra="forbid", frozen=True)

        base_url: str = Field(
            description="e.g. https://api.cohere.com/v2, https://api.jina.ai/v1, http://127.0.0.1:8080"
        )
        model: str | None = Field(None, min_length=1, description="model name sent to the server (TEI ignores it)")
        flavor: Literal["cohere", "tei"] = Field("cohere", description="request/response shape (see module doc)")
        api_key: str | None = Field(
            None, repr=False, description="sent as a Bearer token; default: $MEMORY_RERANKER_API_KEY"
        )
        timeout: float = Field(30.0, gt=0, le=3600, description="seconds per request")
        max_retries: int = Field(2, ge=0, le=10, description="retries after 429/5xx/timeouts/connection errors")
        retry_backoff: float = Field(0.5, ge=0, le=60, description="first pause between retries; doubles each time")
        max_chars: int = Field(4000, ge=1, le=100_000, description="each document is cut to this many characters")

        @field_validator("base_url")
        @classmethod
        def _http_url(cls, value: str) -> str:
            return checked_base_url(value)

    def __init__(self, **options: Any) -> None:
        """Configure the client; no request is made. Raises ConfigError for bad options."""
        self._options = parse_options(self.Options, "http", options, kind="reranker")
        o = self._options
        key = o.api_key if o.api_key is not None else os.environ.get("MEMORY_RERANKER_API_KEY") or None
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.model_name = f"rerank:{o.model or o.flavor}"
        self._client = LazyClient(o.timeout, headers)

    @property
    def url(self) -> str:
        """``{base_url}/rerank``."""
        return f"{self._options.base_url}/rerank"

    def close(self) -> None:
        """Close the connection pool. Idempotent."""
        self._client.close()

    def __repr__(self) -> str:
        o = self._options
        return f"HTTPReranker(base_url={o.base_url!r}, model={o.model!r}, flavor={o.flavor!r})"

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """Score ``documents`` against ``query`` in one request; one float per document, input order.

        Raises RerankerError when the server fails past the retries or answers
        with a malformed body.
        """
        if not documents:
            return []
        o = self._options
        texts = [doc[: o.max_chars] for doc in documents]
        body = post_json(
            self._client.get(), self.url, self._payload(query, texts), max_retries=o.max_retries,
            timeout=o.timeout, retry_backoff=o.retry_backoff, fail=self._fail, hint=self._hint,
        )  # fmt: skip
        return self._scores(body, len(texts))

    def _payload(self, query: str, texts: list[str]) -> dict[str, Any]:
        o = self._options
        if o.flavor == "tei":
            return {"query": query, "texts": texts, "raw_scores": False, "truncate": True}
        payload: dict[str, Any] = {"query": query, "documents": texts, "top_n": len(texts)}
        if o.model:
            payload["model"] = o.model
        return payload

    def _scores(self, body: Any, count: int) -> list[float]:
        rows = body.get("results", body.get("data")) if isinstance(body, dict) else body
        if not isinstance(rows, list):
            raise self._fail(f"response has no 'results' list: {str(body)[:EXCERPT]}")
        scores: list[float | None] = [None] * count
        for row in rows:
            index = row.get("index") if isinstance(row, dict) else None
            score = row.get("relevance_score", row.get("score")) if isinstance(row, dict) else None
            if type(index) is not int or not 0 <= index < count:
                raise self._fail(f"result {str(row)[:100]} has no index in 0..{count - 1}")
            if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
                raise self._fail(f"result for document {index} has no finite relevance_score/score")
            if scores[index] is not None:
                raise self._fail(f"document {index} is scored twice")
            scores[index] = float(score)
        missing = [i for i, s in enumerate(scores) if s is None]
        if missing:
            raise self._fail(f"{len(missing)} of {count} documents were not scored (first: {missing[0]})")
        return [s for s in scores if s is not None]

    def _fail(self, message: str) -> RerankerError:
        return RerankerError(f"reranker {self.model_name} ({self.url}): {message}")

    def _hint(self, status: int) -> str:
        if status in (401, 403):
            return " (check api_key or $MEMORY_RERANKER_API_KEY)"
        if status in (404, 422):
            return " (check base_url, model and flavor)"
        return ""
