"""The one registry of server operations: MCP tools and REST routes are derived from it.

Each :class:`Operation` names a pydantic input model, an output model, a
description (shown to LLMs as the tool description and in OpenAPI), whether
it writes, and a thin ``run`` that calls :class:`~memory.Memory` — no logic
of its own beyond the caller's policy (namespace scope, read-only keys,
secret clearance), which :func:`invoke` applies before ``run``.

Adding a facade method to both servers (this is how ``append_message`` is done)::

    class AppendMessageIn(BaseModel): thread: str; content: str; role: str = "user"   # models.py

    register(Operation(
        name="append_message", description="Append a message to a conversation thread …",
        params=AppendMessageIn, result=Message, write=True,
        run=lambda mem, a, call: mem.messages.append(a.thread, a.content, role=a.role, namespace=call.namespace),
        rest=Rest("POST", "/threads/{thread}/messages", status=201),
    ))

Path fields of ``rest.path`` (here ``thread``) are taken from the URL, the
rest from the query string (GET/DELETE) or the JSON body. Scoped operations
(the default) live under ``/v1/namespaces/{namespace}``; MCP tools get an
optional ``namespace`` argument instead. A read becomes an MCP resource with
a :class:`ResourceSpec` (``memory://{namespace}/threads/{thread}`` →
``recent_messages``, ``memory://{namespace}/jobs/sync`` → ``sync_status``).
Add a valid example request to ``tests/server/test_scopes.py`` (the test
fails until you do): it checks the new route against other namespaces' keys.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ValidationError

from memory import limits
from memory.backends.graph import MemoryLink
from memory.episodic.types import Block, Message
from memory.errors import InvalidInputError
from memory.feedback.types import ConversationRecord, PromptVersion
from memory.keys import Caller
from memory.memory import Memory
from memory.server import models as m
from memory.tiers.types import TierContext
from memory.types import MemoryItem, Stats

if TYPE_CHECKING:
    from memory.episodic.sync import SyncEstimate, SyncReport

__all__ = [
    "Call",
    "Rest",
    "Operation",
    "ResourceSpec",
    "OPERATIONS",
    "RESOURCES",
    "register",
    "invoke",
    "in_namespace",
    "tool_schema",
]


@dataclass(frozen=True, slots=True)
class Call:
    """The context of one call: the (authorised) namespace and the caller."""

    namespace: str
    caller: Caller


@dataclass(frozen=True, slots=True)
class Rest:
    """How an operation appears in the REST API (path relative to its namespace when scoped)."""

    method: Literal["GET", "POST", "PATCH", "PUT", "DELETE"]
    path: str
    status: int = 200
    media_type: str = "application/json"


@dataclass(frozen=True, slots=True)
class Operation:
    """One server operation: schemas, description, policy flags and the call into Memory."""

    name: str
    description: str
    params: type[BaseModel]
    result: type[BaseModel] | type[str]
    run: Callable[[Memory, Any, Call], Any]
    write: bool = False
    scoped: bool = True
    rest: Rest | None = None
    mcp: bool = True
    destructive: bool = False
    tags: tuple[str, ...] = field(default=("memories",))


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """An MCP resource backed by a read operation; ``{vars}`` of the URI become its arguments."""

    uri: str
    operation: str
    name: str
    description: str


OPERATIONS: dict[str, Operation] = {}
RESOURCES: list[ResourceSpec] = []


def register(op: Operation) -> Operation:
    """Add an operation to the registry (both servers pick it up). Raises ValueError on a duplicate name."""
    if op.name in OPERATIONS:
        raise ValueError(f"operation {op.name!r} is already registered")
    OPERATIONS[op.name] = op
    return op


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg']}")
    return "invalid arguments: " + "; ".join(parts)


def invoke(
    mem: Memory, op: Operation, caller: Caller, args: BaseModel | Mapping[str, Any], namespace: str | None = None
) -> Any:
    """Apply the caller's policy, validate ``args`` and run ``op``; returns its result model.

    Raises PermissionDeniedError (namespace outside the caller's scope, a
    write by a read-only caller), InvalidInputError, or whatever Memory raises.
    """
    if op.write:
        caller.check_write(op.name)
    ns = caller.namespace(namespace) if op.scoped else caller.default_namespace
    if not isinstance(args, op.params):
        try:
            args = op.params.model_validate(dict(args))
        except ValidationError as exc:
            raise InvalidInputError(_validation_message(exc)) from None
    clearance = getattr(args, "clearance", None)
    if clearance is not None:
        caller.check_clearance(clearance)
    return op.run(mem, args, Call(ns, caller))


def in_namespace(mem: Memory, namespace: str) -> Memory:
    """A Memory sharing ``mem``'s backend and embedder whose default namespace is ``namespace`` (do not close it)."""
    if namespace == mem.namespace:
        return mem
    return Memory(
        backend=mem.backend,
        embedder=mem.embedder,
        settings=mem.settings.model_copy(update={"namespace": namespace}),
    )


