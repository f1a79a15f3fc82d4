"""An LLM-backed :class:`~memory.episodic.summarize.Summarizer`: block updates as schema-validated JSON.

:class:`LLMSummarizer` asks the configured :mod:`memory.llms` provider (task
``summarize_conversation``, prompt in :mod:`memory.llms.prompts`) for a
:class:`BlockUpdates` answer — the new ``last_conversation_summary`` and,
when they changed, ``user_info``, ``goals_and_status`` and
``important_context``. The provider validates the answer into the pydantic
model and retries invalid output; when it still fails it raises LLMError,
and :func:`~memory.episodic.summarize.end_conversation` falls back to the
extractive summarizer and records why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from memory.episodic.summarize import ExtractiveSummarizer, Summarizer
from memory.episodic.types import Block, Message
from memory.errors import LLMOutputError
from memory.llms.base import LLM
from memory.llms.prompts import structured

__all__ = ["BlockUpdates", "LLMSummarizer", "MAX_TRANSCRIPT_CHARS", "default_summarizer"]

#: The transcript sent to the model is cut to its newest messages within this many characters.
MAX_TRANSCRIPT_CHARS = 24_000


class BlockUpdates(BaseModel):
    """New block values from a finished conversation; ``None`` leaves a block unchanged."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    last_conversation_summary: str = Field(max_length=20_000)
    user_info: str | None = Field(None, max_length=20_000)
    goals_and_status: str | None = Field(None, max_length=20_000)
    important_context: str | None = Field(None, max_length=20_000)


def _transcript(messages: Sequence[Message]) -> list[dict[str, str]]:
    lines: list[dict[str, str]] = []
    used = 0
    for message in reversed([m for m in messages if m.content]):
        used += len(message.content) + 20
        if lines and used > MAX_TRANSCRIPT_CHARS:
            break
        lines.append({"who": message.speaker or message.role, "content": message.content})
    return lines[::-1]


class LLMSummarizer:
    """Summarises a conversation into block updates with an LLM provider (raises LLMError on failure)."""

    name: ClassVar[str] = "llm"

    def __init__(self, llm: LLM) -> None:
        """Use ``llm`` (any :class:`~memory.llms.base.LLM`; the ``heuristic`` one cannot do this task)."""
        self.llm = llm

    def __repr__(self) -> str:
        return f"LLMSummarizer({self.llm!r})"

    def summarize(self, messages: Sequence[Message], blocks: Mapping[str, Block]) -> dict[str, str]:
        """New values for the blocks the model updated (labels it left null are unchanged)."""
        transcript = _transcript(messages)
        if not transcript:
            return {}
        labels = ("last_conversation_summary", "user_info", "goals_and_status", "important_context")
        current = {
            label: {"value": blocks[label].value, "limit": blocks[label].limit}
            if label in blocks
            else {"value": "", "limit": 2000}
            for label in labels
        }
        inputs = {"messages": transcript, "blocks": current}
        answer = structured(self.llm, "summarize_conversation", inputs, BlockUpdates)
        updates = answer.output.model_dump()
        if not updates["last_conversation_summary"].strip():
            raise LLMOutputError("the model returned an empty conversation summary")
        return {label: value.strip() for label, value in updates.items() if value is not None and value.strip()}


def default_summarizer(llm: LLM) -> Summarizer:
    """The summarizer a store uses by default: the LLM's, else (``heuristic``) the extractive one."""
    return ExtractiveSummarizer() if llm.provider == "heuristic" else LLMSummarizer(llm)
