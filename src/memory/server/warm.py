"""Warming a served store in the background, so the first search and context are not cold.

What a fresh server pays on its first requests (profiled on 100k memories,
SQLite, see README "Web inspector"): the in-process copy of a namespace's
vector codes and float32 vectors that vector search keeps (read from SQLite
on first use, ~1.5 s on the quiet 2-core machine), the tokenizer ranks of the
context token counter (~0.5 s) and the first import of the services behind
context, tiers, conversations and prompts. :func:`warm_up` does that work
once, read-only — it writes nothing, records no access and sees no item —
and :class:`WarmUp` runs it in a daemon thread started when the app starts.
The app's startup waits (at most ``server.warm_wait`` seconds) until the
default namespace is warm, as a server loads its indexes before it says it
is ready: uvicorn accepts connections, and the CLI prints that it is
listening, only then, so the first search a user makes is not cold. The
other namespaces warm in the background; a search arriving while its
namespace is still warming waits for that work instead of repeating it.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from memory.memory import Memory
from memory.server.ops import Call, Operation

__all__ = ["WarmUp", "warm_up", "MAX_WARM_NAMESPACES", "WARM_MODULES", "WAITING_OPERATIONS"]

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


def warm_up(
    mem: Memory, stop: threading.Event | None = None, ready: Callable[[str], None] | None = None
) -> dict[str, float]:
    """Do the first-use work of search and context now; returns each step's time in ms.

    Order: the plan (vector spaces, namespaces: at most
    :data:`MAX_WARM_NAMESPACES`, the default first), the default namespace's
    vector copies (one vector search per space through the backend, which
    loads its in-process copy) and one read-only pass of recall's channels
    (:meth:`Memory.warm`: the lexical channel's thread and connection, the
    embedder's first call), lazy imports, the context token counter, then
    the other namespaces. ``ready`` is told ``"planned:<name>"`` for each
    namespace of the plan, then ``"plan"``, ``"ns:<name>"`` and ``"tokens"`` as
    each is done (or skipped). Stops between steps once
    ``stop`` is set. Never raises: a failing step is logged and skipped (the
    request that needs it does the work itself).
    """
    stop = stop or threading.Event()
    tell = ready or (lambda _: None)
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

    backend = mem.backend
    spaces: list[tuple[str, int]] = []
    names: list[str] = []

    def plan() -> None:
        spaces.extend((s.model, s.dim) for s in backend.vector_spaces())
        names.extend(_namespaces(mem))

    step("plan", plan)
    for namespace in names:
        tell(f"planned:{namespace}")
    tell("plan")

    def vectors(namespace: str, model: str, dim: int) -> Callable[[], object]:
        probe = np.zeros(dim, dtype=np.float32)
        probe[0] = 1.0  # any direction: the search loads the namespace's copy whatever it asks
        return lambda: backend.search_vector(mem.filter(namespace), model, probe, 1)

    def namespace_copies(namespace: str) -> None:
        for model, dim in spaces:
            step(f"vectors {namespace}/{model}", vectors(namespace, model, dim))
        step(f"recall {namespace}", lambda: mem.warm(namespace))
        tell(f"ns:{namespace}")

    if names:
        namespace_copies(names[0])
    step("imports", lambda: [importlib.import_module(m) for m in WARM_MODULES])

    def tokens() -> None:
        from memory.context.tokens import counter_for

        counter_for(None).count("warm")

    step("token counter", tokens)
    tell("tokens")
    for namespace in names[1:]:
        namespace_copies(namespace)
    return times


#: Operations that search vectors (and count tokens): they wait for the warm-up of their namespace.
WAITING_OPERATIONS = {"recall": ("ns",), "get_context": ("ns", "tokens")}


class WarmUp:
    """:func:`warm_up` in a daemon thread: ``start()`` when the app starts, ``stop()`` before the store closes.

    A search arriving while its namespace is being warmed waits for that work
    (at most ``wait_limit`` seconds) instead of doing the same work a second
    time beside it; namespaces not in the plan never wait.
    """

    def __init__(self, mem: Memory, wait_limit: float = 10.0) -> None:
        """Prepare (not start) the warm-up of ``mem``."""
        self.mem = mem
        self.wait_limit = wait_limit
        self.times: dict[str, float] = {}
        self.done = threading.Event()
        self._ready: set[str] = set()
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._planned: set[str] = set()

    def _tell(self, what: str) -> None:
        with self._changed:
            if what.startswith("planned:"):
                self._planned.add("ns:" + what.removeprefix("planned:"))
            else:
                self._ready.add(what)
            self._changed.notify_all()

    def _run(self) -> None:
        started = time.perf_counter()
        try:
            self.times = warm_up(self.mem, self._stop, self._tell)
            log.info("warm-up done in %.0f ms: %s", (time.perf_counter() - started) * 1000, self.times)
        finally:
            with self._changed:
                self.done.set()
                self._changed.notify_all()

    def start(self) -> None:
        """Start warming in the background (returns at once)."""
        self._thread = threading.Thread(target=self._run, name="memory-warm-up", daemon=True)
        self._thread.start()

    def is_ready(self, what: str) -> bool:
        """Whether ``what`` (``"plan"``, ``"tokens"``, ``"ns:<name>"``) is warm."""
        with self._changed:
            return what in self._ready

    def wait_ready(self, limit: float) -> bool:
        """Wait (at most ``limit`` s) until the plan, the default namespace and the token counter are warm.

        Returns whether they are (or the warm-up ended); False after ``limit``
        seconds, the rest then goes on in the background.
        """
        if self._thread is None:
            return False
        deadline = time.monotonic() + limit
        first = f"ns:{self.mem.namespace}"
        with self._changed:
            while not self.done.is_set():
                wanted = {"plan", "tokens"} | ({first} if first in self._planned else set())
                if wanted <= self._ready:
                    return True
                if not self._changed.wait(max(0.0, deadline - time.monotonic())):
                    return self.done.is_set()
        return True

    def wait_for(self, operation: str, namespace: str) -> None:
        """Before ``operation`` runs in ``namespace``: wait for the warm-up work it would otherwise repeat."""
        needs = WAITING_OPERATIONS.get(operation)
        if needs is None or self.done.is_set() or self._thread is None:
            return
        deadline = time.monotonic() + self.wait_limit
        with self._changed:
            while not self.done.is_set() and "plan" not in self._ready:
                if not self._changed.wait(max(0.0, deadline - time.monotonic())):
                    return
            wanted = {f"ns:{namespace}" if n == "ns" else n for n in needs}
            wanted = {w for w in wanted if not w.startswith("ns:") or w in self._planned}
            while not self.done.is_set() and not wanted <= self._ready:
                if not self._changed.wait(max(0.0, deadline - time.monotonic())):
                    return

    def wrap(self, op: Operation) -> Operation:
        """``op`` waiting (after the caller's policy was applied) for the warm-up it would repeat, if any."""
        if op.name not in WAITING_OPERATIONS:
            return op
        run = op.run

        def waiting_run(mem: Memory, args: Any, call: Call) -> Any:
            self.wait_for(op.name, call.namespace)
            return run(mem, args, call)

        return replace(op, run=waiting_run)

    def stop(self, timeout: float = 2.0) -> None:
        """Ask the warm-up to stop after its current step and wait for it (at most ``timeout`` s)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
