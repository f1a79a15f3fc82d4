"""A minimal client for OpenAI-compatible ``/v1/chat/completions`` endpoints (OpenAI, Ollama, vLLM, llama.cpp)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx

from memory.errors import InvalidInputError, ProviderError

__all__ = ["ChatClient", "ChatReply", "ToolCall"]


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for; ``arguments`` is the JSON text it sent."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ChatReply:
    """The assistant message of a completion: text and/or tool calls, plus token usage."""

    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: dict[str, Any] = field(default_factory=dict)
    finish_reason: str | None = None

    def message(self) -> dict[str, Any]:
        """The assistant message to append to the conversation (OpenAI shape)."""
        out: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return out


class ChatClient:
    """POSTs chat requests to ``{base_url}/chat/completions``; ``base_url`` ends in ``/v1`` for most servers."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        client: httpx.Client | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Set the endpoint, model, optional bearer key, timeout and extra request fields (e.g. temperature)."""
        if not base_url.startswith(("http://", "https://")):
            raise InvalidInputError(f"chat endpoint must be an http(s) URL, got {base_url!r}")
        if not model:
            raise InvalidInputError("a chat model name is required")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.extra = dict(extra or {})
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._owns = client is None
        self._client = client or httpx.Client(timeout=timeout, headers=headers)
        if client is not None and headers:
            self._client.headers.update(headers)

    def close(self) -> None:
        """Close the HTTP client if this object created it."""
        if self._owns:
            self._client.close()

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> ChatReply:
        """One chat completion. Raises ProviderError for transport errors, non-2xx answers or malformed bodies."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, **self.extra}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        try:
            response = self._client.post(self.url, json=body)
        except httpx.HTTPError as exc:
            raise ProviderError(f"chat endpoint {self.url} failed: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            raise ProviderError(
                f"chat endpoint {self.url} answered {response.status_code}: {' '.join(response.text[:300].split())}"
            )
        try:
            data = response.json()
            choice = data["choices"][0]
            message = choice["message"]
            calls = tuple(
                ToolCall(
                    id=str(call.get("id") or f"call_{n}"),
                    name=str(call["function"]["name"]),
                    arguments=_arguments_text(call["function"].get("arguments")),
                )
                for n, call in enumerate(message.get("tool_calls") or [])
            )
            content = message.get("content")
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ProviderError(f"chat endpoint {self.url} sent an unexpected body: {exc!r}") from exc
        return ChatReply(
            content=content if isinstance(content, str) else None,
            tool_calls=calls,
            usage=data.get("usage") or {},
            finish_reason=choice.get("finish_reason"),
        )


def _arguments_text(value: Any) -> str:
    if value is None:
        return "{}"
    return value if isinstance(value, str) else json.dumps(value)
