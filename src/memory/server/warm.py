"""Warming a served store in the background, so the first search and context are not cold.

What a fresh server pays on its first requests (profiled on 100k memories,
SQLite, see README "Web inspector"): the in-process copy of a namespace's
vector codes and float32 vectors that vector search keeps (read from SQLite
on first use, ~1.5 s on the quiet 2-core machine), the tokenizer ranks of the
context token counter (~0.5 s) and the first import of the services behind
context, tiers, conversations and prompts. :func:`warm_up` does that work
once, read-only — it writes nothing, records no access and sees no item —
and :class:`WarmUp` runs it in a daemon thread started when the app starts,
so readiness is not delayed and a request never waits for it (a request
arriving first simply does its own cold work, as without warm-up).
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Callable

import numpy as np

from memory.memory import Memory

__all__ = ["WarmUp", "warm_up", "MAX_WARM_NAMESPACES", "WARM_MODULES"]

log = logging.getLogger(__name__)

#: Namespaces whose vector copies are warmed (the store's default first); the rest warm on first use.
MAX_WARM_NAMESPACES = 8
#: Modules the library imports lazily on the first search, context, thread, tiers or prompts call.
WARM_MODULES = (
    "memory.context.pipeline",
    "memory.retrieval.graph",
    "memory.episodic.messages",
    "memory.episodic.blocks",
    "memory.episodic.sync",
    "memory.tiers.service",
    "memory.feedback.service",
)


def _namespaces(mem: Memory) -> list[str]:
    names = mem.namespaces()
    ordered = [mem.namespace] if mem.namespace in names else []
    ordered += [n for n in names if n != mem.namespace]
    return ordered[:MAX_WARM_NAMESPACES]


def warm_up(mem: Memory, stop: threading.Event | None = None) -> dict[str, float]:
    """Do the first-use work of search and context now; returns each step's time in ms.

    Steps: lazy imports, the context token counter, then per namespace (at
    most :data:`MAX_WARM_NAMESPACES`, the default first) and vector space one
    vector search through the backend, which loads its in-process copy. Stops
    between steps once ``stop`` is set. Never raises: a failing step is logged
    and skipped (the request that needs it does the work itself).
    """
    stop = stop or threading.Event()
    times: dict[str, float] = {}

    def step(name: str, work: Callable[[], object]) -> None:
        if stop.is_set():
            return
        started = time.perf_counter()
        try:
            work()
        except Exception as exc:  # warm-up is an optimisation: never fatal
            log.debug("warm-up step %s skipped: %s", name, exc)
            return
        times[name] = (time.perf_counter() - started) * 1000

    step("imports", lambda: [importlib.import_module(m) for m in WARM_MODULES])

    def tokens() -> None:
        from memory.context.tokens import counter_for

        counter_for(None).count("warm")

    step("token counter", tokens)
    backend = mem.backend
    spaces: list[tuple[str, int]] = []
    step("vector spaces", lambda: spaces.extend((s.model, s.dim) for s in backend.vector_spaces()))
    names: list[str] = []
    step("namespaces", lambda: names.extend(_namespaces(mem)))

    def vectors(namespace: str, model: str, dim: int) -> Callable[[], object]:
        probe = np.zeros(dim, dtype=np.float32)
        probe[0] = 1.0  # any direction: the search loads the namespace's copy whatever it asks
        return lambda: backend.search_vector(mem.filter(namespace), model, probe, 1)

    for namespace in names:
        for model, dim in spaces:
            step(f"vectors {namespace}/{model}", vectors(namespace, model, dim))
    return times


class WarmUp:
    """:func:`warm_up` in a daemon thread: ``start()`` when the app starts, ``stop()`` before the store closes."""

    def __init__(self, mem: Memory) -> None:
        """Prepare (not start) the warm-up of ``mem``."""
        self.mem = mem
        self.times: dict[str, float] = {}
        self.done = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        started = time.perf_counter()
        try:
            self.times = warm_up(self.mem, self._stop)
            log.info("warm-up done in %.0f ms: %s", (time.perf_counter() - started) * 1000, self.times)
        finally:
            self.done.set()

    def start(self) -> None:
        """Start warming in the background (returns at once)."""
        self._thread = threading.Thread(target=self._run, name="memory-warm-up", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the warm-up to stop after its current step and wait for it (at most ``timeout`` s)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
