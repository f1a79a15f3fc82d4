"""The long-running worker: sync, prune and registered job hooks in a loop, stopped gracefully.

Jobs are functions ``job(mem, should_stop) -> dict`` registered by name
(:func:`register_job`); ``sync``, ``prune``, ``tiers``, ``extract`` and
``reflect`` are built in, plugins register theirs. A SIGTERM or SIGINT asks the
worker to stop: the batch in flight finishes and is committed, then the
worker returns — nothing is lost.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, Any, Protocol

from memory.errors import Error, InvalidInputError

if TYPE_CHECKING:
    from memory.services import Core

__all__ = ["Job", "JOBS", "register_job", "Worker", "WorkerReport"]

log = logging.getLogger(__name__)


class Store(Protocol):
    """What the built-in jobs use of the store they run on: a :class:`memory.Memory`."""

    @property
    def core(self) -> Core:
        """The store's service context."""

    @property
    def tiers(self) -> Any:
        """The store's tiers service."""

    def prune(self, *args: Any, **kwargs: Any) -> Any:
        """See ``Memory.prune``."""

    def extract_pending(self, *args: Any, **kwargs: Any) -> Any:
        """See ``Memory.extract_pending``."""

    def reflect(self, *args: Any, **kwargs: Any) -> Any:
        """See ``Memory.reflect``."""


#: ``job(mem, should_stop, options) -> summary``: one pass of a job; ``options`` come from the worker.
Job = Callable[[Store, Callable[[], bool], Mapping[str, Any]], dict[str, Any]]


def _sync_job(mem: Store, should_stop: Callable[[], bool], options: Mapping[str, Any]) -> dict[str, Any]:
    from memory.episodic.sync import SyncJob

    return SyncJob(mem.core, **options).run(should_stop=should_stop).to_dict()


def _prune_job(mem: Store, should_stop: Callable[[], bool], options: Mapping[str, Any]) -> dict[str, Any]:
    del should_stop
    summary: dict[str, Any] = mem.prune(**options).to_dict()
    return summary


def _tiers_job(mem: Store, should_stop: Callable[[], bool], options: Mapping[str, Any]) -> dict[str, Any]:
    """Tier consolidation (STM→MTM→LPM→system memory) of every (agent, user) of the namespace."""
    del should_stop
    summary: dict[str, Any] = mem.tiers.consolidate(**options).to_dict()
    return summary


def _extract_job(mem: Store, should_stop: Callable[[], bool], options: Mapping[str, Any]) -> dict[str, Any]:
    """Background extraction: memories queued by ``remember(..., extract=...)`` (also facts from messages)."""
    del should_stop
    counts: dict[str, Any] = {"processed": 0}
    for report in mem.extract_pending(**options):
        counts["processed"] += 1
        counts[report.status] = counts.get(report.status, 0) + 1
    return counts


def _reflect_job(mem: Store, should_stop: Callable[[], bool], options: Mapping[str, Any]) -> dict[str, Any]:
    """Self-reflection: lessons from scored conversations as procedural memories (:mod:`memory.feedback.reflect`)."""
    del should_stop
    report = mem.reflect(**options).to_dict()
    return {k: v for k, v in report.items() if k not in ("memory_ids", "lessons")}


#: Jobs the worker knows, by name.
JOBS: dict[str, Job] = {
    "sync": _sync_job,
    "prune": _prune_job,
    "tiers": _tiers_job,
    "extract": _extract_job,
    "reflect": _reflect_job,
}


def register_job(name: str, job: Job) -> None:
    """Make ``job`` runnable by the worker as ``name`` (e.g. consolidation, reflection)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise InvalidInputError(f"job name {name!r} must be an identifier")
    JOBS[name] = job


@dataclass
class WorkerReport:
    """What a worker did before it stopped."""

    passes: int = 0
    totals: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: int = 0
    stopped_by: str | None = None


class Worker:
    """Runs jobs one after another, every ``interval`` seconds, until stopped."""

    def __init__(
        self,
        mem: Store,
        *,
        jobs: Sequence[str] = ("sync", "prune"),
        interval: float = 5.0,
        options: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        """Configure; ``options`` are per-job keyword options (e.g. ``{"sync": {"batch_size": 32}}``).

        Raises InvalidInputError for unknown jobs or a bad interval.
        """
        unknown = [name for name in jobs if name not in JOBS]
        if unknown:
            raise InvalidInputError(f"unknown job(s) {unknown}; known: {', '.join(sorted(JOBS))}")
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval < 0:
            raise InvalidInputError(f"interval must be a non-negative number of seconds, got {interval!r}")
        self.mem = mem
        self.jobs = list(jobs)
        self.interval = float(interval)
        self.options = {name: dict(values) for name, values in (options or {}).items()}
        self._stop = threading.Event()
        self.report = WorkerReport()

    def stop(self, reason: str = "stop()") -> None:
        """Ask the worker to stop after the batch in flight."""
        if self.report.stopped_by is None:
            self.report.stopped_by = reason
        self._stop.set()

    @property
    def stopping(self) -> bool:
        """True once a stop was asked for."""
        return self._stop.is_set()

    def run_once(self) -> dict[str, dict[str, Any]]:
        """One pass of every job; a failing job is logged and counted, the others still run."""
        results: dict[str, dict[str, Any]] = {}
        for name in self.jobs:
            if self.stopping:
                break
            try:
                results[name] = JOBS[name](self.mem, lambda: self.stopping, self.options.get(name, {}))
            except Error as exc:
                self.report.errors += 1
                log.warning("job %s failed: %s", name, exc)
                results[name] = {"error": str(exc)}
                continue
            totals = self.report.totals.setdefault(name, {})
            for key, value in results[name].items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    totals[key] = totals.get(key, 0) + value
        self.report.passes += 1
        return results

    def run(
        self,
        *,
        max_passes: int | None = None,
        install_signals: bool = True,
        on_pass: Callable[[dict[str, dict[str, Any]]], None] | None = None,
    ) -> WorkerReport:
        """Loop until stopped (SIGTERM/SIGINT when ``install_signals``) or ``max_passes``; returns the report."""
        previous: dict[signal.Signals, Any] = {}
        if install_signals and threading.current_thread() is threading.main_thread():

            def handler(signum: int, frame: FrameType | None) -> None:
                del frame
                self.stop(signal.Signals(signum).name)

            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, handler)
        try:
            while not self.stopping:
                results = self.run_once()
                if on_pass is not None:
                    on_pass(results)
                if max_passes is not None and self.report.passes >= max_passes:
                    break
                self._stop.wait(self.interval)
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)
        return self.report
