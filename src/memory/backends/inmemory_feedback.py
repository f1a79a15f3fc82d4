"""The in-process :class:`~memory.backends.feedback.FeedbackStore` (dicts under the backend's lock)."""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterator
from datetime import datetime

from memory.backends.feedback import (
    RecordQuery,
    check_new_prompt,
    check_prompt_text,
    check_query,
    check_record,
    check_version,
)
from memory.errors import InvalidInputError, NotFoundError
from memory.feedback.types import ConversationRecord, PromptOrigin, PromptVersion, VersionAggregate
from memory.records import check_name

__all__ = ["InMemoryFeedbackStore"]


class InMemoryFeedbackStore:
    """Records keyed by (namespace, thread), prompt versions by (namespace, name, version); thread-safe."""

    def __init__(self, lock: threading.RLock) -> None:
        """Share ``lock`` with the backend."""
        self._lock = lock
        self._records: dict[tuple[str, str], ConversationRecord] = {}
        self._prompts: dict[tuple[str, str], dict[int, PromptVersion]] = {}

    # -- records -------------------------------------------------------------
    def put_record(self, record: ConversationRecord) -> None:
        """Insert or replace the record of (namespace, thread)."""
        check_record(record)
        with self._lock:
            self._records[(record.namespace, record.thread)] = record

    def save_record(self, record: ConversationRecord, expected: int | None) -> bool:
        """Write ``record`` if the stored revision is ``expected`` (None: only if absent); False otherwise."""
        check_record(record)
        key = (record.namespace, record.thread)
        with self._lock:
            current = self._records.get(key)
            if (current is None) != (expected is None) or (current is not None and current.revision != expected):
                return False
            self._records[key] = record
            return True

    def get_record(self, namespace: str, thread: str) -> ConversationRecord | None:
        """The record of a thread, or None."""
        check_name(namespace, "namespace", optional=False)
        check_name(thread, "thread", optional=False)
        with self._lock:
            return self._records.get((namespace, thread))

    def namespaces(self) -> builtins.list[str]:
        """Namespaces that hold conversation records or prompt versions, sorted."""
        with self._lock:
            found = {ns for ns, _ in self._records} | {ns for (ns, _), versions in self._prompts.items() if versions}
        return sorted(found)

    def iter_records(self, namespace: str, batch_size: int = 1000) -> Iterator[ConversationRecord]:
        """Every record of a namespace, by thread (a snapshot taken at the first read)."""
        check_name(namespace, "namespace", optional=False)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError(f"batch_size must be a positive integer, got {batch_size!r}")
        with self._lock:
            records = sorted((r for (ns, _), r in self._records.items() if ns == namespace), key=lambda r: r.thread)
        yield from records

    def list_records(self, namespace: str, query: RecordQuery) -> builtins.list[ConversationRecord]:
        """Records matching ``query``, by last update then thread."""
        check_name(namespace, "namespace", optional=False)
        check_query(query)
        with self._lock:
            found = [r for (ns, _), r in self._records.items() if ns == namespace]

        def keep(r: ConversationRecord) -> bool:
            return (
                (query.prompt_name is None or r.prompt_name == query.prompt_name)
                and (query.prompt_version is None or r.prompt_version == query.prompt_version)
                and (query.user is None or r.user == query.user)
                and (query.agent is None or r.agent == query.agent)
                and (query.reward_below is None or (r.reward is not None and r.reward < query.reward_below))
                and (query.scored is None or (r.reward is not None) == query.scored)
                and (not query.unreflected or r.reflected_at is None)
            )

        found = sorted(filter(keep, found), key=lambda r: (r.updated_at, r.thread), reverse=query.newest_first)
        return found[: query.limit]

    def mark_reflected(self, namespace: str, threads: builtins.list[str], at: datetime) -> int:
        """Set ``reflected_at`` of these threads' records."""
        check_name(namespace, "namespace", optional=False)
        for thread in threads:
            check_name(thread, "thread", optional=False)
        changed = 0
        with self._lock:
            for thread in threads:
                record = self._records.get((namespace, thread))
                if record is not None:
                    self._records[(namespace, thread)] = record.model_copy(
                        update={"reflected_at": at, "revision": record.revision + 1}
                    )
                    changed += 1
        return changed

    def delete_records(
        self, namespace: str, *, thread: str | None = None, user: str | None = None, agent: str | None = None
    ) -> int:
        """Delete the records of a scope."""
        check_name(namespace, "namespace", optional=False)
        check_name(thread, "thread")
        check_name(user, "user")
        check_name(agent, "agent")
        with self._lock:
            doomed = [
                key
                for key, r in self._records.items()
                if key[0] == namespace
                and (thread is None or r.thread == thread)
                and (user is None or r.user == user)
                and (agent is None or r.agent == agent)
            ]
            for key in doomed:
                del self._records[key]
        return len(doomed)

    # -- prompts -------------------------------------------------------------
    def add_prompt(
        self,
        namespace: str,
        name: str,
        text: str,
        *,
        at: datetime,
        origin: PromptOrigin = "manual",
        parent: int | None = None,
        note: str = "",
        activate: bool = False,
    ) -> PromptVersion:
        """Store the next version of ``name``; the first one, or ``activate``, makes it active."""
        check_new_prompt(namespace, name, text, origin, parent, note)
        with self._lock:
            versions = self._prompts.get((namespace, name), {})
            latest = max(versions, default=0)
            if parent is not None and parent > latest:
                raise NotFoundError(f"prompt {name!r} has no version {parent} in namespace {namespace!r}")
            number = latest + 1
            active = activate or number == 1
            version = PromptVersion(
                namespace=namespace, name=name, version=number, text=text, origin=origin, parent=parent,
                status="active" if active else "candidate", note=note, created_at=at,
                promoted_at=at if active else None,
            )  # fmt: skip
            updated = {
                n: v.model_copy(update={"status": "retired"}) if active and v.status == "active" else v
                for n, v in versions.items()
            }
            self._prompts[(namespace, name)] = {**updated, number: version}
        return version

    def put_prompt(self, version: PromptVersion) -> bool:
        """Store a version as given (import); False when it exists. A second active one is stored retired."""
        check_name(version.namespace, "namespace", optional=False)
        check_name(version.name, "prompt name", optional=False)
        check_version(version.version)
        check_prompt_text(version.text)
        with self._lock:
            versions = self._prompts.setdefault((version.namespace, version.name), {})
            if version.version in versions:
                return False
            if version.status == "active" and any(v.status == "active" for v in versions.values()):
                version = version.model_copy(update={"status": "retired"})
            versions[version.version] = version
            return True

    def get_prompt(self, namespace: str, name: str, version: int | None = None) -> PromptVersion | None:
        """One version, or the active one."""
        check_name(namespace, "namespace", optional=False)
        check_name(name, "prompt name", optional=False)
        if version is not None:
            check_version(version)
        with self._lock:
            versions = dict(self._prompts.get((namespace, name), {}))
        if version is None:
            return next((v for v in versions.values() if v.status == "active"), None)
        return versions.get(version)

    def prompt_versions(self, namespace: str, name: str) -> builtins.list[PromptVersion]:
        """Every version of ``name``, oldest first."""
        check_name(namespace, "namespace", optional=False)
        check_name(name, "prompt name", optional=False)
        with self._lock:
            return [v for _, v in sorted(self._prompts.get((namespace, name), {}).items())]

    def prompt_names(self, namespace: str) -> builtins.list[str]:
        """Names of the prompts of a namespace, sorted."""
        check_name(namespace, "namespace", optional=False)
        with self._lock:
            return sorted(name for (ns, name), versions in self._prompts.items() if ns == namespace and versions)

    def promote(self, namespace: str, name: str, version: int, at: datetime) -> PromptVersion:
        """Make ``version`` the active one, retiring the former active one."""
        check_name(namespace, "namespace", optional=False)
        check_name(name, "prompt name", optional=False)
        check_version(version)
        with self._lock:
            versions = self._prompts.get((namespace, name), {})
            target = versions.get(version)
            if target is None:
                raise NotFoundError(f"prompt {name!r} has no version {version} in namespace {namespace!r}")
            if target.status == "active":
                return target
            promoted = target.model_copy(update={"status": "active", "promoted_at": at})
            self._prompts[(namespace, name)] = {
                n: promoted
                if n == version
                else (v.model_copy(update={"status": "retired"}) if v.status == "active" else v)
                for n, v in versions.items()
            }
        return promoted

    def aggregates(self, namespace: str, name: str) -> builtins.list[tuple[VersionAggregate, int]]:
        """Per version: scored count, sum and sum of squares of rewards, and all attributed records."""
        check_name(namespace, "namespace", optional=False)
        check_name(name, "prompt name", optional=False)
        with self._lock:
            records = [r for (ns, _), r in self._records.items() if ns == namespace and r.prompt_name == name]
        out: dict[int, tuple[VersionAggregate, int]] = {}
        for r in records:
            if r.prompt_version is None:
                continue
            agg, total = out.get(r.prompt_version, (VersionAggregate(version=r.prompt_version), 0))
            if r.reward is not None:
                agg = VersionAggregate(
                    version=agg.version, count=agg.count + 1, total=agg.total + r.reward,
                    total_squares=agg.total_squares + r.reward * r.reward,
                )  # fmt: skip
            out[r.prompt_version] = (agg, total + 1)
        return [out[v] for v in sorted(out)]

    def delete_prompts(self, namespace: str) -> int:
        """Delete every prompt version of a namespace."""
        check_name(namespace, "namespace", optional=False)
        with self._lock:
            doomed = [key for key in self._prompts if key[0] == namespace]
            return sum(len(self._prompts.pop(key)) for key in doomed)