_NAMESPACE_PROPERTY = {
    "type": "string",
    "description": "Namespace (tenant) to work in; defaults to the server's namespace.",
    "minLength": 1,
    "maxLength": limits.MAX_NAME_CHARS,
    "pattern": limits.NAME_PATTERN,
}


def tool_schema(op: Operation) -> dict[str, Any]:
    """The JSON schema of an operation's arguments as an MCP tool (and a REPL op) takes them."""
    schema = op.params.model_json_schema()
    if op.scoped:
        schema.setdefault("properties", {})["namespace"] = dict(_NAMESPACE_PROPERTY)
    return schema


def _fields(args: BaseModel, *names: str) -> dict[str, Any]:
    return {name: getattr(args, name) for name in names}


_SCOPE = ("user", "agent", "thread")


# -- the operations ---------------------------------------------------------


def _remember(mem: Memory, a: m.RememberIn, call: Call) -> m.RememberOut:
    fields = _remember_fields(a)
    content = fields.pop("content")
    return m.RememberOut(id=mem.remember(content, namespace=call.namespace, **fields))


def _remember_fields(a: m.RememberIn) -> dict[str, Any]:
    fields = a.model_dump(exclude={"ttl_seconds"}, exclude_none=True)
    if a.ttl_seconds is not None:
        fields["ttl"] = a.ttl_seconds
    return fields


def _remember_batch(mem: Memory, a: m.RememberBatchIn, call: Call) -> m.RememberBatchOut:
    entries = [_remember_fields(item) for item in a.items]
    return m.RememberBatchOut(ids=mem.remember_batch(entries, namespace=call.namespace))


def _recall(mem: Memory, a: m.RecallIn, call: Call) -> m.RecallOut:
    hits = mem.recall(
        a.query, limit=a.limit, namespace=call.namespace, clearance=a.clearance, retrieval=a.retrieval,
        **_fields(a, *_SCOPE, "kinds", "tags", "tags_all", "metadata", "since", "until", "include_invalid"),
    )  # fmt: skip
    return m.RecallOut(hits=hits)


def _get(mem: Memory, a: m.GetIn, call: Call) -> Any:
    return mem.get(a.id, namespace=call.namespace, clearance=a.clearance)


def _update(mem: Memory, a: m.UpdateIn, call: Call) -> Any:
    mem.get(a.id, namespace=call.namespace, clearance=call.caller.clearance)  # secrets stay invisible
    changes = {name: getattr(a, name) for name in a.model_fields_set - {"id", "reason"}}
    return mem.update(a.id, namespace=call.namespace, reason=a.reason, **changes)


def _forget(mem: Memory, a: m.ForgetIn, call: Call) -> m.DeletedOut:
    mem.get(a.id, namespace=call.namespace, clearance=call.caller.clearance)
    return m.DeletedOut(deleted=mem.forget(a.id, namespace=call.namespace, reason=a.reason))


