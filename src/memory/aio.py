"""`AsyncMemory`: the asyncio twin of `Memory`.

One adapter runs the sync facade on a single worker thread, so every backend
sees calls from one thread in order; each public method of Memory has an
awaitable twin here (a parity test checks that).
"""

from __future__ import annotations

import asyncio
import builtins
import functools
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import IO, Any, ParamSpec, TypeVar

import numpy as np

from memory.filters import Filter
from memory.memory import Memory
from memory.transfer import ImportReport
from memory.types import Hit, LedgerEntry, MemoryItem, Page, Stats

__all__ = ["AsyncMemory", "AsyncService"]

P = ParamSpec("P")
R = TypeVar("R")


class AsyncService:
    """Awaitable view of a service object (``mem.messages``, ``mem.blocks``): every public method is awaitable.

    Calls run on the AsyncMemory's single worker thread, like its own methods.
    """

    def __init__(self, service: Any, run: Callable[..., Any]) -> None:
        """Wrap ``service``; ``run`` is the AsyncMemory's executor adapter."""
        self._service = service
        self._runner = run

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        target = getattr(self._service, name)
        if not callable(target):
            return target

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await self._runner(target, *args, **kwargs)

        call.__doc__ = target.__doc__
        call.__name__ = name
        return call


class AsyncMemory:
    """Awaitable version of :class:`Memory`; takes the same constructor arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Open a store like ``Memory(*args, **kwargs)`` (opening happens on the worker thread)."""
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory")
        self._sync: Memory = self._executor.submit(lambda: Memory(*args, **kwargs)).result()

    @property
    def sync(self) -> Memory:
        """The underlying synchronous Memory."""
        return self._sync

    async def _run(self, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    async def remember(self, content: str | Sequence[str | Mapping[str, Any]], **fields: Any) -> str | list[str]:
        """See :meth:`Memory.remember`."""
        return await self._run(self._sync.remember, content, **fields)  # type: ignore[arg-type]

    async def remember_batch(self, entries: Sequence[str | Mapping[str, Any]], **defaults: Any) -> builtins.list[str]:
        """See :meth:`Memory.remember_batch`."""
        return await self._run(self._sync.remember_batch, entries, **defaults)

    async def recall(self, query: str, **options: Any) -> builtins.list[Hit]:
        """See :meth:`Memory.recall`."""
        return await self._run(self._sync.recall, query, **options)

    async def warm(self, namespace: str | None = None) -> None:
        """See :meth:`Memory.warm`."""
        await self._run(self._sync.warm, namespace)

    async def get(self, memory_id: str, **options: Any) -> MemoryItem:
        """See :meth:`Memory.get`."""
        return await self._run(self._sync.get, memory_id, **options)

    async def update(self, memory_id: str, **changes: Any) -> MemoryItem:
        """See :meth:`Memory.update`."""
        return await self._run(self._sync.update, memory_id, **changes)

    async def forget(self, memory_id: str | Sequence[str], **options: Any) -> int:
        """See :meth:`Memory.forget`."""
        return await self._run(self._sync.forget, memory_id, **options)

    async def forget_all(self, **scope: Any) -> int:
        """See :meth:`Memory.forget_all`."""
        return await self._run(self._sync.forget_all, **scope)

    async def list(self, **options: Any) -> Page:
        """See :meth:`Memory.list`."""
        return await self._run(self._sync.list, **options)

    async def history(self, memory_id: str, **options: Any) -> builtins.list[LedgerEntry]:
        """See :meth:`Memory.history`."""
        return await self._run(self._sync.history, memory_id, **options)

    async def stats(self, **scope: Any) -> Stats:
        """See :meth:`Memory.stats`."""
        return await self._run(self._sync.stats, **scope)

    async def namespaces(self) -> builtins.list[str]:
        """See :meth:`Memory.namespaces`."""
        return await self._run(self._sync.namespaces)

    async def embed_pending(self, **options: Any) -> int:
        """See :meth:`Memory.embed_pending`."""
        return await self._run(self._sync.embed_pending, **options)

    async def vector_of(self, memory_id: str, **options: Any) -> np.ndarray | None:
        """See :meth:`Memory.vector_of`."""
        return await self._run(self._sync.vector_of, memory_id, **options)

    async def filter(self, namespace: str | None = None, **options: Any) -> Filter:
        """See :meth:`Memory.filter`."""
        return await self._run(self._sync.filter, namespace, **options)

    async def now(self) -> datetime:
        """See :meth:`Memory.now`."""
        return await self._run(self._sync.now)

    async def export(self, stream: IO[str], **options: Any) -> int:
        """See :meth:`Memory.export`."""
        return await self._run(self._sync.export, stream, **options)

    async def import_(self, stream: IO[str], **options: Any) -> ImportReport:
        """See :meth:`Memory.import_`."""
        return await self._run(self._sync.import_, stream, **options)

    async def extract(self, text: str, **options: Any) -> Any:
        """See :meth:`Memory.extract`."""
        return await self._run(self._sync.extract, text, **options)

    async def extract_pending(self, **options: Any) -> builtins.list[Any]:
        """See :meth:`Memory.extract_pending`."""
        return await self._run(self._sync.extract_pending, **options)

    async def link(self, source_id: str, target_id: str, type: str = "relates_to", **options: Any) -> Any:
        """See :meth:`Memory.link`."""
        return await self._run(self._sync.link, source_id, target_id, type, **options)

    async def context(self, request: Any = None, /, **options: Any) -> Any:
        """See :meth:`Memory.context` (returns a CompiledPrompt)."""
        return await self._run(self._sync.context, request, **options)

    async def get_memory_context(self, query: str, max_tokens: int = 1000, **scope: Any) -> str:
        """See :meth:`Memory.get_memory_context`."""
        return await self._run(self._sync.get_memory_context, query, max_tokens, **scope)

    @property
    def messages(self) -> AsyncService:
        """Awaitable :attr:`Memory.messages` (``await amem.messages.append(...)``)."""
        return AsyncService(self._sync.messages, self._run)

    @property
    def tiers(self) -> AsyncService:
        """Awaitable :attr:`Memory.tiers` (``await amem.tiers.retrieve(...)``)."""
        return AsyncService(self._sync.tiers, self._run)

    @property
    def blocks(self) -> AsyncService:
        """Awaitable :attr:`Memory.blocks`."""
        return AsyncService(self._sync.blocks, self._run)

    @property
    def feedback(self) -> AsyncService:
        """Awaitable :attr:`Memory.feedback` (``await amem.feedback.record(thread, rating=5)``)."""
        return AsyncService(self._sync.feedback, self._run)

    @property
    def prompts(self) -> AsyncService:
        """Awaitable :attr:`Memory.prompts` (``await amem.prompts.use(thread, "support")``)."""
        return AsyncService(self._sync.prompts, self._run)

    async def reflect(self, **options: Any) -> Any:
        """See :meth:`Memory.reflect` (returns a ReflectionReport)."""
        return await self._run(self._sync.reflect, **options)

    async def end_conversation(self, thread: str, **options: Any) -> Any:
        """See :meth:`Memory.end_conversation`."""
        return await self._run(self._sync.end_conversation, thread, **options)

    async def run_sync(self, **options: Any) -> Any:
        """See :meth:`Memory.run_sync`."""
        return await self._run(self._sync.run_sync, **options)

    async def sync_status(self, **options: Any) -> Any:
        """See :meth:`Memory.sync_status`."""
        return await self._run(self._sync.sync_status, **options)

    async def prune(self, **options: Any) -> Any:
        """See :meth:`Memory.prune`."""
        return await self._run(self._sync.prune, **options)

    async def close(self) -> None:
        """Close the store and stop the worker thread."""
        await self._run(self._sync.close)
        self._executor.shutdown(wait=True)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
