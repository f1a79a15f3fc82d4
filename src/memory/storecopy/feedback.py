"""``memory migrate``, feedback part: conversation records and prompt versions (see :mod:`.copy`).

Everything is checked before the copy writes anything: a source without a
feedback store (or with none of its data) is skipped and the report says so;
a destination that lacks the store, or already holds feedback data, is a
ConfigError. Prompt versions keep their numbers, status and times; records
keep their revision and ``reflected_at`` (so reflection does not run twice).
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.backends.base import Backend
from memory.backends.feedback import FeedbackStore
from memory.errors import ConfigError

__all__ = ["FeedbackPlan", "plan_feedback", "copy_feedback"]


@dataclass(frozen=True)
class FeedbackPlan:
    """The two feedback stores and the namespaces the source fills."""

    source: FeedbackStore
    target: FeedbackStore
    namespaces: tuple[str, ...]


def plan_feedback(src: Backend, dst: Backend, skipped: list[str]) -> FeedbackPlan | None:
    """Check the feedback stores before anything is written; None (and a note) when there is nothing to copy.

    Raises ConfigError when the destination cannot take the source's data.
    """
    source = src.feedback
    if source is None:
        skipped.append(f"feedback: the source backend {src.name!r} has no feedback store")
        return None
    namespaces = tuple(source.namespaces())
    if not namespaces:
        return None
    target = dst.feedback
    if target is None:
        raise ConfigError(
            f"the source holds conversation records or prompt versions but the destination backend {dst.name!r} "
            "has no feedback store"
        )
    if target.namespaces():
        raise ConfigError("the destination already holds feedback data; migrate copies into a new, empty store only")
    return FeedbackPlan(source, target, namespaces)


def copy_feedback(plan: FeedbackPlan) -> tuple[int, int]:
    """Copy every prompt version and conversation record; returns (records, prompt versions)."""
    records = versions = 0
    for namespace in plan.namespaces:
        for name in plan.source.prompt_names(namespace):
            for version in plan.source.prompt_versions(namespace, name):
                if not plan.target.put_prompt(version):
                    raise ConfigError(f"prompt {name!r} v{version.version} already exists in the destination")
                versions += 1
        for record in plan.source.iter_records(namespace):
            plan.target.put_record(record)
            records += 1
    return records, versions
