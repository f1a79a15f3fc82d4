"""A LlamaIndex memory block over ``recall``: long-term memories in every LlamaIndex ``Memory``.

>>> from llama_index.core.memory import Memory as LlamaMemory
>>> from memory import Memory
>>> from memory.integrations.llama_index import RecallMemoryBlock
>>> block = RecallMemoryBlock(memory=Memory("sqlite:///agent.db"), user="alice")        # doctest: +SKIP
>>> chat_memory = LlamaMemory.from_defaults(session_id="s1", memory_blocks=[block])    # doctest: +SKIP
>>> agent.run("What do I like?", memory=chat_memory)                                    # doctest: +SKIP

When LlamaIndex builds the chat history (``Memory.get``) the block recalls the
memories most relevant to the latest messages (hybrid vector + BM25, scoped to
the block's user/agent) and hands them back as text for the memory-blocks
section of the system message. Messages that LlamaIndex flushes out of its
short-term window are stored as memories (kind ``conversation``, thread = the
LlamaIndex session id, role in metadata) so they can be recalled later;
``store_flushed=False`` turns that off. Needs ``pip install 'llm-agent-memory[llama-index]'``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from memory.integrations import require

require("llama_index.core.memory", "llama-index")

from llama_index.core.base.llms.types import ChatMessage, TextBlock  # noqa: E402
from llama_index.core.bridge.pydantic import Field  # noqa: E402
from llama_index.core.memory.memory import BaseMemoryBlock  # noqa: E402

from memory.memory import Memory  # noqa: E402

__all__ = ["RecallMemoryBlock"]


def _text(messages: list[ChatMessage]) -> str:
    parts = []
    for message in messages:
        for block in message.blocks:
            if isinstance(block, TextBlock) and block.text.strip():
                parts.append(block.text.strip())
    return "\n".join(parts)


class RecallMemoryBlock(BaseMemoryBlock[str]):
    """LlamaIndex memory block: recalls relevant memories; stores flushed messages as memories."""

    name: str = Field(default="long_term_memory", description="The name of the memory block.")
    description: str | None = Field(default="Relevant memories about the user and past conversations.")
    memory: Any = Field(description="The memory.Memory to recall from and store into.")
    user: str | None = Field(default=None, description="Only this user's memories (and store flushed ones for them).")
    agent: str | None = Field(default=None, description="Only this agent's memories.")
    namespace: str | None = Field(default=None, description="The namespace (default: the Memory's).")
    limit: int = Field(default=5, description="How many memories to recall.")
    context_messages: int = Field(default=1, description="How many of the latest messages form the query.")
    store_flushed: bool = Field(default=True, description="Store messages flushed from short-term memory.")

    def _memory(self) -> Memory:
        mem = self.memory
        if not isinstance(mem, Memory):
            raise TypeError("RecallMemoryBlock.memory must be a memory.Memory")
        return mem

    def _recall(self, query: str) -> list[str]:
        hits = self._memory().recall(
            query[-2000:], limit=self.limit, user=self.user, agent=self.agent, namespace=self.namespace
        )
        return [h.content for h in hits]

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """The memories relevant to the latest messages, one per line ("" when none)."""
        if not messages:
            return ""
        query = _text(messages[-self.context_messages :])
        if not query:
            return ""
        found = await asyncio.to_thread(self._recall, query)
        return "\n".join(f"- {text}" for text in found)

    def _store(self, messages: list[ChatMessage]) -> None:
        entries = []
        for message in messages:
            text = _text([message])
            if not text:
                continue
            session = message.additional_kwargs.get("session_id")
            entries.append(
                {
                    "content": text,
                    "kind": "conversation",
                    "user": self.user,
                    "agent": self.agent,
                    "thread": str(session) if session else None,
                    "metadata": {"role": message.role.value},
                }  # fmt: skip
            )
        if entries:
            self._memory().remember_batch(entries, namespace=self.namespace)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Store messages flushed out of LlamaIndex's short-term memory (when ``store_flushed``)."""
        if self.store_flushed and messages:
            await asyncio.to_thread(self._store, messages)

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Drop the least relevant memories (the last lines) until about ``tokens_to_truncate`` words are gone."""
        lines = content.splitlines()
        removed = 0
        while lines and removed < tokens_to_truncate:
            removed += len(lines.pop().split())
        return "\n".join(lines) or None
