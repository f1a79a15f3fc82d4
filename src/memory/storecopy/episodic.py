"""Copy the conversation store (``backend.episodic``) of one backend into another — part of ``memory migrate``.

Every namespace: hot messages with their ids, turns, statuses and vectors,
archived messages, and blocks with their whole history (replayed version by
version, so versions and history read the same). The destination's
conversation store must be empty. Works through the
:class:`~memory.backends.episodic.EpisodicStore` protocol only, so any pair
of backends that expose it can copy. Not copied: job state (the destination
starts its own), and the turn counter of a thread beyond its last stored
message (turns of messages deleted before the copy may be handed out again).
"""

from __future__ import annotations

from datetime import UTC, datetime

from memory.backends.base import Backend, Vector
from memory.backends.episodic import EpisodicStore
from memory.episodic.types import BlockChange, Message, MessageQuery
from memory.errors import ConfigError

__all__ = ["episodic_stores", "copy_episodic"]

_BATCH = 500


def episodic_stores(src: Backend, dst: Backend) -> tuple[EpisodicStore, EpisodicStore] | None:
    """The two conversation stores, or None when ``src`` has none or holds nothing.

    Raises ConfigError when ``src`` holds conversations that ``dst`` cannot
    store, or when ``dst`` already holds some (a copy never merges).
    """
    source = src.episodic
    if source is None or not source.message_namespaces():
        return None
    target = dst.episodic
    if target is None:
        raise ConfigError(f"the source holds conversations but the {dst.name} backend has no conversation store")
    if target.message_namespaces():
        raise ConfigError("the destination already holds conversations; migrate copies into an empty store only")
    return source, target


def _query(namespace: str, thread: str, after: int, now: datetime) -> MessageQuery:
    return MessageQuery(
        namespace=namespace, thread=thread, after_turn=after, clearance="secret", include_expired=True, now=now
    )


def copy_episodic(source: EpisodicStore, target: EpisodicStore) -> tuple[int, int]:
    """Copy every message (hot and archived, with vectors) and block (with history); returns (messages, blocks)."""
    now = datetime.now(UTC)
    messages = blocks = 0
    for namespace in source.message_namespaces():
        for thread in source.threads(namespace, limit=2**31 - 1):
            after = 0
            while True:
                batch = source.list_messages(_query(namespace, thread.thread, after, now), _BATCH)
                if not batch:
                    break
                entries: list[tuple[Message, str | None, Vector | None]] = []
                by_model: dict[str, list[str]] = {}
                for message in batch:
                    if message.embedding_status == "done" and message.embedding_model:
                        by_model.setdefault(message.embedding_model, []).append(message.id)
                found: dict[str, tuple[str, Vector]] = {}
                for model, ids in by_model.items():
                    for message_id, vector in source.get_message_vectors(namespace, model, ids).items():
                        found[message_id] = (model, vector)
                for message in batch:
                    hit = found.get(message.id)
                    entries.append((message, hit[0], hit[1]) if hit is not None else (message, None, None))
                messages += target.import_messages(entries)
                after = batch[-1].turn
            archived = list(source.iter_archived(namespace, thread.thread))
            for start in range(0, len(archived), _BATCH):
                chunk = [(m, None, None) for m in archived[start : start + _BATCH]]
                messages += target.import_messages(chunk, archived=True)
        for block in source.iter_blocks(namespace):
            history = source.block_history(namespace, block.user, block.agent, block.label)
            previous = 0
            for change in history:
                step = block.model_copy(
                    update={"value": change.after, "version": change.version, "updated_at": change.at}
                )
                target.write_block(block if change.version == block.version else step, previous, change)
                previous = change.version
            if previous != block.version:  # history incomplete: store the block as it is
                change = BlockChange(
                    namespace=block.namespace, user=block.user, agent=block.agent, label=block.label,
                    version=block.version, op="import", before="", after=block.value, at=now, reason="migrate",
                )  # fmt: skip
                target.write_block(block, previous, change)
            blocks += 1
    return messages, blocks
