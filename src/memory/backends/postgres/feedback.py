"""The PostgreSQL :class:`~memory.backends.feedback.FeedbackStore` (tables of migration 0010_feedback).

Keyed by namespace first, like every table of this backend (shardable by
namespace). Runs on its backend's pool, transactions and error mapping; a
transaction-scoped advisory lock per (namespace, prompt name) serialises
version numbering and promotion across processes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory.backends.feedback_sql import SQLFeedbackStore
from memory.backends.postgres.sql import storable
from memory.errors import InvalidInputError

if TYPE_CHECKING:
    from memory.backends.postgres.backend import PostgresBackend

__all__ = ["PostgresFeedbackStore"]


class PostgresFeedbackStore(SQLFeedbackStore):
    """Conversation records and prompt versions in ``feedback_records`` and ``prompt_versions``."""

    _mark = "%s"

    def __init__(self, backend: PostgresBackend) -> None:
        """Bind to ``backend``."""
        super().__init__(backend._read, backend._tx)

    def _lock_prompt(self, conn: Any, namespace: str, name: str) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 7361))", (f"{namespace}\x1f{name}",))

    def _check_storable(self, *values: str | None) -> None:
        if not all(storable(v) for v in values if v is not None):
            raise InvalidInputError("feedback records and prompts cannot hold NUL characters")
