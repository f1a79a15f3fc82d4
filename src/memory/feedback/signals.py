"""What the user's own words say about how a conversation went: pure, deterministic, documented.

A user message *reacts* when it follows an assistant message (the opening
request does not: "thanks in advance" is not a judgement). Each reacting
message gets at most one signal, negative first (a message that thanks and
complains — "thanks, but that's wrong" — complains):

==============  ======  ===========================================================
signal          sign    what it looks like (general phrase families, not sentences)
==============  ======  ===========================================================
correction      −       "no, I meant …", "I said/asked …", "not what I asked",
                        "that's wrong/incorrect/not right", "wrong.", "you
                        misunderstood", "X, not Y" ("I said AM, not PM"),
                        "that's not a …"
complaint       −       "useless", "not helpful", "doesn't/didn't work", "still
                        broken/the same error", "going in circles", "frustrating",
                        "waste of time", "too long/vague", "you forgot/missed/
                        ignored …", "did you even read", "missed the point"
repeat          −       the request again: "again: …", "try again", "I already asked/told/did",
                        "for the second time", or ≥ 60 % of an earlier user
                        message's words (Jaccard, messages of ≥ 3 words)
abandonment     −       "never mind", "forget it", "I give up", "whatever", "I'll do
                        it myself / ask someone else / call …", "thanks anyway",
                        "thanks for trying", "thanks for nothing"
thanks          +       "thanks", "thank you", "thx", "cheers", "appreciate it",
                        "gracias/merci/danke" — not "thanks in advance", "no thanks"
success         +       "that worked / fixed it / did it / solved", "works great",
                        "exactly what I needed", "now I get it", "perfect", "great",
                        "awesome", "brilliant"
==============  ======  ===========================================================

Plain acknowledgements ("ok", "got it", "right", "I see", "interesting") and
follow-up questions carry no signal. :func:`dialogue_score` turns the signals
into one number in [−1, 1]: the mean of the signs where the last signalled
message (how the conversation ended) counts twice; None when there is none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "Signal",
    "NEGATIVE_SIGNALS",
    "POSITIVE_SIGNALS",
    "DialogueSignals",
    "classify_reaction",
    "dialogue_signals",
    "dialogue_score",
]

Signal = Literal["correction", "complaint", "repeat", "abandonment", "thanks", "success"]
NEGATIVE_SIGNALS: frozenset[str] = frozenset({"correction", "complaint", "repeat", "abandonment"})
POSITIVE_SIGNALS: frozenset[str] = frozenset({"thanks", "success"})


def _rx(*parts: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in parts), re.IGNORECASE)


_CORRECTION = _rx(
    r"\b(?:no|nope|nah)\b[,.!]*\s+(?:i|that|this|it|you)\b",
    r"\bi meant\b(?! to\b)",
    r"\bwhat i (?:meant|said|asked|wanted)\b",
    r"\bi (?:said|asked for|asked about|asked you|wanted)\b",
    r"\bnot what i (?:asked|wanted|meant|said|need|needed)\b",
    r"\b(?:that|this|it|which|that answer)(?:'s| is| was)\s+(?:just |totally |completely |all |simply )?"
    r"(?:wrong|incorrect|not right|not correct|not true|false|inaccurate|a mistake)\b",
    r"^\W*(?:wrong|incorrect)\b",
    r"\byou(?:'re| are)? (?:wrong|mistaken)\b",
    r"\byou (?:misunderstood|misread|got it wrong|got that wrong|mixed up)\b",
    r"\bthat(?:'s| is) not (?:it|a|an|the|what|right)\b",
    r"\bnot quite\b",
    r"\b\w+,\s*not\s+(?!bad\b|too\b|sure\b|yet\b|really\b|much\b)\w+",
)
_COMPLAINT = _rx(
    r"\b(?:useless|unhelpful|pointless|nonsense|rubbish|garbage)\b",
    r"\bnot (?:helpful|useful|working|good enough)\b",
    r"\b(?:does ?n[o']?t|did ?n[o']?t|does not|did not|won'?t|still (?:does ?n'?t|won'?t))\s+(?:work|help|answer|fix)",
    r"\bstill\s+(?:broken|failing|fails|wrong|getting|get|the same|not|crash\w*|stuck|see(?:ing)?)\b",
    r"\bsame (?:error|problem|issue|thing)\b",
    r"\bgoing (?:in|round in|around in) circles\b",
    r"\bfrustrat\w*|\bannoy\w*|\bwaste of (?:my )?time\b|\bridiculous\b|\bterrible\b|\bawful\b|\bhorrible\b",
    r"\b(?:way |far |much )?too (?:long|short|vague|verbose|wordy|generic|complicated|slow)\b",
    r"\byou (?:forgot|missed|ignored|skipped)\b|\bmissed the point\b",
    r"\bdid (?:you|u) (?:even )?read\b|\bdid ?n'?t (?:read|listen)\b|\byou(?:'re| are) not listening\b",
    r"\bnothing (?:you )?(?:suggest\w*|say|said|works|worked|helps|helped)\b",
    r"\b(?:confusing|confused me|makes no sense|doesn'?t make sense)\b",
    r"\bnot even close\b|\bworse\b",
)
_REPEAT = _rx(
    r"^\W*again\b[:,!?.]",
    r"\bi (?:already|just) (?:asked|told|said|did|tried|explained)\b",
    r"\bfor the (?:second|third|fourth|fifth|last|nth|\d+(?:st|nd|rd|th)) time\b",
    r"\bas i (?:said|asked|mentioned)\b|\blike i said\b|\bonce again\b|\bi repeat\b",
    r"\btry (?:it )?again\b|\bone more time\b",
)
_ABANDON = _rx(
    r"\bnever ?mind\b|\bnvm\b|\bforget (?:it|about it|this)\b|\bi give up\b|\bwhatever\b",
    r"\bi(?:'ll| will) (?:just )?(?:do|figure|sort|handle|fix|find|look|google|search|ask|call|try)\b"
    r"[^.!?]*\b(?:myself|elsewhere|someone else|somebody else|somewhere else|support|my \w+|out)\b",
    r"\bthanks? (?:anyway|anyways|for nothing|for trying|for (?:the|your) (?:try|effort))\b",
    r"\bthank you (?:anyway|anyways|for trying)\b|\bno use\b|\bforget i asked\b",
)
_THANKS = _rx(
    r"\bthank(?:s| you| u)\b|\bthx\b|\bthnx\b|\bty\b|\bcheers\b|\bappreciated?\b|\bappreciate (?:it|that|this)\b",
    r"\b(?:gracias|merci|danke)\b|\bkudos\b",
)
_NOT_THANKS = _rx(r"\bthanks? in advance\b|\bthank you in advance\b|\bno,? thanks?\b|\bno,? thank you\b")
_SUCCESS = _rx(
    r"\b(?:that|this|it|which)(?:'s| has| have)? (?:worked|works|work now|fixed it|fixed|did it|did the trick|solved|"
    r"helped|helps|saved me)\b",
    r"\b(?:works|worked|working) (?:great|perfectly|fine|now|beautifully)\b",
    r"\b(?:fixed|solved|sorted|resolved) (?:it|my|the|that)\b|\bproblem solved\b|\ball (?:set|good|sorted)\b",
    r"\bexactly (?:it|right|that|what i (?:needed|wanted|was looking for))\b|\bthat'?s (?:it|what i needed)\b",
    r"\bnow i (?:get|understand|see) (?:it|how|why)\b|\bmakes (?:total |perfect )?sense\b",
    r"\b(?:perfect|great|awesome|brilliant|excellent|fantastic|amazing|wonderful|superb|spot on|nice one|lovely)\b",
    r"\bhelpful\b|\bmuch (?:better|clearer)\b",
)
_WORD = re.compile(r"[a-z0-9']+")
_STOP = frozenset("a an the i you it is are was to of in on for and or but my me do how what can please".split())


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def classify_reaction(text: str, earlier_user: Sequence[str] = ()) -> Signal | None:
    """The signal of one reacting user message (see the module table), or None.

    ``earlier_user`` are the user's earlier messages of the conversation (to see a request repeated).
    """
    text = " ".join(text.replace("’", "'").split())
    if not text:
        return None
    if _ABANDON.search(text):
        return "abandonment"
    if _REPEAT.search(text):
        return "repeat"
    words = _content_words(text)
    if len(words) >= 3 and any(
        len(words & w) / len(words | w) >= 0.6 for w in map(_content_words, earlier_user) if len(w) >= 3
    ):
        return "repeat"
    if _CORRECTION.search(text):
        return "correction"
    if _COMPLAINT.search(text):
        return "complaint"
    if _SUCCESS.search(text):
        return "success"
    if _THANKS.search(_NOT_THANKS.sub(" ", text)):
        return "thanks"
    return None


@dataclass(frozen=True)
class DialogueSignals:
    """The signals of a conversation's reacting user messages, in order, and what they add up to."""

    signals: tuple[Signal, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def negative(self) -> int:
        """How many reacting messages carried a negative signal."""
        return sum(1 for s in self.signals if s in NEGATIVE_SIGNALS)

    @property
    def positive(self) -> int:
        """How many reacting messages carried a positive signal."""
        return sum(1 for s in self.signals if s in POSITIVE_SIGNALS)


def dialogue_signals(messages: Sequence[tuple[str, str]]) -> DialogueSignals:
    """The signals of the user messages that react to an assistant message; ``messages`` are (role, content)."""
    found: list[Signal] = []
    earlier: list[str] = []
    answered = False
    for role, content in messages:
        if role == "assistant":
            answered = True
            continue
        if role != "user" or not content:
            continue
        if answered:
            signal = classify_reaction(content, earlier)
            if signal is not None:
                found.append(signal)
        earlier.append(content)
    counts: dict[str, int] = {}
    for s in found:
        counts[s] = counts.get(s, 0) + 1
    return DialogueSignals(tuple(found), counts)


def dialogue_score(signals: Sequence[str]) -> float | None:
    """Mean sign of ``signals`` in [−1, 1], the last one (the ending) counted twice; None without signals."""
    if not signals:
        return None
    signs = [(-1.0 if s in NEGATIVE_SIGNALS else 1.0) for s in signals]
    weights = [1.0] * (len(signs) - 1) + [2.0]
    return sum(w * s for w, s in zip(weights, signs, strict=True)) / sum(weights)
