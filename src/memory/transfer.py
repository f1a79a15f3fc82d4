"""Export and import memories as JSON Lines — the ``memory export`` / ``memory import`` format.

The first line is a header, then one line per memory::

    {"type": "header", "format": "memory-export", "version": 1,
     "embedding_model": "hashing-ngram-35-d384", "embedding_dim": 384,
     "exported_at": "2026-01-01T12:00:00Z"}
    {"type": "memory", "item": {...every MemoryItem field...},
     "embedding": {"model": "...", "dim": 384, "vector": [0.01, ...]} | null}

Conversation messages (hot and archived) and working-memory blocks follow
the memories as ``"type": "message"`` and ``"type": "block"`` lines (see
:mod:`memory.episodic.transfer`), then memory tiers as ``"type": "tier"``
lines (see :mod:`memory.tiers.transfer`), then conversation records and prompt
versions as ``"type": "feedback"`` lines (see :mod:`memory.feedback.transfer`).

The round trip is lossless: ids, timestamps, access statistics, every field,
and the vectors (float32 -> JSON float -> float32 is exact) with their model.
Import works one layer below the facade (it must keep ids), in three steps:

1. The whole file is parsed and validated before anything is written; a
   malformed line raises InvalidInputError naming its line number and
   nothing changes.
2. Items whose id already exists are skipped; vectors whose model is the
   store's embedder are kept as they are (checked with ``check_vector``);
   other items that had a vector are re-embedded by the store's embedder.
3. Items are written in batches of :data:`IMPORT_BATCH`, each batch in one
   transaction. Only a storage failure can stop an import half-way; running
   it again then skips what was already written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import IO, Any

import numpy as np
from pydantic import ValidationError

from memory.backends.base import NewRecord, Vector
from memory.embedders.base import embed_texts
from memory.errors import InvalidInputError, ProviderError
from memory.filters import Filter
from memory.records import (
    check_datetime,
    check_importance,
    check_kind,
    check_metadata,
    check_name,
    check_strings,
    check_tags,
    check_vector,
    content_hash,
    ledger_entry,
    normalise_content,
)
from memory.services import Core, HasCore, core_of, episodic_store, feedback_store, tier_store
from memory.types import MemoryItem
from memory.windows import Windows

__all__ = ["FORMAT", "VERSION", "ImportReport", "export_filter", "export_jsonl", "import_jsonl"]

FORMAT = "memory-export"
VERSION = 1
IMPORT_BATCH = 256
_EXPORT_BATCH = 500
_DATETIME_FIELDS = ("created_at", "updated_at", "accessed_at", "valid_from", "valid_to", "expires_at")

#: ``on_progress(done, total)``, called after each batch.
ProgressCallback = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an import did.

    ``imported``: new memories written. ``duplicates``: same content in the same
    scope as a memory already stored (or earlier in the file), not written.
    ``skipped_existing``: ids already in the store, not written.
    ``reembedded``: imported memories embedded by the store's embedder because
    the file's vectors came from another model (or were missing).
    ``pending``: memories stored without a vector because that embedding failed
    (``Memory.embed_pending`` retries them).
    ``messages``/``blocks``: conversation messages and working-memory blocks
    written (see :mod:`memory.episodic.transfer`). ``tiers``: tier records
    written (see :mod:`memory.tiers.transfer`). ``feedback``: conversation
    records and prompt versions written (see :mod:`memory.feedback.transfer`).
    """

    imported: int = 0
    duplicates: int = 0
    skipped_existing: int = 0
    reembedded: int = 0
    pending: int = 0
    messages: int = 0
    blocks: int = 0
    tiers: int = 0
    feedback: int = 0


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def export_filter(
    core: Core,
    *,
    user: str | None = None,
    agent: str | None = None,
    thread: str | None = None,
    kinds: Iterable[str] | str | None = None,
    tags: Iterable[str] | None = None,
    tags_all: Iterable[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
    since: datetime | str | None = None,
    until: datetime | str | None = None,
    clearance: str = "private",
) -> Filter:
    """The filter an export uses: the facade's filter semantics, closed facts included, expired ones not.

    Raises InvalidInputError for bad filter values.
    """
    return core.filter(
        None, user=user, agent=agent, thread=thread, kinds=kinds, tags=tags, tags_all=tags_all,
        metadata=metadata, since=since, until=until, clearance=clearance,
        include_expired=False, include_invalid=True,
    )  # fmt: skip


def _batches(items: Iterable[MemoryItem], size: int) -> Iterator[list[MemoryItem]]:
    batch: list[MemoryItem] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def export_jsonl(
    store: Core | HasCore,
    stream: IO[str],
    *,
    user: str | None = None,
    agent: str | None = None,
    thread: str | None = None,
    kinds: Iterable[str] | str | None = None,
    tags: Iterable[str] | None = None,
    tags_all: Iterable[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
    since: datetime | str | None = None,
    until: datetime | str | None = None,
    clearance: str = "private",
    on_progress: ProgressCallback | None = None,
) -> int:
    """Write the memories of ``mem``'s namespace matching the filters to ``stream``; returns how many.

    Secret memories are written only with ``clearance="secret"``; expired ones
    never. Raises InvalidInputError for bad filters, StorageError if the
    backend fails.
    """
    core = core_of(store)
    flt = export_filter(
        core, user=user, agent=agent, thread=thread, kinds=kinds, tags=tags, tags_all=tags_all,
        metadata=metadata, since=since, until=until, clearance=clearance,
    )  # fmt: skip
    backend = core.backend
    spaces = {space.model: space.dim for space in backend.vector_spaces()}
    model = core.embedder.model_name
    header = {
        "type": "header",
        "format": FORMAT,
        "version": VERSION,
        "embedding_model": model if model in spaces else None,
        "embedding_dim": spaces.get(model),
        "exported_at": core.now().isoformat().replace("+00:00", "Z"),
    }
    stream.write(_dumps(header) + "\n")
    total = backend.count(flt) if on_progress is not None else 0
    written = 0
    for batch in _batches(backend.iter_items(flt, batch_size=_EXPORT_BATCH), _EXPORT_BATCH):
        by_model: dict[str, list[str]] = {}
        for item in batch:
            if item.embedding_status == "done" and item.embedding_model in spaces:
                by_model.setdefault(item.embedding_model, []).append(item.id)
        vectors: dict[tuple[str, str], Vector] = {}
        for space_model, ids in by_model.items():
            for item_id, found in backend.get_vectors(flt.namespace, space_model, ids).items():
                vectors[(space_model, item_id)] = found
        for item in batch:
            vector = vectors.get((item.embedding_model or "", item.id))
            embedding = None
            if vector is not None:
                values = np.asarray(vector, dtype=np.float32).tolist()
                embedding = {"model": item.embedding_model, "dim": len(values), "vector": values}
            stream.write(
                _dumps({"type": "memory", "item": item.model_dump(mode="json"), "embedding": embedding}) + "\n"
            )
        written += len(batch)
        if on_progress is not None:
            on_progress(written, max(total, written))
    from memory.episodic.transfer import export_episodic

    export_episodic(core, stream, flt, memory_only_filters=bool(kinds or tags or tags_all or metadata))
    from memory.tiers.transfer import export_tiers

    export_tiers(core, stream, flt, memory_only_filters=bool(kinds or tags or tags_all or metadata))
    from memory.feedback.transfer import export_feedback

    export_feedback(core, stream, flt, memory_only_filters=bool(kinds or tags or tags_all or metadata))
    stream.flush()
    return written


# -- import ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Entry:
    """One validated line: the item, and the file's vector for it (model, values) or None."""

    line: int
    item: MemoryItem
    model: str | None
    vector: Any


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def _parse_json(text: str, line: int) -> Any:
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"line {line}: not valid JSON ({exc.msg} at column {exc.colno})") from exc
    except ValueError as exc:
        raise InvalidInputError(f"line {line}: not valid JSON ({exc})") from exc


def _check_header(obj: Any, line: int) -> None:
    if not isinstance(obj, dict) or obj.get("type") != "header" or obj.get("format") != FORMAT:
        raise InvalidInputError(
            f"line {line}: expected the {FORMAT} header first; is this a file written by `memory export`?"
        )
    if obj.get("version") != VERSION:
        raise InvalidInputError(
            f"line {line}: export format version {obj.get('version')!r} is not supported (this code reads {VERSION})"
        )


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:3]:
        where = ".".join(str(p) for p in error["loc"]) or "item"
        parts.append(f"{where}: {error['msg']}")
    more = len(exc.errors()) - 3
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def _normalise_item(item: MemoryItem, max_chars: int) -> MemoryItem:
    """Apply the facade's validation rules to an imported item; raises InvalidInputError."""
    check_name(item.id, "id", optional=False)
    check_name(item.namespace, "namespace", optional=False)
    for name in ("user", "agent", "thread"):
        check_name(getattr(item, name), name)
    content = normalise_content(item.content, max_chars=max_chars)
    update: dict[str, Any] = {
        "content": content,
        "content_hash": content_hash(content),
        "kind": check_kind(item.kind),
        "context": None if item.context is None else normalise_content(item.context, max_chars=max_chars),
        "tags": check_tags(item.tags),
        "keywords": check_strings(item.keywords, "keywords"),
        "entities": check_strings(item.entities, "entities"),
        "source_ids": check_strings(item.source_ids, "source_ids"),
        "metadata": check_metadata(item.metadata),
        "importance": check_importance(item.importance),
    }
    for name in _DATETIME_FIELDS:
        update[name] = check_datetime(getattr(item, name), name)
    if item.access_count < 0:
        raise InvalidInputError("access_count must not be negative")
    if update["valid_from"] and update["valid_to"] and update["valid_to"] <= update["valid_from"]:
        raise InvalidInputError("valid_to must be later than valid_from")
    return item.model_copy(update=update)


