"""An OpenAI Agents SDK ``Session`` over the message log: one session = one conversation thread.

>>> from agents import Agent, Runner
>>> from memory import Memory
>>> from memory.integrations.openai_agents import MemorySession
>>> session = MemorySession("chat-42", Memory("sqlite:///agent.db"), user="alice")  # doctest: +SKIP
>>> Runner.run_sync(Agent(name="helper"), "I moved to Berlin", session=session)      # doctest: +SKIP

Each item the SDK stores (user and assistant messages, tool calls and their
outputs, reasoning items) becomes one message of the thread: its role is the
item's ``role`` (or its ``type`` for items without one, e.g.
``function_call``), its content the item's text (searchable with
``mem.messages.search`` and synced into long-term memory by the sync job), and
the item itself, unchanged, in ``metadata["openai_agents_item"]`` so
``get_items`` gives the SDK back exactly what it stored. Needs
``pip install 'llm-agent-memory[openai-agents]'``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from memory.integrations import require

require("agents.memory.session", "openai-agents")

from agents.memory.session import SessionABC  # noqa: E402
from agents.memory.session_settings import SessionSettings, resolve_session_limit  # noqa: E402

from memory.episodic.types import Message  # noqa: E402
from memory.errors import InvalidInputError  # noqa: E402
from memory.memory import Memory  # noqa: E402

__all__ = ["MemorySession", "item_text"]

_KEY = "openai_agents_item"
_PAGE = 1000


def _parts_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, dict):
                text = part.get("text") or part.get("refusal") or part.get("transcript")
                if isinstance(text, str):
                    texts.append(text)
            elif isinstance(part, str):
                texts.append(part)
        return "\n".join(texts)
    return ""


def item_text(item: dict[str, Any]) -> str:
    """The readable text of an Agents SDK input item (what the message log indexes)."""
    kind = item.get("type")
    if "content" in item:
        text = _parts_text(item["content"])
    elif kind == "function_call":
        text = f"{item.get('name', 'tool')}({item.get('arguments', '')})"
    elif "output" in item:
        output = item["output"]
        text = output if isinstance(output, str) else _parts_text(output) or json.dumps(output, default=str)
    elif kind == "reasoning":
        text = "\n".join(s.get("text", "") for s in item.get("summary", []) if isinstance(s, dict))
    else:
        text = ""
    return text.strip() or f"[{kind or item.get('role') or 'item'}]"


def _role(item: dict[str, Any]) -> str:
    role = item.get("role")
    if isinstance(role, str) and role:
        return role
    kind = item.get("type")
    return kind if isinstance(kind, str) and kind else "item"


class MemorySession(SessionABC):
    """Agents SDK session whose items are the messages of one thread of a :class:`~memory.Memory`."""

    def __init__(
        self,
        session_id: str,
        memory: Memory,
        *,
        user: str | None = None,
        agent: str | None = None,
        namespace: str | None = None,
        session_settings: SessionSettings | None = None,
    ) -> None:
        """Keep session ``session_id`` as thread ``session_id`` of ``memory`` (messages tagged with user/agent).

        The caller keeps ``memory`` open and closes it.
        """
        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidInputError("session_id must be a non-empty string")
        self.session_id = session_id
        self.memory = memory
        self.user = user
        self.agent = agent
        self.namespace = namespace or memory.namespace
        self.session_settings = session_settings or SessionSettings()

    # -- sync core (run in a worker thread by the async methods) ----------------
    def _messages(self, limit: int | None) -> list[Message]:
        messages = self.memory.messages
        if limit is not None:
            if limit <= 0:
                return []
            return messages.recent(self.session_id, limit, namespace=self.namespace)
        out: list[Message] = []
        after: int | None = None
        while True:
            page = messages.get_thread(self.session_id, namespace=self.namespace, after_turn=after, limit=_PAGE)
            out.extend(page)
            if len(page) < _PAGE:
                return out
            after = page[-1].turn

    def get_items_sync(self, limit: int | None = None) -> list[Any]:
        """The session's items, oldest first (the latest ``limit`` when given)."""
        effective = resolve_session_limit(limit, self.session_settings)
        return [_item_of(m) for m in self._messages(effective)]

    def add_items_sync(self, items: list[Any]) -> None:
        """Append items in order, in one transaction. Raises InvalidInputError (nothing stored) for a bad item."""
        entries = []
        for item in items:
            if not isinstance(item, dict):
                raise InvalidInputError(f"a session item must be a dict, got {type(item).__name__}")
            try:
                json.dumps(item)
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(f"a session item must be JSON: {exc}") from None
            entries.append(
                {
                    "thread": self.session_id,
                    "content": item_text(item),
                    "role": _role(item),
                    "user": self.user,
                    "agent": self.agent,
                    "metadata": {_KEY: item},
                }  # fmt: skip
            )
        if entries:
            self.memory.messages.append_many(entries, namespace=self.namespace)

    def pop_item_sync(self) -> Any | None:
        """Remove the newest item and return it (None when the session is empty)."""
        while True:
            newest = self.memory.messages.recent(self.session_id, 1, namespace=self.namespace)
            if not newest:
                return None
            if self.memory.messages.delete(newest[0].id, namespace=self.namespace):
                return _item_of(newest[0])
            # another caller popped it first: take the next one

    def clear_session_sync(self) -> None:
        """Delete every item of the session."""
        self.memory.messages.clear(self.session_id, keep_last=0, namespace=self.namespace)

    # -- the Session protocol ------------------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The session's items, oldest first; the latest ``limit`` when given."""
        return await asyncio.to_thread(self.get_items_sync, limit)

    async def add_items(self, items: list[Any]) -> None:
        """Append items to the session."""
        await asyncio.to_thread(self.add_items_sync, list(items))

    async def pop_item(self) -> Any | None:
        """Remove and return the newest item, or None."""
        return await asyncio.to_thread(self.pop_item_sync)

    async def clear_session(self) -> None:
        """Delete every item of the session."""
        await asyncio.to_thread(self.clear_session_sync)


def _item_of(message: Message) -> Any:
    stored = message.metadata.get(_KEY)
    if isinstance(stored, dict):
        return stored
    # a message appended by other means (e.g. `memory` CLI or REST): give it to the SDK as a plain message
    role = message.role if message.role in ("user", "assistant", "system", "developer") else "user"
    return {"role": role, "content": message.content}
