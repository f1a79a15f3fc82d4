"""LLMs over HTTP: any OpenAI-compatible ``/v1/chat/completions`` server, and Ollama's ``/api/chat``.

Both ask the server for JSON matching the task's schema (OpenAI:
``response_format={"type": "json_schema", ...}``, which OpenAI, vLLM,
llama.cpp's server and Ollama's /v1 understand; Ollama: ``format=<schema>``),
then validate the answer into the pydantic model. Transport failures (429 with
Retry-After, 5xx, timeouts, connection errors) are retried with backoff;
invalid answers (bad JSON, schema errors) are retried by sending the answer
back with what was wrong (``output_retries``). Every failure is an
:class:`~memory.errors.LLMError` (or :class:`~memory.errors.LLMOutputError`)
naming the model, the endpoint and the cause. Token usage is summed over all
attempts.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from memory.errors import ConfigError, LLMError
from memory.http_json import LazyClient, post_json
from memory.llms.base import ChatMessage, ChatRequest, ChatResult, OutputT, Usage
from memory.llms.repair import answer_with_repair

__all__ = ["OpenAILLM", "OllamaLLM"]


class _CommonOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1, description="the model name the server knows")
    base_url: str
    timeout: float = Field(60.0, gt=0, le=3600, description="seconds per request")
    max_retries: int = Field(2, ge=0, le=10, description="retries after 429/5xx/timeouts/connection errors")
    output_retries: int = Field(2, ge=0, le=5, description="retries after an answer that is not valid JSON/schema")
    retry_backoff: float = Field(0.5, ge=0, le=60, description="first pause between retries; doubles each time")
    temperature: float = Field(0.0, ge=0, le=2)
    max_tokens: int = Field(1024, ge=1, le=65_536, description="most tokens to generate per answer")

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {value!r}")
        return value


def _parse(options_model: type[BaseModel], provider: str, values: dict[str, Any]) -> Any:
    try:
        return options_model(**values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'options'}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"bad options for LLM {provider!r}: {problems}") from exc


class _HTTPLLM:
    """Shared plumbing: client, transport retries, output validation and repair retries."""

    provider: ClassVar[str]

    def __init__(self, options: _CommonOptions, headers: dict[str, str]) -> None:
        self._options = options
        self.model_name = f"{self.provider}:{options.model}"
        self._client = LazyClient(self._options.timeout, headers)

    # -- subclass hooks --------------------------------------------------------
    @property
    def url(self) -> str:
        """The endpoint chats are posted to."""
        raise NotImplementedError

    def _payload(self, messages: list[ChatMessage], schema: dict[str, Any], task: str) -> dict[str, Any]:
        raise NotImplementedError

    def _answer(self, body: Any) -> tuple[str, Usage]:
        """The answer text and token usage in a response body."""
        raise NotImplementedError

    # -- lifecycle -------------------------------------------------------------
    def _http(self) -> httpx.Client:
        return self._client.get()

    def close(self) -> None:
        """Close the connection pool. Idempotent."""
        self._client.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self._options.model!r}, base_url={self._options.base_url!r})"

    # -- the contract ------------------------------------------------------------
    def chat(self, request: ChatRequest[OutputT]) -> ChatResult[OutputT]:
        """Ask the server; validate the answer into ``request.schema``, repairing invalid answers.

        Raises LLMError (transport, HTTP, retries exhausted) or LLMOutputError
        (every attempt answered with invalid JSON or schema errors).
        """
        return answer_with_repair(
            request, lambda messages, schema: self._answer(self._post(self._payload(messages, schema, request.task))),
            attempts=self._options.output_retries + 1, model=self.model_name, where=f"{self.model_name} ({self.url})",
        )  # fmt: skip

    def _fail(self, message: str) -> LLMError:
        return LLMError(f"LLM {self.model_name} ({self.url}): {message}")

    def _post(self, payload: dict[str, Any]) -> Any:
        """POST ``payload`` with retries (memory.http_json); returns the decoded JSON body."""
        o = self._options
        return post_json(
            self._http(), self.url, payload, max_retries=o.max_retries, timeout=o.timeout,
            retry_backoff=o.retry_backoff, fail=self._fail, hint=_hint,
        )  # fmt: skip


def _hint(status: int) -> str:
    if status in (401, 403):
        return " (check api_key)"
    if status == 404:
        return " (check base_url and model)"
    return ""


class OpenAILLM(_HTTPLLM):
    """Chat completions from an OpenAI-compatible ``POST {base_url}/chat/completions``.

    Works with OpenAI, vLLM, llama.cpp's ``llama-server``, LM Studio and Ollama's /v1.
    """

    provider = "openai"

    class Options(_CommonOptions):
        """Options of the ``openai`` LLM."""

        base_url: str = "https://api.openai.com/v1"
        api_key: str | None = Field(None, repr=False, description="default: $OPENAI_API_KEY; None for local servers")
        strict: bool = Field(False, description="send json_schema.strict=true (OpenAI structured outputs)")

    def __init__(self, *, model: str, base_url: str = "https://api.openai.com/v1", **options: Any) -> None:
        """Configure the client; no request is made. Raises ConfigError for bad options."""
        parsed = _parse(self.Options, self.provider, {"model": model, "base_url": base_url, **options})
        key = parsed.api_key if parsed.api_key is not None else os.environ.get("OPENAI_API_KEY") or None
        super().__init__(parsed, {"Authorization": f"Bearer {key}"} if key else {})
        self._strict = parsed.strict

    @property
    def url(self) -> str:
        """``{base_url}/chat/completions``."""
        return f"{self._options.base_url}/chat/completions"

    def _payload(self, messages: list[ChatMessage], schema: dict[str, Any], task: str) -> dict[str, Any]:
        return {
            "model": self._options.model,
            "messages": [m.model_dump() for m in messages],
            "temperature": self._options.temperature,
            "max_tokens": self._options.max_tokens,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": task, "schema": schema, "strict": self._strict},
            },
        }

    def _answer(self, body: Any) -> tuple[str, Usage]:
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise self._fail(f"response has no 'choices': {str(body)[:300]}")
        message = choices[0].get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise self._fail("the answer's message content is not text")
        raw = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        prompt = int(raw.get("prompt_tokens") or 0)
        completion = int(raw.get("completion_tokens") or 0)
        total = int(raw.get("total_tokens") or prompt + completion)
        return content, Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)


class OllamaLLM(_HTTPLLM):
    """Chat from Ollama's native ``POST {base_url}/api/chat`` with ``format=<JSON schema>``."""

    provider = "ollama"

    class Options(_CommonOptions):
        """Options of the ``ollama`` LLM."""

        base_url: str = "http://127.0.0.1:11434"
        timeout: float = Field(120.0, gt=0, le=3600, description="seconds per request; loading a model takes a while")
        keep_alive: str | int | None = Field(None, description="how long Ollama keeps the model loaded, e.g. '10m'")

    def __init__(self, *, model: str, base_url: str = "http://127.0.0.1:11434", **options: Any) -> None:
        """Configure the client; no request is made. Raises ConfigError for bad options."""
        parsed = _parse(self.Options, self.provider, {"model": model, "base_url": base_url, **options})
        super().__init__(parsed, {})
        self._keep_alive = parsed.keep_alive

    @property
    def url(self) -> str:
        """``{base_url}/api/chat``."""
        return f"{self._options.base_url}/api/chat"

    def _payload(self, messages: list[ChatMessage], schema: dict[str, Any], task: str) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self._options.model,
            "messages": [m.model_dump() for m in messages],
            "stream": False,
            "format": schema,
            "options": {"temperature": self._options.temperature, "num_predict": self._options.max_tokens},
        }
        if self._keep_alive is not None:
            payload["keep_alive"] = self._keep_alive
        return payload

    def _answer(self, body: Any) -> tuple[str, Usage]:
        message = body.get("message") if isinstance(body, dict) else None
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            raise self._fail(f"response has no 'message.content': {str(body)[:300]}")
        prompt = int(body.get("prompt_eval_count") or 0)
        completion = int(body.get("eval_count") or 0)
        return message["content"], Usage(
            prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
        )
