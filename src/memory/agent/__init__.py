"""Agent integration: memory tools for function-calling models and a context-hydrating agent loop."""

from memory.agent.chat import ChatClient, ChatReply, ToolCall
from memory.agent.loop import (
    DEFAULT_SYSTEM,
    AgentStep,
    AgentTurn,
    ConversationSink,
    InProcessSink,
    MemoryAgent,
    MessageLogSink,
    default_sink,
)
from memory.agent.tools import MEMORY_TOOLS, ToolScope, anthropic_tools, available_tools, execute_tool, openai_tools

__all__ = [
    "MemoryAgent",
    "AgentTurn",
    "AgentStep",
    "ConversationSink",
    "MessageLogSink",
    "InProcessSink",
    "default_sink",
    "DEFAULT_SYSTEM",
    "ChatClient",
    "ChatReply",
    "ToolCall",
    "MEMORY_TOOLS",
    "ToolScope",
    "openai_tools",
    "anthropic_tools",
    "available_tools",
    "execute_tool",
]
