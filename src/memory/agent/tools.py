"""Memory tools for function-calling models: definitions (OpenAI and Anthropic form) and their execution.

Tools: ``remember``, ``recall``, ``forget``, ``update_block`` (working-memory
blocks, needs ``mem.blocks``) and ``search_conversation`` (past messages,
needs ``mem.messages``). Every call runs in the agent's scope (namespace, user,
agent), so a model can neither read nor delete another user's memories.
Execution never raises for a bad call: the result is ``{"error": "..."}``,
which is sent back to the model as the tool result.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from memory.context.types import ToolDef
from memory.errors import Error, NotFoundError

__all__ = [
    "MEMORY_TOOLS",
    "ToolScope",
    "openai_tools",
    "anthropic_tools",
    "available_tools",
    "execute_tool",
]

_STRING = {"type": "string"}

MEMORY_TOOLS: tuple[ToolDef, ...] = (
    ToolDef(
        name="remember",
        description="Store a fact worth keeping about the user or the task in long-term memory.",
        parameters={
            "type": "object",
            "properties": {
                "content": {"type": "string", "description": "the fact, as one self-contained sentence"},
                "kind": {"type": "string", "description": "fact (default), preference, trait, knowledge, …"},
                "tags": {"type": "array", "items": _STRING},
                "importance": {"type": "number", "minimum": 0, "maximum": 1},
            },
            "required": ["content"],
            "additionalProperties": False,
        },
    ),
    ToolDef(
        name="recall",
        description="Search long-term memory; returns the most relevant memories with ids and scores.",
        parameters={
            "type": "object",
            "properties": {"query": _STRING, "limit": {"type": "integer", "minimum": 1, "maximum": 50}},
            "required": ["query"],
            "additionalProperties": False,
        },
    ),
    ToolDef(
        name="forget",
        description="Delete a memory by its id (from recall) when it is wrong or the user asks to forget it.",
        parameters={
            "type": "object",
            "properties": {"id": _STRING, "reason": _STRING},
            "required": ["id"],
            "additionalProperties": False,
        },
        priority="medium",
    ),
    ToolDef(
        name="update_block",
        description="Rewrite or extend a working-memory block (user_info, goals_and_status, important_context, …).",
        parameters={
            "type": "object",
            "properties": {
                "label": _STRING,
                "content": _STRING,
                "mode": {"type": "string", "enum": ["replace", "append"]},
            },
            "required": ["label", "content"],
            "additionalProperties": False,
        },
        priority="medium",
    ),
    ToolDef(
        name="search_conversation",
        description="Search earlier messages of conversations with this user.",
        parameters={
            "type": "object",
            "properties": {"query": _STRING, "limit": {"type": "integer", "minimum": 1, "maximum": 50}},
            "required": ["query"],
            "additionalProperties": False,
        },
        priority="medium",
    ),
)
_BY_NAME = {tool.name: tool for tool in MEMORY_TOOLS}


def _pick(names: Iterable[str] | None) -> list[ToolDef]:
    if names is None:
        return list(MEMORY_TOOLS)
    unknown = [n for n in names if n not in _BY_NAME]
    if unknown:
        from memory.errors import InvalidInputError

        raise InvalidInputError(f"unknown memory tool(s) {unknown}; known: {', '.join(_BY_NAME)}")
    return [_BY_NAME[n] for n in names]


def openai_tools(names: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """The memory tools in OpenAI function-calling form (all, or the ``names`` given)."""
    return [tool.openai() for tool in _pick(names)]


def anthropic_tools(names: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """The memory tools in Anthropic tool-use form (all, or the ``names`` given)."""
    return [tool.anthropic() for tool in _pick(names)]


def _has(memory: Any, part: str, method: str) -> bool:
    return callable(getattr(getattr(memory, part, None), method, None))


def available_tools(memory: Any) -> tuple[ToolDef, ...]:
    """The memory tools this store can run: update_block needs mem.blocks, search_conversation mem.messages."""
    out = []
    for tool in MEMORY_TOOLS:
        if tool.name == "update_block" and not _has(memory, "blocks", "replace"):
            continue
        if tool.name == "search_conversation" and not _has(memory, "messages", "search"):
            continue
        out.append(tool)
    return tuple(out)


@dataclass(frozen=True)
class ToolScope:
    """Whose memory the tools act on."""

    namespace: str | None = None
    user: str | None = None
    agent: str | None = None
    thread: str | None = None

    def kwargs(self, *, thread: bool = False) -> dict[str, str]:
        """The set scope fields as keyword arguments (thread only when asked)."""
        values = {"namespace": self.namespace, "user": self.user, "agent": self.agent}
        if thread:
            values["thread"] = self.thread
        return {k: v for k, v in values.items() if v is not None}


class _ToolError(Exception):
    pass


def _arg(args: Mapping[str, Any], name: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
    if name not in args or args[name] is None:
        if default is ...:
            raise _ToolError(f"missing argument {name!r}")
        return default
    value = args[name]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise _ToolError(f"argument {name!r} has the wrong type ({type(value).__name__})")
    return value


def _stamp(value: Any) -> str | None:
    return value.isoformat(timespec="seconds") if hasattr(value, "isoformat") else None


def _remember(memory: Any, args: Mapping[str, Any], scope: ToolScope) -> dict[str, Any]:
    fields: dict[str, Any] = {"kind": _arg(args, "kind", str, "fact")}
    if "tags" in args:
        fields["tags"] = _arg(args, "tags", list)
    if "importance" in args:
        fields["importance"] = _arg(args, "importance", (int, float))
    memory_id = memory.remember(_arg(args, "content", str), **fields, **scope.kwargs(thread=True))
    return {"id": memory_id, "stored": True}


def _recall(memory: Any, args: Mapping[str, Any], scope: ToolScope) -> dict[str, Any]:
    hits = memory.recall(_arg(args, "query", str), limit=min(_arg(args, "limit", int, 5), 50), **scope.kwargs())
    return {
        "memories": [
            {"id": h.id, "content": h.content, "kind": h.item.kind, "score": round(h.score, 4),
             "created_at": _stamp(h.item.created_at)}
            for h in hits
        ]
    }  # fmt: skip


def _forget(memory: Any, args: Mapping[str, Any], scope: ToolScope) -> dict[str, Any]:
    memory_id = _arg(args, "id", str)
    item = memory.get(memory_id, **({"namespace": scope.namespace} if scope.namespace else {}))
    if (scope.user is not None and item.user != scope.user) or (scope.agent is not None and item.agent != scope.agent):
        raise NotFoundError(f"no memory {memory_id!r} for this user")
    memory.forget(memory_id, namespace=item.namespace, reason=_arg(args, "reason", str, "forgotten by the agent"))
    return {"id": memory_id, "forgotten": True}


def _update_block(memory: Any, args: Mapping[str, Any], scope: ToolScope) -> dict[str, Any]:
    blocks = getattr(memory, "blocks", None)
    if blocks is None:
        raise _ToolError("this store has no working-memory blocks (mem.blocks); update_block is unavailable")
    label, content = _arg(args, "label", str), _arg(args, "content", str)
    mode = _arg(args, "mode", str, "replace")
    if mode not in ("replace", "append"):
        raise _ToolError("mode must be 'replace' or 'append'")
    method = getattr(blocks, mode, None)
    if not callable(method):
        raise _ToolError(f"this store's blocks cannot {mode}")
    method(label, content, **scope.kwargs())
    return {"label": label, "updated": mode}


def _search_conversation(memory: Any, args: Mapping[str, Any], scope: ToolScope) -> dict[str, Any]:
    messages = getattr(memory, "messages", None)
    if messages is None or not callable(getattr(messages, "search", None)):
        raise _ToolError("this store has no message log (mem.messages); search_conversation is unavailable")
    hits = messages.search(_arg(args, "query", str), limit=min(_arg(args, "limit", int, 5), 50), **scope.kwargs())
    out = []
    for hit in hits:
        message = getattr(hit, "item", None) or getattr(hit, "message", None) or hit
        out.append(
            {
                "role": getattr(message, "role", None) or getattr(message, "speaker", None),
                "content": getattr(message, "content", ""),
                "thread": getattr(message, "thread", None),
                "created_at": _stamp(getattr(message, "created_at", None)),
            }
        )
    return {"messages": out}


_RUNNERS = {
    "remember": _remember,
    "recall": _recall,
    "forget": _forget,
    "update_block": _update_block,
    "search_conversation": _search_conversation,
}


def execute_tool(memory: Any, name: str, arguments: Mapping[str, Any] | str | None, scope: ToolScope) -> dict[str, Any]:
    """Run one memory tool call in ``scope``; returns its JSON-ready result or ``{"error": ...}``.

    ``arguments`` may be the JSON string a chat API sends. Library errors
    (bad input, not found, storage) become tool errors; nothing is raised.
    """
    runner = _RUNNERS.get(name)
    if runner is None:
        return {"error": f"unknown tool {name!r}; available: {', '.join(_RUNNERS)}"}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return {"error": f"arguments are not valid JSON: {exc.msg}"}
    args = arguments or {}
    if not isinstance(args, Mapping):
        return {"error": "arguments must be a JSON object"}
    allowed = set(_BY_NAME[name].parameters.get("properties", {}))
    unknown = sorted(set(args) - allowed)
    if unknown:
        return {"error": f"unknown argument(s) {unknown} for {name}; allowed: {sorted(allowed)}"}
    try:
        return runner(memory, args, scope)
    except _ToolError as exc:
        return {"error": str(exc)}
    except Error as exc:
        return {"error": str(exc) or type(exc).__name__}
