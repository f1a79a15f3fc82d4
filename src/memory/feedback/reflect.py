"""Self-reflection: lessons from scored conversations, stored as ``procedural`` memories.

One pass (:func:`reflect`, the worker job ``reflect``, ``memory reflect``)
takes at most ``limit`` conversation records that have a reward and no
``reflected_at`` (oldest update first), and for each:

1. judges the outcome from the reward: below ``feedback.low_reward`` it went
   badly, at or above ``feedback.high_reward`` it went well, else mixed;
2. writes the lessons — with an LLM provider other than ``heuristic`` the
   task ``reflect_conversation``; otherwise (or when the model fails; the
   reason is reported) the deterministic rules: badly → ``When <topic>,
   avoid: <feedback>. Instead, aim for: <example>``; well → ``Keep doing
   when <topic>: <example or feedback>``; mixed → nothing;
3. stores them as one memory of kind ``procedural`` in the conversation's
   user/agent scope (tags ``reflection`` and the outcome, metadata
   ``reflection_of`` = the thread, source ids = the thread's message ids) —
   replacing an earlier reflection of the same thread whose text differs;
4. sets the record's ``reflected_at``, the job's cursor.

Rerunning writes nothing new (records already reflected are not selected;
an identical lesson is not written twice). Recording new feedback or a new
reward for a thread clears its ``reflected_at``, so it is reflected again
and its old lesson replaced. Only record fields are used — summaries are
built from non-secret messages only — so no secret message content reaches
a reflection.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from memory.backends.feedback import RecordQuery
from memory.errors import LLMError
from memory.feedback.types import ConversationRecord, ReflectionReport

if TYPE_CHECKING:
    from memory.backends.feedback import FeedbackStore
    from memory.memory import Memory

__all__ = ["reflect", "lessons_for", "outcome_of", "topic_of", "REFLECTION_TAG"]

REFLECTION_TAG = "reflection"
Outcome = Literal["went_well", "went_badly", "mixed"]
_MAX_LESSON = 500


def _clip(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def outcome_of(reward: float, low: float, high: float) -> Outcome:
    """went_badly below ``low``, went_well at or above ``high``, else mixed."""
    if reward < low:
        return "went_badly"
    if reward >= high:
        return "went_well"
    return "mixed"


def topic_of(record: ConversationRecord) -> str:
    """What the conversation was about, for a lesson: the summary's first user line, else the prompt name."""
    for line in (record.summary or "").splitlines():
        line = line.strip()
        if line.startswith("- user:"):
            return f'the user asks something like "{_clip(line[len("- user:") :], 100)}"'
    if record.summary and not record.summary.startswith("Conversation "):
        return f'the conversation is about "{_clip(record.summary, 100)}"'
    if record.prompt_name:
        return f"answering with prompt {record.prompt_name}"
    return "handling a conversation like this one"


def _why(record: ConversationRecord) -> str:
    parts = []
    if record.task_completed is False:
        parts.append("the task failed")
    if record.corrections:
        parts.append(f"the user corrected the agent {record.corrections} time(s)")
    if record.rating is not None and record.rating < 0.5:
        parts.append("the user rated it low")
    return ", ".join(parts) or "the outcome was poor"


def lessons_for(record: ConversationRecord, outcome: Outcome) -> list[str]:
    """The deterministic lessons of a record (empty for a mixed outcome)."""
    topic = topic_of(record)
    if outcome == "went_badly":
        if record.feedback:
            lesson = f"When {topic}, avoid: {_clip(record.feedback, 200)}."
            if record.example:
                lesson += f" Instead, aim for: {_clip(record.example, 200)}"
            return [lesson]
        if record.example:
            return [f"When {topic}, aim for: {_clip(record.example, 200)}"]
        return [f"When {topic}, take more care: {_why(record)} (reward {record.reward:.2f})."]
    if outcome == "went_well":
        good = record.example or record.feedback
        if good:
            return [f"Keep doing when {topic}: {_clip(good, 200)}"]
        return [f"Keep doing what worked when {topic} (reward {record.reward:.2f})."]
    return []


