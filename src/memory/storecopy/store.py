"""Copy a whole store from one backend to another, losslessly — ``memory migrate``.

Unlike export/import (which works through the facade, one namespace, no
ledger), this copies below the facade: every namespace, every item with all
its fields (ids, times, access statistics, sensitivity including secrets,
embedding status), the vector of each item in its model's space, and the
whole ledger (also the history of deleted items) in the order recorded,
then the context windows (rebuilt on the destination, see below), the
knowledge graph and the tiers (:mod:`.graph_tiers`), the conversations
(messages, archive, blocks; :mod:`.episodic`) when both backends have a
conversation store, the feedback data (conversation records and prompt
versions; :mod:`.feedback`), and the API keys (hashes). Not copied: job
state.

Context windows are derived data: after the items are in, every memory's
window (text and window vector) is recomputed on the destination with the
facade's own window code (:func:`memory.windows.refresh_windows`), every
thread of every namespace, in the window space the source has (texts only
when it has none), so recall on the copy ranks as on the source.

The destination must be empty: a copy never merges into an existing store.
Each item is written together with its own ``add`` ledger entry (the
backend contract writes an item and its ledger entry in one transaction);
the other ledger entries follow in their original order, so every item's
history reads the same in both stores.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memory.backends.base import Backend, LedgerTransfer, NewRecord
from memory.backends.keys import KeyStore, open_key_store
from memory.errors import ConfigError, InvalidInputError
from memory.filters import Filter
from memory.index_layout import WINDOW, window_model
from memory.records import ledger_entry
from memory.storecopy.feedback import copy_feedback, plan_feedback
from memory.storecopy.graph_tiers import GraphCounts, copy_graph, copy_tiers, plan_stores
from memory.types import LedgerEntry, MemoryItem
from memory.windows import anchor_of, refresh_windows

__all__ = ["LedgerTransfer", "CopyReport", "copy_store"]

_BATCH = 500

#: ``on_progress(items_done, items_total)``, called after each batch.
ProgressCallback = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class CopyReport:
    """What a copy wrote: items, vectors, ledger, conversations, keys, graph, tier records, windows, feedback.

    ``windows`` counts the memories whose context window was rebuilt on the
    destination; ``skipped`` says what was not copied and why (a source
    without a graph or tier store, windows off or not storable).
    """

    items: int
    vectors: int
    ledger_entries: int
    namespaces: int
    vector_spaces: int
    synthesised_add_entries: int
    messages: int = 0
    blocks: int = 0
    api_keys: int = 0
    entities: int = 0
    relations: int = 0
    mentions: int = 0
    links: int = 0
    tier_records: int = 0
    windows: int = 0
    skipped: tuple[str, ...] = ()
    feedback_records: int = 0
    prompt_versions: int = 0


def _everything(namespace: str, now: datetime) -> Filter:
    return Filter(namespace=namespace, clearance="secret", include_expired=True, include_invalid=True, now=now)


def _batches(items: Iterator[MemoryItem], size: int) -> Iterator[list[MemoryItem]]:
    batch: list[MemoryItem] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def copy_store(
    src: Backend, dst: Backend, *, on_progress: ProgressCallback | None = None, window_size: int = WINDOW
) -> CopyReport:
    """Copy every namespace of ``src`` into the empty store ``dst``; return what was written.

    ``window_size`` is the context window (memories on each side in a
    thread, the ``context_window`` setting) the destination's windows are
    rebuilt with; 0 rebuilds none. Raises ConfigError, before anything is
    written, when a backend cannot stream or write its ledger, when ``dst``
    already holds memories, ledger entries, a graph, tier records,
    conversations or keys, or lacks a store that ``src`` fills.
    """
    if isinstance(window_size, bool) or not isinstance(window_size, int) or window_size < 0:
        raise InvalidInputError(f"window_size must be an integer >= 0, got {window_size!r}")
    for role, backend in (("source", src), ("destination", dst)):
        if not isinstance(backend, LedgerTransfer):
            raise ConfigError(
                f"the {role} backend {backend.name!r} cannot copy its ledger (no iter_ledger/write_ledger)"
            )
    assert isinstance(src, LedgerTransfer) and isinstance(dst, LedgerTransfer)
    if dst.namespaces() or next(iter(dst.iter_ledger(batch_size=1)), None) is not None:
        raise ConfigError("the destination store is not empty; migrate copies into a new, empty store only")
    from memory.storecopy.episodic import copy_episodic, episodic_stores

    skipped: list[str] = []
    conversations = episodic_stores(src, dst)  # checked before anything is written
    graph = plan_stores(src, dst, "graph", skipped)
    tiers = plan_stores(src, dst, "tiers", skipped)
    rebuild = _windows_plan(dst, window_size, skipped)
    feedback = plan_feedback(src, dst, skipped)
    keys = _key_stores(src, dst)
    now = datetime.now(UTC)
    spaces = src.vector_spaces()
    for space in spaces:
        dst.ensure_vector_space(space.model, space.dim)
    models = {space.model for space in spaces}
    namespaces = src.namespaces()
    total = sum(src.count(_everything(ns, now)) for ns in namespaces)
    done = vectors = synthesised = 0
    used: set[str] = set()
    for namespace in namespaces:
        for batch in _batches(src.iter_items(_everything(namespace, now), batch_size=_BATCH), _BATCH):
            found: dict[str, object] = {}
            for model in {i.embedding_model for i in batch if i.embedding_model in models}:
                ids = [i.id for i in batch if i.embedding_model == model]
                found.update(src.get_vectors(namespace, str(model), ids))
            records: list[NewRecord] = []
            for item in batch:
                adds = [e for e in src.history(namespace, item.id) if e.op == "add"]
                if adds:
                    entry = adds[0]
                    used.add(entry.id)
                else:  # a store without the item's add entry: record one, and say so
                    entry = ledger_entry("add", item.id, namespace, item.created_at, after=item, reason="migrate")
                    synthesised += 1
                vector = found.get(item.id)
                records.append(NewRecord(item, vector, entry))  # type: ignore[arg-type]
                vectors += vector is not None
            results = dst.add(records)
            if not all(r.created for r in results):
                raise ConfigError("the destination deduplicated an item while copying; it was not empty")
            done += len(batch)
            if on_progress is not None:
                on_progress(done, total)
    ledger = synthesised
    pending: list[LedgerEntry] = []
    for entry in src.iter_ledger():
        if entry.id in used:
            ledger += 1
            continue
        pending.append(entry)
        if len(pending) >= _BATCH:
            dst.write_ledger(pending)
            ledger += len(pending)
            pending = []
    dst.write_ledger(pending)
    ledger += len(pending)
    windows = _rebuild_windows(dst, namespaces, spaces, window_size, now) if rebuild else 0
    counts = copy_graph(graph) if graph is not None else GraphCounts()
    tier_records = copy_tiers(tiers) if tiers is not None else 0
    messages, blocks = copy_episodic(*conversations) if conversations is not None else (0, 0)
    feedback_records, prompt_versions = copy_feedback(feedback) if feedback is not None else (0, 0)
    copied_keys = 0
    if keys is not None:
        try:
            for key in keys[0].list():
                keys[1].add(key)
                copied_keys += 1
        finally:
            for store in keys:
                _close(store)
    return CopyReport(
        done, vectors, ledger, len(namespaces), len(spaces), synthesised, messages, blocks, copied_keys,
        counts.entities, counts.relations, counts.mentions, counts.links, tier_records, windows, tuple(skipped),
        feedback_records, prompt_versions,
    )  # fmt: skip


def _windows_plan(dst: Backend, window_size: int, skipped: list[str]) -> bool:
    """Whether the destination's context windows are rebuilt after the copy (else say why not)."""
    if window_size == 0:
        skipped.append("windows: context windows are off (context_window = 0)")
        return False
    if dst.windows is None:
        skipped.append(f"windows: the destination backend {dst.name!r} cannot store context windows")
        return False
    return True


