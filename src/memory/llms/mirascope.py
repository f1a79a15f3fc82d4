"""An LLM provider built on mirascope (seed 003: "We use mirascope"): every provider mirascope speaks.

``model`` is mirascope's ``"<provider>/<model>"`` id — ``anthropic/claude-haiku-4-5``,
``openai/gpt-4o-mini``, ``google/gemini-2.5-flash``, ``ollama/llama3.2``, ``together/…``,
``openrouter/…`` — and ``base_url``/``api_key`` point it at any compatible server
(the provider SDK's own environment variable, e.g. ``$ANTHROPIC_API_KEY``, when unset).
``provider`` overrides the prefix (e.g. ``openai:completions`` for servers that only
speak chat completions).

Mirascope asks for JSON in its ``json`` formatting mode (the schema in the system
prompt, and the provider's JSON switch where it has one); the answer's text is then
validated by the same :func:`~memory.llms.parsing.parse_output` the HTTP providers use,
and an invalid answer is sent back with what was wrong (``output_retries``), so
extraction, summaries, tiers and reflection get the same guarantees whichever
provider answers. Transport retries are the provider SDK's. Every failure is an
:class:`~memory.errors.LLMError` (or :class:`~memory.errors.LLMOutputError`).
Needs the ``mirascope`` extra (``pip install 'llm-agent-memory[mirascope]'``); no PyTorch.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from memory.errors import ConfigError, LLMError
from memory.llms.base import ChatMessage, ChatRequest, ChatResult, OutputT, Usage
from memory.llms.repair import answer_with_repair

__all__ = ["MirascopeLLM"]


class MirascopeLLM:
    """Chat through mirascope's provider layer; answers validated into the task's pydantic model."""

    provider = "mirascope"

    class Options(BaseModel):
        """Options of the ``mirascope`` LLM."""

        model_config = ConfigDict(extra="forbid", frozen=True)

        model: str = Field(pattern=r"^[\w.:-]+/\S+$", description="mirascope model id '<provider>/<model>'")
        provider: str | None = Field(None, min_length=1, description="mirascope provider id; default: the prefix")
        base_url: str | None = Field(None, description="the server; default: the provider's own")
        api_key: str | None = Field(None, repr=False, description="default: the provider SDK's environment variable")
        output_retries: int = Field(2, ge=0, le=5, description="retries after an answer that is not valid JSON/schema")
        temperature: float = Field(0.0, ge=0, le=2)
        max_tokens: int = Field(1024, ge=1, le=65_536, description="most tokens to generate per answer")

        @field_validator("base_url")
        @classmethod
        def _http_url(cls, value: str | None) -> str | None:
            if value is None:
                return None
            value = value.strip().rstrip("/")
            if not value.startswith(("http://", "https://")):
                raise ValueError(f"base_url must start with http:// or https://, got {value!r}")
            return value

    def __init__(self, **options: Any) -> None:
        """Configure the provider; no request is made. Raises ConfigError for bad options or a missing extra."""
        try:
            self._options = self.Options(**options)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'options'}: {e['msg']}" for e in exc.errors())
            raise ConfigError(f"bad options for LLM 'mirascope': {problems}") from exc
        try:
            from mirascope import llm
            from mirascope.llm.providers.provider_registry import provider_singleton
        except ImportError as exc:
            raise ConfigError(f"the mirascope LLM needs: pip install 'llm-agent-memory[mirascope]' ({exc})") from None
        o = self._options
        self._llm = llm
        self._provider_id = o.provider or o.model.split("/", 1)[0]
        self.model_name = f"mirascope:{o.model}"
        try:
            self._provider = provider_singleton(self._provider_id, api_key=o.api_key, base_url=o.base_url)
        except ImportError as exc:
            raise ConfigError(
                f"mirascope provider {self._provider_id!r} needs its SDK ({exc}); e.g. pip install anthropic"
            ) from None
        except Exception as exc:  # noqa: BLE001 - unknown provider ids and SDK set-up errors
            raise ConfigError(f"mirascope cannot set up provider {self._provider_id!r}: {exc}") from None

    @property
    def url(self) -> str:
        """Where requests go (for error messages)."""
        return self._options.base_url or f"{self._provider_id}'s default endpoint"

    def __repr__(self) -> str:
        return f"MirascopeLLM(model={self._options.model!r}, base_url={self._options.base_url!r})"

    def chat(self, request: ChatRequest[OutputT]) -> ChatResult[OutputT]:
        """Ask the model; validate the answer into ``request.schema``, repairing invalid answers.

        Raises LLMError (the provider failed past its SDK's retries) or
        LLMOutputError (every attempt answered with invalid JSON or schema errors).
        """
        return answer_with_repair(
            request, lambda messages, _schema: self._call(messages, request.schema),
            attempts=self._options.output_retries + 1, model=self.model_name, where=f"{self.model_name} ({self.url})",
        )  # fmt: skip

    def _call(self, messages: list[ChatMessage], schema: type[BaseModel]) -> tuple[str, Usage]:
        llm = self._llm
        o = self._options
        converted = []
        for m in messages:
            if m.role == "system":
                converted.append(llm.messages.system(m.content))
            elif m.role == "user":
                converted.append(llm.messages.user(m.content))
            else:
                converted.append(llm.messages.assistant(m.content, model_id=o.model, provider_id=None))
        try:
            response = self._provider.call(
                model_id=o.model, messages=converted, toolkit=llm.Toolkit(tools=[]),
                format=llm.format(schema, mode="json"), temperature=o.temperature, max_tokens=o.max_tokens,
            )  # fmt: skip
            text = response.text()
        except Exception as exc:  # noqa: BLE001 - every provider/SDK failure becomes LLMError
            status = getattr(exc, "status_code", None)
            where = f"HTTP {status}: " if status else ""
            raise LLMError(f"LLM {self.model_name} ({self.url}): {where}{type(exc).__name__}: {exc}") from exc
        raw = response.usage
        prompt = int(getattr(raw, "input_tokens", 0) or 0)
        completion = int(getattr(raw, "output_tokens", 0) or 0)
        return text or "", Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)
