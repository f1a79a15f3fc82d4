"""Self-reflection: lessons from scored conversations, stored as ``procedural`` memories.

A lesson is a rule for future prompts, so it needs support: one pass
(:func:`reflect`, the worker job ``reflect``, ``memory reflect``) takes at
most ``limit`` conversation records that have a reward and no
``reflected_at`` (oldest update first), and for each:

1. judges the outcome: below ``feedback.low_reward`` it went badly; it went
   well only when the reward reaches ``feedback.high_reward`` *and* nothing in
   the record is negative (no correction, complaint, repeated request or
   abandonment found in the messages, the task did not fail, no low rating) —
   a negative episode never becomes "keep doing"; else mixed (no lesson);
2. gathers its group: every scored record of the same agent and prompt with
   the same outcome (reflected or not);
3. writes the group's lesson only when the group holds at least
   ``feedback.reflect_min_support`` conversations (default 3) — with an LLM
   provider other than ``heuristic`` the task ``reflect_conversation`` over the
   group (its lessons must keep the group's outcome: "keep doing" lessons
   of a group that went badly are dropped); otherwise (or when the model
   fails; the reason is reported) the deterministic rules: badly → ``When
   <topic>, avoid: <the users' most common feedback>. Instead, aim for:
   <example>``; well → ``Keep doing when <topic>: <example or feedback>``.
   Every lesson cites its conversations (``(from N conversations: t1, t2,
   …)``, and metadata ``supported_by``);
4. stores it as one memory of kind ``procedural`` in the group's scope
   (the agent; the user when all its conversations are one user's; tags
   ``reflection`` and the outcome, metadata ``reflection_of`` = the group key
   ``agent=… prompt=… outcome=…``,
   source ids = the conversations' message ids) — replacing the group's
   earlier lesson whose text differs;
5. sets the record's ``reflected_at``, the job's cursor (also when its group
   is not yet large enough: its record still counts as support later).

Rerunning writes nothing new (records already reflected are not selected;
an identical lesson is not written twice). Recording new feedback or a new
reward for a thread clears its ``reflected_at``, so it is reflected again
and its group's lesson redone. Only record fields are used — summaries are
built from non-secret messages only — so no secret message content reaches
a reflection.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

from memory.backends.feedback import RecordQuery
from memory.errors import LLMError
from memory.feedback.types import ConversationRecord, ReflectionReport
from memory.items import Items
from memory.windows import Windows

if TYPE_CHECKING:
    from memory.backends.feedback import FeedbackStore
    from memory.services import Core

__all__ = [
    "reflect",
    "lessons_for",
    "group_lessons",
    "group_key",
    "outcome_of",
    "record_outcome",
    "topic_of",
    "REFLECTION_TAG",
]

REFLECTION_TAG = "reflection"
Outcome = Literal["went_well", "went_badly", "mixed"]
_MAX_LESSON = 500
_GROUP_LIMIT = 1000
_KEEP_DOING = ("keep doing", "keep ", "continue ", "do more of")


def _clip(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def outcome_of(reward: float, low: float, high: float) -> Outcome:
    """went_badly below ``low``, went_well at or above ``high``, else mixed (the reward alone)."""
    if reward < low:
        return "went_badly"
    if reward >= high:
        return "went_well"
    return "mixed"


def _negative(record: ConversationRecord) -> bool:
    """Anything in the record that says the conversation did not go well."""
    components = record.reward_components or {}
    return bool(
        record.corrections
        or record.task_completed is False
        or (record.rating is not None and record.rating < 0.5)
        or components.get("feedback", 1.0) < 0.5
    )


def record_outcome(record: ConversationRecord, low: float, high: float) -> Outcome:
    """The record's outcome: :func:`outcome_of` its reward, but never went_well with a negative signal in it."""
    assert record.reward is not None
    outcome = outcome_of(record.reward, low, high)
    if outcome == "went_well" and _negative(record):
        return "mixed"
    return outcome


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


def _why(records: Sequence[ConversationRecord]) -> str:
    parts = []
    failed = sum(1 for r in records if r.task_completed is False)
    corrected = sum(1 for r in records if r.corrections)
    low = sum(1 for r in records if r.rating is not None and r.rating < 0.5)
    if failed:
        parts.append(f"the task failed in {failed}")
    if corrected:
        parts.append(f"the user corrected, complained, repeated or gave up in {corrected}")
    if low:
        parts.append(f"the user rated {low} low")
    return ", ".join(parts) or "the outcome was poor"


