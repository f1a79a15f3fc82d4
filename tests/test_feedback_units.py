"""Pure parts of the feedback loop: the reward method, the interval and promotion rule, learned rules."""

from __future__ import annotations

import math
import random

import pytest

from memory.errors import InvalidInputError
from memory.feedback.reward import compute_reward, count_corrections, is_correction, normalise_rating, polarity
from memory.feedback.stats import candidate_beats_active, interval, t_quantile
from memory.feedback.suggest import RULES_HEADER, apply_rules, rules_from, split_rules
from memory.feedback.types import ConversationRecord, VersionAggregate


def test_ratings_normalise_to_unit_interval() -> None:
    assert [normalise_rating(s) for s in (1, 2, 3, 4, 5)] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert normalise_rating(1, "thumbs") == 1.0 and normalise_rating(-1, "thumbs") == 0.0
    assert normalise_rating(0.3, "unit") == 0.3
    for value, scale in ((0, "stars"), (5.5, "stars"), (0, "thumbs"), (1.2, "unit"), (math.nan, "stars"),
                         (True, "stars"), ("5", "stars"), (3, "likert")):  # fmt: skip
        with pytest.raises(InvalidInputError):
            normalise_rating(value, scale)


def test_corrections_phrases_and_repeated_questions() -> None:
    assert is_correction("No, I meant the other one") and is_correction("That’s wrong.")
    assert is_correction("this is not what I asked") and not is_correction("I meant to thank you, great job")
    messages = ["How do I reset my router password?", "thanks", "how do I reset my router password",
                "That's not right", "ok"]  # fmt: skip
    assert count_corrections(messages) == 2
    assert count_corrections(["Hi", "Hi"]) == 0  # short messages are not "repeated questions"


def test_polarity_with_negation() -> None:
    assert polarity("great answer, thanks") == (2, 0)
    assert polarity("not helpful and too verbose") == (0, 2)
    assert polarity("it wasn't bad") == (1, 0)


def test_reward_formula() -> None:
    assert compute_reward().reward is None
    assert compute_reward(corrections=0).reward is None  # silence is not a score
    assert compute_reward(explicit=0.3).reward == 0.3
    assert compute_reward(rating=1.0).reward == 1.0
    assert compute_reward(task_completed=True).reward == 1.0
    # counted corrections without the messages: a negative dialogue signal (0)
    assert compute_reward(task_completed=False, corrections=2).reward == 0.0
    assert compute_reward(corrections=1).reward == 0.0  # one correction lowers the reward: never "good"
    mixed = compute_reward(rating=0.25, task_completed=True, feedback="too slow", corrections=1)
    implicit = (0.45 * 1.0 + 0.35 * 0.0 + 0.35 * 0.0) / 1.15
    assert mixed.reward == pytest.approx(0.75 * 0.25 + 0.25 * implicit, abs=1e-4)
    assert mixed.components["method"] == "rating+implicit" and mixed.components["corrections_found"] == 1
    # the rating dominates: a 5-star rating with a failed task still scores above the midpoint
    assert compute_reward(rating=1.0, task_completed=False).reward == 0.75
    for bad in (math.nan, -0.01, 1.01, math.inf):
        with pytest.raises(InvalidInputError):
            compute_reward(explicit=bad)
        with pytest.raises(InvalidInputError):
            compute_reward(rating=bad)


def test_t_quantiles() -> None:
    assert t_quantile(1) == 12.706 and t_quantile(30) == 2.042
    assert 2.021 < t_quantile(35) < 2.042 and 1.96 < t_quantile(500) < 1.98
    values = [t_quantile(df) for df in range(1, 400)]
    assert values == sorted(values, reverse=True)


def _agg(values: list[float], version: int = 1) -> VersionAggregate:
    return VersionAggregate(version=version, count=len(values), total=sum(values),
                            total_squares=sum(v * v for v in values))  # fmt: skip


def test_interval_matches_the_textbook_formula() -> None:
    values = [0.2, 0.4, 0.6, 0.8]
    ci = interval(_agg(values))
    mean = 0.5
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / 3)
    half = 3.182 * sd / 2
    assert ci.mean == 0.5 and ci.low == pytest.approx(mean - half, abs=1e-4)
    assert ci.high == pytest.approx(mean + half, abs=1e-4)
    assert interval(_agg([])).mean is None and interval(_agg([0.7])).low is None
    assert interval(_agg([0.5] * 5)).low == 0.5  # no spread


def test_interval_covers_the_true_mean_about_95_percent() -> None:
    rng = random.Random(7)
    covered = 0
    for _ in range(400):
        values = [rng.random() for _ in range(12)]  # uniform: true mean 0.5
        ci = interval(_agg(values))
        covered += ci.low is not None and ci.high is not None and ci.low <= 0.5 <= ci.high
    assert 0.90 <= covered / 400 <= 0.99


def test_promotion_rule() -> None:
    good, bad = _agg([0.9, 0.8, 1.0, 0.9, 0.85], 2), _agg([0.3, 0.5, 0.4, 0.2, 0.6])
    assert candidate_beats_active(good, bad, min_count=5)[0]
    assert not candidate_beats_active(bad, good, min_count=5)[0]
    wins, why = candidate_beats_active(good, bad, min_count=6)
    assert not wins and "not enough" in why
    noisy = _agg([1.0, 0.0, 1.0, 0.0, 1.0, 1.0], 2)  # mean 0.67 but wide: not clearly above 0.4
    assert not candidate_beats_active(noisy, bad, min_count=5)[0]


def _rec(thread: str, **fields: object) -> ConversationRecord:
    from datetime import UTC, datetime

    now = datetime(2026, 1, 1, tzinfo=UTC)
    return ConversationRecord(namespace="ns", thread=thread, created_at=now, updated_at=now, **fields)  # type: ignore[arg-type]


def test_learned_rules_template() -> None:
    records = [_rec("a", feedback="too long", example="Two sentences."), _rec("b", feedback="Too   long"),
               _rec("c", suggestion="Ask which account first.")]  # fmt: skip
    rules = rules_from(records)
    assert rules == ["Avoid: too long", "Aim for: Two sentences.", "Ask which account first."]
    text = apply_rules("Be helpful.", rules)
    assert (
        text
        == f"Be helpful.\n\n{RULES_HEADER}\n- Avoid: too long\n- Aim for: Two sentences.\n- Ask which account first."
    )
    assert split_rules(text) == ("Be helpful.", rules)
    assert apply_rules(text, ["avoid: TOO LONG"]) == text  # deduplicated
    many = apply_rules(text, [f"rule {n}" for n in range(20)], max_rules=5)
    assert split_rules(many)[1] == [f"rule {n}" for n in range(15, 20)]  # the newest kept
    long_rule = apply_rules("Base.", ["x" * 500])
    assert len(split_rules(long_rule)[1][0]) == 200 and long_rule.endswith("…")


def test_a_backend_without_a_feedback_store() -> None:
    from memory import Memory, StoreUnavailableError
    from memory.embedders.hashing import HashingEmbedder

    with Memory("memory://", embedder=HashingEmbedder()) as mem:
        mem.backend.feedback = None  # type: ignore[misc]  # a plugin backend without this storage area says None
        mem.messages.append("t1", "hello there", user="u")
        assert mem.end_conversation("t1").record is None  # the blocks are still updated
        for call in (lambda: mem.feedback.record("t1", rating=3), lambda: mem.prompts.list(), lambda: mem.reflect()):
            with pytest.raises(StoreUnavailableError, match="no feedback store"):
                call()
        assert mem.forget_all() == 0
