"""AsyncMemory mirrors the conversation API: messages, blocks, run_sync, end_conversation, prune."""

from __future__ import annotations

import asyncio

from memory import AsyncMemory
from memory.embedders.hashing import HashingEmbedder


def test_async_conversation_round_trip() -> None:
    async def scenario() -> None:
        async with AsyncMemory("memory://", embedder=HashingEmbedder()) as amem:
            first = await amem.messages.append("t1", "I live in Lisbon and I want to learn surfing", user="ana")
            await amem.messages.append("t1", "Lisbon has great waves", role="assistant", user="ana")
            assert first.turn == 1
            assert [m.turn for m in await amem.messages.recent("t1", 5)] == [1, 2]
            report = await amem.run_sync()
            assert report.messages_done == 2
            hits = await amem.messages.search("surfing Lisbon")
            assert hits[0].message.id == first.id and {"lexical", "vector"} <= set(hits[0].channels)
            ended = await amem.end_conversation("t1")
            assert "goals_and_status" in ended.updated
            block = await amem.blocks.append("important_context", "prefers mornings", user="ana")
            assert block.version == 1
            assert (await amem.sync_status()).pending == 0
            assert (await amem.prune()).messages == 0
            assert amem.messages.media_store is not None  # plain attributes pass through

    asyncio.run(scenario())
