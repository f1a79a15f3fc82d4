"""A LangGraph checkpointer that keeps graph checkpoints in the memory store's database.

>>> from memory import Memory
>>> from memory.integrations.langgraph import MemorySaver
>>> mem = Memory("sqlite:///agent.db")                      # doctest: +SKIP
>>> graph = builder.compile(checkpointer=MemorySaver(mem))  # doctest: +SKIP

Checkpoints, channel values and pending writes go to three tables of the same
SQLite file or PostgreSQL schema as the memories (see
:mod:`memory.backends.checkpoints`); the in-memory backend keeps them in a
private in-memory database. Values are serialised by LangGraph's own
serializer (``serde``). Implements every capability of LangGraph's checkpoint
conformance suite: put, put_writes, get_tuple, list, delete_thread,
delete_for_runs, copy_thread and prune.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from memory.integrations import require

require("langgraph.checkpoint.base", "langgraph")

from langchain_core.runnables import RunnableConfig  # noqa: E402
from langgraph.checkpoint.base import (  # noqa: E402
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol  # noqa: E402

from memory.backends.checkpoints import CheckpointRow, SQLCheckpointStore, WriteRow, open_checkpoint_store  # noqa: E402
from memory.errors import InvalidInputError  # noqa: E402
from memory.memory import Memory  # noqa: E402

__all__ = ["MemorySaver"]


def _configurable(config: RunnableConfig) -> dict[str, Any]:
    conf = config.get("configurable") if isinstance(config, dict) else None
    if not isinstance(conf, dict) or not isinstance(conf.get("thread_id"), (str, int)):
        raise InvalidInputError("the config needs configurable.thread_id (e.g. {'configurable': {'thread_id': 't1'}})")
    return conf


def _parent_config(row: CheckpointRow) -> RunnableConfig | None:
    if not row.parent_id:
        return None
    return {
        "configurable": {
            "thread_id": row.thread_id,
            "checkpoint_ns": row.checkpoint_ns,
            "checkpoint_id": row.parent_id,
        }
    }


class MemorySaver(BaseCheckpointSaver[str]):
    """LangGraph ``BaseCheckpointSaver`` over a :class:`~memory.Memory`'s database (sync and async)."""

    def __init__(self, memory: Memory, *, serde: SerializerProtocol | None = None) -> None:
        """Keep checkpoints in ``memory``'s database (the caller keeps ``memory`` open and closes it)."""
        super().__init__(serde=serde)
        self.memory = memory
        self._store: SQLCheckpointStore = open_checkpoint_store(memory.backend)

    # -- reading -------------------------------------------------------------
    def _tuple(self, row: CheckpointRow, config: RunnableConfig | None = None) -> CheckpointTuple:
        checkpoint: Checkpoint = self.serde.loads_typed(row.checkpoint)
        versions = [(ch, str(v)) for ch, v in checkpoint.get("channel_versions", {}).items()]
        values = {
            ch: self.serde.loads_typed(blob)
            for ch, blob in self._store.blobs(row.thread_id, row.checkpoint_ns, versions).items()
        }
        writes = sorted(
            self._store.writes(row.thread_id, row.checkpoint_ns, row.checkpoint_id),
            key=lambda w: writes_sort_key(w.task_path, w.task_id, w.idx),
        )
        return CheckpointTuple(
            config=config
            or {
                "configurable": {
                    "thread_id": row.thread_id,
                    "checkpoint_ns": row.checkpoint_ns,
                    "checkpoint_id": row.checkpoint_id,
                }
            },
            checkpoint={**checkpoint, "channel_values": values},
            metadata=self.serde.loads_typed(row.metadata),
            parent_config=_parent_config(row),
            pending_writes=[(w.task_id, w.channel, self.serde.loads_typed(w.value)) for w in writes],
        )

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint named by ``config`` (its checkpoint_id, else the thread's latest), or None."""
        conf = _configurable(config)
        checkpoint_id = get_checkpoint_id(config)
        row = self._store.get(str(conf["thread_id"]), conf.get("checkpoint_ns", ""), checkpoint_id)
        if row is None:
            return None
        return self._tuple(row, config if checkpoint_id else None)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first: of a thread (and namespace, checkpoint) or of every thread.

        ``filter`` keeps checkpoints whose metadata has these key/values;
        ``before`` those older than its checkpoint; ``limit`` caps the count.
        """
        conf = _configurable(config) if config else {}
        run_id = filter.get("run_id") if filter and isinstance(filter.get("run_id"), str) else None
        rows = self._store.iter_checkpoints(
            thread_id=str(conf["thread_id"]) if "thread_id" in conf else None,
            checkpoint_ns=conf.get("checkpoint_ns"),
            checkpoint_id=get_checkpoint_id(config) if config else None,
            before=get_checkpoint_id(before) if before else None,
            run_id=run_id,
        )
        remaining = limit
        for row in rows:
            if remaining is not None and remaining <= 0:
                return
            if filter:
                metadata = self.serde.loads_typed(row.metadata)
                if not all(metadata.get(k) == v for k, v in filter.items()):
                    continue
            if remaining is not None:
                remaining -= 1
            yield self._tuple(row)

    # -- writing -------------------------------------------------------------
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint and the channel values that changed; returns the config naming it."""
        conf = _configurable(config)
        thread_id = str(conf["thread_id"])
        checkpoint_ns = conf.get("checkpoint_ns", "")
        stripped = dict(checkpoint)
        values: dict[str, Any] = stripped.pop("channel_values", {})  # type: ignore[assignment]
        blobs = [
            (channel, str(version), self.serde.dumps_typed(values[channel]) if channel in values else None)
            for channel, version in new_versions.items()
        ]
        full_metadata = get_checkpoint_metadata(config, metadata)
        run_id = full_metadata.get("run_id")
        row = CheckpointRow(
            thread_id=thread_id,
            checkpoint_ns=checkpoint_ns,
            checkpoint_id=checkpoint["id"],
            parent_id=conf.get("checkpoint_id"),
            checkpoint=self.serde.dumps_typed(stripped),
            metadata=self.serde.dumps_typed(full_metadata),
        )
        self._store.put(row, str(run_id) if run_id is not None else None, blobs)
        return {
            "configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": row.checkpoint_id}
        }

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store the pending writes of a task for the checkpoint named by ``config``."""
        conf = _configurable(config)
        checkpoint_id = conf.get("checkpoint_id")
        if not checkpoint_id:
            raise InvalidInputError("put_writes needs configurable.checkpoint_id")
        rows = [
            WriteRow(task_id, WRITES_IDX_MAP.get(channel, idx), channel, self.serde.dumps_typed(value), task_path)
            for idx, (channel, value) in enumerate(writes)
        ]
        self._store.put_writes(str(conf["thread_id"]), conf.get("checkpoint_ns", ""), checkpoint_id, rows)

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of a thread."""
        self._store.delete_thread(str(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) made by these runs."""
        self._store.delete_runs([str(r) for r in run_ids])

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, value and write of one thread to another."""
        self._store.copy_thread(str(source_thread_id), str(target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: keep only each namespace's newest checkpoint; ``delete``: remove all of them."""
        if strategy not in ("keep_latest", "delete"):
            raise InvalidInputError(f"prune strategy must be 'keep_latest' or 'delete', got {strategy!r}")

        def keep(rows: list[CheckpointRow]) -> set[str]:
            return {rows[0].checkpoint_id} if strategy == "keep_latest" and rows else set()

        self._store.prune([str(t) for t in thread_ids], keep)

    def get_next_version(self, current: str | None, channel: None) -> str:
        """A version that sorts after ``current`` (zero-padded counter, random tie-break)."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    # -- async twins (the store's work runs in a worker thread) ---------------
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`."""
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`."""
        found = await asyncio.to_thread(lambda: list(self.list(config, filter=filter, before=before, limit=limit)))
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`put`."""
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async :meth:`put_writes`."""
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`delete_for_runs`."""
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`copy_thread`."""
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async :meth:`prune`."""
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)