def _forget_all(mem: Memory, a: m.ForgetAllIn, call: Call) -> m.DeletedOut:
    if not a.confirm:
        raise InvalidInputError("forget_all deletes every memory in the scope: pass confirm=true")
    deleted = mem.forget_all(
        namespace=call.namespace, reason=a.reason, clearance=call.caller.clearance, **_fields(a, *_SCOPE)
    )  # a caller without secret clearance leaves the secrets it cannot see
    return m.DeletedOut(deleted=deleted)


def _list(mem: Memory, a: m.ListIn, call: Call) -> m.ListOut:
    page = mem.list(namespace=call.namespace, **a.model_dump())
    return m.ListOut(items=list(page.items), next_cursor=page.next_cursor)


def _history(mem: Memory, a: m.HistoryIn, call: Call) -> m.HistoryOut:
    return m.HistoryOut(entries=mem.history(a.id, namespace=call.namespace, clearance=a.clearance))


def _stats(mem: Memory, a: m.StatsIn, call: Call) -> Any:
    return mem.stats(namespace=call.namespace, **a.model_dump())


def _namespaces(mem: Memory, a: m.NoArgs, call: Call) -> m.NamespacesOut:
    return m.NamespacesOut(namespaces=[ns for ns in mem.namespaces() if call.caller.allows(ns)])


def _embed_pending(mem: Memory, a: m.EmbedPendingIn, call: Call) -> m.EmbedPendingOut:
    return m.EmbedPendingOut(embedded=mem.embed_pending(namespace=call.namespace, limit=a.limit))


def _export(mem: Memory, a: m.ExportIn, call: Call) -> str:
    buffer = io.StringIO()
    in_namespace(mem, call.namespace).export(buffer, **a.model_dump())
    return buffer.getvalue()


register(Operation(
    name="remember",
    description=(
        "Store a memory: one fact, preference or note worth keeping across conversations. "
        "Returns its id; storing the same content again in the same scope returns the existing id."
    ),
    params=m.RememberIn, result=m.RememberOut, run=_remember, write=True,
    rest=Rest("POST", "/memories", status=201),
))  # fmt: skip
register(Operation(
    name="remember_batch",
    description="Store many memories at once (up to 1000, one transaction: all or none); returns their ids in order.",
    params=m.RememberBatchIn, result=m.RememberBatchOut, run=_remember_batch, write=True,
    rest=Rest("POST", "/memories/batch", status=201),
))  # fmt: skip
register(Operation(
    name="recall",
    description=(
        "Search memories by meaning and keywords (hybrid vector + BM25), best first, with scores. "
        "Use before answering questions about the user or past conversations."
    ),
    params=m.RecallIn, result=m.RecallOut, run=_recall,
    rest=Rest("POST", "/search"),
))  # fmt: skip
register(Operation(
    name="get",
    description="Read one memory by id, with all its fields.",
    params=m.GetIn, result=MemoryItem, run=_get,
    rest=Rest("GET", "/memories/{id}"),
))  # fmt: skip
register(Operation(
    name="update",
    description=(
        "Change fields of a memory (e.g. correct its content, add tags, close a fact with valid_to); "
        "give at least one field. The previous state is kept in its history."
    ),
    params=m.UpdateIn, result=MemoryItem, run=_update, write=True,
    rest=Rest("PATCH", "/memories/{id}"),
))  # fmt: skip
register(Operation(
    name="forget",
    description="Delete a memory by id (the deletion is recorded in its history).",
    params=m.ForgetIn, result=m.DeletedOut, run=_forget, write=True, destructive=True,
    rest=Rest("DELETE", "/memories/{id}"),
))  # fmt: skip
register(Operation(
    name="forget_all",
    description="Delete every memory of a scope (namespace, optionally one user/agent/thread). Needs confirm=true.",
    params=m.ForgetAllIn, result=m.DeletedOut, run=_forget_all, write=True, destructive=True, mcp=False,
    rest=Rest("DELETE", "/memories"),
))  # fmt: skip
register(Operation(
    name="list",
    description="List memories newest first, one page at a time (pass next_cursor back for the next page).",
    params=m.ListIn, result=m.ListOut, run=_list,
    rest=Rest("GET", "/memories"),
))  # fmt: skip
register(Operation(
    name="history",
    description="Every recorded change of a memory (add, update, delete …), oldest first.",
    params=m.HistoryIn, result=m.HistoryOut, run=_history,
    rest=Rest("GET", "/memories/{id}/history"),
))  # fmt: skip
register(Operation(
    name="stats",
    description="Counts of memories in a namespace (or one user/agent/thread): by kind, sensitivity, embedding.",
    params=m.StatsIn, result=Stats, run=_stats, tags=("namespaces",),
    rest=Rest("GET", "/stats"),
))  # fmt: skip
register(Operation(
    name="namespaces",
    description="The namespaces that hold memories (only those the caller may use).",
    params=m.NoArgs, result=m.NamespacesOut, run=_namespaces, scoped=False, tags=("namespaces",),
    rest=Rest("GET", "/namespaces"),
))  # fmt: skip
register(Operation(
    name="embed_pending",
    description="Embed memories left without a vector (e.g. after the embedder was down); returns how many.",
    params=m.EmbedPendingIn, result=m.EmbedPendingOut, run=_embed_pending, write=True, tags=("jobs",),
    rest=Rest("POST", "/jobs/embed-pending"),
))  # fmt: skip
register(Operation(
    name="export",
    description="Export memories as JSONL (the format `memory import` reads). Secrets only with clearance.",
    params=m.ExportIn, result=str, run=_export, mcp=False, tags=("namespaces",),
    rest=Rest("GET", "/export", media_type="application/x-ndjson"),
))  # fmt: skip