def _parse_memory(obj: Any, line: int, max_chars: int) -> _Entry:
    if not isinstance(obj, dict) or obj.get("type") != "memory":
        raise InvalidInputError(f'line {line}: expected {{"type": "memory", ...}}')
    extra = set(obj) - {"type", "item", "embedding"}
    if extra:
        raise InvalidInputError(f"line {line}: unknown key(s) {sorted(extra)}")
    try:
        item = _normalise_item(MemoryItem.model_validate(obj.get("item")), max_chars)
    except ValidationError as exc:
        raise InvalidInputError(f"line {line}: invalid memory item: {_validation_message(exc)}") from exc
    except InvalidInputError as exc:
        raise InvalidInputError(f"line {line}: invalid memory item: {exc}") from exc
    embedding = obj.get("embedding")
    if embedding is None:
        return _Entry(line, item, None, None)
    if not isinstance(embedding, dict) or set(embedding) != {"model", "dim", "vector"}:
        raise InvalidInputError(f'line {line}: embedding must be null or {{"model", "dim", "vector"}}')
    model, dim, vector = embedding["model"], embedding["dim"], embedding["vector"]
    if not isinstance(model, str) or not model:
        raise InvalidInputError(f"line {line}: embedding model must be a non-empty string")
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise InvalidInputError(f"line {line}: embedding dim must be a positive integer")
    if not isinstance(vector, list) or len(vector) != dim:
        raise InvalidInputError(f"line {line}: embedding vector must be a list of {dim} numbers")
    return _Entry(line, item, model, vector)


