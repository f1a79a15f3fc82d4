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

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt

from memory.index_layout import LEXICAL_FIELDS, MONTHS, WINDOW, field_weights, window_model
from memory.retrieval.text import content_words
from memory.temporal import resolve_time_expressions
from memory.types import SENSITIVITY_LEVELS, MemoryItem

__all__ = [
    "WINDOW",
    "LEXICAL_FIELDS",
    "field_weights",
    "MONTHS",
    "CONTEXT_WORDS",
    "WINDOW_RULE",
    "content_words",
    "context_share",
    "share_of",
    "event_time_words",
    "time_words",
    "window_model",
    "window_neighbours",
    "window_text",
    "window_vector",
]

#: Content words up to which a memory gets its whole context window (:func:`context_share`).
CONTEXT_WORDS = 30
#: The version of the rule windows are computed by; a store whose windows were computed by another
#: is re-windowed in full at its next write (:class:`memory.windows.Windows`). 2: the share counts
#: the neighbours' length too (2026-11-25).
WINDOW_RULE = "2"


def time_words(when: datetime) -> str:
    """``"8 May 2023"``: day, month name and year of ``when`` in UTC."""
    moment = when.astimezone(UTC) if when.tzinfo is not None else when
    return f"{moment.day} {MONTHS[moment.month - 1]} {moment.year}"


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


def event_time_words(content: str, said_at: datetime) -> str:
    """Time words of the events ``content`` mentions, resolved against when it was said.

    "Yesterday I went hiking", said on 17 March 2022, gives ``"16 March 2022"``;
    a week, month or span gives the month and year of its first and last day
    (``"March 2022"``), a year gives the year. Duplicates are dropped. See
    :mod:`memory.temporal` for the expressions understood.
    """
    moment = said_at.astimezone(UTC) if said_at.tzinfo is not None else said_at
    out: dict[str, None] = {}
    for mention in resolve_time_expressions(content, moment):
        last = mention.end - timedelta(days=1)
        if mention.granularity == "day" and mention.end - mention.start <= timedelta(days=1):
            out[f"{mention.start.day} {MONTHS[mention.start.month - 1]} {mention.start.year}"] = None
        elif mention.granularity == "year":
            out[str(mention.start.year)] = None
        else:
            for moment_ in (mention.start, last):
                out[f"{MONTHS[moment_.month - 1]} {moment_.year}"] = None
    return " ".join(out)


def context_share(content: str, neighbours: Sequence[str] = ()) -> float:
    """How much a memory's context window counts beside its own text: ``min(1, CONTEXT_WORDS / n)``.

    ``n`` is the larger of the memory's content words (stopwords left out)
    and the mean content words of its ``neighbours`` (the window's other
    turns). A window is the context of a dialogue of short turns: a short
    reply ("Yes, two weekends ago!") among short turns is understood through
    them and gets the whole window. A turn long enough to stand on its own
    gets less and less of it, so a long answer is not blurred into the turns
    around it; and so does a short turn between long ones (a user's question
    between an assistant's essays), whose window would otherwise be mostly
    the essays' words and make it match whatever they say. Measured in
    docs/retrieval.md on LoCoMo (short turns) and LongMemEval (long ones).
    """
    return share_of(content_words(content), [content_words(t) for t in neighbours])


def share_of(own_words: int, neighbour_words: Sequence[int] = ()) -> float:
    """:func:`context_share` from word counts already made (the memory's and its neighbours' content words)."""
    n = float(own_words)
    if neighbour_words:
        n = max(n, sum(neighbour_words) / len(neighbour_words))
    return 1.0 if n <= CONTEXT_WORDS else CONTEXT_WORDS / n


def window_text(
    item: MemoryItem,
    neighbours: Sequence[MemoryItem],
    share: float | None = None,
    facts: str = "",
    events: str | None = None,
) -> str:
    """The lexical window field: the memory's own ``context`` (if any), its neighbours' contents,
    its ``facts`` (:mod:`memory.retrieval.fact_key`), then the time words of the events it mentions
    (:func:`event_time_words`; pass ``events`` when already computed).

    The neighbours' contents are left out when the memory stands on its own
    (:func:`context_share` below one half; pass ``share`` when already computed).
    """
    parts = [item.context] if item.context else []
    if (context_share(item.content, [n.content for n in neighbours]) if share is None else share) >= 0.5:
        parts.extend(n.content for n in neighbours)
    if facts:
        parts.append(facts)
    if events is None:
        events = event_time_words(item.content, item.created_at)
    if events:
        parts.append(events)
    return "\n".join(parts)


def window_vector(
    own: npt.NDArray[np.float32], neighbours: Sequence[npt.NDArray[np.float32]], context: float = 1.0
) -> npt.NDArray[np.float32]:
    """``unit(own + context · unit(own + Σ neighbours))`` for unit vectors; ``own`` when there are no neighbours.

    ``context`` (0..1) is how much the window counts beside the memory's own
    vector (:func:`context_share`); 0 gives the own vector.
    """
    own = np.asarray(own, dtype=np.float32)
    if not neighbours or context <= 0:
        return own.copy()
    # The neighbours summed in order, then the lengths as sqrt(v · v): the same float32 operations as
    # np.sum over their stack and np.linalg.norm, to the bit, at half the cost (one call per ingested turn).
    total = np.array(neighbours[0], dtype=np.float32)
    for neighbour in neighbours[1:]:
        total += np.asarray(neighbour, dtype=np.float32)
    mean = own + total
    norm = float(np.sqrt(mean.dot(mean)))
    combined = own + context * (mean / norm if norm > 0 else mean)
    norm = float(np.sqrt(combined.dot(combined)))
    return (combined / norm if norm > 0 else own).astype(np.float32)
