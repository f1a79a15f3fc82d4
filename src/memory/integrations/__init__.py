"""Framework integrations, one module each, each importing its framework only when used.

* :mod:`memory.integrations.langgraph` — a LangGraph ``BaseStore`` over memories and a
  ``BaseCheckpointSaver`` keeping checkpoints in the same database (extra ``langgraph``).
* :mod:`memory.integrations.openai_agents` — an OpenAI Agents SDK ``Session`` over a
  conversation thread (extra ``openai-agents``).
* :mod:`memory.integrations.llama_index` — a LlamaIndex memory block over recall (extra ``llama-index``).
* :mod:`memory.integrations.crewai` — CrewAI memory storage (extra ``crewai``).

Importing this package imports no framework.
"""

from __future__ import annotations

from memory.errors import ConfigError

__all__ = ["require"]


def require(module: str, extra: str) -> None:
    """Import ``module`` or raise ConfigError naming the extra that installs it."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"this integration needs {module!r}: install it with `pip install 'llm-agent-memory[{extra}]'` ({exc})"
        ) from exc
