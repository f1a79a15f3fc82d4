"""The reward of a conversation: a documented, deterministic score in [0, 1], its components and its sign.

0.5 is neutral: a signal below it lowers the reward, above it raises it.
Signals (each a value in [0, 1]; docs/feedback.md has the same table):

===================  ========================================================  ======
signal               value                                                     weight
===================  ========================================================  ======
rating               explicit user rating: stars ``(s − 1) / 4`` for 1–5,      —
                     thumbs ``1`` for +1 and ``0`` for −1
task                 ``1`` when the task was completed, ``0`` when it failed   0.45
feedback             the feedback text: its reaction signal                    0.35
                     (:func:`memory.feedback.signals.classify_reaction`: 1 for
                     thanks/success, 0 for a correction, complaint, repeat or
                     abandonment), else the polarity of its words
                     ``(pos − neg)/(pos + neg)`` mapped to [0, 1] (small
                     lexicon, a negator within two words flips a word); only
                     when something hits
dialogue             what the user's reacting messages say                     0.35
                     (:mod:`memory.feedback.signals`): ``(score + 1) / 2`` of
                     the mean sign of corrections, complaints, repeated
                     requests and abandonment (−) and thanks and confirmed
                     success (+), the last one counted twice; only when some
                     message carries a signal. Without the messages, ``c``
                     counted corrections give ``0``.
===================  ========================================================  ======

``implicit`` is the weighted mean of the task, feedback and dialogue signals
that are present (weights renormalised over them). Then:

* an explicit ``reward`` given by the caller is used as is (components say so);
* else with a rating: ``reward = 0.75·rating + 0.25·implicit`` (the rating
  alone when no implicit signal is present) — the rating dominates;
* else ``reward = implicit``;
* no signal at all → ``None``: a conversation nobody judged stays unscored
  (silence is not a score, never "good") and does not count in the
  per-version statistics.

:func:`reward_sign` reads a reward as positive (> 0.55), negative (< 0.45)
or neutral (between, or None). The reward is rounded to 4 decimals.
Everything here is pure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from memory.errors import InvalidInputError
from memory.feedback.signals import NEGATIVE_SIGNALS, DialogueSignals, classify_reaction, dialogue_score

__all__ = [
    "RewardResult",
    "compute_reward",
    "normalise_rating",
    "count_corrections",
    "is_correction",
    "polarity",
    "WEIGHTS",
    "RATING_WEIGHT",
    "reward_sign",
    "feedback_value",
    "RewardSign",
]

#: Weights of the implicit signals.
WEIGHTS = {"task": 0.45, "feedback": 0.35, "dialogue": 0.35}
#: Rewards above are positive, below ``1 - POSITIVE_ABOVE`` negative, between neutral.
POSITIVE_ABOVE = 0.55
RewardSign = Literal["positive", "negative", "neutral"]
#: Share of an explicit rating in the reward when implicit signals are present too.
RATING_WEIGHT = 0.75
#: Corrections at which the corrections signal reaches 0.
MAX_CORRECTIONS = 4

_CORRECTION = re.compile(
    r"\b(no,? i meant|what i meant|that'?s (?:not )?(?:wrong|incorrect|not right|not what i)|"
    r"that is (?:wrong|incorrect|not right|not what i)|not what i (?:asked|wanted|meant|said)|"
    r"you misunderstood|you got it wrong|"
    r"wrong answer|i already (?:told|said|asked)|as i said|try again|please read (?:my|the) question|"
    r"you didn'?t (?:answer|listen|read)|that doesn'?t answer|not helpful|that'?s not it|nope)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z']+")
_POSITIVE = frozenset(
    "good great perfect excellent helpful thanks thank love loved awesome correct exactly nice clear useful "
    "brilliant fantastic works worked solved right accurate concise fast friendly amazing".split()
)
_NEGATIVE = frozenset(
    "bad wrong unhelpful useless incorrect confusing confused slow terrible awful annoying hate hated rude "
    "verbose long missed missing broken failed fail fails inaccurate irrelevant vague poor worse worst".split()
)
_NEGATORS = frozenset("not no never isn't wasn't didn't don't doesn't hardly n't".split())


@dataclass(frozen=True)
class RewardResult:
    """A reward in [0, 1] (or None when nothing scored it) and what each signal gave."""

    reward: float | None
    components: dict[str, Any] = field(default_factory=dict)


def normalise_rating(rating: object, scale: str = "stars") -> float:
    """An explicit rating in [0, 1]: stars 1–5 → ``(s − 1)/4``; thumbs +1/−1 → 1/0; ``unit`` as is.

    Raises InvalidInputError for a value outside its scale (NaN included).
    """
    if isinstance(rating, bool) or not isinstance(rating, (int, float)) or not math.isfinite(rating):
        raise InvalidInputError(f"rating must be a finite number, got {rating!r}")
    value = float(rating)
    if scale == "stars":
        if not 1.0 <= value <= 5.0:
            raise InvalidInputError(f"a star rating is from 1 to 5, got {rating!r}")
        return (value - 1.0) / 4.0
    if scale == "thumbs":
        if value not in (1.0, -1.0):
            raise InvalidInputError(f"a thumbs rating is +1 or -1, got {rating!r}")
        return 1.0 if value > 0 else 0.0
    if scale == "unit":
        if not 0.0 <= value <= 1.0:
            raise InvalidInputError(f"a unit rating is from 0 to 1, got {rating!r}")
        return value
    raise InvalidInputError(f"rating scale must be stars, thumbs or unit, got {scale!r}")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("’", "'"))


def is_correction(text: str) -> bool:
    """True when a user message corrects the agent (a phrase of the correction list)."""
    return bool(_CORRECTION.search(text.replace("’", "'"))) or classify_reaction(text) == "correction"


def count_corrections(user_messages: Sequence[str]) -> int:
    """User messages (after the first) that correct, complain, repeat the request or give up.

    The same reading as :func:`memory.feedback.signals.dialogue_signals` on a
    conversation where every user message after the first reacts to an answer.
    """
    count = 0
    for i, text in enumerate(user_messages):
        if i and classify_reaction(text, user_messages[:i]) in NEGATIVE_SIGNALS:
            count += 1
    return count


def polarity(text: str) -> tuple[int, int]:
    """(positive, negative) lexicon hits in ``text``; a negator within two words before a hit flips it."""
    words = _words(text)
    pos = neg = 0
    for i, word in enumerate(words):
        if word not in _POSITIVE and word not in _NEGATIVE:
            continue
        negated = any(w in _NEGATORS or w.endswith("n't") for w in words[max(0, i - 2) : i])
        positive = (word in _POSITIVE) != negated
        if positive:
            pos += 1
        else:
            neg += 1
    return pos, neg


def feedback_value(text: str) -> tuple[float | None, dict[str, Any]]:
    """The feedback signal of a feedback text in [0, 1] (None when nothing in it hits) and what hit."""
    signal = classify_reaction(text)
    if signal is not None:
        return (0.0 if signal in NEGATIVE_SIGNALS else 1.0), {"feedback_signal": signal}
    pos, neg = polarity(text)
    if pos + neg:
        return ((pos - neg) / (pos + neg) + 1.0) / 2.0, {"feedback_hits": {"positive": pos, "negative": neg}}
    return None, {}


def reward_sign(reward: float | None) -> RewardSign:
    """positive above 0.55, negative below 0.45, neutral between or when unscored (None)."""
    if reward is None:
        return "neutral"
    if reward > POSITIVE_ABOVE:
        return "positive"
    if reward < 1.0 - POSITIVE_ABOVE:
        return "negative"
    return "neutral"


def compute_reward(
    *,
    rating: float | None = None,
    task_completed: bool | None = None,
    feedback: str | None = None,
    corrections: int = 0,
    explicit: float | None = None,
    dialogue: DialogueSignals | None = None,
) -> RewardResult:
    """The reward from the signals present (see the module docstring). ``rating`` is already in [0, 1].

    ``dialogue`` are the signals of the conversation's user messages
    (:func:`memory.feedback.signals.dialogue_signals`); without them,
    ``corrections`` > 0 counts as a negative dialogue signal.
    Raises InvalidInputError for an explicit reward or rating outside [0, 1] or NaN.
    """
    for what, value in (("reward", explicit), ("rating", rating)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or not 0.0 <= value <= 1.0
        ):  # fmt: skip
            raise InvalidInputError(f"{what} must be a number from 0 to 1, got {value!r}")
    if explicit is not None:
        return RewardResult(round(float(explicit), 4), {"explicit": float(explicit), "method": "explicit"})
    components: dict[str, Any] = {}
    signals: dict[str, float] = {}
    if task_completed is not None:
        signals["task"] = 1.0 if task_completed else 0.0
    if feedback:
        value, hits = feedback_value(feedback)
        if value is not None:
            signals["feedback"] = value
            components.update(hits)
    if dialogue is not None and dialogue.signals:
        score = dialogue_score(dialogue.signals)
        assert score is not None
        signals["dialogue"] = (score + 1.0) / 2.0
        components["dialogue_signals"] = dict(dialogue.counts)
        if dialogue.negative:
            components["corrections_found"] = dialogue.negative
    elif corrections > 0:
        signals["dialogue"] = 0.0
        components["corrections_found"] = corrections
    components.update({name: round(value, 4) for name, value in signals.items()})
    implicit = None
    if signals:
        weight = sum(WEIGHTS[name] for name in signals)
        implicit = sum(WEIGHTS[name] * value for name, value in signals.items()) / weight
        components["implicit"] = round(implicit, 4)
    if rating is not None:
        components["rating"] = round(float(rating), 4)
        reward = float(rating) if implicit is None else RATING_WEIGHT * float(rating) + (1 - RATING_WEIGHT) * implicit
        components["method"] = "rating" if implicit is None else "rating+implicit"
    elif implicit is not None:
        reward = implicit
        components["method"] = "implicit"
    else:
        return RewardResult(None, {"method": "none"})
    result = round(min(max(reward, 0.0), 1.0), 4)
    components["sign"] = reward_sign(result)
    return RewardResult(result, components)
