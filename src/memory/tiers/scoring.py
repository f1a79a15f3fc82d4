"""The replaceable scoring functions of the tiers (seed 002): Fscore, heat, and the page ranking of retrieval.

The defaults are the seed's formulas (:mod:`memory.tiers.formulas`). A
configuration may name a replacement as ``"module:function"`` — a callable
in the config, stored by reference so it survives restarts and applies per
agent or agent type like every other setting:

* ``fscore_function(segment_vector, segment_keywords, page_vector, page_keywords) -> float``
  — used for page→segment matching (``fscore_threshold``), segment selection
  at retrieval and ranking system-memory entries;
* ``heat_function(visits, interactions, recency, *, alpha, beta, gamma) -> float``
  — segment heat (eviction, LPM analysis).

:func:`resolve_function` checks a reference when it is configured (importable,
callable) and raises InvalidInputError otherwise. Page ranking at retrieval is
:mod:`memory.tiers.search`.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

import numpy as np

from memory.errors import InvalidInputError
from memory.tiers.formulas import heat, jaccard, recency

__all__ = [
    "FscoreFunction",
    "HeatFunction",
    "default_fscore",
    "resolve_function",
    "reference_of",
    "fscore_of",
    "heat_of",
    "topic_text",
]

FscoreFunction = Callable[[Sequence[float], Sequence[str], Sequence[float], Sequence[str]], float]
HeatFunction = Callable[..., float]
_TAG = re.compile(r"^\s*(?:[A-Z][\w.'-]*(?: [A-Z][\w.'-]*)?|user|assistant|User|Assistant):\s", re.MULTILINE)
_WORD = re.compile(r"[a-z0-9]+")


def topic_text(text: str) -> str:
    """``text`` without transcript speaker tags ("Alice: …", "User: …") at line starts: the words that carry topic."""
    return _TAG.sub("", text)


def default_fscore(
    vector_a: Sequence[float], keywords_a: Sequence[str], vector_b: Sequence[float], keywords_b: Sequence[str]
) -> float:
    """``cos + Jaccard`` (:func:`memory.tiers.formulas.fscore`), cosine in numpy; missing or mismatched vectors
    count as cosine 0 (then only the keywords count)."""
    cos = 0.0
    if len(vector_a) and len(vector_a) == len(vector_b):
        a = np.asarray(vector_a, dtype=np.float64)
        b = np.asarray(vector_b, dtype=np.float64)
        norms = float(np.linalg.norm(a) * np.linalg.norm(b))
        cos = float(a @ b) / norms if norms else 0.0
    return cos + jaccard(keywords_a, keywords_b)


@lru_cache(maxsize=64)
def _load(reference: str) -> Callable[..., float]:
    module_name, _, attr = reference.partition(":")
    if not module_name or not attr:
        raise InvalidInputError(f"a scoring function is 'module:function', got {reference!r}")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise InvalidInputError(f"cannot import scoring function {reference!r}: {exc}") from None
    if not callable(target):
        raise InvalidInputError(f"scoring function {reference!r} is not callable")
    return target  # type: ignore[no-any-return]


def resolve_function(reference: str) -> Callable[..., float]:
    """The callable a ``"module:function"`` reference names. Raises InvalidInputError."""
    if not isinstance(reference, str):
        raise InvalidInputError(f"a scoring function is named as 'module:function', got {type(reference).__name__}")
    return _load(reference)


def reference_of(value: object) -> str | None:
    """A config value for a scoring function: None, a ``"module:function"`` string, or a module-level callable
    (stored as its reference). Raises InvalidInputError for a lambda, a local function or a non-callable."""
    if value is None:
        return None
    if isinstance(value, str):
        resolve_function(value)
        return value
    if callable(value):
        module = getattr(value, "__module__", None)
        qualname = getattr(value, "__qualname__", "")
        if not module or "<" in qualname:
            raise InvalidInputError("a scoring function must be importable (a module-level function), not a lambda")
        reference = f"{module}:{qualname}"
        if resolve_function(reference) is not value:
            raise InvalidInputError(f"{reference} does not import back to the same function")
        return reference
    raise InvalidInputError(f"a scoring function is a callable or 'module:function', got {type(value).__name__}")


def fscore_of(reference: str | None) -> FscoreFunction:
    """The Fscore function of a configuration (the seed's cos + Jaccard when None)."""
    return default_fscore if reference is None else resolve_function(reference)


def heat_of(
    reference: str | None,
    visits: int,
    interactions: int,
    last_accessed: datetime,
    now: datetime,
    *,
    mu: float,
    alpha: float,
    beta: float,
    gamma: float,
) -> float:
    """Heat of a segment by the configured function (the seed's α·N + β·L + γ·exp(−Δt/μ) when None)."""
    function: HeatFunction = heat if reference is None else resolve_function(reference)
    return float(function(visits, interactions, recency(last_accessed, now, mu), alpha=alpha, beta=beta, gamma=gamma))
