"""MemoryAgent: a small agent loop that rebuilds its context for every model call.

For each user message: save it, then repeat — hydrate and compile a prompt
from memory under the token budget (:meth:`Memory.context`; the tool calls
and results of the current turn, sent after it, are taken off the budget so
the whole request fits), call the chat
endpoint with the memory tools, run the tool calls it asks for in the agent's
scope — until the model answers without tool calls; save the answer.

With ``prompt="name"`` the system prompt comes from the store's versioned
prompts (:attr:`Memory.prompts`): the thread is attributed to a version on
the first turn (``mem.prompts.use``), and :meth:`MemoryAgent.finish` ends the
conversation (summary, reward) and records the user's feedback, so the
version's measured reward — and ``memory prompts suggest`` — learn from it.

Saving goes through a :class:`ConversationSink`. The default one writes to
the store's message log (``mem.messages.append(thread=…, role=…, content=…,
user=…)``) when the store has one; otherwise the turns are kept in process
(and fed back as the "Recent conversation" section), and every turn's
``saved`` note says so.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from memory.agent.chat import ChatClient, ChatReply
from memory.agent.tools import ToolScope, available_tools, execute_tool
from memory.context.compile import MESSAGE_OVERHEAD, CompiledPrompt
from memory.context.tokens import counter_for
from memory.context.types import ContextRequest, ContextStrategy, Section, SectionSource, TokenBudget, ToolDef
from memory.errors import AgentError, ContextBudgetError, InvalidInputError
from memory.ids import new_id

__all__ = [
    "MemoryAgent",
    "AgentTurn",
    "AgentStep",
    "ConversationSink",
    "MessageLogSink",
    "InProcessSink",
    "default_sink",
    "DEFAULT_SYSTEM",
]

DEFAULT_SYSTEM = (
    "You are a helpful assistant with a long-term memory. The sections below are what you remember. "
    "Use the memory tools to store new lasting facts about the user (remember), look things up (recall), "
    "and delete what is wrong (forget). Answer the user directly and briefly."
)


@runtime_checkable
class ConversationSink(Protocol):
    """Where an agent saves the turns of a conversation."""

    #: True when the saved turns come back through the store's own sources (``mem.messages``).
    persistent: bool

    def save(self, role: str, content: str, *, scope: ToolScope, at: datetime) -> str:
        """Save one turn; returns a short note for the trace (where it went)."""
        ...

    def transcript(self, thread: str | None) -> list[tuple[str, str, datetime]]:
        """The turns saved in process for ``thread`` (empty for a persistent sink)."""
        ...


class MessageLogSink:
    """Writes turns to ``mem.messages.append(thread=, role=, content=, user=, agent=, namespace=)``."""

    persistent = True

    def __init__(self, memory: Any) -> None:
        """Use the store's message log. Raises InvalidInputError if it has none."""
        self._messages = getattr(memory, "messages", None)
        if not callable(getattr(self._messages, "append", None)):
            raise InvalidInputError("this store has no message log (mem.messages.append)")

    def save(self, role: str, content: str, *, scope: ToolScope, at: datetime) -> str:
        """Append the turn to the thread; returns ``saved to mem.messages``."""
        assert self._messages is not None
        self._messages.append(role=role, content=content, **scope.kwargs(thread=True))
        return "saved to mem.messages"

    def transcript(self, thread: str | None) -> list[tuple[str, str, datetime]]:
        """Empty: the store's ``recent`` source reads the thread back."""
        return []


class InProcessSink:
    """Keeps turns in this process only (for stores without a message log); they are lost on exit."""

    persistent = False
    NOTE = "kept in process only: this store has no message log (mem.messages); the turns are lost on exit"

    def __init__(self) -> None:
        """Start with no turns."""
        self._turns: dict[str | None, list[tuple[str, str, datetime]]] = {}

    def save(self, role: str, content: str, *, scope: ToolScope, at: datetime) -> str:
        """Keep the turn; returns :attr:`NOTE`."""
        self._turns.setdefault(scope.thread, []).append((role, content, at))
        return self.NOTE

    def transcript(self, thread: str | None) -> list[tuple[str, str, datetime]]:
        """The kept turns of ``thread``, oldest first."""
        return list(self._turns.get(thread, []))


