"""Whose words a query asks for: the user's own, in a user–assistant chat (pure functions).

A question in the first person singular about the asker's own life ("What brand of BBQ
sauce am I obsessed with?", "How many bikes do I own?") is answered by what the *user*
said. In a chat with an assistant, the assistant's replies share those turns' words (they
answer them) and are long, so they fill the top ranks without holding the user's facts:
on the LongMemEval development split 90 of the 100 evidence turns are the user's, while
half the turns are the assistant's.

So when a query asks about the user in the first person and nothing in it points at the
assistant's earlier words ("you mentioned", "you recommended", "remind me", "our previous
conversation"), recall scales down the score of chat turns the assistant said
(:data:`ASSISTANT`): ``RetrievalConfig.speaker_penalty``. A turn's speaker is its role: a
message's ``role``, a memory's ``metadata["role"]``. Memories without a role (facts,
notes, extracted knowledge), third-person questions (LoCoMo's "What did Caroline …") and
questions about what the assistant said are left as they are. Only the assistant's turns
are scaled: a tool's or the system's output may hold the user's data.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["USER", "ASSISTANT", "asks_about_user", "speaker_of", "speaker_factor"]

USER = "user"
ASSISTANT = "assistant"

_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i’m|i've|i’ve|i'd|i’d|i'll|i’ll|my|me|mine|myself)\b", re.IGNORECASE)
#: What the assistant said earlier: "you" with a verb of saying or suggesting in the past tense
#: ("you mentioned", "did you say"), "remind me", or the conversation itself named as the source.
_ASSISTANT_CUE = re.compile(
    r"\byou\b[^.?!]{0,40}\b(?:said|mentioned|told|recommended|suggested|provided|gave|listed|shared|"
    r"explained|described|wrote|referred|referring|answered|replied)\b"
    r"|\bdid you (?:say|mention|tell|recommend|suggest|provide|give|list|share|explain|describe|write|call)\b"
    r"|\bremind me\b"
    r"|\bour (?:previous|last|earlier|recent|past) (?:conversation|chat|discussion|exchange)\b",
    re.IGNORECASE,
)


def asks_about_user(query: str) -> bool:
    """True when ``query`` asks, in the first person singular, about the user and not about the assistant's words."""
    return bool(_FIRST_PERSON.search(query)) and not _ASSISTANT_CUE.search(query)


def speaker_of(metadata: Mapping[str, Any]) -> str | None:
    """The role a memory's metadata names (``"role"``: ``user``, ``assistant``, …), lower case; None without one."""
    role = metadata.get("role")
    return role.strip().lower() if isinstance(role, str) and role.strip() else None


def speaker_factor(role: str | None, about_user: bool, penalty: float) -> float | None:
    """The factor for a hit's final score: ``1 - penalty`` for the assistant's turn when the query is about the user.

    None when nothing is scaled (the query is not about the user, the turn
    has no role or another one than the assistant's, or the penalty is 0).
    """
    if not about_user or penalty <= 0 or role != ASSISTANT:
        return None
    return 1.0 - penalty