# -- conversations and the sync job (issue 4) -----------------------------------


def _append_message(mem: Memory, a: m.AppendMessageIn, call: Call) -> Any:
    fields = a.model_dump(exclude={"thread", "content", "ttl_seconds", "embed"}, exclude_none=True)
    if a.ttl_seconds is not None:
        fields["ttl"] = a.ttl_seconds
    return mem.messages.append(a.thread, a.content, embed=a.embed, namespace=call.namespace, **fields)


def _recent_messages(mem: Memory, a: m.RecentMessagesIn, call: Call) -> m.MessagesOut:
    found = mem.messages.recent(a.thread, a.n, namespace=call.namespace, clearance=a.clearance)
    return m.MessagesOut(messages=found)


def _search_conversation(mem: Memory, a: m.SearchConversationIn, call: Call) -> m.MessageHitsOut:
    hits = mem.messages.search(
        a.query, limit=a.limit, namespace=call.namespace, clearance=a.clearance,
        **_fields(a, "thread", "user", "agent", "roles", "since", "until"),
    )  # fmt: skip
    return m.MessageHitsOut(hits=hits)


def _threads(mem: Memory, a: m.ThreadsIn, call: Call) -> m.ThreadsOut:
    return m.ThreadsOut(threads=mem.messages.threads(namespace=call.namespace, **a.model_dump()))


def _sync(mem: Memory, a: m.SyncIn, call: Call) -> m.SyncOut:
    outcome: SyncReport | SyncEstimate = mem.run_sync(
        namespace=call.namespace, dry_run=a.dry_run, max_batches=a.max_batches
    )
    return m.SyncOut(dry_run=a.dry_run, result=outcome.to_dict())


def _sync_status(mem: Memory, a: m.NoArgs, call: Call) -> m.SyncStatusOut:
    return m.SyncStatusOut(status=mem.sync_status(namespace=call.namespace).to_dict())


