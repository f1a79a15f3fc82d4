"""memory: long-term memory for LLM agents.

>>> from memory import Memory
>>> mem = Memory("memory://", embedder="hashing")
>>> memory_id = mem.remember("Alice prefers dark mode", user="alice", tags=["ui"])
>>> mem.recall("what does alice like?", user="alice", limit=1)[0].content
'Alice prefers dark mode'
"""

from memory.aio import AsyncMemory
from memory.config import Settings, load_settings
from memory.context import CompiledPrompt, ContextRequest, ContextStrategy, TokenBudget
from memory.episodic.summarize import ExtractiveSummarizer, Summarizer
from memory.episodic.types import Block, BlockChange, Message, MessageHit, ThreadInfo
from memory.errors import (
    AgentError,
    AuthenticationError,
    BlockLimitError,
    ConfigError,
    ContextBudgetError,
    EmbedderError,
    EmbeddingMismatchError,
    Error,
    GraphUnavailableError,
    InvalidInputError,
    InvalidVectorError,
    LLMError,
    LLMOutputError,
    NotFoundError,
    PermissionDeniedError,
    ProviderError,
    SchemaError,
    StorageError,
    StoreUnavailableError,
)
from memory.filters import Filter
from memory.memory import Memory
from memory.retrieval.config import PRESETS, RetrievalConfig
from memory.types import ChannelScore, Hit, LedgerEntry, MemoryItem, Page, Scope, ScoreParts, Stats

__version__ = "0.1.0"

__all__ = [
    "Memory",
    "AsyncMemory",
    "Settings",
    "load_settings",
    "RetrievalConfig",
    "PRESETS",
    "Filter",
    "MemoryItem",
    "Hit",
    "ChannelScore",
    "ScoreParts",
    "LedgerEntry",
    "Page",
    "Scope",
    "Stats",
    "Error",
    "InvalidInputError",
    "InvalidVectorError",
    "NotFoundError",
    "ConfigError",
    "EmbeddingMismatchError",
    "StorageError",
    "SchemaError",
    "ProviderError",
    "EmbedderError",
    "LLMError",
    "LLMOutputError",
    "GraphUnavailableError",
    "ContextBudgetError",
    "AgentError",
    "ContextRequest",
    "ContextStrategy",
    "TokenBudget",
    "CompiledPrompt",
    "BlockLimitError",
    "StoreUnavailableError",
    "Message",
    "MessageHit",
    "ThreadInfo",
    "Block",
    "BlockChange",
    "Summarizer",
    "ExtractiveSummarizer",
    "AuthenticationError",
    "PermissionDeniedError",
    "__version__",
]