def _read_entries(stream: Iterable[str], max_chars: int, extras: list[Any] | None = None) -> list[_Entry]:
    from memory.episodic.transfer import EPISODIC_TYPES, parse_episodic

    entries: list[_Entry] = []
    first_line: dict[str, int] = {}
    header_seen = False
    line = 0
    lines = iter(stream)
    while True:
        try:
            raw = next(lines)
        except StopIteration:
            break
        except UnicodeDecodeError as exc:
            raise InvalidInputError(f"line {line + 1}: not UTF-8 text ({exc.reason})") from exc
        line += 1
        text = raw.strip()
        if not text:
            continue
        obj = _parse_json(text, line)
        if not header_seen:
            _check_header(obj, line)
            header_seen = True
            continue
        if extras is not None and isinstance(obj, dict) and obj.get("type") in EPISODIC_TYPES:
            extras.append(parse_episodic(obj, line))
            continue
        if extras is not None and isinstance(obj, dict) and obj.get("type") == "tier":
            from memory.tiers.transfer import parse_tier_line

            extras.append(parse_tier_line(obj, line))
            continue
        if extras is not None and isinstance(obj, dict) and obj.get("type") == "feedback":
            from memory.feedback.transfer import parse_feedback_line

            extras.append(parse_feedback_line(obj, line))
            continue
        entry = _parse_memory(obj, line, max_chars)
        if entry.item.id in first_line:
            raise InvalidInputError(
                f"line {line}: id {entry.item.id} already appears on line {first_line[entry.item.id]}"
            )
        first_line[entry.item.id] = line
        entries.append(entry)
    if not header_seen:
        raise InvalidInputError(f"the file is empty: expected a {FORMAT} header on line 1")
    return entries


@dataclass(slots=True)
class _Plan:
    """How one entry will be written: the item to store, its vector, whether to embed it."""

    item: MemoryItem
    vector: Vector | None
    embed: bool


def _plan(entry: _Entry, store_model: str, store_dim: Callable[[], int]) -> _Plan:
    item = entry.item
    if item.sensitivity == "secret":
        # Secrets are never embedded; a vector in the file is dropped.
        return _Plan(item.model_copy(update={"embedding_status": "skipped", "embedding_model": None}), None, False)
    if entry.vector is not None and entry.model == store_model:
        dim = store_dim()
        try:
            checked = check_vector(entry.vector, dim)
        except InvalidInputError as exc:
            raise InvalidInputError(f"line {entry.line}: embedding: {exc}") from exc
        raw = np.asarray(entry.vector, dtype=np.float32)
        # Keep the file's float32 values bit for bit unless they are not unit length.
        norm = float(np.linalg.norm(raw.astype(np.float64)))
        vector = raw if abs(norm - 1.0) < 1e-4 else checked
        done = {"embedding_status": "done", "embedding_model": store_model, "embedding_error": None}
        return _Plan(item.model_copy(update=done), vector, False)
    if entry.vector is not None or item.embedding_status == "done":
        return _Plan(item, None, True)
    return _Plan(item, None, False)