register(Operation(
    name="append_message",
    description=(
        "Append a message to a conversation thread (episodic memory); returns it with its turn number. "
        "Save each user and assistant turn so the conversation can be searched and synced later."
    ),
    params=m.AppendMessageIn, result=Message, run=_append_message, write=True, tags=("conversations",),
    rest=Rest("POST", "/threads/{thread}/messages", status=201),
))  # fmt: skip
register(Operation(
    name="recent_messages",
    description="The latest messages of a thread, oldest first (the thread's episodic timeline).",
    params=m.RecentMessagesIn, result=m.MessagesOut, run=_recent_messages, tags=("conversations",),
    rest=Rest("GET", "/threads/{thread}/messages"),
))  # fmt: skip
register(Operation(
    name="search_conversation",
    description="Search past conversation messages by meaning and keywords, best first (optionally one thread).",
    params=m.SearchConversationIn, result=m.MessageHitsOut, run=_search_conversation, tags=("conversations",),
    rest=Rest("POST", "/messages/search"),
))  # fmt: skip
register(Operation(
    name="threads",
    description="Conversation threads of the namespace, most recently active first, with message counts.",
    params=m.ThreadsIn, result=m.ThreadsOut, run=_threads, tags=("conversations",),
    rest=Rest("GET", "/threads"),
))  # fmt: skip
register(Operation(
    name="sync_semantic",
    description=(
        "Run the episodic→semantic sync job now: embed pending messages, then pending memories "
        "(secrets skipped). dry_run=true only estimates the work."
    ),
    params=m.SyncIn, result=m.SyncOut, run=_sync, write=True, tags=("jobs",),
    rest=Rest("POST", "/jobs/sync"),
))  # fmt: skip
register(Operation(
    name="sync_status",
    description="State of the sync job: pending counts by status, claims in flight, cursor and last error.",
    params=m.NoArgs, result=m.SyncStatusOut, run=_sync_status, tags=("jobs",),
    rest=Rest("GET", "/jobs/sync"),
))  # fmt: skip


# -- working-memory blocks (issue 4) ---------------------------------------------


def _blocks(mem: Memory, a: m.BlocksIn, call: Call) -> m.BlocksOut:
    return m.BlocksOut(blocks=mem.blocks.all(namespace=call.namespace, **a.model_dump()))


def _write_block(mem: Memory, a: m.WriteBlockIn, call: Call) -> Block:
    write = mem.blocks.append if a.mode == "append" else mem.blocks.replace
    return write(a.label, a.value, user=a.user, agent=a.agent, namespace=call.namespace, reason=a.reason)


register(Operation(
    name="get_blocks",
    description=(
        "The working-memory blocks of a user/agent (user_info, goals_and_status, important_context, "
        "last_conversation_summary, …): short texts to keep in mind every turn."
    ),
    params=m.BlocksIn, result=m.BlocksOut, run=_blocks, tags=("blocks",),
    rest=Rest("GET", "/blocks"),
))  # fmt: skip
register(Operation(
    name="write_block",
    description="Rewrite a working-memory block, or append to it (mode=append); each block has a size limit.",
    params=m.WriteBlockIn, result=Block, run=_write_block, write=True, tags=("blocks",),
    rest=Rest("PUT", "/blocks/{label}"),
))  # fmt: skip


# -- context assembly (issue 7) -----------------------------------------------------


def _get_context(mem: Memory, a: m.GetContextIn, call: Call) -> m.GetContextOut:
    fields = a.model_dump(exclude={"observation", "budget_tokens"}, exclude_none=True)
    compiled = mem.context(a.observation, namespace=call.namespace, budget={"total": a.budget_tokens}, **fields)
    return m.GetContextOut(messages=compiled.messages, trace=compiled.trace)


register(Operation(
    name="get_context",
    description=(
        "Build the context for the next model call under a token budget: system prompt, working-memory "
        "blocks, recent turns of the thread, relevant memories; returns chat messages and a trace of "
        "what went in and what was cut."
    ),
    params=m.GetContextIn, result=m.GetContextOut, run=_get_context, tags=("context",),
    rest=Rest("POST", "/context"),
))  # fmt: skip

# -- knowledge graph and extraction (issue 5) -----------------------------------------


def _link(mem: Memory, a: m.LinkIn, call: Call) -> Any:
    return mem.link(a.id, a.target, a.type, namespace=call.namespace, clearance=call.caller.clearance)


