"""The feedback services behind ``mem.feedback`` and ``mem.prompts`` (seed 003 §2.4, §5, §6).

``mem.feedback.record(thread, rating=…, feedback=…, …)`` writes the
conversation record of a thread: fields given replace stored ones, the rest
stay; corrections are counted from the thread's user messages; the reward
is recomputed from every signal (:mod:`memory.feedback.reward`). An
explicit ``reward=`` is kept until another explicit reward replaces it.
``mem.end_conversation(thread)`` stores the summary it made in the same
record and scores it.

``mem.prompts`` keeps named prompts with versions: ``use(thread, name)``
attributes a conversation to a version (the active one; with
``feedback.explore`` > 0 a deterministic share of new threads gets the
newest candidate, so candidates get measured) and returns its text;
``stats(name)`` gives count, mean and 95 % interval per version;
``suggest(name)`` makes a candidate from low-reward feedback;
``promote(name, version)`` switches the active version; with
``feedback.auto_promote`` on, a candidate that beats the active version
(:func:`memory.feedback.stats.candidate_beats_active`) is promoted when a
reward is recorded.
"""

from __future__ import annotations

import builtins
import hashlib
import random
import time
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from memory.backends.feedback import FeedbackStore, RecordQuery, check_prompt_text, check_version
from memory.errors import InvalidInputError, NotFoundError, StorageError
from memory.feedback.reward import compute_reward, normalise_rating
from memory.feedback.signals import dialogue_signals
from memory.feedback.stats import candidate_beats_active, interval
from memory.feedback.types import (
    ConversationRecord,
    FeedbackSummary,
    PromotionDecision,
    PromptSuggestion,
    PromptVersion,
    ReflectionReport,
    VersionAggregate,
    VersionStats,
)
from memory.records import check_limit, check_name
from memory.services import Core, feedback_store

if TYPE_CHECKING:
    from memory.episodic.messages import Messages
    from memory.episodic.summarize import ConversationEnd

__all__ = ["Feedback", "Prompts", "feedback_store"]

_SAVE_ATTEMPTS = 20
_TEXT_FIELDS = ("feedback", "example", "suggestion", "summary")