def _llm_lessons(mem: Memory, record: ConversationRecord) -> tuple[Outcome, list[str]]:
    from memory.llms.base import structured
    from memory.llms.schemas import ReflectionOut

    inputs = {
        "reward": record.reward, "prompt": f"{record.prompt_name} v{record.prompt_version}" if record.prompt_name
        else None, "summary": (record.summary or "")[:4000], "feedback": record.feedback, "example": record.example,
        "suggestion": record.suggestion, "components": record.reward_components,
    }  # fmt: skip
    answer = structured(mem.llm, "reflect_conversation", inputs, ReflectionOut).output
    return answer.outcome, [_clip(lesson, _MAX_LESSON) for lesson in answer.lessons if lesson.strip()]


def reflect(
    mem: Memory,
    store: FeedbackStore,
    namespace: str,
    *,
    limit: int,
    low: float,
    high: float,
    dry_run: bool = False,
    use_llm: bool | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> ReflectionReport:
    """One reflection pass over at most ``limit`` unreflected scored records (see the module docstring)."""
    started = time.perf_counter()
    records = store.list_records(namespace, RecordQuery(scored=True, unreflected=True, limit=limit))
    if use_llm is None:
        use_llm = getattr(mem.llm, "provider", "heuristic") != "heuristic"
    examined = written = replaced = skipped = 0
    ids: list[str] = []
    lessons_out: list[str] = []
    paths: set[str] = set()
    fallback: str | None = None
    for record in records:
        if should_stop is not None and should_stop():
            break
        examined += 1
        assert record.reward is not None
        outcome = outcome_of(record.reward, low, high)
        lessons: list[str] = []
        if use_llm:
            try:
                outcome, lessons = _llm_lessons(mem, record)
                paths.add("llm")
            except LLMError as exc:
                fallback = f"{type(exc).__name__}: {exc}"[:500]
                lessons = lessons_for(record, outcome)
                paths.add("rules")
        else:
            lessons = lessons_for(record, outcome)
            paths.add("rules")
        content = "\n".join(lessons).strip()
        if not content:
            skipped += 1
        else:
            lessons_out.append(content)
        if dry_run:
            continue
        if content:
            old = mem.list(
                namespace=namespace, kinds="procedural", metadata={"reflection_of": record.thread},
                clearance="secret", limit=50,
            ).items  # fmt: skip
            if any(item.content == content for item in old):
                skipped += 1
            else:
                if old:
                    replaced += mem.forget([item.id for item in old], namespace=namespace, reason="reflection redone")
                metadata: dict[str, object] = {"reflection_of": record.thread, "reward": record.reward}
                if record.prompt_name:
                    metadata.update(prompt=record.prompt_name, prompt_version=record.prompt_version)
                memory_id = mem.remember(
                    content[: mem.settings.limits.max_content_chars], namespace=namespace, kind="procedural",
                    user=record.user, agent=record.agent, tags=[REFLECTION_TAG, outcome], metadata=metadata,
                    source_ids=list(record.message_ids[:200]), importance=0.7 if outcome == "went_badly" else 0.6,
                    context=f"self-reflection on conversation {record.thread}",
                )  # fmt: skip
                ids.append(memory_id)
                written += 1
        store.mark_reflected(namespace, [record.thread], mem.now())
    path: Literal["llm", "rules", "none"] = "llm" if paths == {"llm"} else ("rules" if paths else "none")
    return ReflectionReport(
        examined=examined, written=written, replaced=replaced, skipped=skipped, memory_ids=tuple(ids), path=path,
        fallback_reason=fallback, dry_run=dry_run, seconds=round(time.perf_counter() - started, 4),
        lessons=tuple(lessons_out),
    )  # fmt: skip
