"""Short-lived answers for namespace-wide counts, when the client says it accepts them.

``stats`` and ``sync_status`` scan a whole namespace (about 150 and 50 ms on
100k memories on the quiet 2-core machine). A client that shows them as a
dashboard may accept figures a few seconds old: it sends the standard request
header ``Cache-Control: max-age=N`` (N ≤ :data:`MAX_AGE_LIMIT` seconds) and
gets an answer computed at most N seconds ago, with its age in the standard
``Age`` response header (whole seconds) and exactly in ``X-Computed-At``
(ISO 8601). Without the header every call computes afresh, as before.

Only the operation's own run is cached: the caller's policy (namespace scope,
clearance) is applied by :func:`memory.server.ops.invoke` on every call, and
the key holds the namespace and every argument, so an answer is only reused
for the very same question in the same namespace.
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from memory.memory import Memory
from memory.server.ops import Call, Operation

__all__ = ["CACHEABLE", "MAX_AGE_LIMIT", "AnswerCache", "max_age_of"]

#: Operations whose answers may be reused (read-only, namespace-wide counts).
CACHEABLE = frozenset({"stats", "sync_status"})
#: The largest age a client may accept, in seconds.
MAX_AGE_LIMIT = 60
#: Answers kept at most (least recently used dropped first).
MAX_ENTRIES = 256

_MAX_AGE = re.compile(r"(?:^|,)\s*max-age\s*=\s*(\d{1,6})\s*(?:,|$)", re.IGNORECASE)


def max_age_of(headers: Mapping[str, str]) -> float:
    """The ``max-age`` of the request's ``Cache-Control`` header in seconds (0 when absent), capped."""
    found = _MAX_AGE.search(headers.get("cache-control", ""))
    return float(min(int(found.group(1)), MAX_AGE_LIMIT)) if found else 0.0


class AnswerCache:
    """Answers of :data:`CACHEABLE` operations by (operation, namespace, arguments), with their time."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        """An empty cache; ``clock`` gives seconds (monotonic)."""
        self._clock = clock
        self._lock = threading.Lock()
        self._answers: OrderedDict[tuple[str, str, str], tuple[float, datetime, Any]] = OrderedDict()
        self._request: ContextVar[tuple[float, list[tuple[float, datetime]]] | None] = ContextVar(
            "memory_answer_cache", default=None
        )

    def wrap(self, op: Operation) -> Operation:
        """``op`` with a run that reuses answers as the current request allows (see :meth:`serving`)."""
        if op.name not in CACHEABLE or op.write:
            return op
        run = op.run

        def cached_run(mem: Memory, args: BaseModel, call: Call) -> Any:
            request = self._request.get()
            max_age = request[0] if request else 0.0
            key = (op.name, call.namespace, args.model_dump_json())
            now = self._clock()
            with self._lock:
                hit = self._answers.get(key)
                if hit is not None and max_age > 0 and now - hit[0] <= max_age:
                    self._answers.move_to_end(key)
                    if request:
                        request[1].append((now - hit[0], hit[1]))
                    return hit[2]
            answer = run(mem, args, call)
            computed = datetime.now(UTC)
            with self._lock:
                self._answers[key] = (self._clock(), computed, answer)
                self._answers.move_to_end(key)
                while len(self._answers) > MAX_ENTRIES:
                    self._answers.popitem(last=False)
            if request:
                request[1].append((0.0, computed))
            return answer

        return replace(op, run=cached_run)

    def serving(self, headers: Mapping[str, str], work: Callable[[], Any]) -> tuple[Any, dict[str, str]]:
        """Run ``work`` (one request) under the request's ``max-age``; returns its result and the age headers."""
        seen: list[tuple[float, datetime]] = []
        max_age = max_age_of(headers)
        token = self._request.set((max_age, seen))
        try:
            result = work()
        finally:
            self._request.reset(token)
        if not seen or not max_age:  # a client that accepts no age gets the answer as before
            return result, {}
        age, computed = seen[-1]
        return result, {"Age": str(int(age)), "X-Computed-At": computed.isoformat()}
