"""The LLM contract: chat with JSON-schema structured output, validated into pydantic models.

A provider implements one method, :meth:`LLM.chat`, which takes a
:class:`ChatRequest` (the task name, its raw inputs, the rendered chat
messages and the pydantic model the answer must validate into) and returns a
:class:`ChatResult` holding the validated output and the token usage of every
attempt. HTTP providers send ``messages`` and ask the server for JSON matching
``schema``; the heuristic provider computes the answer from ``inputs``
without a model. :func:`memory.llms.prompts.structured` renders a versioned prompt and calls
``chat`` — services use it, never a provider's internals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ChatMessage", "Usage", "ChatRequest", "ChatResult", "LLM", "OutputT"]

OutputT = TypeVar("OutputT", bound=BaseModel)


class ChatMessage(BaseModel):
    """One chat message."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["system", "user", "assistant"]
    content: str


class Usage(BaseModel):
    """Tokens used by a call, summed over its attempts; ``estimated`` when no model counted them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_tokens: int = Field(0, ge=0)
    completion_tokens: int = Field(0, ge=0)
    total_tokens: int = Field(0, ge=0)
    estimated: bool = False

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            estimated=self.estimated or other.estimated,
        )


@dataclass(frozen=True)
class ChatRequest(Generic[OutputT]):
    """What to ask: a task (prompt name), its inputs, the rendered messages, the output model."""

    task: str
    inputs: dict[str, Any]
    messages: tuple[ChatMessage, ...]
    schema: type[OutputT]
    prompt_version: str = ""


@dataclass(frozen=True)
class ChatResult(Generic[OutputT]):
    """A validated answer with its usage, the model that gave it and how many attempts it took."""

    output: OutputT
    usage: Usage
    model: str
    attempts: int = 1
    raw: str = ""
    prompt_version: str = ""
    errors: tuple[str, ...] = field(default=())


@runtime_checkable
class LLM(Protocol):
    """A chat model that answers with JSON validated into ``request.schema``.

    ``chat`` raises :class:`~memory.errors.LLMError` when the provider cannot
    be reached or fails past its retries, and
    :class:`~memory.errors.LLMOutputError` when every attempt answered with
    invalid JSON or JSON that does not fit the schema.
    """

    provider: str
    model_name: str

    def chat(self, request: ChatRequest[OutputT]) -> ChatResult[OutputT]:
        """Answer ``request`` with output validated into ``request.schema``."""
        ...
