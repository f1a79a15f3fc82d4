"""The LlamaIndex memory block, driven through LlamaIndex's own Memory (get / put) and a FunctionAgent."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from frameworks import framework

from memory import Memory

framework("llama_index.core")

from llama_index.core.base.llms.types import ChatMessage, MessageRole  # noqa: E402
from llama_index.core.memory import Memory as LlamaMemory  # noqa: E402

from memory.integrations.llama_index import RecallMemoryBlock  # noqa: E402


@pytest.fixture
def llama_memory(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """LlamaIndex Memory objects on a chat store in a SQLite file here; their engine is disposed afterwards."""
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'llama_chat.db'}")

    def factory(**kwargs: Any) -> LlamaMemory:
        return LlamaMemory.from_defaults(async_engine=engine, tokenizer_fn=words, **kwargs)

    yield factory
    asyncio.run(engine.dispose())


def words(text: str) -> list[str]:
    """A whitespace tokenizer (LlamaIndex's default counts with tiktoken; this keeps the test's budget exact)."""
    return text.split()


def _system_text(messages: list[ChatMessage]) -> str:
    return "\n".join(m.content or "" for m in messages if m.role == MessageRole.SYSTEM)


def test_recalled_memories_reach_the_chat_history(
    make_memory: Callable[..., Memory], llama_memory: Callable[..., Any]
) -> None:
    mem = make_memory()
    mem.remember("Alice is allergic to peanuts", user="alice")
    mem.remember("Alice's sister lives in Porto", user="alice")
    mem.remember("Bob is allergic to cats", user="bob")
    block = RecallMemoryBlock(memory=mem, user="alice", limit=2)
    chat = llama_memory(session_id="s1", memory_blocks=[block])

    async def scenario() -> list[ChatMessage]:
        await chat.aput(ChatMessage(role="user", content="Can you suggest a snack? Remember my allergy."))
        return await chat.aget()

    history = asyncio.run(scenario())
    system = _system_text(history)
    assert "<long_term_memory>" in system and "Alice is allergic to peanuts" in system
    assert "Bob" not in system  # another user's memories stay out
    assert history[-1].content == "Can you suggest a snack? Remember my allergy."


def test_flushed_messages_become_memories_and_come_back(
    make_memory: Callable[..., Memory], llama_memory: Callable[..., Any]
) -> None:
    mem = make_memory()
    block = RecallMemoryBlock(memory=mem, user="alice")
    chat = llama_memory(
        session_id="s2", memory_blocks=[block], token_limit=60, token_flush_size=20, chat_history_token_ratio=0.5
    )

    async def first_part() -> None:
        await chat.aput(ChatMessage(role="user", content="My favourite composer is Johann Sebastian Bach, by far."))
        await chat.aput(
            ChatMessage(role="assistant", content="Bach is a wonderful choice, his cello suites are timeless.")
        )
        for i in range(6):
            await chat.aput(ChatMessage(role="user", content=f"Filler message {i} about the weather being grey today."))
        await chat.aget()  # LlamaIndex flushes the oldest messages into the memory blocks

    asyncio.run(first_part())
    stored = mem.list(kinds=["conversation"], limit=50).items
    texts = {i.content for i in stored}
    assert "My favourite composer is Johann Sebastian Bach, by far." in texts
    bach = next(i for i in stored if "Johann Sebastian Bach" in i.content)
    assert bach.thread == "s2" and bach.user == "alice" and bach.metadata == {"role": "user"}

    async def second_part() -> list[ChatMessage]:
        await chat.aput(ChatMessage(role="user", content="Who is my favourite composer?"))
        return await chat.aget()

    history = asyncio.run(second_part())
    assert "Johann Sebastian Bach" in _system_text(history)  # recalled from long-term memory ...
    turns = [m.content for m in history if m.role != MessageRole.SYSTEM]
    assert "My favourite composer is Johann Sebastian Bach, by far." not in turns  # ... not from the short-term window


def test_truncation_drops_the_least_relevant_lines(mem: Memory) -> None:
    block = RecallMemoryBlock(memory=mem)
    text = "- first memory here\n- second memory here\n- third memory here"
    assert asyncio.run(block.atruncate(text, 3)) == "- first memory here\n- second memory here"
    assert asyncio.run(block.atruncate(text, 100)) is None
