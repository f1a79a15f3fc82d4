"""Find providers by name: built-ins, entry points, or a dotted class path.

``name -> "module:Class"``; the module is imported only when the provider is
chosen, so optional dependencies stay optional. Third-party packages add
providers through the entry-point groups ``memory.embedders`` and
``memory.backends``, ``memory.llms`` and ``memory.rerankers``; tests register fakes with :func:`register`.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

from pydantic import BaseModel, ValidationError

from memory.errors import ConfigError

__all__ = ["register", "resolve", "create", "available"]

_BUILTIN: dict[str, dict[str, str]] = {
    "embedder": {
        "minilm": "memory.embedders.minilm:MiniLMEmbedder",
        "hashing": "memory.embedders.hashing:HashingEmbedder",
        "openai": "memory.embedders.http:OpenAIEmbedder",
        "ollama": "memory.embedders.http:OllamaEmbedder",
    },
    "llm": {
        "heuristic": "memory.llms.heuristic:HeuristicLLM",
        "openai": "memory.llms.http:OpenAILLM",
        "ollama": "memory.llms.http:OllamaLLM",
        "mirascope": "memory.llms.mirascope:MirascopeLLM",
    },
    "reranker": {
        "http": "memory.rerankers.http:HTTPReranker",
        "local": "memory.rerankers.local:LocalReranker",
    },
    "backend": {
        "inmemory": "memory.backends.sqlite.throwaway:ThrowawaySQLiteBackend",
        "sqlite": "memory.backends.sqlite:SQLiteBackend",
        "libsql": "memory.backends.libsql:LibSQLBackend",
        "postgres": "memory.backends.postgres:PostgresBackend",
    },
}
_GROUPS = {
    "embedder": "memory.embedders",
    "backend": "memory.backends",
    "llm": "memory.llms",
    "reranker": "memory.rerankers",
}
_REGISTERED: dict[str, dict[str, str | type]] = {"embedder": {}, "backend": {}, "llm": {}, "reranker": {}}


def register(kind: str, name: str, target: str | type) -> None:
    """Register provider ``name`` of ``kind`` ('embedder', 'backend', 'llm', 'reranker'): a class or 'module:Class'."""
    if kind not in _REGISTERED:
        raise ConfigError(f"unknown provider kind {kind!r}; expected one of {sorted(_REGISTERED)}")
    _REGISTERED[kind][name] = target


def available(kind: str) -> list[str]:
    """Names of the providers of ``kind`` known to the registry."""
    names = set(_BUILTIN.get(kind, {})) | set(_REGISTERED.get(kind, {}))
    group = _GROUPS.get(kind)
    if group:
        names |= {ep.name for ep in entry_points(group=group)}
    return sorted(names)


def _import(target: str) -> type:
    module_name, sep, attr = target.partition(":")
    if not sep:
        module_name, _, attr = target.rpartition(".")
    if not module_name or not attr:
        raise ConfigError(f"{target!r} is not a 'module:Class' path")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import {module_name!r} for provider {target!r}: {exc}") from exc
    try:
        cls: type = getattr(module, attr)
    except AttributeError as exc:
        raise ConfigError(f"{module_name!r} has no attribute {attr!r}") from exc
    return cls


def resolve(kind: str, name: str) -> type:
    """Return the provider class for ``name`` (registered, built-in, entry point or dotted path)."""
    found = _REGISTERED.get(kind, {}).get(name)
    if isinstance(found, type):
        return found
    if isinstance(found, str):
        return _import(found)
    builtin = _BUILTIN.get(kind, {}).get(name)
    if builtin:
        return _import(builtin)
    group = _GROUPS.get(kind)
    if group:
        for ep in entry_points(group=group):
            if ep.name == name:
                loaded: type = ep.load()
                return loaded
    if ":" in name or "." in name:
        return _import(name)
    raise ConfigError(f"unknown {kind} {name!r}; available: {', '.join(available(kind))}")


def create(kind: str, name: str, options: dict[str, Any] | None = None, protocol: type | None = None) -> Any:
    """Instantiate provider ``name`` with ``options``, validated by its ``Options`` model if it has one.

    Raises ConfigError for unknown providers, bad options, or a class that
    does not satisfy ``protocol``.
    """
    cls = resolve(kind, name)
    opts = dict(options or {})
    options_model = getattr(cls, "Options", None)
    try:
        if isinstance(options_model, type) and issubclass(options_model, BaseModel):
            opts = options_model(**opts).model_dump()
        instance = cls(**opts)
    except ValidationError as exc:
        raise ConfigError(f"bad options for {kind} {name!r}: {exc}") from exc
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"bad options for {kind} {name!r}: {exc}") from exc
    if protocol is not None and not isinstance(instance, protocol):
        raise ConfigError(f"{kind} {name!r} ({cls.__name__}) does not implement {protocol.__name__}")
    return instance
