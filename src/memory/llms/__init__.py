"""LLM providers: ``heuristic`` (default, no model), ``openai`` (OpenAI-compatible) and ``ollama`` (native)."""

from __future__ import annotations

from typing import Any

from memory import registry
from memory.llms.base import LLM, ChatMessage, ChatRequest, ChatResult, Usage
from memory.llms.prompts import structured

__all__ = ["LLM", "ChatMessage", "ChatRequest", "ChatResult", "Usage", "structured", "create_llm"]


def create_llm(provider: str, options: dict[str, Any] | None = None) -> LLM:
    """Instantiate an LLM by provider name (``heuristic``, ``openai``, ``ollama``, or registered/dotted)."""
    llm: LLM = registry.create("llm", provider, dict(options or {}), protocol=LLM)
    return llm
