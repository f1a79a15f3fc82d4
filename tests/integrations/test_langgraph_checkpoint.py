"""The LangGraph checkpointer passes LangGraph's own conformance suite (langgraph-checkpoint-conformance)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from frameworks import framework

from memory import Memory

framework("langgraph.checkpoint.conformance")

from langgraph.checkpoint.conformance import checkpointer_test, validate  # noqa: E402
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES  # noqa: E402

from memory.integrations.langgraph import MemorySaver  # noqa: E402


def test_conformance_every_capability(make_memory: Callable[..., Memory]) -> None:
    """All base and extended capabilities are detected and every conformance test passes."""

    @checkpointer_test(name="memory.MemorySaver")
    async def factory() -> AsyncIterator[MemorySaver]:
        yield MemorySaver(make_memory())

    report = asyncio.run(validate(factory))
    failures = {name: result.failures for name, result in report.results.items() if result.passed is not True}
    assert not failures, failures
    assert set(report.results) == {c.value for c in ALL_CAPABILITIES}
    assert all(r.detected and r.tests_passed > 0 and r.tests_failed == 0 for r in report.results.values())