def _query_graph(mem: Memory, a: m.QueryGraphIn, call: Call) -> m.GraphOut:
    options = _fields(a, "depth", "predicates", "entity_types", "include_invalid", "limit", "clearance")
    found = mem.graph.query_graph(a.start, namespace=call.namespace, **options)
    return m.GraphOut(entities=found.entities, relations=found.relations, memory_ids=found.memory_ids)


def _facts_about(mem: Memory, a: m.FactsAboutIn, call: Call) -> m.FactsOut:
    relations = mem.graph.facts_about(
        a.entity, namespace=call.namespace, **_fields(a, "user", "agent", "include_invalid", "clearance")
    )
    relations = mem.graph.visible(relations, namespace=call.namespace, clearance=a.clearance)
    return m.FactsOut(entity=a.entity, facts=[r.text for r in relations], relations=relations)


def _extract(mem: Memory, a: m.ExtractIn, call: Call) -> m.ExtractOut:
    return m.ExtractOut.model_validate(mem.extract(a.text, speaker=a.speaker, namespace=call.namespace).to_json())


register(Operation(
    name="link",
    description=(
        "Link two memories with a typed edge (e.g. relates_to, follows, contradicts), so either one leads to "
        "the other. Idempotent: linking again returns the existing link."
    ),
    params=m.LinkIn, result=MemoryLink, run=_link, write=True, tags=("graph",),
    rest=Rest("POST", "/memories/{id}/links", status=201),
))  # fmt: skip
register(Operation(
    name="query_graph",
    description=(
        "Explore the knowledge graph built from memories: the entities within `depth` relations of `start` "
        "(or the whole graph), the relations between them as subject–predicate–object, and the ids of the "
        "memories that support them. Filter by predicates and entity types."
    ),
    params=m.QueryGraphIn, result=m.GraphOut, run=_query_graph, tags=("graph",),
    rest=Rest("POST", "/graph/query"),
))  # fmt: skip
register(Operation(
    name="facts_about",
    description=(
        "Everything the knowledge graph knows about one entity (a person, place, organisation …): its "
        "relations as short facts, newest first. Optionally only facts from one user's or agent's memories."
    ),
    params=m.FactsAboutIn, result=m.FactsOut, run=_facts_about, tags=("graph",),
    rest=Rest("GET", "/graph/entities/{entity}/facts"),
))  # fmt: skip
register(Operation(
    name="extract",
    description=(
        "Preview extraction: the facts, keywords, entities and relations the configured LLM (or the "
        "heuristic extractor) finds in a text. Stores nothing."
    ),
    params=m.ExtractIn, result=m.ExtractOut, run=_extract, tags=("graph",),
    rest=Rest("POST", "/extract"),
))  # fmt: skip


# -- end of a conversation (issue 4) and tiers (issue 6) ------------------------------


def _end_conversation(mem: Memory, a: m.EndConversationIn, call: Call) -> m.EndConversationOut:
    ended = mem.end_conversation(a.thread, namespace=call.namespace, user=a.user, agent=a.agent)
    return m.EndConversationOut(
        thread=ended.thread, messages=ended.messages, user=ended.user, agent=ended.agent,
        summarizer=ended.summarizer, fallback_reason=ended.fallback_reason, updated=list(ended.updated.values()),
        reward=ended.record.reward if ended.record is not None else None,
    )  # fmt: skip


def _tiers_retrieve(mem: Memory, a: m.TiersRetrieveIn, call: Call) -> Any:
    options = _fields(a, "agent", "user", "top_m", "top_k", "clearance")
    return mem.tiers.retrieve(a.query, namespace=call.namespace, **options)


register(Operation(
    name="end_conversation",
    description=(
        "Call when a conversation is over: its messages update the working-memory blocks of its user/agent "
        "(last_conversation_summary, user_info, goals_and_status), with the configured LLM or the "
        "extractive summarizer. Secret messages are left out."
    ),
    params=m.EndConversationIn, result=m.EndConversationOut, run=_end_conversation, write=True,
    tags=("conversations",), rest=Rest("POST", "/threads/{thread}/end"),
))  # fmt: skip
register(Operation(
    name="tiers_retrieve",
    description=(
        "Search the memory tiers of an agent and user (MemoryOS): the short-term pages, the best-matching "
        "mid-term topic segments and their pages, the user and agent personas and shared knowledge."
    ),
    params=m.TiersRetrieveIn, result=TierContext, run=_tiers_retrieve, tags=("tiers",),
    rest=Rest("POST", "/tiers/retrieve"),
))  # fmt: skip


