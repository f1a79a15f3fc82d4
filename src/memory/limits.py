"""The one source of input limits: the library enforces them, the server schemas advertise them.

Every input that drives the cost of a request has a bound here, checked
before any work is done (:mod:`memory.records` and the facade), and the
pydantic models of the servers (:mod:`memory.server.models`, hence the
OpenAPI schema and the MCP tool schemas) are built from the same numbers, so
a request the schema accepts is never refused for its size, and the other way
round. Content length is also a setting (``limits.max_content_chars``); the
constant here is its default and the largest value a schema advertises.
"""

from __future__ import annotations

__all__ = [
    "MAX_CONTENT_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_LIMIT",
    "MAX_BATCH",
    "MAX_NAME_CHARS",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "MAX_LIST_ITEMS",
    "MAX_ITEM_CHARS",
    "MAX_METADATA_BYTES",
    "MAX_METADATA_DEPTH",
    "MAX_METADATA_FILTERS",
    "MAX_REASON_CHARS",
    "MAX_KIND_CHARS",
]

#: Characters of one memory's content (and context) after normalisation; ``limits.max_content_chars``.
MAX_CONTENT_CHARS = 32_000
#: Characters of a search query.
MAX_QUERY_CHARS = 4_000
#: Results per page or search.
MAX_LIMIT = 1_000
#: Memories per batch write.
MAX_BATCH = 1_000
#: Characters of a scope name (namespace, user, agent, thread) or an id.
MAX_NAME_CHARS = 200
#: Distinct tags per memory, and tags in one filter (checked before duplicates are removed).
MAX_TAGS = 64
#: Characters of one tag.
MAX_TAG_CHARS = 100
#: Entries of keywords, entities, source_ids and of filter lists (kinds, roles, predicates).
MAX_LIST_ITEMS = 256
#: Characters of one keyword, entity name or source id.
MAX_ITEM_CHARS = 200
#: UTF-8 bytes of a metadata object once encoded as JSON.
MAX_METADATA_BYTES = 64_000
#: Nesting depth of a metadata object (the object itself is depth 1).
MAX_METADATA_DEPTH = 32
#: Keys of a metadata filter.
MAX_METADATA_FILTERS = 64
#: Characters of a change reason recorded in the history.
MAX_REASON_CHARS = 2_000
#: Characters of a kind (a lowercase identifier).
MAX_KIND_CHARS = 32
