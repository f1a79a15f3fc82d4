"""Secret clearance rules shared by the read paths (pure functions, no I/O).

The policy (docs/security.md): a caller whose clearance is below an item's
sensitivity learns nothing about it — not its text, not its existence. Reads
filter by clearance in the backends (:class:`~memory.filters.Filter`); what
cannot be filtered there (ledger snapshots, relations supported by memories)
is decided here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory.types import SENSITIVITY_LEVELS, LedgerEntry

__all__ = ["allows", "latest_sensitivity", "redact_history"]


def allows(clearance: str, sensitivity: object) -> bool:
    """Whether a caller with ``clearance`` may see something of ``sensitivity`` (unknown levels: no)."""
    level = SENSITIVITY_LEVELS.get(sensitivity, 3) if isinstance(sensitivity, str) else 3
    return level <= SENSITIVITY_LEVELS[clearance]


def latest_sensitivity(entries: Sequence[LedgerEntry]) -> str:
    """The sensitivity of a memory's last recorded state (after its last change, or before its deletion).

    Audit entries (``op="embed"``) record no state and are read past; a history
    of audit entries only (a message's) takes the sensitivity they noted.
    """
    for entry in reversed(entries):
        state = entry.after if entry.after is not None else entry.before
        if state is not None and entry.op != "embed":
            return str(state.get("sensitivity", "normal"))
    for entry in reversed(entries):
        if entry.after is not None:
            return str(entry.after.get("sensitivity", "normal"))
    return "normal"


def _redacted(entry: LedgerEntry, side: str, state: dict[str, Any]) -> dict[str, Any]:
    return {"id": entry.item_id, "sensitivity": state.get("sensitivity"), "redacted": True}


def redact_history(entries: Sequence[LedgerEntry], clearance: str) -> list[LedgerEntry] | None:
    """A memory's history as a caller with ``clearance`` may see it, or None when it must look unknown.

    None when the memory's last state is above ``clearance`` (a secret, or a
    secret when deleted): the history of a secret is as unknown as the secret.
    Otherwise every snapshot above ``clearance`` is replaced by a stub, and so
    is every snapshot that holds the content or context of such a snapshot
    (text once secret stays hidden though it was stored as normal first).
    """
    if not entries:
        return None
    if not allows(clearance, latest_sensitivity(entries)):
        return None
    hidden: set[str] = set()
    for entry in entries:
        for state in (entry.before, entry.after):
            if state is not None and not allows(clearance, state.get("sensitivity", "normal")):
                hidden.update(str(state[k]) for k in ("content", "context") if state.get(k))
    out: list[LedgerEntry] = []
    for entry in entries:
        changes: dict[str, Any] = {}
        for side in ("before", "after"):
            state = getattr(entry, side)
            if state is None:
                continue
            if not allows(clearance, state.get("sensitivity", "normal")) or any(
                state.get(k) and str(state[k]) in hidden for k in ("content", "context")
            ):
                changes[side] = _redacted(entry, side, state)
        if changes and entry.reason is not None:
            changes["reason"] = None  # a reason may quote the hidden text
        out.append(entry.model_copy(update=changes) if changes else entry)
    return out
