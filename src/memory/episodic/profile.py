"""The current profile of a person, built from their valid facts (for ``user_info`` and ``goals_and_status``).

:func:`build_profile` reads the live ``fact`` memories of a scope whose subject
is the person (``metadata["fact_subject"]``, written by
:mod:`memory.extraction.knowledge`), and renders:

* one line per single-valued slot ("Lives in: Porto"), from the newest live
  fact filling it — superseded and negated facts are closed, so an old value
  can never show up beside the new one;
* then the other facts, newest last, de-duplicated (case and punctuation
  ignored), leaving out those a slot line already says;

cut (oldest other facts first) to fit the block's size limit. Goals (plans,
wishes, preparations) go to a separate text for ``goals_and_status``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memory.backends.base import ListOrder
from memory.extraction.heuristic import normalise_name
from memory.extraction.knowledge import SUBJECT_KEY
from memory.extraction.slots import SLOT_LABELS

if TYPE_CHECKING:
    from memory.episodic.types import Block, Message
    from memory.services import Core
    from memory.types import MemoryItem

__all__ = ["Profile", "build_profile", "profile_blocks", "GOAL_PREDICATE"]

#: Predicates (normalised, first word) that state a goal or plan.
GOAL_PREDICATE = re.compile(
    r"^(?:plan|want|hope|aim|intend|prepare|try|wish|need|dream|study for|save|learn|be going|go to)\b"
)
_GOAL_TEXT = re.compile(r"\b(?:plans?|planning|wants?|hopes?|aims?|preparing|goal|going to|trying to)\b", re.I)


@dataclass
class Profile:
    """A person's current profile: slot values, other facts, goals, and the rendered texts."""

    subject: str
    slots: dict[str, str] = field(default_factory=dict)
    facts: list[str] = field(default_factory=list)
    goals: list[str] = field(default_factory=list)

    def text(self, limit: int = 2000, aliases: Sequence[str] = ()) -> str:
        """The ``user_info`` text: a header, slot lines, then facts (oldest dropped to fit ``limit``)."""
        head = self.subject + (f" (also: {', '.join(aliases)})" if aliases else "")
        lines = [head] + [f"{SLOT_LABELS.get(s, s.capitalize().replace('_', ' '))}: {v}" for s, v in self.slots.items()]
        facts = [f"- {f}" for f in self.facts]
        while facts and len("\n".join(lines + facts)) > limit:
            facts.pop(0)
        out = "\n".join(lines + facts)
        return out if len(out) <= limit else out[: limit - 1] + "…"

    def goals_text(self, limit: int = 2000) -> str:
        """The ``goals_and_status`` text: one goal per line, newest kept when over ``limit``."""
        goals = [f"- {g}" for g in self.goals]
        while goals and len("\n".join(goals)) > limit:
            goals.pop(0)
        return "\n".join(goals)


def _key(text: str) -> str:
    return re.sub(r"[^\w ]+", "", text.lower()).strip()


def _is_goal(item: MemoryItem) -> bool:
    for relation in item.metadata.get("fact_relations") or []:
        if len(relation) == 3 and GOAL_PREDICATE.search(str(relation[1])):
            return True
    return bool(_GOAL_TEXT.search(item.content))


def build_profile(
    core: Core, subject: str, *, namespace: str, user: str | None, agent: str | None, limit: int = 1000
) -> Profile:
    """The current profile of ``subject`` from the live facts of the (namespace, user, agent) scope."""
    flt = core.filter(
        namespace, user=user, agent=agent, kinds=["fact"], metadata={SUBJECT_KEY: normalise_name(subject)},
    )  # fmt: skip
    items = core.backend.list(flt, limit, ListOrder(newest_first=False))
    profile = Profile(subject=subject)
    slot_sources: set[str] = set()
    for item in items:  # oldest first: a newer value of a slot wins
        for slot, value in (item.metadata.get("fact_slots") or {}).items():
            profile.slots[str(slot)] = str(value)
            slot_sources.add(item.id)
    seen: set[str] = set()
    for item in items:
        key = _key(item.content)
        if key in seen:
            continue
        seen.add(key)
        if _is_goal(item):
            profile.goals.append(item.content)
        elif item.id not in slot_sources:  # a slot line already says it
            profile.facts.append(item.content)
    return profile


def _unextracted(core: Core, messages: Sequence[Message], namespace: str | None) -> list[Message]:
    """The user's messages of a thread that no fact memory cites yet."""
    said = [m for m in messages if m.role == "user" and m.content]
    if not said:
        return []
    flt = core.filter(namespace, thread=said[0].thread, kinds=["fact"], include_invalid=True, clearance="secret")
    cited = {s for item in core.backend.list(flt, 10_000, ListOrder(newest_first=False)) for s in item.source_ids}
    return [m for m in said if m.id not in cited]


def profile_blocks(
    core: Core,
    messages: Sequence[Message],
    blocks: Mapping[str, Block],
    *,
    namespace: str | None,
    user: str | None,
    agent: str | None,
) -> dict[str, str]:
    """New ``user_info`` (and ``goals_and_status``) values from the user's current facts, or {} if none.

    The thread's user messages not extracted yet are extracted first (as
    ``messages.append(..., extract=True)`` would have), so the profile is
    built from facts, never from verbatim sentences.
    """
    from memory.episodic.extract import extract_messages

    names = Counter(m.speaker or m.user for m in messages if m.role == "user" and (m.speaker or m.user))
    if not names:
        return {}
    pending = _unextracted(core, messages, namespace)
    if pending:
        extract_messages(core, pending)
    # the person the scope belongs to: the speaker named like the user id, else the one who spoke most
    subject = next((n for n in names if n and user and normalise_name(n) == normalise_name(user)), None)
    subject = subject or names.most_common(1)[0][0]
    assert subject is not None
    ns = core.ns(namespace)
    profile = build_profile(core, subject, namespace=ns, user=user, agent=agent)
    if not profile.slots and not profile.facts and not profile.goals:
        return {}
    aliases: list[str] = []
    graph = core.backend.graph
    if graph is not None:
        for entity in graph.find_entities(ns, [subject]):
            aliases += [a for a in entity.aliases if normalise_name(a) != normalise_name(subject)]
    out: dict[str, str] = {}
    info = blocks.get("user_info")
    out["user_info"] = profile.text(info.limit if info else 2000, aliases)
    if profile.goals:
        goals = blocks.get("goals_and_status")
        out["goals_and_status"] = profile.goals_text(goals.limit if goals else 2000)
    return out