def _text(value: object, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidInputError(f"{what} must not be empty (leave it out to keep the stored one)")
    return value.strip()


class _Base:
    def __init__(self, core: Core, messages: Messages) -> None:
        """Bind to the store's ``core`` (backend, LLM, clock, namespace, settings) and its message log."""
        self._core = core
        self._messages = messages

    @property
    def store(self) -> FeedbackStore:
        """The backend's feedback store. Raises StoreUnavailableError when there is none."""
        return feedback_store(self._core.backend)

    def _ns(self, namespace: str | None) -> str:
        return check_name(namespace, "namespace") or self._core.namespace

    @property
    def _settings(self) -> Any:
        return self._core.settings.feedback


class Feedback(_Base):
    """Conversation records of a :class:`~memory.Memory` (``mem.feedback``)."""

    def record(
        self,
        thread: str,
        *,
        reward: float | None = None,
        rating: float | None = None,
        rating_scale: str = "stars",
        feedback: str | None = None,
        example: str | None = None,
        suggestion: str | None = None,
        task_completed: bool | None = None,
        prompt: str | None = None,
        prompt_version: int | None = None,
        summary: str | None = None,
        user: str | None = None,
        agent: str | None = None,
        namespace: str | None = None,
    ) -> ConversationRecord:
        """Write (or update) the record of ``thread`` and return it, rescored.

        ``reward`` is an explicit score in [0, 1]; ``rating`` an explicit
        user rating on ``rating_scale`` (``stars`` 1–5, ``thumbs`` ±1,
        ``unit`` 0–1); ``task_completed`` True/False; ``feedback`` the user's
        words, ``example`` the wanted behaviour, ``suggestion`` an
        improvement; ``prompt`` (and ``prompt_version``, default: the version
        the thread already uses, else the active one) attributes the
        conversation. Raises InvalidInputError (nothing stored) or NotFoundError
        (unknown prompt or version).
        """
        changes: dict[str, Any] = {}
        if reward is not None:
            compute_reward(explicit=reward)  # validates
            changes["explicit"] = float(reward)
        if rating is not None:
            changes["rating"] = normalise_rating(rating, rating_scale)
        if task_completed is not None:
            if not isinstance(task_completed, bool):
                raise InvalidInputError(f"task_completed must be True or False, got {task_completed!r}")
            changes["task_completed"] = task_completed
        for what, value in (("feedback", feedback), ("example", example), ("suggestion", suggestion),
                            ("summary", summary)):  # fmt: skip
            text = _text(value, what)
            if text is not None:
                changes[what] = text
        if prompt_version is not None and prompt is None:
            raise InvalidInputError("prompt_version needs prompt (the prompt's name)")
        ns = self._ns(namespace)
        if prompt is not None:
            changes["prompt"] = (check_name(prompt, "prompt", optional=False), prompt_version)
        return self._save(ns, thread, changes, user=user, agent=agent)

    def _thread_messages(self, ns: str, thread: str) -> builtins.list[Any]:
        if self._core.backend.episodic is None:
            return []
        return self._messages.get_thread(thread, namespace=ns, limit=10_000)

    def _save(
        self, ns: str, thread: str, changes: Mapping[str, Any], *, user: str | None = None, agent: str | None = None
    ) -> ConversationRecord:
        """Merge ``changes`` into the stored record of ``thread``, rescore it, store it; auto-promote if on.

        The write is conditional on the record's revision (optimistic
        concurrency): when another process changed the record in between, the
        merge is redone on the fresh record (a few times, then StorageError).
        """
        check_name(thread, "thread", optional=False)
        check_name(user, "user")
        check_name(agent, "agent")
        store = self.store
        messages = self._thread_messages(ns, thread)
        for attempt in range(_SAVE_ATTEMPTS):
            old = store.get_record(ns, thread)
            record = self._merge(ns, thread, old, changes, messages, user, agent)
            if store.save_record(record, old.revision if old is not None else None):
                break
            time.sleep(random.uniform(0.0, 0.002 * (attempt + 1)))  # another writer won: back off, merge again
        else:
            raise StorageError(
                f"the record of thread {thread!r} kept changing under {_SAVE_ATTEMPTS} attempts; try again"
            )
        if self._settings.auto_promote and record.prompt_name and record.reward is not None:
            Prompts(self._core, self._messages).auto_promote(record.prompt_name, namespace=ns)
        return record

    def _merge(
        self,
        ns: str,
        thread: str,
        old: ConversationRecord | None,
        changes: Mapping[str, Any],
        messages: builtins.list[Any],
        user: str | None,
        agent: str | None,
    ) -> ConversationRecord:
        """The new record: ``old`` with ``changes``, the thread's corrections and a fresh reward."""
        if user is None:
            user = old.user if old and old.user else _most_common(m.user for m in messages)
        if agent is None:
            agent = old.agent if old and old.agent else _most_common(m.agent for m in messages)
        fields: dict[str, Any] = old.model_dump() if old else {}
        fields.update(namespace=ns, thread=thread, user=user, agent=agent)
        for name in ("rating", "task_completed", *_TEXT_FIELDS):
            if name in changes:
                fields[name] = changes[name]
        if "prompt" in changes:
            name, version = changes["prompt"]
            fields["prompt_name"], fields["prompt_version"] = self._attribution(ns, name, version, old)
        if "explicit" in changes:
            fields["explicit_reward"] = True
            fields["reward"] = changes["explicit"]
        dialogue = None
        if messages:
            dialogue = dialogue_signals([(m.role, m.content) for m in messages if m.content])
            fields["corrections"] = dialogue.negative
            fields["message_ids"] = tuple(m.id for m in messages)
        result = compute_reward(
            rating=fields.get("rating"), task_completed=fields.get("task_completed"), feedback=fields.get("feedback"),
            corrections=int(fields.get("corrections") or 0), dialogue=dialogue,
            explicit=fields["reward"] if fields.get("explicit_reward") else None,
        )  # fmt: skip
        fields["reward"], fields["reward_components"] = result.reward, result.components
        now = self._core.now()
        fields.setdefault("created_at", now)
        fields["updated_at"] = now
        fields["revision"] = old.revision + 1 if old is not None else 1
        if old is not None and any(
            fields.get(k) != getattr(old, k) for k in ("reward", "feedback", "example", "suggestion")
        ):
            fields["reflected_at"] = None  # new judgement: reflect on it again
        try:
            return ConversationRecord(**fields)
        except ValidationError as exc:
            raise InvalidInputError(f"invalid conversation record: {exc}") from None

    def _attribution(self, ns: str, name: str, version: int | None, old: ConversationRecord | None) -> tuple[str, int]:
        store = self.store
        if version is not None:
            check_version(version, "prompt_version")
            if store.get_prompt(ns, name, version) is None:
                raise NotFoundError(f"prompt {name!r} has no version {version} in namespace {ns!r}")
            return name, version
        if old is not None and old.prompt_name == name and old.prompt_version is not None:
            return name, old.prompt_version
        active = store.get_prompt(ns, name)
        if active is None:
            raise NotFoundError(f"no prompt {name!r} in namespace {ns!r}; create it with prompts.create")
        return name, active.version

    def on_conversation_end(self, result: ConversationEnd, namespace: str | None = None) -> ConversationRecord | None:
        """Store the summary ``end_conversation`` made in the thread's record and score it (None: no messages)."""
        if result.messages == 0 or self._core.backend.feedback is None:
            return None
        changes = {"summary": result.summary} if result.summary and result.summary.strip() else {}
        return self._save(self._ns(namespace), result.thread, changes, user=result.user, agent=result.agent)

    def get(self, thread: str, *, namespace: str | None = None) -> ConversationRecord:
        """The record of ``thread``. Raises NotFoundError."""
        check_name(thread, "thread", optional=False)
        ns = self._ns(namespace)
        found = self.store.get_record(ns, thread)
        if found is None:
            raise NotFoundError(f"no conversation record for thread {thread!r} in namespace {ns!r}")
        return found

    def list(
        self,
        *,
        prompt: str | None = None,
        version: int | None = None,
        reward_below: float | None = None,
        scored: bool | None = None,
        unreflected: bool = False,
        user: str | None = None,
        agent: str | None = None,
        limit: int = 100,
        newest_first: bool = True,
        namespace: str | None = None,
    ) -> builtins.list[ConversationRecord]:
        """Conversation records matching the filters, newest update first by default."""
        query = RecordQuery(
            prompt_name=prompt, prompt_version=version, reward_below=reward_below, scored=scored,
            unreflected=unreflected, user=user, agent=agent, limit=limit, newest_first=newest_first,
        )  # fmt: skip
        return self.store.list_records(self._ns(namespace), query)

    def forget(
        self, thread: str | None = None, *, user: str | None = None, agent: str | None = None,
        namespace: str | None = None,
    ) -> int:  # fmt: skip
        """Delete the records of a thread (or of a user/agent, or all of the namespace); returns how many."""
        return self.store.delete_records(self._ns(namespace), thread=thread, user=user, agent=agent)

    def summarize(self, *, namespace: str | None = None, limit: int = 10_000) -> FeedbackSummary:
        """An overview: records, scored, mean and low rewards, unreflected, per-version stats, recent feedback."""
        ns = self._ns(namespace)
        records = self.store.list_records(ns, RecordQuery(limit=limit, newest_first=True))
        scored = [r.reward for r in records if r.reward is not None]
        low = self._settings.low_reward
        prompts = Prompts(self._core, self._messages)
        stats = [s for name in self.store.prompt_names(ns) for s in prompts.stats(name, namespace=ns)]
        recent = [r.feedback for r in records if r.feedback and r.reward is not None and r.reward < low][:5]
        return FeedbackSummary(
            namespace=ns, records=len(records), scored=len(scored),
            mean_reward=round(sum(scored) / len(scored), 4) if scored else None,
            low_reward=sum(1 for x in scored if x < low), unreflected=sum(1 for r in records if r.reflected_at is None
            and r.reward is not None), threshold=low, prompts=tuple(stats), recent_feedback=tuple(recent),
        )  # fmt: skip

    def reflect(
        self, *, limit: int | None = None, dry_run: bool = False, namespace: str | None = None
    ) -> ReflectionReport:
        """One self-reflection pass (see :mod:`memory.feedback.reflect`); same as :meth:`Memory.reflect`."""
        from memory.feedback.reflect import reflect

        settings = self._core.settings.feedback
        limit = settings.reflect_batch if limit is None else check_limit(limit)
        return reflect(
            self._core, self.store, self._core.ns(namespace), limit=limit, low=settings.low_reward,
            high=settings.high_reward, dry_run=bool(dry_run),
        )  # fmt: skip


def _most_common(values: Any) -> str | None:
    counts = Counter(v for v in values if v)
    return counts.most_common(1)[0][0] if counts else None


class Prompts(_Base):
    """Named, versioned prompts and their measured performance (``mem.prompts``)."""

    def create(self, name: str, text: str, *, note: str = "", namespace: str | None = None) -> PromptVersion:
        """Create prompt ``name`` with ``text`` as version 1 (active). Raises InvalidInputError if it exists."""
        ns = self._ns(namespace)
        check_name(name, "prompt name", optional=False)
        if self.store.get_prompt(ns, name, 1) is not None:
            raise InvalidInputError(f"prompt {name!r} exists; add a version with prompts.add_version")
        return self.store.add_prompt(ns, name, check_prompt_text(text), at=self._core.now(), note=note, activate=True)

    def add_version(
        self,
        name: str,
        text: str,
        *,
        parent: int | None = None,
        activate: bool = False,
        note: str = "",
        namespace: str | None = None,
    ) -> PromptVersion:
        """Store a new version of ``name`` (a candidate unless ``activate`` or it is the first). Returns it."""
        ns = self._ns(namespace)
        if parent is None:
            active = self.store.get_prompt(ns, check_name(name, "prompt name", optional=False) or name)
            parent = active.version if active else None
        return self.store.add_prompt(
            ns, name, text, at=self._core.now(), origin="manual", parent=parent, note=note, activate=activate
        )

    def get(self, name: str, version: int | None = None, *, namespace: str | None = None) -> PromptVersion:
        """A version of ``name`` (the active one by default). Raises NotFoundError."""
        ns = self._ns(namespace)
        found = self.store.get_prompt(ns, name, None if version is None else check_version(version))
        if found is None:
            which = "an active version" if version is None else f"version {version}"
            raise NotFoundError(f"prompt {name!r} has no {which} in namespace {ns!r}")
        return found

    def versions(self, name: str, *, namespace: str | None = None) -> builtins.list[PromptVersion]:
        """Every version of ``name``, oldest first. Raises NotFoundError for an unknown name."""
        ns = self._ns(namespace)
        found = self.store.prompt_versions(ns, name)
        if not found:
            raise NotFoundError(f"no prompt {name!r} in namespace {ns!r}")
        return found

    def list(self, *, namespace: str | None = None) -> builtins.list[PromptVersion]:
        """The active version of every prompt of the namespace, by name."""
        ns = self._ns(namespace)
        out = []
        for name in self.store.prompt_names(ns):
            active = self.store.get_prompt(ns, name)
            if active is not None:
                out.append(active)
        return out

    def stats(self, name: str, *, namespace: str | None = None) -> builtins.list[VersionStats]:
        """Per version of ``name``: scored count, mean reward, 95 % t interval, conversations attributed."""
        ns = self._ns(namespace)
        versions = self.versions(name, namespace=ns)
        aggregates = {agg.version: (agg, total) for agg, total in self.store.aggregates(ns, name)}
        out = []
        for v in versions:
            agg, total = aggregates.get(v.version, (VersionAggregate(version=v.version), 0))
            ci = interval(agg)
            out.append(
                VersionStats(
                    name=name, version=v.version, status=v.status, origin=v.origin, count=ci.count, mean=ci.mean,
                    ci_low=ci.low, ci_high=ci.high, conversations=total,
                )
            )  # fmt: skip
        return out

    def suggest(
        self, name: str, *, limit: int = 20, use_llm: bool | None = None, namespace: str | None = None
    ) -> PromptSuggestion:
        """A new candidate version of ``name`` from low-reward feedback (see :mod:`memory.feedback.suggest`)."""
        from memory.feedback.suggest import suggest_prompt

        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInputError(f"limit must be an integer from 1 to 1000, got {limit!r}")
        return suggest_prompt(
            self._core, self.store, self._ns(namespace), check_name(name, "prompt name", optional=False) or name,
            threshold=self._settings.low_reward, limit=limit, max_rules=self._settings.max_rules, use_llm=use_llm,
        )  # fmt: skip

    def promote(self, name: str, version: int, *, namespace: str | None = None) -> PromptVersion:
        """Make ``version`` the active version of ``name`` (atomically). Raises NotFoundError."""
        return self.store.promote(self._ns(namespace), name, check_version(version), self._core.now())

    def auto_promote(self, name: str, *, dry_run: bool = False, namespace: str | None = None) -> PromotionDecision:
        """Promote the best candidate of ``name`` if it beats the active version (:mod:`memory.feedback.stats`)."""
        ns = self._ns(namespace)
        versions = self.store.prompt_versions(ns, name)
        active = next((v for v in versions if v.status == "active"), None)
        if active is None:
            return PromotionDecision(name=name, promoted=False, reason="no active version")
        aggregates = {agg.version: agg for agg, _ in self.store.aggregates(ns, name)}
        base = aggregates.get(active.version, VersionAggregate(version=active.version))
        best: tuple[float, int, str] | None = None
        reasons = []
        for v in versions:
            if v.status != "candidate":
                continue
            agg = aggregates.get(v.version, VersionAggregate(version=v.version))
            wins, why = candidate_beats_active(agg, base, min_count=self._settings.min_count)
            reasons.append(f"v{v.version}: {why}")
            low = interval(agg).low
            if wins and low is not None and (best is None or low > best[0]):
                best = (low, v.version, why)
        if best is None:
            reason = "; ".join(reasons) or "no candidate versions"
            return PromotionDecision(name=name, promoted=False, active=active.version, reason=reason)
        if not dry_run:
            self.store.promote(ns, name, best[1], self._core.now())
        return PromotionDecision(
            name=name, promoted=not dry_run, candidate=best[1], active=active.version, reason=best[2]
        )

    def use(
        self, thread: str, name: str, *, user: str | None = None, agent: str | None = None,
        namespace: str | None = None,
    ) -> str:  # fmt: skip
        """Attribute ``thread`` to a version of ``name`` and return that version's text.

        A thread keeps the version it got first. A new thread gets the active
        version, or — with ``feedback.explore`` > 0 — the newest candidate for
        a deterministic share of threads. Raises NotFoundError.
        """
        ns = self._ns(namespace)
        check_name(thread, "thread", optional=False)
        check_name(name, "prompt name", optional=False)
        old = self.store.get_record(ns, thread)
        if old is not None and old.prompt_name == name and old.prompt_version is not None:
            found = self.store.get_prompt(ns, name, old.prompt_version)
            if found is not None:
                return found.text
        chosen = self._choose(ns, thread, name)
        Feedback(self._core, self._messages)._save(
            ns, thread, {"prompt": (name, chosen.version)}, user=user, agent=agent
        )
        return chosen.text

    def _choose(self, ns: str, thread: str, name: str) -> PromptVersion:
        versions = self.store.prompt_versions(ns, name)
        active = next((v for v in versions if v.status == "active"), None)
        if active is None:
            raise NotFoundError(f"no prompt {name!r} in namespace {ns!r}; create it with prompts.create")
        candidates = [v for v in versions if v.status == "candidate" and v.version > active.version]
        explore = self._settings.explore
        if candidates and explore > 0:
            digest = hashlib.blake2b(f"{ns}\x1f{name}\x1f{thread}".encode(), digest_size=8).digest()
            if int.from_bytes(digest, "big") / 2**64 < explore:
                return candidates[-1]
        return active
