"""Write-time index keys computed by the library (pure functions).

A memory is found by more than its own words. Recall indexes, besides the
content:

* **time words** — the day, month name and year of the memory's
  ``created_at`` (``"8 May 2023"``), so "what happened in May" or "in 2023"
  matches lexically. Both backends derive them with :func:`time_words`
  (SQLite in SQL, with the same output).
* **the context window** — the contents of the ``WINDOW`` memories before and
  after it in the same namespace and thread (a chat thread, ordered by
  ``created_at`` then id). A reply such as "Yes, two weekends ago!" is then
  found by the question it answers. The window is indexed twice: its text as
  a lexical field of lower weight, and a *window vector*
  ``unit(v + unit(Σ window vectors incl. v))`` in a second vector space
  (:func:`window_model`) that the vector channel searches instead of the
  content vectors. The window vector is arithmetic on stored content vectors:
  no extra embedding.

Neighbours more sensitive than the memory are left out of its window, so a
private or secret text never becomes searchable through a normal memory.
Measured on LoCoMo in docs/retrieval.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt

from memory.errors import InvalidInputError
from memory.types import SENSITIVITY_LEVELS, MemoryItem

__all__ = [
    "WINDOW",
    "LEXICAL_FIELDS",
    "field_weights",
    "MONTHS",
    "time_words",
    "window_model",
    "window_neighbours",
    "window_text",
    "window_vector",
]

#: Memories on each side of a memory in its thread that form its context window.
WINDOW = 2
#: Month names as the time words spell them (index 0 is January).
MONTHS: tuple[str, ...] = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_WINDOW_SUFFIX = "+window"
#: Fields of the lexical index, in the order backends store them.
LEXICAL_FIELDS: tuple[str, ...] = ("content", "window", "time")


def field_weights(fields: Mapping[str, float] | None) -> tuple[float, ...]:
    """BM25 weights in :data:`LEXICAL_FIELDS` order; None means content only.

    Raises InvalidInputError for an unknown field or a negative or non-finite weight.
    """
    if fields is None:
        return (1.0, 0.0, 0.0)
    unknown = set(fields) - set(LEXICAL_FIELDS)
    if unknown:
        raise InvalidInputError(f"unknown lexical field(s) {sorted(unknown)}; known: {', '.join(LEXICAL_FIELDS)}")
    weights = tuple(float(fields.get(name, 0.0)) for name in LEXICAL_FIELDS)
    if any(not math.isfinite(w) or w < 0 for w in weights):
        raise InvalidInputError(f"lexical field weights must be finite and >= 0, got {dict(fields)}")
    return weights


def time_words(when: datetime) -> str:
    """``"8 May 2023"``: day, month name and year of ``when`` in UTC."""
    moment = when.astimezone(UTC) if when.tzinfo is not None else when
    return f"{moment.day} {MONTHS[moment.month - 1]} {moment.year}"


def window_model(model: str) -> str:
    """Name of the vector space holding the window vectors of ``model``'s space."""
    return f"{model}{_WINDOW_SUFFIX}"


def window_neighbours(sequence: Sequence[MemoryItem], index: int, size: int = WINDOW) -> list[MemoryItem]:
    """The memories within ``size`` places of ``sequence[index]`` (a thread in order), itself excluded.

    Neighbours more sensitive than the memory are skipped (they are not
    replaced by farther ones, so a window never reaches further because of them).
    """
    item = sequence[index]
    level = SENSITIVITY_LEVELS[item.sensitivity]
    lo, hi = max(index - size, 0), min(index + size + 1, len(sequence))
    return [
        other
        for position, other in enumerate(sequence[lo:hi], lo)
        if position != index and SENSITIVITY_LEVELS[other.sensitivity] <= level
    ]


def window_text(item: MemoryItem, neighbours: Sequence[MemoryItem]) -> str:
    """The lexical window field: the memory's own ``context`` (if any), then its neighbours' contents."""
    parts = [item.context] if item.context else []
    parts.extend(n.content for n in neighbours)
    return "\n".join(parts)


def window_vector(
    own: npt.NDArray[np.float32], neighbours: Sequence[npt.NDArray[np.float32]]
) -> npt.NDArray[np.float32]:
    """``unit(own + unit(own + Σ neighbours))`` for unit vectors; ``own`` when there are no neighbours."""
    own = np.asarray(own, dtype=np.float32)
    if not neighbours:
        return own.copy()
    mean = own + np.sum(np.stack([np.asarray(n, dtype=np.float32) for n in neighbours]), axis=0)
    norm = float(np.linalg.norm(mean))
    combined = own + (mean / norm if norm > 0 else mean)
    norm = float(np.linalg.norm(combined))
    return (combined / norm if norm > 0 else own).astype(np.float32)
