"""LangGraph: :class:`MemoryStore` (a ``BaseStore``) and :class:`MemorySaver` (a ``BaseCheckpointSaver``).

Both need ``pip install 'llm-agent-memory[langgraph]'``; LangGraph is imported when one of
them is first used, not when :mod:`memory.integrations` is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory.integrations.langgraph.checkpoint import MemorySaver
    from memory.integrations.langgraph.store import MemoryStore

__all__ = ["MemoryStore", "MemorySaver"]


def __getattr__(name: str) -> Any:
    if name == "MemoryStore":
        from memory.integrations.langgraph.store import MemoryStore

        return MemoryStore
    if name == "MemorySaver":
        from memory.integrations.langgraph.checkpoint import MemorySaver

        return MemorySaver
    raise AttributeError(name)
