"""Extraction for messages: facts found in conversation turns become memories that cite their message.

:func:`extract_messages` runs :meth:`Memory.extract` (the configured LLM, or
the heuristic extractor — :mod:`memory.extraction`, not a copy of it) on each
message's text and stores every fact as a ``fact`` memory of the message's
scope (user, agent, thread, sensitivity) with ``source_ids = (message.id,)``.
Each fact memory then goes through the usual extraction pipeline
(``remember(..., extract=True)``: entities, relations, update decisions —
inline with the heuristic provider, queued for ``extract_pending`` with a
model) when the backend has a graph store.

Secret, expired and textless messages are never extracted. An LLM failure
for one message is reported (``status="failed"`` with the error) and the
others go on; the message itself is already stored, so nothing is lost, and
storing the same facts again is harmless (identical content in a scope
returns the existing memory).

Callers: ``mem.messages.append(..., extract=True)`` (inline, asked for) and
the sync job when ``settings.extraction.messages`` is on (in the background,
after a message is embedded).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memory.errors import LLMError

if TYPE_CHECKING:
    from memory.episodic.types import Message
    from memory.memory import Memory

__all__ = ["MessageExtraction", "extract_messages", "skip_reason"]


@dataclass
class MessageExtraction:
    """What extraction did for one message: the fact memories stored (ids), or why not."""

    message_id: str
    status: str  # done | skipped | failed
    memory_ids: list[str] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "message_id": self.message_id, "status": self.status, "memory_ids": self.memory_ids,
            "facts": self.facts, "error": self.error,
        }  # fmt: skip


def skip_reason(mem: Memory, message: Message) -> str | None:
    """Why ``message`` is not extracted (secret, expired, no text), or None."""
    if message.sensitivity == "secret":
        return "secret: never extracted"
    if message.expires_at is not None and message.expires_at <= mem.now():
        return "expired"
    if not message.content or not message.content.strip():
        return "no text"
    return None


def _graph_mode(mem: Memory) -> bool:
    return mem.backend.graph is not None


def extract_messages(mem: Memory, messages: Sequence[Message]) -> builtins.list[MessageExtraction]:
    """Extract facts from ``messages`` and store them as memories citing the message (see the module docstring)."""
    reports: list[MessageExtraction] = []
    with_graph = _graph_mode(mem)
    for message in messages:
        reason = skip_reason(mem, message)
        if reason is not None:
            reports.append(MessageExtraction(message.id, "skipped", error=reason))
            continue
        speaker = message.speaker or (message.user if message.role == "user" else message.agent)
        try:
            extraction = mem.extract(message.content, speaker=speaker, namespace=message.namespace)
        except LLMError as exc:
            reports.append(MessageExtraction(message.id, "failed", error=f"{type(exc).__name__}: {exc}"[:500]))
            continue
        facts = [f for f in dict.fromkeys(f.strip() for f in extraction.facts) if f]
        report = MessageExtraction(message.id, "done", facts=facts)
        if facts:
            fields: dict[str, Any] = {
                "namespace": message.namespace, "user": message.user, "agent": message.agent,
                "thread": message.thread, "kind": "fact", "sensitivity": message.sensitivity,
                "source_ids": [message.id], "context": f"said in thread {message.thread}, turn {message.turn}",
                "valid_from": message.created_at,
            }  # fmt: skip
            if with_graph:
                fields["extract"] = True
            report.memory_ids = mem.remember_batch(facts, **fields)
        reports.append(report)
    return reports
