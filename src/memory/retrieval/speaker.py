"""Whose words a question asks for in a user–assistant chat: the user's or the assistant's (pure functions).

A question in the first person singular about the asker's own life ("What brand of BBQ
sauce am I obsessed with?", "How many bikes do I own?") is answered by what the *user*
said. In a chat with an assistant, the assistant's replies share those turns' words (they
answer them) and are long, so they fill the top ranks without holding the user's facts:
on the LongMemEval development split 90 of the 100 evidence turns are the user's, while
half the turns are the assistant's. A question about what the assistant said ("you
mentioned", "did you recommend") is the other way round.

So recall scales the final score of the other side's chat turns by
``1 - RetrievalConfig.speaker_penalty``: the assistant's turns for a question about the
user, the user's for a question about the assistant's words. A turn's side is its role: a
message's ``role``, a memory's ``metadata["role"]``. Memories without a role (facts, notes,
extracted knowledge), turns of other roles (tools, system), third-person questions
(LoCoMo's "What did Caroline …") and questions that point at the conversation without
saying whose words ("remind me", "our previous chat") are left as they are by that rule.

A third-person question that names exactly one of the chat's named speakers ("What did
Caroline research?") mostly asks for that speaker's words: on the LoCoMo development split
803 of the 832 evidence turns recall finds for such questions are the named speaker's. So
the other named speakers' turns are scaled by ``1 - RetrievalConfig.named_speaker_penalty``
(milder: the other speaker may report it, "Caroline told me …"). A turn's speaker is a
message's ``speaker`` or a memory's ``metadata["speaker"]``; turns without one are left as
they are, and the rule only applies when the question names one speaker among at least two
in the candidates and the first-person rule above does not apply.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "USER", "ASSISTANT", "asked_speaker", "named_speaker", "role_of", "speaker_factor", "named_factor", "turn_factors",
    "named_by_others",
]  # fmt: skip

USER = "user"
ASSISTANT = "assistant"

_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i’m|i've|i’ve|i'd|i’d|i'll|i’ll|my|me|mine|myself)\b", re.IGNORECASE)
#: The question asks what the assistant said earlier: "you" with a verb of saying or suggesting
#: in the past tense ("you mentioned", "you told me", "did you say").
_ASSISTANT_SAID = re.compile(
    r"\byou\b[^.?!]{0,40}\b(?:said|mentioned|told|recommended|suggested|provided|gave|listed|shared|"
    r"explained|described|wrote|referred|referring|answered|replied)\b"
    r"|\bdid you (?:say|mention|tell|recommend|suggest|provide|give|list|share|explain|describe|write|call)\b",
    re.IGNORECASE,
)
#: Weaker pointers at the conversation: the question may ask for either side's words.
_CONVERSATION = re.compile(
    r"\bremind me\b|\bour (?:previous|last|earlier|recent|past) (?:conversation|chat|discussion|exchange)\b",
    re.IGNORECASE,
)


def asked_speaker(query: str) -> str | None:
    """Whose words ``query`` asks for: :data:`ASSISTANT`, :data:`USER`, or None (either, or nobody's in particular).

    The assistant's when the question points at what the assistant said
    ("you mentioned", "did you recommend"); the user's when it speaks in the
    first person singular and points at no part of the conversation ("remind
    me", "our previous chat" leave it open); None otherwise (third person).
    """
    if _ASSISTANT_SAID.search(query):
        return ASSISTANT
    if _FIRST_PERSON.search(query) and not _CONVERSATION.search(query):
        return USER
    return None


def role_of(raw: Any) -> str | None:
    """A stored role (a memory's ``metadata["role"]``: ``user``, ``assistant``, …) lower case; None if not a word."""
    return raw.strip().lower() if isinstance(raw, str) and raw.strip() else None


def speaker_factor(role: str | None, asked: str | None, penalty: float) -> float | None:
    """The factor for a hit's final score: ``1 - penalty`` for the other side's chat turn than the one ``asked``.

    Only user and assistant turns are scaled (a tool's or the system's output
    may hold what is asked); None when nothing is scaled (no side asked, the
    turn has no role or the asked side's, or the penalty is 0).
    """
    if asked is None or penalty <= 0 or role not in (USER, ASSISTANT) or role == asked:
        return None
    return 1.0 - penalty


def named_speaker(query: str, speakers: Iterable[Any]) -> str | None:
    """The one of ``speakers`` that ``query`` names, when it names exactly one and there are two or more.

    A speaker is named by their name or its first word (at least two letters), as a whole
    word with the case it is written in ("Caroline" names "Caroline"; "caroline" and
    "Carolines" do not), so a speaker called "May" or "Will" is not named by "may" or "will".
    """
    names = {name.strip() for name in speakers if isinstance(name, str) and name.strip()}
    if len(names) < 2:
        return None
    named = [name for name in names if _names(query, name)]
    return named[0] if len(named) == 1 else None


def _names(query: str, name: str) -> bool:
    first = name.split()[0]
    forms = {name} | ({first} if len(first) >= 2 and first.isalpha() else set())
    return any(re.search(rf"(?<![\w']){re.escape(form)}(?!\w)", query) for form in forms)


def named_factor(speaker: Any, named: str | None, penalty: float) -> float | None:
    """The factor for a hit's final score: ``1 - penalty`` for a turn another named speaker said than ``named``.

    None when nothing is scaled (no speaker named, the turn has no speaker or the named one's,
    or the penalty is 0).
    """
    if named is None or penalty <= 0 or not isinstance(speaker, str) or not speaker.strip():
        return None
    return None if speaker.strip() == named else 1.0 - penalty


def turn_factors(
    query: str, turns: Mapping[str, tuple[Any, Any]], penalty: float, named_penalty: float
) -> dict[str, float]:
    """Final-score factors, by id, of the chat turns ``turns`` (id -> (role, speaker)) for ``query``.

    A first-person question or one about what the assistant said scales the other side's
    turns by ``1 - penalty`` (:func:`speaker_factor`); otherwise a question that names one
    of the turns' named speakers scales the other named speakers' by ``1 - named_penalty``
    (:func:`named_factor`). Ids left out are not scaled.
    """
    asked = asked_speaker(query)
    if asked is not None:
        return {
            turn: factor
            for turn, (role, _) in turns.items()
            if (factor := speaker_factor(role_of(role), asked, penalty)) is not None
        }
    named = named_speaker(query, (speaker for _, speaker in turns.values())) if named_penalty > 0 else None
    return {
        turn: factor
        for turn, (_, speaker) in turns.items()
        if (factor := named_factor(speaker, named, named_penalty)) is not None
    }


def named_by_others(query: str, turns: Mapping[str, tuple[Any, Any]], named_penalty: float) -> bool:
    """True when :func:`turn_factors` of ``turns`` may change with turns beyond them.

    A named speaker is chosen among the speakers of the turns given (two or
    more, exactly one named), so a question that asks no side of the chat can
    scale a named speaker's turn once another speaker's turn joins them. The
    factors of the chat sides (:func:`speaker_factor`) are each turn's own.
    """
    if named_penalty <= 0 or asked_speaker(query) is not None:
        return False
    return any(isinstance(speaker, str) and speaker.strip() for _, speaker in turns.values())
