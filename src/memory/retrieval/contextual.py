"""Contextual recall: a query that leans on the recent turns (pronouns, ellipsis) gets their names.

"Where does she live now?" after turns about Maya says nothing about Maya on
its own. :func:`contextual_query` adds the most recent named entities of the
recent turns (speakers of ``"Name: text"`` turns first, then capitalised names
in the text) to such a query, so both the lexical and the vector channel see
them. A self-contained query (no third-person pronoun, not elliptical) is
returned unchanged, so giving recent turns never changes what a plain question
finds. Pure, offline and cheap: a few regular expressions over the last turns.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["contextual_query", "needs_context", "recent_names"]

#: Third-person pronouns that point back to someone named earlier.
_PRONOUNS = frozenset("he him his himself she her hers herself they them their theirs themselves".split())
#: Openings of an elliptical follow-up ("and Paris?", "what about her sister?").
_ELLIPSIS = re.compile(r"^\s*(and|also|what about|how about|same for|then)\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")
_NAME = re.compile(r"\b[A-Z][a-z]+(?:-[A-Z][a-z]+)?\b")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|[\"(]\s*)$")
_SPEAKER = re.compile(r"^\s*(?:\[[^\]]*\]\s*)?([A-Z][\w'\-]*(?: [A-Z][\w'\-]*)?)\s*:\s*(.*)$", re.DOTALL)
#: Capitalised words that are not names (sentence openers, days, months, pronouns, roles).
_NOT_NAMES = frozenset(
    """i i'm i've i'd i'll a an the this that these those it it's its we our you your he she they his her their
    my me us them what when where who whom whose why how which yes no not oh ok okay hi hey hello thanks thank
    wow well so but and or if then also just really great nice good sure maybe please sorry
    monday tuesday wednesday thursday friday saturday sunday january february march april may june july
    august september october november december today tomorrow yesterday user assistant system message""".split()
)
#: Words that open a question or request (not names when capitalised at the start).
_OPENERS = frozenset(
    """did do does is are was were has have had can could would should will shall may might must
    tell give show find list name remind describe explain any anything anyone""".split()
)
#: Roles of a transcript line that are not names of anyone.
_ROLES = frozenset({"user", "assistant", "system", "tool", "message"})


def needs_context(query: str) -> bool:
    """True when ``query`` points back to the conversation: a third-person pronoun or an elliptical opening.

    A query that names someone itself ("What did Caroline do with her kids?")
    does not: its pronouns most likely point to that name.
    """
    for match in _NAME.finditer(query):
        opening = _SENTENCE_START.search(query[: match.start()]) is not None
        if match[0].lower() not in _NOT_NAMES and (not opening or match[0].lower() not in _OPENERS):
            return False
    if _ELLIPSIS.search(query):
        return True
    return any(w.lower() in _PRONOUNS for w in _WORD.findall(query))


def recent_names(recent: Sequence[str], *, turns: int = 3, most: int = 2) -> list[str]:
    """The named entities of the last ``turns`` turns, most recent first (at most ``most``).

    A turn ``"Name: text"`` names its speaker; within a turn, capitalised words
    that are not sentence openers or common words count as names, the last
    mentioned first. Roles (user, assistant) are not names.
    """
    found: list[str] = []
    parsed: list[tuple[str | None, str]] = []
    for turn in [t for t in recent if isinstance(t, str) and t.strip()][-turns:]:
        match = _SPEAKER.match(turn)
        parsed.append((match[1], match[2]) if match is not None else (None, turn))
    # A capitalised word opening a sentence is a name only if it is one elsewhere (a speaker, mid-sentence).
    mentions: list[list[tuple[str, bool]]] = []
    known = {s for s, _ in parsed if s is not None}
    for _, text in parsed:
        words = [(m[0], bool(_SENTENCE_START.search(text[: m.start()]))) for m in _NAME.finditer(text)]
        known.update(w for w, opening in words if not opening)
        mentions.append(words)

    def add(name: str) -> None:
        if name.lower() not in _NOT_NAMES and name.lower() not in _ROLES and name not in found:
            found.append(name)

    for (speaker, _), words in zip(reversed(parsed), reversed(mentions), strict=True):
        for word, opening in reversed(words):
            if not opening or word in known:
                add(word)
        if speaker is not None:
            add(speaker)
        if len(found) >= most:
            break
    return found[:most]


def contextual_query(query: str, recent: Sequence[str] | None, *, turns: int = 3, most: int = 2) -> str:
    """``query`` with the recent turns' names appended when it points back to them; else ``query`` itself.

    Names already in the query are not added again. With no recent turns, or a
    self-contained query, the result is ``query`` unchanged.
    """
    if not recent or not needs_context(query):
        return query
    present = {w.lower() for w in _WORD.findall(query)}
    names = [n for n in recent_names(recent, turns=turns, most=most) if n.lower() not in present]
    if not names:
        return query
    return f"{query} ({', '.join(names)})"