def default_sink(memory: Any) -> ConversationSink:
    """The store's message log when it has one, else an in-process transcript."""
    if callable(getattr(getattr(memory, "messages", None), "append", None)):
        return MessageLogSink(memory)
    return InProcessSink()


@dataclass(frozen=True)
class AgentStep:
    """One model call: the compiled context's trace summary, the reply, the tool calls and their results."""

    context_tokens: int
    sections_kept: int
    sections_cut: int
    reply: str | None
    tool_calls: tuple[dict[str, Any], ...] = ()
    usage: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AgentTurn:
    """The outcome of :meth:`MemoryAgent.run`: the final answer, the steps, and where the turns were saved."""

    reply: str
    steps: tuple[AgentStep, ...]
    saved: str
    last_context: CompiledPrompt


class MemoryAgent:
    """An agent over a Memory and an OpenAI-compatible chat endpoint; see the module docs."""

    def __init__(
        self,
        memory: Any,
        client: ChatClient,
        *,
        system: str | None = DEFAULT_SYSTEM,
        user: str | None = None,
        agent: str | None = None,
        namespace: str | None = None,
        thread: str | None = None,
        budget: TokenBudget | int = 4000,
        strategy: ContextStrategy | None = None,
        tools: Sequence[ToolDef] | None = None,
        max_steps: int = 8,
        sink: ConversationSink | None = None,
        prompt: str | None = None,
        tiers: bool = False,
    ) -> None:
        """Bind a store, a chat client and a scope. ``tools`` defaults to the memory tools the store can run.

        ``prompt`` names a versioned prompt of the store to use as the system
        prompt (instead of ``system``), attributed per thread. ``tiers=True``
        turns the agent's memory tiers on (``auto_pages`` for ``agent``): every
        answered message becomes a dialogue page, and the context's ``tiers``
        source reads them back. Raises InvalidInputError (``tiers`` needs
        ``agent`` and ``user``, and a store with tiers and a message log).
        """
        if max_steps < 1:
            raise InvalidInputError("max_steps must be at least 1")
        if tiers:
            if not agent or not user:
                raise InvalidInputError("tiers=True needs agent= and user= (the tiers are per agent and user)")
            if getattr(getattr(memory, "backend", None), "tiers", None) is None or sink is not None:
                raise InvalidInputError("tiers=True needs a store with memory tiers and its message log (no sink=)")
            memory.tiers.configure(agent=agent, namespace=namespace, auto_pages=True)
        self.memory = memory
        self.client = client
        self.system = system
        self.scope = ToolScope(namespace=namespace, user=user, agent=agent, thread=thread or f"chat-{new_id()}")
        self.budget = budget if isinstance(budget, TokenBudget) else TokenBudget(total=budget, reserve_ratio=0.2)
        self.strategy = strategy or ContextStrategy()
        self.tools = tuple(tools) if tools is not None else available_tools(memory)
        self.max_steps = max_steps
        self.sink = sink or default_sink(memory)
        self.prompt = prompt
        self._prompt_thread: str | None = None

    def _now(self) -> datetime:
        from memory.ids import utcnow

        return self.memory.now() if callable(getattr(self.memory, "now", None)) else utcnow()

    def _transcript_section(self, message: str) -> tuple[Section, ...]:
        turns = self.sink.transcript(self.scope.thread)
        if turns and turns[-1][0] == "user" and turns[-1][1] == message:
            turns = turns[:-1]  # the current message is the observation
        turns = turns[-self.strategy.temporal_window :] if self.strategy.temporal_window else []
        if self.sink.persistent or not turns or not self.strategy.include_recent:
            return ()
        text = "\n".join(f"[{at:%Y-%m-%d %H:%M}] {role}: {' '.join(content.split())}" for role, content, at in turns)
        return (
            Section(
                id=f"recent:{self.scope.thread}", label="Recent conversation",
                source=SectionSource(kind="temporal", name="agent.transcript", ref=self.scope.thread),
                content=text, priority="high", recency=turns[-1][2], composition="contextual",
                shrink="truncate_start", min_tokens=min(64, len(text)),
            ),
        )  # fmt: skip

    def context_for(self, message: str, *, exchange_tokens: int = 0) -> CompiledPrompt:
        """The compiled prompt for ``message`` as the next model call would see it.

        ``exchange_tokens`` (the tool calls and results of the current turn, sent
        after the prompt) are taken off the budget, so the whole request fits it.
        """
        budget = self.budget
        if exchange_tokens:
            budget = budget.model_copy(update={"total": max(budget.total - exchange_tokens, 1)})
        request = ContextRequest(
            observation=message, system=self.system, tools=self.tools, budget=budget, strategy=self.strategy,
            model=self.client.model, sections=self._transcript_section(message), **self.scope.kwargs(thread=True),
        )  # fmt: skip
        return self.memory.context(request)  # type: ignore[no-any-return]

    def run(self, message: str) -> AgentTurn:
        """Answer one user message; returns the reply with its steps.

        Raises InvalidInputError for an empty message, ProviderError when the
        endpoint fails, AgentError when no final answer comes within ``max_steps``.
        """
        if not isinstance(message, str) or not message.strip():
            raise InvalidInputError("the message is empty")
        self._use_prompt()
        saved = self.sink.save("user", message, scope=self.scope, at=self._now())
        steps: list[AgentStep] = []
        exchange: list[dict[str, Any]] = []
        compiled: CompiledPrompt | None = None
        counter = counter_for(self.client.model)
        for _ in range(self.max_steps):
            used = sum(counter.count(json.dumps(m, ensure_ascii=False)) + MESSAGE_OVERHEAD for m in exchange)
            try:
                compiled = self.context_for(message, exchange_tokens=used)
            except ContextBudgetError as exc:
                raise AgentError(
                    f"this turn's tool calls and results ({used} tokens) outgrew the budget of {self.budget.total}"
                ) from exc
            body = compiled.openai()
            reply = self.client.complete(body["messages"] + exchange, body.get("tools"))
            calls = self._run_tools(reply, exchange)
            cut = sum(1 for s in compiled.trace.sections if s.status in ("dropped", "duplicate"))
            steps.append(
                AgentStep(
                    context_tokens=compiled.trace.tokens["total"], sections_kept=len(compiled.sections),
                    sections_cut=cut, reply=reply.content, tool_calls=calls, usage=reply.usage,
                )
            )  # fmt: skip
            if not reply.tool_calls:
                answer = reply.content or ""
                saved = self.sink.save("assistant", answer, scope=self.scope, at=self._now())
                return AgentTurn(reply=answer, steps=tuple(steps), saved=saved, last_context=compiled)
        raise AgentError(
            f"no final answer after {self.max_steps} model calls (the model kept calling tools); raise max_steps"
        )

    def _use_prompt(self) -> None:
        """Take the system prompt from the store's versioned prompt for this thread (once per thread)."""
        if self.prompt is None or self._prompt_thread == self.scope.thread:
            return
        prompts = getattr(self.memory, "prompts", None)
        if prompts is None:
            raise InvalidInputError("this store has no versioned prompts (mem.prompts)")
        self.system = prompts.use(self.scope.thread, self.prompt, **self.scope.kwargs())
        self._prompt_thread = self.scope.thread

    def finish(self, **feedback: Any) -> Any:
        """End the conversation (summary and reward, :meth:`Memory.end_conversation`) and record ``feedback``.

        ``feedback`` are :meth:`Feedback.record <memory.feedback.service.Feedback.record>`
        keywords (rating, feedback, example, task_completed, …). Returns the
        thread's conversation record (None when the store keeps no records).
        """
        scope = self.scope.kwargs()
        ended = self.memory.end_conversation(self.scope.thread, **scope)
        record = getattr(ended, "record", None)
        if feedback:
            record = self.memory.feedback.record(self.scope.thread, **scope, **feedback)
        return record

    def _run_tools(self, reply: ChatReply, exchange: list[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
        if not reply.tool_calls:
            return ()
        exchange.append(reply.message())
        done = []
        for call in reply.tool_calls:
            result = execute_tool(self.memory, call.name, call.arguments, self.scope)
            exchange.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
            done.append({"name": call.name, "arguments": call.arguments, "result": result})
        return tuple(done)
