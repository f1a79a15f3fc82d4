"""Add entries stored by reference to their item: the ledger's ``after`` without the copy (pure).

An ``add`` entry's ``after`` is the item as inserted, which is what the
items row holds until the item first changes. The SQL stores therefore keep
that ``after``, when they can, as a small marker instead of the whole
snapshot (issue 22)::

    {"$item": 1, "access_count": 0, "accessed_at": null, "embedding_model": "...",
     "embedding_status": "done", "embedding_error": null}

``"$item"`` (:data:`ITEM_REF_KEY`, no item field starts with ``$``) says
"the item's own state", ``1`` is the format's version. The other keys are
the :data:`VOLATILE_FIELDS` as they were at the add: the item fields that
change *without* a ledger entry (``record_access``; the embedding queue and
``set_vectors``/``mark_embedding``), so the later state cannot give them back.

Reading resolves a marker (:func:`resolve_item_ref`): the item's state right
after the add is the ``before`` of its next ledger entry that has one (every
other change of an item is ledgered with its ``before``: update, supersede,
delete, expire, forget_all), or else the current items row; the marker's
volatile values are laid over it. Every read of ledger rows resolves, so
``history()`` and ``iter_ledger()`` give what a full snapshot would.

A marker is only written when resolving it against the inserted item gives
back the entry's ``after`` exactly (:func:`item_ref`); anything else (an
``after`` that differs from the item, as ``memory migrate`` writes for an
item changed since its add, other ops, raw copies through ``write_ledger``)
is stored whole, and rows written before markers existed are full snapshots
that read as they always did. A write that changes an item field outside
:data:`VOLATILE_FIELDS` without a ledger entry would break the resolution:
``tests/backends/test_ledger_markers.py`` checks every ``UPDATE items`` of the
package against this list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["ITEM_REF_KEY", "ITEM_REF_VERSION", "VOLATILE_FIELDS", "is_item_ref", "item_ref", "resolve_item_ref"]

#: The key that marks an ``after`` stored by reference to the item's state.
ITEM_REF_KEY = "$item"
#: The marker format's version (the value of :data:`ITEM_REF_KEY`).
ITEM_REF_VERSION = 1
#: Item fields that change without a ledger entry: a marker keeps their add-time values.
VOLATILE_FIELDS: tuple[str, ...] = (
    "access_count", "accessed_at", "embedding_model", "embedding_status", "embedding_error",
)  # fmt: skip


def is_item_ref(after: object) -> bool:
    """True when a stored ``after`` is a marker (:data:`ITEM_REF_KEY`), not a snapshot."""
    return isinstance(after, dict) and ITEM_REF_KEY in after


def resolve_item_ref(marker: Mapping[str, Any], base: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The ``after`` a marker stands for: ``base`` (the item's later state) with the marker's volatile values.

    ``base`` is the snapshot of the item's next ``before`` or its current
    row; None (neither exists, which a consistent store never shows) gives None.
    """
    if base is None:
        return None
    resolved = dict(base)
    for name in VOLATILE_FIELDS:
        if name in marker:
            resolved[name] = marker[name]
    return resolved


def item_ref(after: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any] | None:
    """The marker to store for an add entry's ``after``, given ``current``, the snapshot of the item inserted.

    None when the marker would not read back as ``after``: a key differs,
    or a value outside :data:`VOLATILE_FIELDS` (then ``after`` is stored whole).
    """
    if after.keys() != current.keys() or not all(name in after for name in VOLATILE_FIELDS):
        return None
    marker: dict[str, Any] = {ITEM_REF_KEY: ITEM_REF_VERSION}
    marker.update((name, after[name]) for name in VOLATILE_FIELDS)
    if resolve_item_ref(marker, current) != after:
        return None
    return marker
