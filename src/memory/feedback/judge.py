"""Judging a conversation: the offline reward (:mod:`memory.feedback.reward`) or an LLM judge, same inputs.

A :class:`JudgeInput` is what a conversation record knows: the messages (role,
content), an explicit rating in [0, 1], whether the task was completed, the
user's feedback text. :func:`offline_judge` scores it with the documented rules;
:func:`llm_judge` asks the configured LLM provider (task ``judge_conversation``,
JSON schema :class:`JudgeOut`) for a label and a reward. Both return a
:class:`Judgement` so the labelled set (``memory bench reward``) checks either.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memory.errors import LLMError
from memory.feedback.reward import RewardSign, compute_reward, reward_sign
from memory.feedback.signals import dialogue_signals
from memory.llms.base import LLM, ChatMessage, ChatRequest

__all__ = ["JudgeInput", "Judgement", "JudgeOut", "offline_judge", "llm_judge", "JUDGE_PROMPT_VERSION"]

JUDGE_PROMPT_VERSION = "judge-v1"
_SYSTEM = (
    "You judge how a conversation between a user and an AI assistant went for the user. "
    "Corrections of the assistant, complaints, requests the user had to repeat and the user giving up are "
    "negative; thanks and a task the user confirms done are positive; a conversation with no such signal is "
    "neutral (never positive by default). An explicit rating (0 worst .. 1 best) is the user's own judgement "
    "and outweighs polite or grumpy words, unless it is the middle value 0.5. "
    'Answer with JSON {"label": "positive"|"negative"|"neutral", "reward": <0..1, 0.5 neutral>, "reason": "..."}.'
)


@dataclass(frozen=True)
class JudgeInput:
    """What a judge sees of one conversation."""

    messages: tuple[tuple[str, str], ...]
    rating: float | None = None
    task_completed: bool | None = None
    feedback: str | None = None


@dataclass(frozen=True)
class Judgement:
    """A judge's answer: the sign, the reward (None: unscored), which judge, and its details."""

    sign: RewardSign
    reward: float | None
    judge: Literal["offline", "llm"]
    details: dict[str, Any] = field(default_factory=dict)


class JudgeOut(BaseModel):
    """The LLM judge's answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    label: Literal["positive", "negative", "neutral"]
    reward: float = Field(ge=0.0, le=1.0)
    reason: str = Field("", max_length=1000)


def offline_judge(item: JudgeInput) -> Judgement:
    """The documented offline reward of ``item`` and its sign."""
    result = compute_reward(
        rating=item.rating, task_completed=item.task_completed, feedback=item.feedback,
        dialogue=dialogue_signals(item.messages),
    )  # fmt: skip
    return Judgement(reward_sign(result.reward), result.reward, "offline", dict(result.components))


def llm_judge(llm: LLM, item: JudgeInput) -> Judgement:
    """The LLM's judgement of ``item``. Raises LLMError when the model fails or answers outside the schema."""
    inputs: dict[str, Any] = {
        "messages": [{"role": r, "content": c} for r, c in item.messages],
        "rating": item.rating,
        "task_completed": item.task_completed,
        "feedback": item.feedback,
    }
    messages = (
        ChatMessage(role="system", content=_SYSTEM),
        ChatMessage(role="user", content=json.dumps(inputs, ensure_ascii=False)),
    )
    request = ChatRequest(
        task="judge_conversation", inputs=inputs, messages=messages, schema=JudgeOut,
        prompt_version=JUDGE_PROMPT_VERSION,
    )  # fmt: skip
    answer = llm.chat(request).output
    if not isinstance(answer, JudgeOut):
        raise LLMError("the judge answered outside its schema")
    return Judgement(answer.label, round(answer.reward, 4), "llm", {"reason": answer.reason})


def judge_inputs(messages: Sequence[tuple[str, str]], **known: Any) -> JudgeInput:
    """A :class:`JudgeInput` from (role, content) pairs and the record's rating/task/feedback."""
    return JudgeInput(messages=tuple((r, c) for r, c in messages), **known)
