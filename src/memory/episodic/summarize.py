"""Updating working-memory blocks when a conversation ends.

A :class:`Summarizer` turns a conversation (and the current blocks) into new
block values. :class:`ExtractiveSummarizer` is the deterministic default that
needs no model: it picks the most informative sentences for
``last_conversation_summary``, and the user's own statements about themselves
and their goals for ``user_info`` and ``goals_and_status``. An LLM-backed
summarizer (:class:`~memory.episodic.llm_summarize.LLMSummarizer`, used by
default when an LLM provider other than ``heuristic`` is configured)
implements the same one-method protocol; ``Memory.end_conversation(thread,
summarizer=...)`` or ``Memory(summarizer=...)`` picks another. When a
summarizer raises LLMError, :func:`end_conversation` falls back to the
extractive summary and records why (in the result and the blocks' history).
"""

from __future__ import annotations

import builtins
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from memory.episodic.types import Block, Message
from memory.errors import LLMError
from memory.retrieval.text import STOPWORDS, words

if TYPE_CHECKING:
    from memory.episodic.blocks import Blocks
    from memory.episodic.messages import Messages
    from memory.services import Core

__all__ = ["Summarizer", "ExtractiveSummarizer", "ConversationEnd", "end_conversation", "sentences"]

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_ABOUT_ME = re.compile(
    r"\b(i am|i'm|my name is|i live|i work|i moved|i grew up|i was born|i have|i like|i love|i prefer|"
    r"i hate|i don't like|my (?:\w+ ){0,2}(?:is|are|was))\b",
    re.IGNORECASE,
)
_GOAL = re.compile(
    r"\b(i want|i need|i'd like|i would like|i plan|i'm planning|my goal|i'm trying|i am trying|i hope|"
    r"help me|remind me|i have to|i must)\b",
    re.IGNORECASE,
)


def sentences(text: str) -> builtins.list[str]:
    """Split text into sentences (at . ! ? followed by space, and at line breaks)."""
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


@runtime_checkable
class Summarizer(Protocol):
    """Turns a finished conversation into new working-memory block values."""

    def summarize(self, messages: Sequence[Message], blocks: Mapping[str, Block]) -> dict[str, str]:
        """New values for the labels to update (labels left out are unchanged)."""
        ...


def _merge_lines(old: str, new: Sequence[str], limit: int) -> str:
    """Old lines plus new ones not already present (case-insensitive); oldest dropped to fit ``limit``."""
    lines = [line for line in old.splitlines() if line.strip()]
    seen = {line.lower() for line in lines}
    for line in new:
        if line.lower() not in seen:
            lines.append(line)
            seen.add(line.lower())
    while lines and len("\n".join(lines)) > limit:
        lines.pop(0)
    return "\n".join(lines)


