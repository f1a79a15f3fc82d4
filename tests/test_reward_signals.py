"""Reward sign (issue 18): the user's words, the labelled set, and reflection that learns the right lesson."""

from __future__ import annotations

from typing import Any

import pytest

from memory import Memory
from memory.bench.reward import LABELS, load_labelled, run_reward_bench
from memory.config import FeedbackSettings, Settings
from memory.embedders.hashing import HashingEmbedder
from memory.errors import InvalidInputError
from memory.feedback.judge import JudgeInput, offline_judge
from memory.feedback.reward import compute_reward, reward_sign
from memory.feedback.signals import classify_reaction, dialogue_score, dialogue_signals


def test_the_issue_case_lowers_the_reward() -> None:
    messages = (("user", "How do I export my notes?"), ("assistant", "Click File > Export."),
                ("user", "No, I meant from the command line. That's wrong."))  # fmt: skip
    judged = offline_judge(JudgeInput(messages))
    assert judged.sign == "negative" and judged.reward is not None and judged.reward < 0.45


@pytest.mark.parametrize(
    ("text", "signal"),
    [
        ("no, I meant the blue one", "correction"),
        ("That is incorrect.", "correction"),
        ("I asked for Python, not Java", "correction"),
        ("this doesn't work at all", "complaint"),
        ("still the same error", "complaint"),
        ("I already told you my order number", "repeat"),
        ("never mind, I'll sort it out myself", "abandonment"),
        ("thanks anyway", "abandonment"),
        ("thank you!", "thanks"),
        ("that worked, cheers", "success"),
        ("ok", None),
        ("got it", None),
        ("no thanks", None),
        ("And what about Tuesday?", None),
        ("I meant to thank you, great job", "success"),
    ],
)
def test_reactions(text: str, signal: str | None) -> None:
    assert classify_reaction(text) == signal


def test_only_reactions_count_and_the_ending_weighs_double() -> None:
    # the opening request is not a reaction: "thanks in advance" and a problem description carry no signal
    assert dialogue_signals([("user", "Thanks in advance! my printer still doesn't work")]).signals == ()
    recovered = dialogue_signals([("user", "sum per day"), ("assistant", "SELECT count(*)"),
                                  ("user", "no, I meant per day"), ("assistant", "GROUP BY day"),
                                  ("user", "yes, that's it, thanks")])  # fmt: skip
    assert recovered.signals == ("correction", "success") and dialogue_score(recovered.signals) == pytest.approx(1 / 3)
    repeated = dialogue_signals([("user", "what is the weather in Oslo tomorrow"), ("assistant", "Oslo is in Norway."),
                                 ("user", "what is the weather in Oslo tomorrow?")])  # fmt: skip
    assert repeated.signals == ("repeat",)


def test_no_signal_is_neutral_never_good() -> None:
    assert compute_reward().reward is None and reward_sign(None) == "neutral"
    plain = offline_judge(JudgeInput((("user", "What's the capital of Peru?"), ("assistant", "Lima."))))
    assert plain.reward is None and plain.sign == "neutral"
    assert reward_sign(0.5) == "neutral" and reward_sign(0.56) == "positive" and reward_sign(0.44) == "negative"


def test_the_rating_outweighs_words_unless_it_is_the_middle() -> None:
    grumpy = (("user", "q"), ("assistant", "a"), ("user", "That's wrong."))
    assert offline_judge(JudgeInput(grumpy, rating=1.0)).sign == "positive"
    assert offline_judge(JudgeInput(grumpy, rating=0.5)).sign == "negative"
    polite = (("user", "q"), ("assistant", "a"), ("user", "great, thanks"))
    assert offline_judge(JudgeInput(polite, rating=0.0)).sign == "negative"


def test_labelled_set_shape_and_offline_accuracy() -> None:
    data = load_labelled()
    assert len(data) >= 60 and {c.label for c in data} == set(LABELS)
    for label in LABELS:
        assert sum(1 for c in data if c.label == label) >= 20
    assert sum(1 for c in data if c.split == "holdout") >= 20
    disagree = [c for c in data if c.item.rating is not None and c.item.rating != 0.5 and "rating decides" in c.note]
    assert len(disagree) >= 6  # ratings that disagree with the words
    report = run_reward_bench()
    for part in ("dev", "holdout", "overall"):
        assert report["offline"][part]["accuracy"] >= 0.9, report["offline_wrong"]
    assert sum(sum(row.values()) for row in report["offline"]["overall"]["matrix"].values()) == len(data)


def test_bad_labelled_file_is_a_clear_error(tmp_path: Any) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "label": "great", "messages": []}\n')
    with pytest.raises(InvalidInputError, match="bad.jsonl:1"):
        load_labelled(bad)
    with pytest.raises(InvalidInputError, match="split"):
        run_reward_bench(split="train")


def _memory(min_support: int = 3) -> Memory:
    settings = Settings(database="memory://", feedback=FeedbackSettings(reflect_min_support=min_support))
    return Memory(embedder=HashingEmbedder(), settings=settings)


def _chat(mem: Memory, thread: str, turns: list[tuple[str, str]]) -> None:
    for role, text in turns:
        mem.messages.append(thread, text, role=role, user="alice", agent="helper")


CORRECTED = [("user", "How do I export my notes?"), ("assistant", "Click File > Export."),
             ("user", "No, I meant from the command line. That's wrong.")]  # fmt: skip
THANKED = [("user", "How do I export my notes?"), ("assistant", "Run `notes export --all`."),
           ("user", "That worked, thanks!")]  # fmt: skip


def test_reflection_needs_support_and_cites_it() -> None:
    with _memory() as mem:
        for n in range(2):
            _chat(mem, f"bad{n}", CORRECTED)
            mem.end_conversation(f"bad{n}")
        first = mem.reflect()
        assert first.examined == 2 and first.written == 0  # two conversations are not enough
        _chat(mem, "bad2", CORRECTED)
        mem.end_conversation("bad2")
        report = mem.reflect()
        assert report.written == 1
        lesson = mem.get(report.memory_ids[0])
        assert "(from 3 conversations: bad0, bad1, bad2)" in lesson.content
        assert not lesson.content.lower().startswith("keep") and "went_badly" in lesson.tags
        assert lesson.metadata["supported_by"] == ["bad0", "bad1", "bad2"]


def test_a_negative_episode_never_becomes_keep_doing() -> None:
    with _memory(min_support=1) as mem:
        # the issue's case: a correction and nothing else — no "keep doing"
        _chat(mem, "t1", CORRECTED)
        mem.end_conversation("t1")
        # a high rating with a correction in it: mixed, no lesson either way
        _chat(mem, "t2", CORRECTED)
        mem.feedback.record("t2", rating=5)
        report = mem.reflect()
        assert report.examined == 2
        assert all("keep doing" not in lesson.lower() for lesson in report.lessons)
        # a clean success does teach "keep doing"
        _chat(mem, "t3", THANKED)
        mem.feedback.record("t3", task_completed=True)
        good = mem.reflect()
        assert len(good.lessons) == 1 and good.lessons[0].startswith("Keep doing")


def test_reward_bench_cli() -> None:
    from click.testing import CliRunner

    from memory.cli.main import cli

    result = CliRunner().invoke(cli, ["bench", "reward", "--no-llm", "--split", "dev"])
    assert result.exit_code == 0, result.output
    assert "offline dev: " in result.output and "label / predicted" in result.output