def _rebuild_windows(dst: Backend, namespaces: list[str], spaces: Sequence[Any], size: int, now: datetime) -> int:
    """Compute every memory's context window on ``dst`` as the facade does; returns how many memories.

    Window vectors go to each window space the source had (``<model>+window``);
    without one only the window texts are written, as the facade does before
    its embedder's dimension is known.
    """
    names = {space.model for space in spaces}
    pairs: list[tuple[str | None, str | None]] = [
        (model, window_model(model)) for model in sorted(names) if window_model(model) in names
    ] or [(None, None)]
    rebuilt = 0
    for namespace in namespaces:

        def scope(thread: str | None, namespace: str = namespace) -> Filter:
            return Filter(
                namespace=namespace, thread=thread, clearance="secret", include_expired=True,
                include_invalid=True, now=now,
            )  # fmt: skip

        anchors = [anchor_of(item) for item in dst.iter_items(_everything(namespace, now), batch_size=_BATCH)]
        for model, space in pairs:
            for start in range(0, len(anchors), 5000):
                refresh_windows(
                    dst, namespace, anchors[start : start + 5000], size=size, model=model, window_space=space,
                    scope_filter=scope,
                )  # fmt: skip
        rebuilt += len(anchors)
    return rebuilt


def _key_stores(src: Backend, dst: Backend) -> tuple[KeyStore, KeyStore] | None:
    """The API key stores of both backends, or None when ``src`` holds no keys (or cannot hold any).

    Raises ConfigError when ``src`` has keys that ``dst`` cannot hold, or ``dst`` already has keys.
    """
    try:
        source = open_key_store(src)
    except ConfigError:
        return None
    target: KeyStore | None = None
    try:
        if not source.list():
            _close(source)
            return None
        target = open_key_store(dst)  # ConfigError: the destination cannot hold keys
        if target.list():
            raise ConfigError("the destination already holds API keys; migrate copies into an empty store only")
    except BaseException:
        _close(source)
        if target is not None:
            _close(target)
        raise
    return source, target


def _close(store: KeyStore) -> None:
    """Close a key store that holds its own connection (SQLite's)."""
    close = getattr(store, "close", None)
    if callable(close):
        close()
