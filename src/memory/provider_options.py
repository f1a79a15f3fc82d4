"""Validate a provider's constructor options with its pydantic ``Options`` model (embedders, rerankers)."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from memory.errors import ConfigError

__all__ = ["parse_options"]

ModelT = TypeVar("ModelT", bound=BaseModel)


def parse_options(model: type[ModelT], provider: str, values: dict[str, Any], *, kind: str = "embedder") -> ModelT:
    """Return ``values`` validated by ``model``; raises ConfigError naming the provider's kind and the bad option."""
    try:
        return model(**values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'options'}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"bad options for {kind} {provider!r}: {problems}") from exc
