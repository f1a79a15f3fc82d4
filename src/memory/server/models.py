"""Input and output models of the server operations (the JSON schemas of MCP tools and REST bodies).

Inputs forbid unknown fields; they do light typing only — the values are
validated by :class:`~memory.Memory`, whose errors the servers pass on.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationInfo, field_validator

from memory import limits as lim
from memory.backends.graph import Entity, Relation
from memory.context.types import Trace
from memory.episodic.types import Block, Message, MessageHit, ThreadInfo
from memory.llms.base import Usage
from memory.llms.schemas import EntityOut, RelationOut
from memory.retrieval.config import PRESETS
from memory.types import Hit, LedgerEntry, MemoryItem

__all__ = [
    "Clearance",
    "InputModel",
    "RememberIn",
    "RememberOut",
    "RememberBatchIn",
    "RememberBatchOut",
    "RecallIn",
    "RecallOut",
    "GetIn",
    "UpdateIn",
    "ForgetIn",
    "ForgetAllIn",
    "DeletedOut",
    "ListIn",
    "ListOut",
    "HistoryIn",
    "HistoryOut",
    "StatsIn",
    "NoArgs",
    "NamespacesOut",
    "EmbedPendingIn",
    "EmbedPendingOut",
    "ExportIn",
    "AppendMessageIn",
    "RecentMessagesIn",
    "MessagesOut",
    "SearchConversationIn",
    "MessageHitsOut",
    "ThreadsIn",
    "ThreadsOut",
    "SyncIn",
    "SyncOut",
    "SyncStatusOut",
    "BlocksIn",
    "BlocksOut",
    "WriteBlockIn",
    "GetContextIn",
    "GetContextOut",
    "LinkIn",
    "QueryGraphIn",
    "GraphOut",
    "FactsAboutIn",
    "FactsOut",
    "ExtractIn",
    "ExtractOut",
    "EndConversationIn",
    "EndConversationOut",
    "TiersRetrieveIn",
]

Clearance = Literal["normal", "private", "secret"]

MetadataScalar = str | int | float | bool | None

# The limits the library enforces (memory.limits), advertised by every schema built from these.
_NAME_RULES: dict[str, Any] = {"min_length": 1, "max_length": lim.MAX_NAME_CHARS, "pattern": lim.NAME_PATTERN}
#: The rules of a scope name or id, for other operation modules (the inspector's) to advertise the same.
NAME_RULES = _NAME_RULES
Tag = Annotated[str, StringConstraints(min_length=1, max_length=lim.MAX_TAG_CHARS, pattern=lim.NAME_PATTERN)]
Kind = Annotated[str, StringConstraints(pattern=lim.KIND_PATTERN)]
Term = Annotated[str, StringConstraints(min_length=1, max_length=lim.MAX_ITEM_CHARS, pattern=lim.VISIBLE)]
MetadataKey = Annotated[str, StringConstraints(pattern=lim.METADATA_KEY_PATTERN)]
Text = Annotated[str, StringConstraints(min_length=1, max_length=lim.MAX_CONTENT_CHARS, pattern=lim.TEXT_PATTERN)]
Query = Annotated[str, StringConstraints(min_length=1, max_length=lim.MAX_QUERY_CHARS, pattern=lim.VISIBLE)]
Reason = Annotated[str, StringConstraints(max_length=lim.MAX_REASON_CHARS, pattern=lim.NO_NUL_PATTERN)]
Tags = Annotated[list[Tag], Field(max_length=lim.MAX_TAGS)]
Role = Annotated[str, StringConstraints(pattern=lim.ROLE_PATTERN)]
Label = Annotated[str, StringConstraints(pattern=lim.LABEL_PATTERN)]
_KEYS_ONLY: dict[str, Any] = {"additionalProperties": False}  # keys must match the patternProperties
Terms = Annotated[list[Term], Field(max_length=lim.MAX_LIST_ITEMS)]
Kinds = Annotated[list[Kind], Field(max_length=lim.MAX_LIST_ITEMS)]


def _numeric(annotation: object) -> bool:
    return annotation in (int, float) or any(arg in (int, float) for arg in get_args(annotation))


def _boolean(annotation: object) -> bool:
    """A yes-or-no field: ``bool`` or ``bool | None``."""
    return annotation is bool or set(get_args(annotation)) == {bool, type(None)}


def _dated(annotation: object) -> bool:
    return annotation is datetime or datetime in get_args(annotation)


_NUMBER = re.compile(r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$")


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: True where the values arrive as text (a REST query string): there ``"true"`` and ``"false"`` are booleans.
    from_text: ClassVar[bool] = False

    @field_validator("*", mode="before")
    @classmethod
    def _json_types_as_the_schema_says(cls, value: object, info: ValidationInfo) -> object:
        """``true`` is not the number 1 here, nor 0 or ``"no"`` false: the schemas say boolean, integer or number,
        and so does the check (a query string's text is read as its type says)."""
        if info.field_name is None:
            return value
        annotation = cls.model_fields[info.field_name].annotation
        if isinstance(value, bool) and _numeric(annotation):
            raise ValueError("a boolean is not a number")
        if _boolean(annotation) and value is not None and not isinstance(value, bool):
            if not (cls.from_text and isinstance(value, str)):
                raise ValueError("give true or false")
        if _dated(annotation) and (
            isinstance(value, (int, float)) or (isinstance(value, str) and _NUMBER.match(value))
        ):
            raise ValueError("give a date-time in ISO 8601 (e.g. 2026-01-02T03:04:05Z), not a number")
        return value


InputModel = _In  # the base of every input model (the REST layer derives body and query models from it)


def text_input(model: type[BaseModel]) -> type[BaseModel]:
    """``model`` for values that arrive as text (a REST query string): ``"true"`` and ``"false"`` read as booleans."""
    namespace = {"__annotations__": {"from_text": ClassVar[bool]}, "from_text": True, "__doc__": model.__doc__}
    return type(f"{model.__name__}Text", (model,), namespace)


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


_USER = Field(None, description="The user the memory is about or belongs to (exact match).", **_NAME_RULES)
_AGENT = Field(None, description="The agent that owns the memory (exact match).", **_NAME_RULES)
_THREAD = Field(None, description="The conversation thread or session (exact match).", **_NAME_RULES)
_CLEARANCE: Any = Field(
    "private",
    description="Highest sensitivity to include. 'secret' needs a caller with secret clearance.",
)
_ID = Field(..., description="The memory id (as returned by remember or recall).", **_NAME_RULES)


class RememberIn(_In):
    """What to store."""

    content: Text = Field(..., description="The text to remember: one fact, preference or note.")
    user: str | None = _USER
    agent: str | None = _AGENT
    thread: str | None = _THREAD
    kind: Kind = Field("fact", description="fact | conversation | document | knowledge | trait | system | …")
    context: Text | None = Field(None, description="How or why this was learned.")
    tags: Tags = Field(default_factory=list, description="Labels for filtering.")
    keywords: Terms = Field(default_factory=list, description="Search keywords.")
    entities: Terms = Field(default_factory=list, description="Names of the people, places, things mentioned.")
    metadata: dict[MetadataKey, Any] = Field(
        default_factory=dict,
        json_schema_extra=_KEYS_ONLY,
        description=f"Free JSON object kept with the memory (at most {lim.MAX_METADATA_BYTES} bytes as JSON, "
        f"{lim.MAX_METADATA_DEPTH} levels deep).",
    )
    importance: float = Field(0.5, ge=0, le=1, description="0 (trivial) .. 1 (crucial); boosts recall ranking.")
    sensitivity: Clearance = Field("normal", description="'secret' memories are never returned without clearance.")
    ttl_seconds: float | None = Field(
        None, gt=0, le=lim.MAX_TTL_SECONDS, description="Forget automatically after this many seconds."
    )
    expires_at: datetime | None = Field(None, description="Forget automatically at this time (ISO 8601).")
    valid_from: datetime | None = Field(None, description="When the fact became true.")
    valid_to: datetime | None = Field(None, description="When the fact stopped being true.")


class RememberOut(_Out):
    """The stored memory's id (an existing id when the same content was already stored in the scope)."""

    id: str


class RememberBatchIn(_In):
    """Many memories in one transaction (all stored or none)."""

    items: list[RememberIn] = Field(..., min_length=1, max_length=lim.MAX_BATCH, description="The memories, in order.")


class RememberBatchOut(_Out):
    """The stored ids, in the order given."""

    ids: list[str]


class RecallIn(_In):
    """A search."""

    query: Query = Field(..., description="What to look for, in natural language.")
    limit: int = Field(10, ge=1, le=lim.MAX_LIMIT, description="How many memories to return.")
    user: str | None = _USER
    agent: str | None = _AGENT
    thread: str | None = _THREAD
    kinds: Kinds | None = Field(None, description="Only these kinds.")
    tags: Tags | None = Field(None, description="Only memories with any of these tags.")
    tags_all: Tags | None = Field(None, description="Only memories with all of these tags.")
    metadata: (
        Annotated[
            dict[MetadataKey, MetadataScalar], Field(max_length=lim.MAX_METADATA_FILTERS, json_schema_extra=_KEYS_ONLY)
        ]
        | None
    ) = Field(None, description="Only memories whose metadata has these values.")
    since: datetime | None = Field(None, description="Only memories created at or after this time.")
    until: datetime | None = Field(None, description="Only memories created before this time.")
    clearance: Clearance = _CLEARANCE
    include_invalid: bool = Field(False, description="Also facts whose valid_to has passed (closed or superseded).")
    retrieval: str | None = Field(
        None,
        description="Retrieval preset name (e.g. balanced, lexical, vector).",
        json_schema_extra={"enum": [*PRESETS, None]},
    )

    @field_validator("retrieval")
    @classmethod
    def _known_preset(cls, value: str | None) -> str | None:
        if value is not None and value not in PRESETS:
            raise ValueError(f"unknown retrieval preset {value!r}; known: {', '.join(PRESETS)}")
        return value


class RecallOut(_Out):
    """Memories best first, each with its score and which channels found it."""

    hits: list[Hit]


class GetIn(_In):
    """One memory by id."""

    id: str = _ID
    clearance: Clearance = _CLEARANCE


class UpdateIn(_In):
    """Fields to change; only the fields given are changed (null clears an optional field).

    ``content``, ``kind``, ``importance`` and ``sensitivity`` always have a
    value: they take no null (leave them out to keep them).
    """

    id: str = _ID
    content: Text = Field(None, description="New text (re-embedded); not null.")  # type: ignore[assignment]
    kind: Kind = Field(None, description="Not null.")  # type: ignore[assignment]
    context: Text | None = None
    tags: Tags | None = None
    keywords: Terms | None = None
    entities: Terms | None = None
    metadata: dict[MetadataKey, Any] | None = Field(
        None, description="Replaces the whole metadata object.", json_schema_extra=_KEYS_ONLY
    )
    importance: float = Field(None, ge=0, le=1, description="0 .. 1; not null.")  # type: ignore[assignment]
    sensitivity: Clearance = Field(None, description="Not null.")  # type: ignore[arg-type]
    expires_at: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = Field(None, description="Close a fact that stopped being true (kept in history).")
    reason: Reason | None = Field(None, description="Why, recorded in the history.")


class ForgetIn(_In):
    """A memory to delete."""

    id: str = _ID
    reason: Reason | None = Field(None, description="Why, recorded in the history.")


class ForgetAllIn(_In):
    """Delete every memory of a scope (secret, expired and closed ones too)."""

    confirm: bool = Field(
        ..., description="Must be true: this deletes every memory in the scope.", json_schema_extra={"const": True}
    )
    user: str | None = _USER
    agent: str | None = _AGENT
    thread: str | None = _THREAD
    reason: Reason | None = None


class DeletedOut(_Out):
    """How many memories were deleted."""

    deleted: int


class ListIn(_In):
    """A page of memories, newest first."""

    limit: int = Field(50, ge=1, le=lim.MAX_LIMIT, description="Page size.")
    cursor: str | None = Field(
        None,
        description="next_cursor of the previous page.",
        max_length=lim.MAX_CURSOR_CHARS,
        pattern=lim.CURSOR_PATTERN,
    )
    oldest_first: bool = False
    user: str | None = _USER
    agent: str | None = _AGENT
    thread: str | None = _THREAD
    kinds: Kinds | None = None
    tags: Tags | None = None
    tags_all: Tags | None = None
    since: datetime | None = None
    until: datetime | None = None
    clearance: Clearance = _CLEARANCE
    include_expired: bool = False
    include_invalid: bool = Field(False, description="Include facts whose valid_to has passed.")


class ListOut(_Out):
    """One page; pass next_cursor back to continue (null on the last page)."""

    items: list[MemoryItem]
    next_cursor: str | None = None


class HistoryIn(_In):
    """A memory's history."""

    id: str = _ID
    clearance: Clearance = Field(
        "private",
        description="Snapshots above this sensitivity (and earlier ones with the same text) are redacted; "
        "the history of a memory that is secret is not found without secret clearance.",
    )


class HistoryOut(_Out):
    """Every recorded change, oldest first (kept after deletion). Secret snapshots are redacted without clearance."""

    entries: list[LedgerEntry]


class StatsIn(_In):
    """Counts of a scope."""

    user: str | None = _USER
    agent: str | None = _AGENT
    thread: str | None = _THREAD
    clearance: Clearance = Field(
        "private", description="Count memories up to this sensitivity; secrets need a caller with secret clearance."
    )


class NoArgs(_In):
    """No arguments."""


class NamespacesOut(_Out):
    """Namespaces that hold memories and that the caller may use."""

    namespaces: list[str]


class EmbedPendingIn(_In):
    """Embed memories left pending (e.g. after an embedder outage)."""

    limit: int = Field(1000, ge=1, le=1_000_000, description="At most this many.")


class EmbedPendingOut(_Out):
    """How many memories got vectors."""

    embedded: int


class ExportIn(_In):
    """Which memories to export as JSONL (expired ones never)."""

    user: str | None = _USER
    agent: str | None = _AGENT
    thread: str | None = _THREAD
    kinds: Kinds | None = None
    tags: Tags | None = None
    tags_all: Tags | None = None
    since: datetime | None = None
    until: datetime | None = None
    clearance: Clearance = _CLEARANCE


# -- conversations (episodic messages) and the sync job ----------------------


class AppendMessageIn(_In):
    """One text message to add to a thread."""

    thread: str = Field(..., description="The conversation thread or session id.", **_NAME_RULES)
    content: Text = Field(..., description="The message text.")
    role: Role = Field("user", description="user | assistant | system | tool | …")
    speaker: str | None = Field(None, description="Who spoke (a name), when not implied by the role.", **_NAME_RULES)
    user: str | None = _USER
    agent: str | None = _AGENT
    tags: Tags = Field(default_factory=list)
    metadata: dict[MetadataKey, Any] = Field(default_factory=dict, json_schema_extra=_KEYS_ONLY)
    sensitivity: Clearance = Field("normal", description="'secret' messages are never embedded or returned.")
    ttl_seconds: float | None = Field(
        None, gt=0, le=lim.MAX_TTL_SECONDS, description="Delete automatically after this many seconds."
    )
    embed: bool = Field(False, description="Embed now instead of leaving it to the sync job.")


class RecentMessagesIn(_In):
    """The latest messages of a thread."""

    thread: str = Field(..., description="The thread.", **_NAME_RULES)
    n: int = Field(20, ge=1, le=1000, description="How many of the latest messages (returned oldest first).")
    clearance: Clearance = _CLEARANCE


class MessagesOut(_Out):
    """Messages in turn order."""

    messages: list[Message]


class SearchConversationIn(_In):
    """A search over conversation messages."""

    query: Query = Field(..., description="What to look for.")
    limit: int = Field(10, ge=1, le=1000)
    thread: str | None = _THREAD
    user: str | None = _USER
    agent: str | None = _AGENT
    roles: Annotated[list[Role], Field(max_length=lim.MAX_LIST_ITEMS)] | None = Field(
        None, description="Only messages with these roles."
    )
    since: datetime | None = None
    until: datetime | None = None
    clearance: Clearance = _CLEARANCE


class MessageHitsOut(_Out):
    """Messages best first, with scores."""

    hits: list[MessageHit]


class ThreadsIn(_In):
    """Threads of a namespace."""

    user: str | None = _USER
    agent: str | None = _AGENT
    limit: int = Field(100, ge=1, le=1000)


class ThreadsOut(_Out):
    """Threads, most recently active first."""

    threads: list[ThreadInfo]


class SyncIn(_In):
    """Run the episodic→semantic sync job (embed pending messages, then pending memories)."""

    dry_run: bool = Field(False, description="Only estimate the work; nothing is claimed or written.")
    max_batches: int | None = Field(None, ge=1, le=100_000, description="Stop after this many batches.")


class SyncOut(_Out):
    """What the run did (or, for a dry run, would do)."""

    dry_run: bool
    result: dict[str, Any]


class SyncStatusOut(_Out):
    """Pending counts by embedding status, claims in flight, and the job's cursor and last error."""

    status: dict[str, Any]


# -- working-memory blocks ----------------------------------------------------


class BlocksIn(_In):
    """The working-memory blocks of a scope."""

    user: str | None = _USER
    agent: str | None = _AGENT


class BlocksOut(_Out):
    """Blocks by label (the standard labels included, empty if never written)."""

    blocks: list[Block]


class WriteBlockIn(_In):
    """Replace a block's text, or append to it."""

    label: Label = Field(..., description="user_info, goals_and_status, important_context, … or your own label.")
    value: str = Field(
        ...,
        pattern=lim.NO_NUL_PATTERN,
        description="The text (the whole block, or what to add with mode=append).",
    )
    mode: Literal["replace", "append"] = "replace"
    user: str | None = _USER
    agent: str | None = _AGENT
    reason: Reason | None = Field(None, description="Why, recorded in the block's history.")


# -- context assembly ----------------------------------------------------------


class GetContextIn(_In):
    """What the next model call is about; the context is built for it under a token budget."""

    observation: Text = Field(..., description="The current user input (what the model must answer).")
    goal: str | None = Field(
        None, description="What the agent is trying to achieve, if known.", max_length=lim.MAX_CONTENT_CHARS
    )
    user: str | None = _USER
    agent: str | None = _AGENT
    thread: str | None = Field(
        None, description="The conversation thread: its recent turns are included.", **_NAME_RULES
    )
    system: str | None = Field(None, description="The system prompt to put first.", max_length=lim.MAX_CONTENT_CHARS)
    budget_tokens: int = Field(2000, ge=64, le=1_000_000, description="Token budget of the whole context.")
    model: str | None = Field(None, description="Model name; picks the tokenizer used to count tokens.")
    clearance: Clearance = _CLEARANCE


class GetContextOut(_Out):
    """Chat messages ready for the model (OpenAI shape) and the trace of what went in, what was cut and why."""

    messages: list[dict[str, Any]]
    trace: Trace


# -- knowledge graph and extraction (issue 5) -----------------------------------


class LinkIn(_In):
    """A typed edge from one memory to another."""

    id: str = Field(..., description="The source memory id.", **_NAME_RULES)
    target: str = Field(..., description="The target memory id.", **_NAME_RULES)
    type: str = Field("relates_to", description="The link type, e.g. relates_to, follows, contradicts.",
                      min_length=1, max_length=lim.MAX_LINK_TYPE_CHARS, pattern=lim.NAME_PATTERN)  # fmt: skip


class QueryGraphIn(_In):
    """Which part of the knowledge graph to return."""

    start: str | None = Field(None, description="Entity name (or alias) to start from; omit for the whole graph.",
                              **_NAME_RULES)  # fmt: skip
    depth: int = Field(1, ge=1, le=4, description="How many relations away from start to go.")
    predicates: list[str] | None = Field(None, description="Keep only relations with these predicates.")
    entity_types: list[str] | None = Field(None, description="Keep only entities of these types (person, place, …).")
    include_invalid: bool = Field(False, description="Also relations that are no longer valid (superseded).")
    limit: int = Field(200, ge=1, le=1000, description="At most this many entities and relations.")
    clearance: Clearance = _CLEARANCE


class GraphOut(_Out):
    """A subgraph: entities, the relations between them, and the ids of the memories supporting them."""

    entities: list[Entity]
    relations: list[Relation]
    memory_ids: list[str]


class FactsAboutIn(_In):
    """The facts (relations) the graph holds about one entity."""

    entity: str = Field(..., description="The entity name or alias (case and articles ignored).",
                        **_NAME_RULES)  # fmt: skip
    user: str | None = _USER
    agent: str | None = _AGENT
    include_invalid: bool = Field(False, description="Also facts that are no longer valid (superseded).")
    clearance: Clearance = _CLEARANCE


class FactsOut(_Out):
    """Relations whose subject or object is the entity, newest first (empty for an unknown entity)."""

    entity: str
    facts: list[str] = Field(description='The relations as text: "subject predicate object".')
    relations: list[Relation]


class ExtractIn(_In):
    """The text to analyse; nothing is stored."""

    text: Text = Field(..., description="The text to extract facts, keywords, entities and relations from.")
    speaker: str | None = Field(None, description='Who says it ("I" and "my" are resolved to them).', **_NAME_RULES)


class ExtractOut(_Out):
    """What extraction would store, which model said so and what it cost."""

    facts: list[str]
    keywords: list[str]
    entities: list[EntityOut]
    relations: list[RelationOut]
    model: str
    prompt_version: str
    usage: Usage


# -- conversation end and tiers (issues 4, 6) -------------------------------------


class EndConversationIn(_In):
    """A finished conversation whose messages update the working-memory blocks."""

    thread: str = Field(..., description="The conversation thread that ended.", **_NAME_RULES)
    user: str | None = Field(None, description="Whose blocks to update (default: the thread's main user).",
                             **_NAME_RULES)  # fmt: skip
    agent: str | None = Field(None, description="The agent whose blocks to update (default: the thread's).",
                              **_NAME_RULES)  # fmt: skip


class EndConversationOut(_Out):
    """What was read, what was updated, and by which summarizer (with the reason of a fallback)."""

    thread: str
    messages: int
    user: str | None
    agent: str | None
    summarizer: str
    fallback_reason: str | None = None
    updated: list[Block]
    reward: float | None = Field(None, description="The conversation's reward (0..1) from the signals so far, if any.")


class TiersRetrieveIn(_In):
    """A query across the memory tiers (short-, mid- and long-term) of one agent and user."""

    query: Query = Field(..., description="What to look for.")
    agent: str = Field(..., description="The agent whose tiers to search.", **_NAME_RULES)
    user: str = Field(..., description="The user the conversation is with.", **_NAME_RULES)
    top_m: int | None = Field(None, ge=1, le=100, description="Mid-term segments to visit (default: configured).")
    top_k: int | None = Field(None, ge=1, le=1000, description="Pages to return from them (default: configured).")
    clearance: Clearance = _CLEARANCE


class TiersSystemListIn(_In):
    """List the namespace's shared system memory (what the tiers promoted for every agent)."""

    source_agent: str | None = Field(None, description="Only entries this agent contributed.", **_NAME_RULES)


class TiersSystemOut(_Out):
    """System memory entries, most important first (vectors left out)."""

    entries: list[dict[str, Any]]


class TiersWithdrawIn(_In):
    """System memory entries to take back (every agent stops seeing them)."""

    id: str = Field(..., description="The system entry id (from tiers_system).", **_NAME_RULES)


# -- feedback and prompt versions (issue 9) ----------------------------------------


class FeedbackRecordIn(_In):
    """How a conversation went: a rating, a reward, the task outcome, the user's words; rescored on every call."""

    thread: str = Field(..., description="The conversation thread.", **_NAME_RULES)
    rating: float | None = Field(None, description="Explicit user rating on rating_scale (stars 1-5 by default).")
    rating_scale: Literal["stars", "thumbs", "unit"] = Field("stars", description="stars 1-5, thumbs +1/-1, unit 0-1.")
    reward: float | None = Field(None, ge=0.0, le=1.0, description="An explicit reward in [0, 1].")
    feedback: str | None = Field(
        None,
        description="What the user said about the answers.",
        min_length=1,
        max_length=lim.MAX_FEEDBACK_CHARS,
        pattern=lim.TEXT_PATTERN,
    )
    example: str | None = Field(
        None,
        description="An example of the wanted behaviour.",
        min_length=1,
        max_length=lim.MAX_FEEDBACK_CHARS,
        pattern=lim.TEXT_PATTERN,
    )
    suggestion: str | None = Field(
        None,
        description="An improvement suggestion.",
        min_length=1,
        max_length=lim.MAX_FEEDBACK_CHARS,
        pattern=lim.TEXT_PATTERN,
    )
    task_completed: bool | None = Field(None, description="Whether the task was completed.")
    prompt: str | None = Field(None, description="The prompt name the conversation used.", **_NAME_RULES)
    prompt_version: int | None = Field(
        None, ge=1, le=lim.MAX_VERSION, description="Its version (default: the thread's, else active)."
    )
    user: str | None = _USER
    agent: str | None = _AGENT


class PromptGetIn(_In):
    """A named prompt: the active version, or a given one."""

    name: str = Field(..., description="The prompt's name.", **_NAME_RULES)
    version: int | None = Field(
        None, ge=1, le=lim.MAX_VERSION, description="A version number (default: the active version)."
    )
