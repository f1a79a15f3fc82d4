"""Update decisions: what a new fact does to its near neighbours (pure heuristic rules).

Outcomes (mem0's idea, with Zep's temporal truth): ADD (new information),
NOOP (a neighbour already says it), UPDATE (the new fact is a more detailed
version of a neighbour: merge), SUPERSEDE (same subject and one-valued
predicate, different object: the old fact is closed, not deleted) and DELETE
(the new fact negates a neighbour). Rules, in order, for each neighbour
(most similar first):

1. same normalised text, word-set Jaccard >= ``noop_jaccard`` or cosine >=
   ``noop_cosine`` → NOOP;
2. a relation of the new fact negates one of the neighbour ("X no longer
   lives in P" vs "X lives in P") → DELETE;
3. same subject and same one-valued predicate (``FUNCTIONAL_PREDICATES``,
   "my favourite X is", "is married to"...) with another object → SUPERSEDE;
4. the neighbour's content words are a strict subset of the new fact's → UPDATE
   (merged text = the new fact);
5. otherwise ADD.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memory.extraction.heuristic import FUNCTIONAL_PREDICATES, NEGATIONS, normalise_name, relations
from memory.llms.schemas import DecisionOut
from memory.retrieval.text import STOPWORDS, words

__all__ = ["Neighbour", "decide_heuristic", "is_functional", "content_words"]

_ONE_VALUED_HEADS = {"favourite", "favorite", "name", "age", "job", "address", "birthday", "email", "phone", "home"}


@dataclass(frozen=True, slots=True)
class Neighbour:
    """An existing memory close to the new fact: its id, text and similarity (cosine, or 0 when unknown)."""

    id: str
    content: str
    similarity: float = 0.0


def content_words(text: str) -> set[str]:
    """Lower-cased words of ``text`` without stopwords."""
    return {w for w in words(text) if w not in STOPWORDS}


def is_functional(predicate: str) -> bool:
    """True for predicates that hold one value at a time (a new value supersedes the old)."""
    from memory.extraction.slots import slot_of

    head = predicate.split()[0] if predicate else ""
    return (
        predicate in FUNCTIONAL_PREDICATES
        or head in _ONE_VALUED_HEADS
        or predicate.startswith(("is ", "was "))
        or slot_of(predicate) is not None
    )


def _negated(predicate: str) -> str | None:
    for word in NEGATIONS:
        if predicate.startswith(word):
            return predicate[len(word) :]
    return None


def decide_heuristic(
    fact: str,
    neighbours: Sequence[Neighbour],
    *,
    speaker: str | None = None,
    noop_jaccard: float = 0.9,
    noop_cosine: float = 0.97,
) -> DecisionOut:
    """Decide what ``fact`` does to ``neighbours`` by the rules in the module docstring."""
    new_words = content_words(fact)
    new_rels = relations(fact, speaker)
    for index, other in enumerate(neighbours):
        old_words = content_words(other.content)
        union = new_words | old_words
        jaccard = len(new_words & old_words) / len(union) if union else 1.0
        if normalise_name(fact) == normalise_name(other.content) or jaccard >= noop_jaccard:
            return DecisionOut(action="NOOP", target=index, reason=f"same statement (word overlap {jaccard:.2f})")
        if other.similarity >= noop_cosine:
            return DecisionOut(action="NOOP", target=index, reason=f"near duplicate (cosine {other.similarity:.3f})")
        for new in new_rels:
            for old in relations(other.content, speaker):
                if normalise_name(new.subject) != normalise_name(old.subject):
                    continue
                base = _negated(new.predicate)
                if (
                    base is not None
                    and base == old.predicate
                    and normalise_name(new.object) == normalise_name(old.object)
                ):
                    return DecisionOut(
                        action="DELETE", target=index,
                        reason=f"negates it: '{new.subject} {new.predicate} {new.object}'",
                    )  # fmt: skip
                if (
                    new.predicate == old.predicate
                    and is_functional(new.predicate)
                    and normalise_name(new.object) != normalise_name(old.object)
                ):
                    return DecisionOut(
                        action="SUPERSEDE", target=index,
                        reason=f"same subject and predicate '{new.subject} {new.predicate}', "
                        f"object changed from '{old.object}' to '{new.object}'",
                    )  # fmt: skip
        if len(old_words) >= 2 and old_words < new_words:
            return DecisionOut(
                action="UPDATE", target=index, merged=fact,
                reason=f"adds detail to it ({len(new_words - old_words)} new word(s), all its words kept)",
            )  # fmt: skip
    best = max((n.similarity for n in neighbours), default=0.0)
    return DecisionOut(action="ADD", reason=f"new information ({len(neighbours)} neighbour(s), best cosine {best:.2f})")
