"""The worker's job registry: hooks run each pass, a failing job is counted and the others still run."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from memory import Memory
from memory.embedders.hashing import HashingEmbedder
from memory.episodic import worker as worker_module
from memory.episodic.worker import JOBS, Worker, register_job
from memory.errors import InvalidInputError, StorageError


@pytest.fixture
def restore_jobs() -> Any:
    saved = dict(JOBS)
    yield
    JOBS.clear()
    JOBS.update(saved)


def test_registered_hooks_run_and_failures_are_isolated(restore_jobs: None) -> None:
    calls: list[str] = []

    def consolidation(mem: Memory, should_stop: Callable[[], bool], options: Mapping[str, Any]) -> dict[str, Any]:
        calls.append(f"consolidation {dict(options)}")
        return {"merged": 2}

    def broken(mem: Memory, should_stop: Callable[[], bool], options: Mapping[str, Any]) -> dict[str, Any]:
        raise StorageError("disk on fire (test)")

    register_job("consolidation", consolidation)
    register_job("broken", broken)
    with Memory("memory://", embedder=HashingEmbedder()) as mem:
        mem.messages.append("t1", "hello")
        runner = Worker(
            mem, jobs=["broken", "consolidation", "sync"], interval=0, options={"consolidation": {"level": 1}}
        )
        report = runner.run(max_passes=2, install_signals=False)
        assert report.passes == 2 and report.errors == 2
        assert calls == ["consolidation {'level': 1}"] * 2
        assert report.totals["consolidation"]["merged"] == 4
        assert report.totals["sync"]["messages_done"] == 1
        assert mem.sync_status().messages == {"done": 1}


def test_stop_ends_the_loop_and_bad_configuration_is_refused(restore_jobs: None) -> None:
    with Memory("memory://", embedder=HashingEmbedder()) as mem:
        runner = Worker(mem, jobs=["prune"], interval=30)

        def stop_after_first(results: dict[str, dict[str, Any]]) -> None:
            runner.stop("test")

        report = runner.run(on_pass=stop_after_first, install_signals=False)
        assert (report.passes, report.stopped_by) == (1, "test")
        with pytest.raises(InvalidInputError, match="unknown job"):
            Worker(mem, jobs=["nope"])
        with pytest.raises(InvalidInputError, match="interval"):
            Worker(mem, interval=-1)
    with pytest.raises(InvalidInputError):
        register_job("not a name", lambda mem, stop, options: {})
    assert "sync" in worker_module.JOBS and "prune" in worker_module.JOBS
