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
#: Texts longer than the embedder reads are embedded in chunks and indexed in full for the lexical channel.
MAX_CONTENT_CHARS = 500_000
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
#: Characters of a link type (relates_to, follows, …): a name's characters, fewer of them.
MAX_LINK_TYPE_CHARS = 64

#: Seconds of a time to live (about 100 years: later expiry times leave the calendar's safe range).
MAX_TTL_SECONDS = 3_153_600_000.0

# Patterns the schemas advertise for the character rules the library checks (JSON Schema
# ``pattern``: a search, anchored here). No control characters; not blank.
_NAME_CHARS = r"[^\x00-\x08\x0a-\x1f\x7f]"  # tab allowed; no newline, no other control character
_TEXT_CHARS = r"[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"  # tab, newline and carriage return allowed
# "Visible": not whitespace in Python's reading nor in JSON Schema's (ECMA: U+FEFF), not a control character.
VISIBLE = r"[^\s\x00-\x1f\x7f\x85\ufeff]"
_VISIBLE = VISIBLE
#: A scope name, an id, a tag: no control characters or line breaks, not blank.
NAME_PATTERN = rf"^{_NAME_CHARS}*{_VISIBLE}{_NAME_CHARS}*$"
#: Memory content, context, a query: no control characters except tab and line breaks, not blank.
TEXT_PATTERN = rf"^{_TEXT_CHARS}*{_VISIBLE}{_TEXT_CHARS}*$"
#: A kind: a lowercase identifier.
KIND_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
#: A metadata key.
METADATA_KEY_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,63}$"
#: A listing cursor: the position (seconds since the epoch, then the id) just after the last item of a page.
CURSOR_PATTERN = (
    r"^(?:1?\d{1,11}|2[0-4]\d{10}|25[0-2]\d{9}|253[0-3]\d{8}"  # seconds up to 9999-12-05
    r"|-(?:[1-5]?\d{1,10}|6[01]\d{9}|62[01][0-2]\d{7}))"  # and back to 0001-01-03
    r"(?:\.\d{1,6})?~[^\x00-\x1f\x7f]{1,200}$"
)
#: Characters of a cursor.
MAX_CURSOR_CHARS = 240
#: A message role: a lowercase word (user, assistant, system, tool, …).
ROLE_PATTERN = r"^[a-z][a-z0-9_\-]{0,31}$"
#: Text that may hold anything but NUL (a block's value, a change's reason).
NO_NUL_PATTERN = r"^[^\x00]*$"
#: A working-memory block label: a lowercase identifier.
LABEL_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"
#: Characters of a feedback text (feedback, example, suggestion).
MAX_FEEDBACK_CHARS = 20_000
#: A prompt version number.
MAX_VERSION = 2_147_483_647
#: The largest turn number a message query may name (a turn is a 64-bit integer in every store).
MAX_TURN = 2**63 - 1