def _existing_ids(core: Core, plans: list[_Plan]) -> set[str]:
    by_ns: dict[str, list[str]] = {}
    for plan in plans:
        by_ns.setdefault(plan.item.namespace, []).append(plan.item.id)
    found: set[str] = set()
    for namespace, ids in by_ns.items():
        found.update(item.id for item in core.backend.get(namespace, ids))
    return found


def _embed(core: Core, plans: list[_Plan]) -> None:
    """Embed the plans that need it, in place; a failing embedder leaves them pending."""
    todo = [plan for plan in plans if plan.embed]
    if not todo:
        return
    embedder = core.embedder
    try:
        matrix = embed_texts(
            embedder, [plan.item.content for plan in todo], batch_size=core.settings.limits.embed_batch_size
        )
    except ProviderError as exc:
        for plan in todo:
            plan.item = plan.item.model_copy(
                update={"embedding_status": "pending", "embedding_model": None, "embedding_error": str(exc)}
            )
        return
    for row, plan in zip(matrix, todo, strict=True):
        plan.item = plan.item.model_copy(
            update={"embedding_status": "done", "embedding_model": embedder.model_name, "embedding_error": None}
        )
        plan.vector = row


def import_jsonl(
    store: Core | HasCore, stream: Iterable[str], *, on_progress: ProgressCallback | None = None
) -> ImportReport:
    """Import a file written by :func:`export_jsonl` into ``mem``'s store; returns what happened.

    Items keep their ids, namespaces and every field. The whole file is
    validated first: any bad line raises InvalidInputError naming it, and
    nothing is written. Raises StorageError if the backend fails while writing
    (batches written before the failure stay; re-running skips them).
    """
    from memory.feedback.transfer import FeedbackLine, import_feedback
    from memory.tiers.transfer import TierLine, import_tiers

    core = core_of(store)
    mixed: list[Any] = []
    entries = _read_entries(stream, core.settings.limits.max_content_chars, mixed)
    extras = [e for e in mixed if not isinstance(e, (TierLine, FeedbackLine))]
    tier_lines = [e for e in mixed if isinstance(e, TierLine)]
    feedback_lines = [e for e in mixed if isinstance(e, FeedbackLine)]
    if extras:
        episodic_store(core.backend)  # a store without conversations refuses before anything is written
    if tier_lines:
        tier_store(core.backend)  # likewise for tiers
    if feedback_lines:
        feedback_store(core.backend)  # and for feedback
    embedder = core.embedder
    store_model = embedder.model_name
    plans = [_plan(entry, store_model, lambda: embedder.dimension) for entry in entries]
    if any(plan.vector is not None or plan.embed for plan in plans):
        try:
            core.backend.ensure_vector_space(store_model, embedder.dimension)
        except ProviderError:
            if any(plan.vector is not None for plan in plans):
                raise
    imported = duplicates = skipped = reembedded = pending = 0
    total = len(plans)
    now = core.now()
    for start in range(0, total, IMPORT_BATCH):
        batch = plans[start : start + IMPORT_BATCH]
        existing = _existing_ids(core, batch)
        fresh = [plan for plan in batch if plan.item.id not in existing]
        skipped += len(batch) - len(fresh)
        _embed(core, fresh)
        records = [
            NewRecord(plan.item, plan.vector, ledger_entry("add", plan.item.id, plan.item.namespace, now,
                                                           after=plan.item, reason="import"))
            for plan in fresh
        ]  # fmt: skip
        results = Windows(core).add(records) if records else []
        for plan, result in zip(fresh, results, strict=True):
            if result.created:
                imported += 1
                if plan.embed:
                    reembedded += plan.vector is not None
                    pending += plan.vector is None
            else:
                duplicates += 1
        if on_progress is not None:
            on_progress(min(start + IMPORT_BATCH, total), total)
    from memory.episodic.transfer import import_episodic

    messages, blocks = import_episodic(core, extras)
    tiers = import_tiers(core, tier_lines)
    feedback = import_feedback(core, feedback_lines)
    return ImportReport(imported, duplicates, skipped, reembedded, pending, messages, blocks, tiers, feedback)
