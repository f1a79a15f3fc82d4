"""Messages (hot and archived) and blocks (with their history) in the JSONL export.

Lines after the memories::

    {"type": "message", "message": {...every Message field...}, "archived": false,
     "embedding": {"model": "...", "dim": 384, "vector": [...]} | null}
    {"type": "block", "block": {...}, "history": [{...BlockChange...}, ...]}

Import keeps ids, turns, statuses and vectors of the store's model (a vector
of another model leaves the message ``pending`` for the sync job). A block's
history is replayed change by change, so versions and history match the
source; a block that already exists in the target is left alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

import numpy as np
from pydantic import ValidationError

from memory.episodic.query import message_matches
from memory.episodic.types import Block, BlockChange, Message, MessageQuery
from memory.errors import InvalidInputError
from memory.records import check_metadata, check_name, check_tags, check_vector

if TYPE_CHECKING:
    from memory.filters import Filter
    from memory.services import Core

__all__ = ["EpisodicLine", "export_episodic", "parse_episodic", "import_episodic", "EPISODIC_TYPES"]

EPISODIC_TYPES = ("message", "block")
_BATCH = 256


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=False)


@dataclass(frozen=True, slots=True)
class EpisodicLine:
    """One validated message or block line of an export."""

    line: int
    message: Message | None = None
    archived: bool = False
    model: str | None = None
    vector: Any = None
    block: Block | None = None
    history: tuple[BlockChange, ...] = ()


def export_episodic(core: Core, stream: IO[str], flt: Filter, *, memory_only_filters: bool) -> tuple[int, int]:
    """Write the namespace's messages and blocks matching ``flt``'s scope; returns (messages, blocks).

    Nothing is written when the backend has no conversation store, or when
    ``memory_only_filters`` (kinds, tags, metadata) narrow the export to memories.
    """
    store = core.backend.episodic
    if store is None or memory_only_filters:
        return 0, 0
    query = MessageQuery(
        namespace=flt.namespace, thread=flt.thread, user=flt.user, agent=flt.agent,
        created_after=flt.created_after, created_before=flt.created_before, clearance=flt.clearance, now=flt.now,
    )  # fmt: skip
    spaces = {space.model for space in core.backend.vector_spaces()}
    messages = 0
    for info in store.threads(flt.namespace, limit=10**9):
        if flt.thread is not None and info.thread != flt.thread:
            continue
        after = 0
        while True:
            page = store.list_messages(query.model_copy(update={"thread": info.thread, "after_turn": after}), _BATCH)
            if not page:
                break
            after = page[-1].turn
            by_model: dict[str, list[str]] = {}
            for m in page:
                if m.embedding_status == "done" and m.embedding_model in spaces:
                    by_model.setdefault(m.embedding_model, []).append(m.id)
            found = {}
            for model, ids in by_model.items():
                for message_id, vector in store.get_message_vectors(flt.namespace, model, ids).items():
                    found[message_id] = (model, vector)
            for m in page:
                embedding = None
                if m.id in found:
                    model, vector = found[m.id]
                    values = np.asarray(vector, dtype=np.float32).tolist()
                    embedding = {"model": model, "dim": len(values), "vector": values}
                record = {
                    "type": "message",
                    "message": m.model_dump(mode="json"),
                    "archived": False,
                    "embedding": embedding,
                }
                stream.write(_dumps(record) + "\n")
                messages += 1
        for m in store.iter_archived(flt.namespace, info.thread):
            if message_matches(query.model_copy(update={"thread": info.thread}), m):
                stream.write(_dumps({"type": "message", "message": m.model_dump(mode="json"), "archived": True,
                                     "embedding": None}) + "\n")  # fmt: skip
                messages += 1
    blocks = 0
    if flt.thread is None and flt.created_after is None and flt.created_before is None:
        for block in store.iter_blocks(flt.namespace):
            if (flt.user is not None and block.user != flt.user) or (
                flt.agent is not None and block.agent != flt.agent
            ):
                continue
            history = store.block_history(block.namespace, block.user, block.agent, block.label)
            stream.write(_dumps({"type": "block", "block": block.model_dump(mode="json"),
                                 "history": [c.model_dump(mode="json") for c in history]}) + "\n")  # fmt: skip
            blocks += 1
    return messages, blocks


def _invalid(line: int, what: str, exc: Exception) -> InvalidInputError:
    if isinstance(exc, ValidationError):
        detail = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3])
    else:
        detail = str(exc)
    return InvalidInputError(f"line {line}: invalid {what} line in this memory export: {detail}")


def parse_episodic(obj: dict[str, Any], line: int) -> EpisodicLine:
    """Validate one message or block line; raises InvalidInputError naming the line."""
    kind = obj.get("type")
    if kind == "message":
        extra = set(obj) - {"type", "message", "archived", "embedding"}
        if extra:
            raise InvalidInputError(f"line {line}: unknown key(s) {sorted(extra)}")
        try:
            message = Message.model_validate(obj.get("message"))
            for name in ("namespace", "thread"):
                check_name(getattr(message, name), name, optional=False)
            for name in ("user", "agent", "speaker"):
                check_name(getattr(message, name), name)
            check_tags(message.tags)
            check_metadata(message.metadata)
            if message.turn < 1:
                raise InvalidInputError("turn must be 1 or more")
        except (ValidationError, InvalidInputError) as exc:
            raise _invalid(line, "message", exc) from exc
        archived = obj.get("archived", False)
        if not isinstance(archived, bool):
            raise InvalidInputError(f"line {line}: archived must be true or false")
        embedding = obj.get("embedding")
        if embedding is None:
            return EpisodicLine(line, message=message, archived=archived)
        if not isinstance(embedding, dict) or set(embedding) != {"model", "dim", "vector"}:
            raise InvalidInputError(f'line {line}: embedding must be null or {{"model", "dim", "vector"}}')
        vector = embedding["vector"]
        if not isinstance(embedding["model"], str) or not isinstance(vector, list) or len(vector) != embedding["dim"]:
            raise InvalidInputError(f"line {line}: embedding must name its model and hold dim numbers")
        return EpisodicLine(line, message=message, archived=archived, model=embedding["model"], vector=vector)
    extra = set(obj) - {"type", "block", "history"}
    if extra:
        raise InvalidInputError(f"line {line}: unknown key(s) {sorted(extra)}")
    try:
        block = Block.model_validate(obj.get("block"))
        check_name(block.namespace, "namespace", optional=False)
        history = tuple(BlockChange.model_validate(c) for c in obj.get("history") or [])
    except (ValidationError, InvalidInputError) as exc:
        raise _invalid(line, "block", exc) from exc
    return EpisodicLine(line, block=block, history=history)


def import_episodic(core: Core, lines: Iterable[EpisodicLine]) -> tuple[int, int]:
    """Write validated message and block lines; returns (messages written, blocks written)."""
    entries = list(lines)
    if not entries:
        return 0, 0
    from memory.episodic.messages import episodic_store

    store = episodic_store(core.backend)
    model = core.embedder.model_name
    hot: list[tuple[Message, str | None, Any]] = []
    cold: list[tuple[Message, str | None, Any]] = []
    for entry in entries:
        if entry.message is None:
            continue
        message, vector = entry.message, None
        if entry.vector is not None and entry.model == model and message.sensitivity != "secret":
            try:
                checked = check_vector(entry.vector, core.embedder.dimension)
            except InvalidInputError as exc:
                raise InvalidInputError(f"line {entry.line}: embedding: {exc}") from exc
            raw = np.asarray(entry.vector, dtype=np.float32)
            # keep the file's float32 values bit for bit unless they are not unit length
            vector = raw if abs(float(np.linalg.norm(raw.astype(np.float64))) - 1.0) < 1e-4 else checked
        elif message.embedding_status == "done" and not entry.archived:  # archived ones keep no vectors
            message = message.model_copy(update={"embedding_status": "pending", "embedding_model": None})
        (cold if entry.archived else hot).append((message, model if vector is not None else None, vector))
    if any(v is not None for _, _, v in hot):
        core.backend.ensure_vector_space(model, core.embedder.dimension)
    written = 0
    for group, archived in ((hot, False), (cold, True)):
        for start in range(0, len(group), _BATCH):
            written += store.import_messages(group[start : start + _BATCH], archived=archived)
    blocks = 0
    for entry in entries:
        block = entry.block
        if block is None or store.get_block(block.namespace, block.user, block.agent, block.label) is not None:
            continue
        changes = sorted(entry.history, key=lambda c: c.version)
        consistent = (
            bool(changes)
            and [c.version for c in changes] == list(range(1, len(changes) + 1))
            and (changes[-1].version == block.version and changes[-1].after == block.value)
        )
        if consistent:
            previous = 0
            for change in changes:
                step = (
                    block
                    if change.version == block.version
                    else block.model_copy(
                        update={"value": change.after, "version": change.version, "updated_at": change.at}
                    )
                )
                store.write_block(step, previous, change)
                previous = change.version
        else:
            change = BlockChange(
                namespace=block.namespace, user=block.user, agent=block.agent, label=block.label,
                version=max(block.version, 1), op="import", before="", after=block.value, at=core.now(),
                reason="import",
            )  # fmt: skip
            store.write_block(block.model_copy(update={"version": max(block.version, 1)}), 0, change)
        blocks += 1
    return written, blocks