def _tiers_system(mem: Memory, a: m.TiersSystemListIn, call: Call) -> m.TiersSystemOut:
    entries = mem.tiers.system(namespace=call.namespace, source_agent=a.source_agent)
    return m.TiersSystemOut(entries=[e.model_dump(mode="json", exclude={"vector"}) for e in entries])


def _tiers_withdraw(mem: Memory, a: m.TiersWithdrawIn, call: Call) -> m.DeletedOut:
    return m.DeletedOut(deleted=mem.tiers.withdraw(a.id, namespace=call.namespace))


register(Operation(
    name="tiers_system",
    description="List the shared system memory of the namespace: what the tiers promoted for every agent.",
    params=m.TiersSystemListIn, result=m.TiersSystemOut, run=_tiers_system, tags=("tiers",),
    rest=Rest("GET", "/tiers/system"),
))  # fmt: skip
register(Operation(
    name="tiers_withdraw",
    description="Take an entry out of the shared system memory (every agent of the namespace stops seeing it).",
    params=m.TiersWithdrawIn, result=m.DeletedOut, run=_tiers_withdraw, write=True, destructive=True,
    tags=("tiers",), rest=Rest("DELETE", "/tiers/system/{id}"),
))  # fmt: skip


# -- feedback and prompt versions (issue 9) ---------------------------------------------


def _feedback_record(mem: Memory, a: m.FeedbackRecordIn, call: Call) -> ConversationRecord:
    options = _fields(a, "rating", "rating_scale", "reward", "feedback", "example", "suggestion", "task_completed",
                      "prompt", "prompt_version", "user", "agent")  # fmt: skip
    return mem.feedback.record(a.thread, namespace=call.namespace, **options)


def _prompt_get(mem: Memory, a: m.PromptGetIn, call: Call) -> PromptVersion:
    return mem.prompts.get(a.name, a.version, namespace=call.namespace)


register(Operation(
    name="feedback_record",
    description=(
        "Report how a conversation went: a rating (1-5 stars, or thumbs +1/-1), whether the task was completed, "
        "the user's feedback and an example of what they wanted. Returns the conversation record with its reward "
        "(0..1); the prompt version used can be named so its measured performance improves."
    ),
    params=m.FeedbackRecordIn, result=ConversationRecord, run=_feedback_record, write=True,
    tags=("feedback",), rest=Rest("POST", "/threads/{thread}/feedback"),
))  # fmt: skip
register(Operation(
    name="prompt_get",
    description="The text of a named, versioned prompt (the active version unless a version is given).",
    params=m.PromptGetIn, result=PromptVersion, run=_prompt_get, tags=("feedback",),
    rest=Rest("GET", "/prompts/{name}"),
))  # fmt: skip

RESOURCES.extend([
    ResourceSpec("memory://namespaces", "namespaces", "namespaces", "Namespaces holding memories (JSON)."),
    ResourceSpec("memory://{namespace}/memories/{id}", "get", "memory", "One memory by id (JSON)."),
    ResourceSpec("memory://{namespace}/stats", "stats", "stats", "Counts of a namespace (JSON)."),
    ResourceSpec("memory://{namespace}/threads/{thread}", "recent_messages", "thread",
                 "A thread's episodic timeline: its latest messages, oldest first (JSON)."),
    ResourceSpec("memory://{namespace}/jobs/sync", "sync_status", "sync-status", "The sync job's status (JSON)."),
    ResourceSpec("memory://{namespace}/entities/{entity}", "facts_about", "entity-facts",
                 "What the knowledge graph knows about an entity: its facts (JSON)."),
])  # fmt: skip