@dataclass
class ExtractiveSummarizer:
    """Deterministic, model-free summaries: top sentences by word salience, plus the user's self-statements."""

    max_sentences: int = 5
    name: ClassVar[str] = "extractive"

    def summarize(self, messages: Sequence[Message], blocks: Mapping[str, Block]) -> dict[str, str]:
        """Summary, user facts and goals from the conversation's text messages."""
        texts = [m for m in messages if m.content]
        if not texts:
            return {}
        candidates: list[tuple[int, str, str]] = []  # (position, who, sentence)
        for message in texts:
            who = message.speaker or message.role
            for sentence in sentences(message.content):
                candidates.append((len(candidates), who, sentence))
        frequency = Counter(w for _, _, s in candidates for w in words(s) if w not in STOPWORDS and len(w) > 2)

        def salience(sentence: str) -> float:
            content = [w for w in words(sentence) if w not in STOPWORDS and len(w) > 2]
            if not content:
                return 0.0
            return float(sum(frequency[w] for w in content)) / math.sqrt(len(content))

        ranked = sorted(candidates, key=lambda c: (-salience(c[2]), c[0]))[: self.max_sentences]
        ranked.sort(key=lambda c: c[0])
        summary_limit = blocks["last_conversation_summary"].limit if "last_conversation_summary" in blocks else 2000
        head = (
            f"Conversation {texts[0].thread} ({len(messages)} messages, turns {messages[0].turn}–{messages[-1].turn}):"
        )
        summary_lines = [head] + [f"- {who}: {sentence}" for _, who, sentence in ranked]
        summary = ""
        for line in summary_lines:
            if len(summary) + len(line) + 1 > summary_limit:
                break
            summary = f"{summary}\n{line}" if summary else line
        out = {"last_conversation_summary": summary}
        user_said = [m for m in texts if m.role == "user"]
        about = [s for m in user_said for s in sentences(m.content) if _ABOUT_ME.search(s)]
        goals = [s for m in user_said for s in sentences(m.content) if _GOAL.search(s)]
        if about:
            block = blocks.get("user_info")
            out["user_info"] = _merge_lines(block.value if block else "", about, block.limit if block else 2000)
        if goals:
            block = blocks.get("goals_and_status")
            out["goals_and_status"] = _merge_lines(block.value if block else "", goals, block.limit if block else 2000)
        return out


@dataclass
class ConversationEnd:
    """What ``end_conversation`` did: how many messages it read and the blocks it updated."""

    thread: str
    messages: int
    user: str | None
    agent: str | None
    updated: dict[str, Block] = field(default_factory=dict)
    summarizer: str = "extractive"
    fallback_reason: str | None = None
    #: the ``last_conversation_summary`` the summarizer produced (also stored in the feedback record)
    summary: str | None = None
    #: the thread's conversation record, written and scored at the end (:mod:`memory.feedback`)
    record: Any = None


def end_conversation(
    core: Core,
    messages_log: Messages,
    blocks_of: Blocks,
    thread: str,
    *,
    summarizer: Summarizer,
    namespace: str | None = None,
    user: str | None = None,
    agent: str | None = None,
) -> ConversationEnd:
    """Summarise a thread's visible (non-secret) messages into the blocks of its user/agent scope.

    ``user``/``agent`` default to the ones most of the thread's messages carry.
    """
    messages = messages_log.get_thread(thread, namespace=namespace, limit=10_000)
    if user is None:
        users = Counter(m.user for m in messages if m.user)
        user = users.most_common(1)[0][0] if users else None
    if agent is None:
        agents = Counter(m.agent for m in messages if m.agent)
        agent = agents.most_common(1)[0][0] if agents else None
    result = ConversationEnd(thread=thread, messages=len(messages), user=user, agent=agent)
    if not messages:
        return result
    blocks = {b.label: b for b in blocks_of.all(user=user, agent=agent, namespace=namespace)}
    result.summarizer = getattr(summarizer, "name", type(summarizer).__name__)
    reason = f"end of conversation {thread}"
    try:
        values = summarizer.summarize(messages, blocks)
    except LLMError as exc:  # the model failed: the extractive summary still updates the blocks
        result.fallback_reason = f"{type(exc).__name__}: {exc}"[:500]
        result.summarizer = ExtractiveSummarizer.name
        reason += f" (extractive fallback; {result.summarizer} used because the LLM failed: {result.fallback_reason})"
        values = ExtractiveSummarizer().summarize(messages, blocks)
    if user is not None:  # the profile comes from the user's current facts, not verbatim sentences
        from memory.episodic.profile import profile_blocks

        values.update(profile_blocks(core, messages, blocks, namespace=namespace, user=user, agent=agent))
    result.summary = values.get("last_conversation_summary")
    for label, value in values.items():
        if blocks.get(label) is not None and blocks[label].value == value:
            continue
        result.updated[label] = blocks_of.write_summary(
            label, value, user=user, agent=agent, namespace=namespace, reason=reason
        )
    return result
