"""Extraction for messages: the facts a turn states become memories that cite it.

:func:`extract_messages` runs the message extractor
(:func:`memory.extraction.message_facts.facts_of_message`: the configured LLM
with a per-message fallback to the offline extractor, spaCy's parse when the
``nlp`` extra is installed) on each message, knowing who speaks (the message's
speaker, else its user or agent) and to whom (the thread's other recent
speaker). Each fact — third person, self-contained, its time resolved
against the message's time — is stored by
:func:`memory.extraction.knowledge.store_facts` as a ``fact`` memory of the
message's scope with ``source_ids = (message.id,)``; single-valued slots
supersede, negations and corrections close older facts, and the graph gets
the entities and relations (when the backend has a graph store).

Secret, expired and textless messages are never extracted. An LLM failure
never loses a message: that message is extracted offline instead, and the
report says so (``fallback``). Storing the same fact again is harmless
(identical content in a scope returns the existing memory).

Callers: ``mem.messages.append(..., extract=True)`` (inline, asked for) and
the sync job when ``settings.extraction.messages`` is on (in the background,
after a message is embedded).
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memory.episodic.types import MessageExtraction, MessageQuery
from memory.errors import Error, LLMError
from memory.services import Core, episodic_store

if TYPE_CHECKING:
    from memory.episodic.types import Message

__all__ = ["MessageExtraction", "extract_messages", "skip_reason"]

log = logging.getLogger(__name__)


def skip_reason(core: Core, message: Message) -> str | None:
    """Why ``message`` is not extracted (secret, expired, no text), or None."""
    if message.sensitivity == "secret":
        return "secret: never extracted"
    if message.expires_at is not None and message.expires_at <= core.now():
        return "expired"
    if not message.content or not message.content.strip():
        return "no text"
    return None


def _listener(core: Core, message: Message, speaker: str) -> str | None:
    """The other person in the conversation: the newest earlier speaker of the thread who is not ``speaker``."""
    try:
        query = MessageQuery(namespace=message.namespace, thread=message.thread, clearance="private", now=core.now())
        recent = list(reversed(episodic_store(core.backend).list_messages(query, 12, newest_first=True)))
    except Error:
        return None
    for other in reversed(recent):
        if other.id == message.id or other.turn >= message.turn:
            continue
        name = other.speaker or (other.user if other.role == "user" else None)
        if name and name != speaker and other.role != "assistant":
            return name
    return None


def extract_messages(core: Core, messages: Sequence[Message]) -> builtins.list[MessageExtraction]:
    """Extract facts from ``messages`` and store them as memories citing the message (see the module docstring)."""
    from memory.extraction.knowledge import store_facts
    from memory.extraction.message_facts import facts_of_message

    reports: list[MessageExtraction] = []
    for message in messages:
        reason = skip_reason(core, message)
        if reason is not None:
            reports.append(MessageExtraction(message.id, "skipped", error=reason))
            continue
        speaker = message.speaker or (message.user if message.role == "user" else message.agent) or message.role
        found = facts_of_message(
            message.content, speaker=speaker, listener=_listener(core, message, speaker), at=message.created_at,
            llm=core.llm,
        )  # fmt: skip
        report = MessageExtraction(message.id, "done", facts=[f.statement for f in found.facts])
        report.fallback = found.fallback_reason
        if found.fallback_reason:
            log.warning("LLM extraction of message %s failed, offline extractor used: %s", message.id,
                        found.fallback_reason)  # fmt: skip
        try:
            report.memory_ids, report.closed_ids = store_facts(core, message, found)
        except LLMError as exc:  # pragma: no cover - store_facts calls no LLM; kept for safety
            report.status, report.error = "failed", f"{type(exc).__name__}: {exc}"[:500]
        reports.append(report)
    return reports
