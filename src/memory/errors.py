"""Errors raised by `memory`.

Every error the public API raises derives from :class:`Error`; nothing else
(no bare ``ValueError``, no driver exception) escapes it. The tree::

    Error
    ├── InvalidInputError        bad content, filters, ids, options or vectors
    │   ├── InvalidVectorError   NaN/inf, wrong length, wrong type
    │   ├── BlockLimitError      a block would grow past its size limit
    │   └── ContextBudgetError   a token budget too small to hold a prompt
    ├── NotFoundError            an id that does not exist in this namespace
    ├── AuthenticationError      no API key, or an unknown/revoked one (servers)
    ├── PermissionDeniedError    the caller may not use that namespace/operation (servers)
    ├── ConfigError              unusable configuration or unknown provider
    │   ├── EmbeddingMismatchError  store built with another model/dimension
    │   └── StoreUnavailableError   the backend lacks a storage area (e.g. conversations)
    │       └── GraphUnavailableError  ... the graph store (backend.graph)
    ├── StorageError             the backend failed (driver errors translated)
    │   └── SchemaError          database newer than this code, or corrupt
    ├── ProviderError            an embedder or LLM failed
    │   ├── EmbedderError
    │   └── LLMError             the LLM call failed (HTTP, timeout, retries exhausted)
    │       └── LLMOutputError   the LLM kept answering with invalid JSON / schema
    └── AgentError               an agent loop could not finish (step limit, bad tool call)

Messages say what was wrong and what to do about it.
"""

from __future__ import annotations

__all__ = [
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
    "RerankerError",
    "LLMError",
    "LLMOutputError",
    "GraphUnavailableError",
    "ContextBudgetError",
    "AgentError",
    "BlockLimitError",
    "StoreUnavailableError",
    "AuthenticationError",
    "PermissionDeniedError",
]


class Error(Exception):
    """Base class of every error raised by `memory`."""


class InvalidInputError(Error, ValueError):
    """Input was rejected; nothing was changed."""


class InvalidVectorError(InvalidInputError):
    """A vector had the wrong length, type, or non-finite values."""


class NotFoundError(Error, LookupError):
    """No item with that id exists in the namespace (or it is not visible)."""


class ConfigError(Error):
    """The configuration cannot be used as given."""


class EmbeddingMismatchError(ConfigError):
    """The store was built with a different embedding model or dimension."""


class StorageError(Error):
    """The storage backend failed."""


class SchemaError(StorageError):
    """The database schema is newer than this code understands, or damaged."""


class ProviderError(Error):
    """A provider (embedder, LLM) failed."""


class EmbedderError(ProviderError):
    """The embedder failed to produce vectors."""


class RerankerError(ProviderError):
    """The reranker failed to score the candidates; recall keeps the fused order."""


class LLMError(ProviderError):
    """The LLM provider failed: unreachable, timed out, rate limited past the retries, or an HTTP error."""


class LLMOutputError(LLMError):
    """The LLM answered, but not with JSON matching the requested schema (after the retries)."""


class ContextBudgetError(InvalidInputError):
    """The token budget cannot hold even the fixed parts of a prompt; raise the budget."""


class AgentError(Error):
    """An agent loop could not finish: too many steps, or a malformed reply from the model."""


class BlockLimitError(InvalidInputError):
    """A working-memory block would exceed its size limit; nothing was written."""


class StoreUnavailableError(ConfigError):
    """The backend does not provide a storage area a feature needs (e.g. conversations)."""


class GraphUnavailableError(StoreUnavailableError):
    """The storage backend does not provide a graph store (``backend.graph``)."""


class AuthenticationError(Error):
    """A server request carried no API key, or an unknown or revoked one."""


class PermissionDeniedError(Error, PermissionError):
    """The caller is not allowed to do this (another namespace, a write with a read-only key, secrets)."""
