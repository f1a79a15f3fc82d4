"""``suggest_prompt``: a refined prompt version from the feedback of low-reward conversations.

Two paths, and the result says which one ran (``PromptSuggestion.path``):

* **llm** — with an LLM provider other than ``heuristic``, the task
  ``refine_prompt`` (prompt in :mod:`memory.llms.prompts`, answer validated
  into :class:`~memory.llms.schemas.PromptRefinementOut`) rewrites the active
  prompt from the conversations' summaries, feedback, examples and rewards.
  The new version has origin ``llm``.
* **rules** — without a model, or when the model fails (the reason is kept
  in ``fallback_reason``), the deterministic template: the active prompt
  plus a ``Learned rules`` list. Each low-reward conversation gives rules
  from its suggestion (as is), its feedback (``Avoid: …``) and its example
  (``Aim for: …``); rules are one line of at most ``MAX_RULE_CHARS``,
  deduplicated case-insensitively against the rules already in the prompt,
  and the list keeps the newest ``max_rules``. Origin ``suggested``.

The new version is a ``candidate``: it is used only when promoted
(explicitly, or automatically — :mod:`memory.feedback.stats`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memory.backends.feedback import RecordQuery
from memory.errors import InvalidInputError, LLMError, NotFoundError
from memory.feedback.types import MAX_PROMPT_CHARS, ConversationRecord, PromptSuggestion

if TYPE_CHECKING:
    from memory.backends.feedback import FeedbackStore
    from memory.services import Core

__all__ = ["RULES_HEADER", "MAX_RULE_CHARS", "rules_from", "split_rules", "apply_rules", "suggest_prompt"]

RULES_HEADER = "Learned rules (from user feedback):"
MAX_RULE_CHARS = 200
_BULLET = re.compile(r"^\s*-\s+")


def _one_line(text: str, limit: int = MAX_RULE_CHARS) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def rules_from(records: Sequence[ConversationRecord]) -> list[str]:
    """Rules learned from conversation records, in the records' order (deduplicated)."""
    rules: list[str] = []
    seen: set[str] = set()
    for record in records:
        for rule in (
            _one_line(record.suggestion) if record.suggestion else None,
            _one_line(f"Avoid: {record.feedback}") if record.feedback else None,
            _one_line(f"Aim for: {record.example}") if record.example else None,
        ):
            if rule and rule.lower() not in seen:
                seen.add(rule.lower())
                rules.append(rule)
    return rules


def split_rules(text: str) -> tuple[str, list[str]]:
    """A prompt's text before its ``Learned rules`` section, and the rules listed there."""
    head, found, tail = text.partition(RULES_HEADER)
    if not found:
        return text.rstrip(), []
    rules = [_BULLET.sub("", line).strip() for line in tail.splitlines() if _BULLET.match(line)]
    return head.rstrip(), [r for r in rules if r]


def apply_rules(text: str, new_rules: Sequence[str], *, max_rules: int = 10) -> str:
    """``text`` with ``new_rules`` added to its Learned rules list (deduplicated, the newest ``max_rules`` kept)."""
    base, rules = split_rules(text)
    seen = {r.lower() for r in rules}
    for rule in new_rules:
        line = _one_line(rule)
        if line and line.lower() not in seen:
            seen.add(line.lower())
            rules.append(line)
    rules = rules[-max_rules:] if max_rules > 0 else []
    if not rules:
        return base
    out = f"{base}\n\n{RULES_HEADER}\n" + "\n".join(f"- {r}" for r in rules)
    while len(out) > MAX_PROMPT_CHARS and len(rules) > 1:
        rules.pop(0)
        out = f"{base}\n\n{RULES_HEADER}\n" + "\n".join(f"- {r}" for r in rules)
    return out


def _low_records(
    store: FeedbackStore, namespace: str, name: str, threshold: float, limit: int
) -> list[ConversationRecord]:
    found = store.list_records(
        namespace,
        RecordQuery(prompt_name=name, reward_below=threshold, scored=True, limit=limit, newest_first=True),
    )
    return [r for r in found if r.feedback or r.example or r.suggestion]


def suggest_prompt(
    core: Core,
    store: FeedbackStore,
    namespace: str,
    name: str,
    *,
    threshold: float,
    limit: int = 20,
    max_rules: int = 10,
    use_llm: bool | None = None,
) -> PromptSuggestion:
    """Store a new ``candidate`` version of ``name`` refined from low-reward conversations (see the module doc).

    ``use_llm`` None uses the LLM when one other than ``heuristic`` is
    configured. Raises NotFoundError (no such prompt) or InvalidInputError
    (no low-reward conversation with feedback, or nothing new to add).
    """
    active = store.get_prompt(namespace, name)
    if active is None:
        raise NotFoundError(f"no prompt {name!r} in namespace {namespace!r}; create it with prompts.create")
    records = _low_records(store, namespace, name, threshold, limit)
    if not records:
        raise InvalidInputError(
            f"no conversation of prompt {name!r} has a reward below {threshold:g} with feedback, an example or a "
            "suggestion: nothing to learn from yet"
        )
    threads = tuple(r.thread for r in records)
    fallback: str | None = None
    llm = core.llm
    if use_llm is None:
        use_llm = getattr(llm, "provider", "heuristic") != "heuristic"
    if use_llm:
        from memory.llms.prompts import structured
        from memory.llms.schemas import PromptRefinementOut

        inputs = {
            "name": name,
            "prompt": active.text,
            "max_chars": MAX_PROMPT_CHARS,
            "conversations": [
                {"reward": r.reward, "summary": (r.summary or "")[:2000], "feedback": r.feedback,
                 "example": r.example, "suggestion": r.suggestion}
                for r in records
            ],
        }  # fmt: skip
        try:
            answer = structured(llm, "refine_prompt", inputs, PromptRefinementOut).output
            text = answer.prompt.strip()
            if text == active.text.strip():
                raise LLMError("the model returned the prompt unchanged")
            version = store.add_prompt(
                namespace, name, text, at=core.now(), origin="llm", parent=active.version,
                note=_one_line(f"llm refinement from {len(records)} low-reward conversation(s)", 500),
            )  # fmt: skip
            return PromptSuggestion(version=version, path="llm", based_on=threads, rationale=answer.rationale)
        except LLMError as exc:
            fallback = f"{type(exc).__name__}: {exc}"[:500]
    text = apply_rules(active.text, rules_from(records), max_rules=max_rules)
    if text.strip() == active.text.strip():
        raise InvalidInputError(
            f"the active version {active.version} of {name!r} already holds every rule learned from these conversations"
        )
    version = store.add_prompt(
        namespace, name, text, at=core.now(), origin="suggested", parent=active.version,
        note=_one_line(f"learned rules from {len(records)} low-reward conversation(s)", 500),
    )  # fmt: skip
    rationale = f"appended learned rules from {len(records)} low-reward conversation(s)"
    return PromptSuggestion(
        version=version, path="rules", based_on=threads, rationale=rationale, fallback_reason=fallback
    )
