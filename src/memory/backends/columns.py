"""The item and ledger columns every SQL backend stores, named after the model fields (shared by the codecs)."""

from __future__ import annotations

__all__ = ["ITEM_COLUMNS", "JSON_COLUMNS", "LEDGER_SELECT", "TIME_COLUMNS"]

#: Columns of ``items`` that hold MemoryItem fields, in MemoryItem field names.
ITEM_COLUMNS: tuple[str, ...] = (
    "id", "namespace", "user", "agent", "thread", "kind", "content", "context", "tags", "keywords",
    "entities", "metadata", "source_ids", "importance", "created_at", "updated_at", "accessed_at",
    "access_count", "valid_from", "valid_to", "sensitivity", "expires_at", "content_hash",
    "embedding_model", "embedding_status", "embedding_error",
)  # fmt: skip
#: Columns stored as JSON text.
JSON_COLUMNS = frozenset({"tags", "keywords", "entities", "metadata", "source_ids"})
#: Columns holding datetimes.
TIME_COLUMNS = frozenset({"created_at", "updated_at", "accessed_at", "valid_from", "valid_to", "expires_at"})
#: Columns of ``ledger`` in :class:`~memory.types.LedgerEntry` order (``before``/``after`` quoted for PostgreSQL).
LEDGER_SELECT = 'id, namespace, item_id, op, at, "before", "after", reason'
