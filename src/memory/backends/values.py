"""The values the storage contract passes around: vectors, records to add, channel hits, orders.

Kept apart from :mod:`memory.backends.base` so the store contracts
(graph, episodic) and the Backend protocol that types them import these
values without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from memory.types import LedgerEntry, MemoryItem

__all__ = ["Vector", "NewWindow", "NewRecord", "AddResult", "ChannelHit", "RankFields", "VectorSpace", "ListOrder"]

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class NewWindow:
    """A new item's context window, computed by the library before the insert (:mod:`memory.windows`).

    ``text`` is the lexical ``window`` field; ``vector`` the item's vector in
    the window space ``model`` (registered beforehand), or None for none.
    """

    text: str
    model: str | None = None
    vector: Vector | None = None


@dataclass(frozen=True, slots=True)
class NewRecord:
    """An item to insert, its vector (None when not embedded), its ledger entry and its context window.

    ``window`` None stores the item with an empty window (a backend with a
    window index stores a given one with the row: ``Backend.add``).
    """

    item: MemoryItem
    vector: Vector | None
    ledger: LedgerEntry
    window: NewWindow | None = None


@dataclass(frozen=True, slots=True)
class AddResult:
    """Outcome of one insert: the id stored, and whether a new row was created."""

    id: str
    created: bool


@dataclass(frozen=True, slots=True)
class ChannelHit:
    """A candidate from one channel: item id and channel score (higher is better).

    ``fields``: the item's :class:`RankFields` when the channel read them with
    the hit at no extra cost (recall then does not read them again); None
    otherwise.
    """

    id: str
    score: float
    fields: RankFields | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class RankFields:
    """What ranking reads of an item besides its channel scores (:func:`memory.retrieval.fusion.score_item`)."""

    created_at: datetime
    importance: float
    #: The chat side that said it (``metadata["role"]`` as stored; see :mod:`memory.retrieval.speaker`).
    role: Any = None
    #: The named speaker that said it (``metadata["speaker"]`` as stored; see :mod:`memory.retrieval.speaker`).
    speaker: Any = None


@dataclass(frozen=True, slots=True)
class VectorSpace:
    """An embedding model registered in a store, with its dimension."""

    model: str
    dim: int


@dataclass(frozen=True, slots=True)
class ListOrder:
    """Sort order of a listing: newest first by default; keyset cursor after (created_at, id)."""

    newest_first: bool = True
    after_created_at: datetime | None = None
    after_id: str | None = None