def _common(values: Sequence[str | None], n: int) -> list[str]:
    counts = Counter(" ".join(v.split()) for v in values if v and v.strip())
    return [text for text, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


def _cite(records: Sequence[ConversationRecord]) -> str:
    threads = [r.thread for r in records]
    shown = ", ".join(threads[:5]) + (f", … (+{len(threads) - 5})" if len(threads) > 5 else "")
    return f"(from {len(threads)} conversations: {shown})"


def group_lessons(records: Sequence[ConversationRecord], outcome: Outcome) -> list[str]:
    """The deterministic lesson of a group of records with the same outcome (empty for mixed), citing them."""
    if not records or outcome == "mixed":
        return []
    newest = max(records, key=lambda r: (r.updated_at, r.thread))
    topic = f"answering with prompt {newest.prompt_name}" if newest.prompt_name else topic_of(newest)
    cite = _cite(records)
    if outcome == "went_badly":
        complaints = _common([r.feedback for r in records], 2)
        examples = _common([r.example for r in records], 1)
        if complaints:
            lesson = f"When {topic}, avoid: {_clip('; '.join(complaints), 200)}."
            if examples:
                lesson += f" Instead, aim for: {_clip(examples[0], 200)}"
        elif examples:
            lesson = f"When {topic}, aim for: {_clip(examples[0], 200)}"
        else:
            mean = sum(r.reward or 0.0 for r in records) / len(records)
            lesson = f"When {topic}, take more care: {_why(records)} (mean reward {mean:.2f})."
        return [f"{lesson} {cite}"]
    good = _common([r.example for r in records], 1) or _common([r.feedback for r in records], 1)
    if good:
        return [f"Keep doing when {topic}: {_clip(good[0], 200)} {cite}"]
    mean = sum(r.reward or 0.0 for r in records) / len(records)
    return [f"Keep doing what worked when {topic} (mean reward {mean:.2f}) {cite}"]


def lessons_for(record: ConversationRecord, outcome: Outcome) -> list[str]:
    """The deterministic lesson of one record (a group of one; empty for a mixed outcome)."""
    return group_lessons([record], outcome)


def _llm_lessons(core: Core, records: Sequence[ConversationRecord], outcome: Outcome) -> list[str]:
    from memory.llms.prompts import structured
    from memory.llms.schemas import ReflectionOut

    newest = max(records, key=lambda r: (r.updated_at, r.thread))
    inputs = {
        "reward": round(sum(r.reward or 0.0 for r in records) / len(records), 4),
        "prompt": f"{newest.prompt_name} v{newest.prompt_version}" if newest.prompt_name else None,
        "summary": "\n".join(f"[{r.thread}] {(r.summary or '')[:800]}" for r in records[:10])[:4000],
        "feedback": "\n".join(f"[{r.thread}] {r.feedback}" for r in records[:10] if r.feedback) or None,
        "example": "\n".join(f"[{r.thread}] {r.example}" for r in records[:10] if r.example) or None,
        "suggestion": "\n".join(f"[{r.thread}] {r.suggestion}" for r in records[:10] if r.suggestion) or None,
        "components": {"outcome": outcome, "conversations": len(records)},
    }
    answer = structured(core.llm, "reflect_conversation", inputs, ReflectionOut).output
    lessons = [_clip(lesson, _MAX_LESSON - 80) for lesson in answer.lessons if lesson.strip()]
    if outcome == "went_badly":  # a negative episode never becomes "keep doing"
        lessons = [lesson for lesson in lessons if not lesson.lower().startswith(_KEEP_DOING)]
    cite = _cite(records)
    return [f"{lesson} {cite}" for lesson in lessons]


def group_key(agent: str | None, prompt: str | None, outcome: str) -> str:
    """The key of a lesson's group (metadata ``reflection_of``): ``agent=… prompt=… outcome=…``."""
    return f"agent={agent or '-'} prompt={prompt or '-'} outcome={outcome}"


def _group(
    store: FeedbackStore, namespace: str, record: ConversationRecord, outcome: Outcome, low: float, high: float
) -> list[ConversationRecord]:
    """Every scored record of the record's agent and prompt with the same outcome, oldest first."""
    query = RecordQuery(scored=True, agent=record.agent, prompt_name=record.prompt_name, limit=_GROUP_LIMIT,
                        newest_first=False)  # fmt: skip
    found = [
        r
        for r in store.list_records(namespace, query)
        if r.agent == record.agent and r.prompt_name == record.prompt_name and r.reward is not None
    ]
    by_thread = {r.thread: r for r in found}
    by_thread[record.thread] = record
    return [r for r in by_thread.values() if record_outcome(r, low, high) == outcome]


def reflect(
    core: Core,
    store: FeedbackStore,
    namespace: str,
    *,
    limit: int,
    low: float,
    high: float,
    dry_run: bool = False,
    use_llm: bool | None = None,
    should_stop: Callable[[], bool] | None = None,
    min_support: int | None = None,
) -> ReflectionReport:
    """One reflection pass over at most ``limit`` unreflected scored records (see the module docstring)."""
    started = time.perf_counter()
    items = Items(core, Windows(core))
    if min_support is None:
        min_support = core.settings.feedback.reflect_min_support
    records = store.list_records(namespace, RecordQuery(scored=True, unreflected=True, limit=limit))
    if use_llm is None:
        use_llm = getattr(core.llm, "provider", "heuristic") != "heuristic"
    examined = written = replaced = skipped = 0
    ids: list[str] = []
    lessons_out: list[str] = []
    paths: set[str] = set()
    fallback: str | None = None
    done_groups: set[str] = set()
    for record in records:
        if should_stop is not None and should_stop():
            break
        examined += 1
        outcome = record_outcome(record, low, high)
        key = group_key(record.agent, record.prompt_name, outcome)
        group = _group(store, namespace, record, outcome, low, high) if outcome != "mixed" else []
        content = ""
        if key not in done_groups and len(group) >= min_support:
            done_groups.add(key)
            lessons: list[str] = []
            if use_llm:
                try:
                    lessons = _llm_lessons(core, group, outcome)
                    paths.add("llm")
                except LLMError as exc:
                    fallback = f"{type(exc).__name__}: {exc}"[:500]
                    lessons = group_lessons(group, outcome)
                    paths.add("rules")
            else:
                lessons = group_lessons(group, outcome)
                paths.add("rules")
            content = "\n".join(lessons).strip()
        if not content:
            skipped += 1
        else:
            lessons_out.append(content)
        if dry_run:
            continue
        if content:
            old = items.list(
                namespace=namespace, kinds="procedural", metadata={"reflection_of": key},
                clearance="secret", limit=50,
            ).items  # fmt: skip
            if any(item.content == content for item in old):
                skipped += 1
            else:
                if old:
                    replaced += items.forget([item.id for item in old], namespace=namespace, reason="reflection redone")
                users = {r.user for r in group}
                metadata: dict[str, object] = {
                    "reflection_of": key, "supported_by": [r.thread for r in group][:200],
                    "reward": round(sum(r.reward or 0.0 for r in group) / len(group), 4), "outcome": outcome,
                }  # fmt: skip
                if record.prompt_name:
                    metadata.update(prompt=record.prompt_name, prompt_version=record.prompt_version)
                sources = [m for r in group for m in r.message_ids][:200]
                memory_id = items.remember(
                    content[: core.settings.limits.max_content_chars], namespace=namespace, kind="procedural",
                    user=users.pop() if len(users) == 1 else None, agent=record.agent,
                    tags=[REFLECTION_TAG, outcome], metadata=metadata, source_ids=sources,
                    importance=0.7 if outcome == "went_badly" else 0.6,
                    context=f"self-reflection on {len(group)} conversations ({key})",
                )  # fmt: skip
                ids.append(memory_id)
                written += 1
        store.mark_reflected(namespace, [record.thread], core.now())
    path: Literal["llm", "rules", "none"] = "llm" if paths == {"llm"} else ("rules" if paths else "none")
    return ReflectionReport(
        examined=examined, written=written, replaced=replaced, skipped=skipped, memory_ids=tuple(ids), path=path,
        fallback_reason=fallback, dry_run=dry_run, seconds=round(time.perf_counter() - started, 4),
        lessons=tuple(lessons_out),
    )  # fmt: skip
