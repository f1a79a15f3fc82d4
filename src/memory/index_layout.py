"""The layout of the search index that storage and retrieval share: pure constants and checks.

What a memory's index key is made of — the lexical fields in the order the
backends store them and their BM25 weights, the month names its time words
use, how many neighbours form a context window and the name of the vector
space holding window vectors. Backends build the index with these; retrieval
(:mod:`memory.retrieval.window`) builds the keys and queries with them. Kept
apart from both, so storage does not import the retrieval package.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from memory.errors import InvalidInputError

__all__ = ["WINDOW", "MONTHS", "LEXICAL_FIELDS", "LEXICAL_EXACT_DOCS", "field_weights", "window_model"]

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
#: Documents (counted once per query term) up to which an engine ranks a lexical match whole; past
#: it, it bounds its work, and a search with ``exact_only`` returns nothing (``Backend.search_lexical``).
LEXICAL_EXACT_DOCS = 10_000


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


def window_model(model: str) -> str:
    """Name of the vector space holding the window vectors of ``model``'s space."""
    return f"{model}{_WINDOW_SUFFIX}"
