"""The SQLite :class:`~memory.backends.feedback.FeedbackStore` (tables of migration 0011_feedback).

Runs on its backend's connection, lock, immediate transactions (which also
serialise version numbering) and error mapping.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory.backends.feedback_sql import SQLFeedbackStore

if TYPE_CHECKING:
    from memory.backends.sqlite.backend import SQLiteBackend

__all__ = ["SQLiteFeedbackStore"]


class SQLiteFeedbackStore(SQLFeedbackStore):
    """Conversation records and prompt versions in ``feedback_records`` and ``prompt_versions``."""

    def __init__(self, backend: SQLiteBackend) -> None:
        """Bind to ``backend``."""
        super().__init__(backend._read, backend._write)
