"""Single-valued slots and closing rules for canonical facts (pure functions).

A *slot* is an attribute that holds one value at a time for a subject: where
someone lives, where they work, their job title, partner, manager, age… A new
fact filling a slot supersedes the subject's previous fact in that slot when
the value differs. Predicates are normalised first (lower case, verb lemmas:
"moved to", "lives in" and "relocated to" all fill ``lives_in``), so the
offline extractor and an LLM land on the same slots.

A *closing* fact ends earlier truths without replacing them: a negated fact
("no longer works at X") closes the same subject/predicate/object, and some
verbs end a slot outright ("broke up" ends ``partner``; "quit" ends
``works_at``).
"""

from __future__ import annotations

import re

__all__ = ["slot_of", "closes_slots", "normalise_predicate", "SLOT_LABELS", "same_value"]

#: Slot name -> how the profile names it.
SLOT_LABELS: dict[str, str] = {
    "name": "Name",
    "age": "Age",
    "lives_in": "Lives in",
    "home": "Home",
    "works_at": "Works at",
    "job_title": "Job",
    "studies_at": "Studies at",
    "partner": "Partner",
    "relationship_status": "Relationship",
    "manager": "Manager",
    "diet": "Diet",
}

_BASE = {
    "lives": "live", "lived": "live", "living": "live", "moved": "move", "moves": "move", "moving": "move",
    "works": "work", "worked": "work", "working": "work", "started": "start", "starts": "start",
    "joined": "join", "joins": "join", "studies": "study", "studied": "study", "studying": "study",
    "married": "marry", "marries": "marry", "dating": "date", "dated": "date", "dates": "date",
    "relocated": "relocate", "relocates": "relocate", "is": "be", "am": "be", "are": "be", "was": "be",
    "were": "be", "has": "have", "had": "have", "rented": "rent", "rents": "rent", "bought": "buy",
    "quit": "quit", "quits": "quit", "left": "leave", "leaves": "leave", "broke": "break", "breaks": "break",
    "divorced": "divorce", "split": "split", "resides": "reside", "resided": "reside", "settled": "settle",
    "enrolled": "enrol", "enroll": "enrol", "enrolls": "enrol", "attends": "attend", "attended": "attend",
    "got": "get", "gets": "get", "hired": "hire", "promoted": "promote", "became": "become",
}  # fmt: skip

_SLOT_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), slot)
    for pattern, slot in (
        (r"^(?:live|reside|settle) (?:in|at)$|^(?:move|relocate) (?:to|into)$|^be (?:from|based in)$", "lives_in"),
        (r"^(?:rent|buy|move into|live in) (?:flat|apartment|house|home|place|room) (?:in|at)$", "home"),
        (r"^(?:work|intern) (?:at|for)$|^(?:join|start at|start with|be hired by|get (?:a )?job at)$", "works_at"),
        (r"^(?:work|start|get (?:a )?job) as$|^be promoted to$|^have job as$|^have job$", "job_title"),
        (r"^(?:study|enrol) (?:at|in)$|^attend$|^go to (?:university|college|school) (?:at|in)$", "studies_at"),
        (
            r"^(?:marry|marry to|be (?:married|marry) to|date|be (?:dating|date)|be engaged to"
            r"|be in relationship with)$",
            "partner",
        ),
        (r"^have (?:boyfriend|girlfriend|husband|wife|partner|fiancee?|fiancé|spouse)$", "partner"),
        (r"^have manager$|^have boss$|^report to$", "manager"),
        (r"^have name$|^be called$|^be named$", "name"),
        (r"^have age$|^be aged$", "age"),
        (r"^be (?:single|married|marry|engaged|divorced|divorce|widowed|separated|separate)$", "relationship_status"),
        (r"^be (?:vegetarian|vegan|pescatarian)$|^have diet$", "diet"),
        (r"^have (?:favou?rite \w+(?: \w+)?)$", "favourite"),
    )
)
_ENDS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (
        re.compile(r"^(?:break up|split up|divorce|separate|break up with|split up with|divorce from|leave partner)"),
        ("partner", "relationship_status"),
    ),  # fmt: skip
    (re.compile(r"^(?:quit|leave|resign from|be fired from|be laid off from|lose job)"), ("works_at", "job_title")),
    (re.compile(r"^(?:move out of|move away from)"), ("lives_in", "home")),
)


def normalise_predicate(predicate: str) -> str:
    """Lower case, verbs to their base form, articles and possessives dropped ("Moved to" -> "move to")."""
    tokens = [t for t in re.findall(r"[a-zé']+", predicate.lower()) if t not in {"a", "an", "the", "my", "his", "her"}]
    return " ".join(_BASE.get(t, t) for t in tokens)


def slot_of(predicate: str) -> str | None:
    """The single-valued slot a predicate fills ("moved to" -> "lives_in"), or None (many values allowed)."""
    norm = normalise_predicate(predicate)
    for pattern, slot in _SLOT_RULES:
        if pattern.search(norm):
            if slot == "favourite":
                return "favourite " + norm.split(" ", 2)[-1].replace("favorite", "favourite")
            return slot
    return None


def closes_slots(predicate: str) -> tuple[str, ...]:
    """The slots a fact with this predicate ends outright ("broke up" -> partner, relationship status)."""
    norm = normalise_predicate(predicate)
    for pattern, slots in _ENDS:
        if pattern.search(norm):
            return slots
    return ()


def same_value(a: str, b: str) -> bool:
    """Whether two slot values name the same thing (case, articles and a trailing period ignored)."""

    def key(value: str) -> str:
        value = re.sub(r"\s+", " ", value.lower()).strip(" .,!?'\"")
        return re.sub(r"^(?:the|a|an) ", "", value)

    return key(a) == key(b)
