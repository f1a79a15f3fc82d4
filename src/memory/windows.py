"""Keep the context windows of memories current (see :mod:`memory.retrieval.window`).

After every write the facade calls :func:`refresh_windows` with *anchors*:
the (thread, created_at, id) places where a memory was added, changed or
deleted. Every memory within ``size`` places of an anchor in its thread gets
its window text and window vector recomputed from the thread as stored now,
so adds, updates, forgets and late embeddings all leave the windows right,
and a forgotten text leaves its neighbours' windows at once.

Adds go further (:meth:`Windows.add`): each new memory's window is computed
*before* the insert, from the batch and the stored thread around it (read
once), and stored with its row, so the key index tokenizes its text once
instead of inserting it empty and rewriting it. Afterwards only the stored
neighbours whose windows the batch changes are rewritten. When the thread
changed between that read and the insert (another writer), or a record
turned out a duplicate, the windows around the new memories are recomputed
from the store as after any other write (:mod:`memory.window_plan`).
"""

from __future__ import annotations

import bisect
import json
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from memory.backends.base import AddResult, Backend, ListOrder, NewRecord, NewWindow, Vector
from memory.embedders.base import embed_chunked
from memory.errors import ProviderError
from memory.filters import Filter
from memory.retrieval.fact_key import fact_key, wants_fact_key
from memory.retrieval.window import (
    WINDOW_RULE,
    content_words,
    event_time_words,
    share_of,
    window_model,
    window_neighbours,
    window_text,
    window_vector,
)
from memory.types import MemoryItem
from memory.window_plan import (
    NamespacePlan,
    Plan,
    Slice,
    ThreadPlan,
    Update,
    new_in_thread,
    reads_back,
    thread_slice,
    unchanged,
)

if TYPE_CHECKING:
    from memory.services import Core

log = logging.getLogger(__name__)

__all__ = ["Anchor", "Windows", "anchor_of", "refresh_windows", "window_needed"]

#: Where a write happened: (thread, created_at, id); the memory need not exist any more.
Anchor = tuple[str | None, datetime, str]
#: Memories whose windows are computed, by id: the memory and its window neighbours, in the order found.
_Affected = dict[str, tuple[MemoryItem, list[MemoryItem]]]

#: Fact-key vectors by (model, text), so refreshing a window again embeds nothing new.
_FACT_VECTORS: OrderedDict[tuple[str, str], npt.NDArray[np.float32]] = OrderedDict()
_FACT_CACHE = 8192


def anchor_of(item: MemoryItem) -> Anchor:
    """The anchor of a memory."""
    return (item.thread, item.created_at, item.id)


def window_needed(item: MemoryItem, fact_keys: str) -> bool:
    """Whether a newly stored ``item`` has a window to compute (a thread, a context, event dates or a fact key)."""
    return bool(
        item.thread is not None
        or item.context
        or event_time_words(item.content, item.created_at)
        or wants_fact_key(item, fact_keys)
    )


def _fact_vectors(
    embed: Callable[[list[str]], npt.NDArray[np.float32]] | None, model: str | None, facts: dict[str, str]
) -> dict[str, npt.NDArray[np.float32]]:
    """Vectors of the fact keys (one text each; cached per model), or none without an embedder or when it fails."""
    if embed is None or model is None or not facts:
        return {}
    todo = list(dict.fromkeys(t for t in facts.values() if (model, t) not in _FACT_VECTORS))
    if todo:
        try:
            rows = embed(todo)
        except ProviderError as exc:
            log.warning("fact keys indexed as text only, embedder failed: %s", exc)
            return {}
        for text, row in zip(todo, rows, strict=True):
            _FACT_VECTORS[(model, text)] = np.asarray(row, dtype=np.float32)
            if len(_FACT_VECTORS) > _FACT_CACHE:
                _FACT_VECTORS.popitem(last=False)
    return {i: _FACT_VECTORS[(model, t)] for i, t in facts.items() if (model, t) in _FACT_VECTORS}


def _around(sequence: Sequence[MemoryItem], points: Iterable[tuple[datetime, str]], size: int, into: _Affected) -> None:
    """Add to ``into`` every memory of ``sequence`` (a thread in order) within ``size`` places of a point."""
    keys = [(i.created_at, i.id) for i in sequence]
    done: set[int] = set()
    for point in points:
        at = bisect.bisect_left(keys, point)
        for index in range(max(at - size, 0), min(at + size + 1, len(sequence))):
            if index not in done:
                done.add(index)
                item = sequence[index]
                into[item.id] = (item, window_neighbours(sequence, index, size))


def _window_updates(
    backend: Backend,
    namespace: str,
    affected: _Affected,
    *,
    model: str | None,
    window_space: str | None,
    fact_keys: str,
    embed: Callable[[list[str]], npt.NDArray[np.float32]] | None,
    known: Mapping[str, Vector] | None = None,
    events: Mapping[str, str] | None = None,
) -> list[Update]:
    """The windows of the ``affected`` memories (see :func:`refresh_windows`), in their order.

    ``known`` holds content vectors already in hand (of memories not stored
    yet); the others are read from the store. ``events`` holds event time
    words already computed, by id.
    """
    facts = {i: fact_key(item, near) for i, (item, near) in affected.items() if wants_fact_key(item, fact_keys)}
    facts = {i: text for i, text in facts.items() if text}
    vectors: dict[str, Vector] = {}
    if model is not None and window_space is not None:
        wanted = {i.id for item, near in affected.values() if item.thread is not None for i in (item, *near)}
        wanted |= set(facts) if embed is not None else set()
        known = known or {}
        vectors = {i: known[i] for i in wanted if i in known}
        rest = sorted(wanted - vectors.keys())
        if rest:
            vectors.update(backend.get_vectors(namespace, model, rest))
    fact_vectors = _fact_vectors(embed, model, {i: t for i, t in facts.items() if i in vectors})
    updates: list[Update] = []
    counts: dict[str, int] = {}

    def words_of(item: MemoryItem) -> int:
        if item.id not in counts:
            counts[item.id] = content_words(item.content)
        return counts[item.id]

    events = events or {}
    for item_id, (item, near) in affected.items():
        vector = None
        share = share_of(words_of(item), [words_of(n) for n in near]) if near else 1.0
        if item_id in vectors and (item.thread is not None or item_id in fact_vectors):
            own = vectors[item_id]  # thread-less without facts: its own vector serves
            if item_id in fact_vectors:
                own = window_vector(own, [fact_vectors[item_id]])
            vector = window_vector(own, [vectors[n.id] for n in near if n.id in vectors], share)
        text = window_text(item, near, share, facts.get(item_id, ""), events.get(item_id))
        updates.append((item_id, text, vector))
    return updates


def refresh_windows(
    backend: Backend,
    namespace: str,
    anchors: Iterable[Anchor],
    *,
    size: int,
    model: str | None,
    window_space: str | None,
    scope_filter: Callable[[str | None], Filter],
    fact_keys: str = "extracted",
    embed: Callable[[list[str]], npt.NDArray[np.float32]] | None = None,
) -> int:
    """Recompute the windows around ``anchors``; returns how many memories were updated.

    ``model`` is the content vector space (None: write texts only),
    ``window_space`` the space for window vectors, ``scope_filter(thread)``
    a filter over every memory of the namespace in that thread (secret,
    expired and closed ones included), ``fact_keys`` which memories get their
    facts in the window field (:mod:`memory.retrieval.fact_key`); with ``embed`` (texts -> unit
    vectors) the facts are embedded too and blended into the window vector
    (``own`` becomes ``unit(own + unit(own + facts))``); an embedder failure leaves them out. Memories
    without a thread have a window of their own context and no window vector (recall uses their own)
    unless their facts give them one.
    """
    by_thread: dict[str | None, list[tuple[datetime, str]]] = {}
    for thread, created_at, item_id in anchors:
        by_thread.setdefault(thread, []).append((created_at, item_id))
    affected: _Affected = {}
    for thread, points in by_thread.items():
        points.sort()
        flt = scope_filter(thread)
        if thread is None or size <= 0:
            ids = [item_id for _, item_id in points]
            for item in backend.get(namespace, ids):
                if item.thread == thread or size <= 0:
                    affected[item.id] = (item, [])
            continue
        _around(thread_slice(backend, flt, points, 2 * size).items, points, size, affected)
    if not affected:
        return 0
    updates = _window_updates(
        backend, namespace, affected, model=model, window_space=window_space, fact_keys=fact_keys, embed=embed
    )
    window_index = backend.windows
    if window_index is None:
        return 0
    return window_index.set_windows(namespace, window_space if model is not None else None, updates)


#: Memories re-windowed per write while a store windowed by an older rule is brought up to date.
REWINDOW_BATCH = 2000


def _resume_point(state: str | None) -> tuple[str, datetime, str] | None:
    """Where an upgrade to :data:`WINDOW_RULE` goes on: (namespace, created_at, id) of the last memory done.

    None for an older rule's state (or none recorded): start from the beginning.
    """
    try:
        data = json.loads(state) if state else None
        if isinstance(data, dict) and data.get("rule") == WINDOW_RULE:
            ns, at, item_id = data["after"]
            return str(ns), datetime.fromisoformat(at), str(item_id)
    except (ValueError, TypeError, KeyError):
        pass
    return None


class Windows:
    """Keeps a store's context windows current after its writes (the facade's and the services')."""

    def __init__(self, core: Core) -> None:
        """Bind to the store's backend, embedder and settings."""
        self._core = core
        self._rule_current = False

    def refresh(self, namespace: str, anchors: Iterable[Anchor]) -> None:
        """Recompute the context windows around ``anchors``.

        In a store whose windows were computed by an older rule, each call first
        re-windows at most :data:`REWINDOW_BATCH` more memories (see :meth:`_upgrade_step`).
        """
        core = self._core
        anchors = list(anchors)
        if not anchors or not core.windows_on():
            return
        if core.ensure_space(strict=False):
            space = window_model(core.embedder.model_name)
            if not core.backend.has_vector_space(space):
                # First windows in this store (new, or written before windows existed): index
                # every memory, so the vector channel never searches a partial window space.
                core.backend.ensure_vector_space(space, core.embedder.dimension)
                self.rebuild()
                return
            self._upgrade_step()
        self._refresh(namespace, anchors)

    def _refresh(self, namespace: str, anchors: list[Anchor]) -> None:
        """Recompute the context windows around ``anchors`` (no first-window or rule checks)."""
        core = self._core
        model = space = None
        if core.ensure_space(strict=False):
            model = core.embedder.model_name
            space = window_model(model)
        refresh_windows(
            core.backend,
            namespace,
            anchors,
            size=core.settings.context_window,
            model=model,
            window_space=space,
            scope_filter=lambda thread: core.filter(
                namespace, thread=thread, clearance="secret", include_expired=True, include_invalid=True
            ),
            fact_keys=core.settings.fact_keys,
            embed=lambda texts: embed_chunked(core.embedder, texts),
        )

    def _upgrade_step(self) -> None:
        """Re-window the next :data:`REWINDOW_BATCH` memories of a store windowed by an older rule.

        The store's rule state (``WindowIndex.window_rule``) is :data:`WINDOW_RULE` once every
        memory follows it; while an upgrade is under way it holds where to go on
        (:func:`_resume_point`), so each write does a bounded share of the work, in namespace
        then (created_at, id) order. Asked of the store until it is current, once per process after.
        """
        index = self._core.backend.windows
        if self._rule_current or index is None:
            return
        state = index.window_rule()
        if state == WINDOW_RULE:
            self._rule_current = True
            return
        core = self._core
        after = _resume_point(state)
        budget = REWINDOW_BATCH
        if after is None:
            log.info("re-windowing every memory for window rule %s, %d per write", WINDOW_RULE, budget)
        for ns in core.backend.namespaces():
            if after is not None and ns < after[0]:
                continue
            flt = core.filter(ns, clearance="secret", include_expired=True, include_invalid=True)
            order = ListOrder(newest_first=False)
            if after is not None and ns == after[0]:
                order = ListOrder(newest_first=False, after_created_at=after[1], after_id=after[2])
            items = core.backend.list(flt, budget, order)
            if items:
                self._refresh(ns, [anchor_of(item) for item in items])
                budget -= len(items)
            if budget <= 0:
                last = items[-1]
                index.set_window_rule(
                    json.dumps({"rule": WINDOW_RULE, "after": [ns, last.created_at.isoformat(), last.id]})
                )
                return
        index.set_window_rule(WINDOW_RULE)
        self._rule_current = True

    def rebuild(self) -> None:
        """Compute the context window of every memory in every namespace, then record the rule they follow."""
        core = self._core
        log.info("computing the context window of every memory (window rule %s); once per store", WINDOW_RULE)
        for ns in core.backend.namespaces():
            flt = core.filter(ns, clearance="secret", include_expired=True, include_invalid=True)
            anchors = [anchor_of(item) for item in core.backend.iter_items(flt)]
            for start in range(0, len(anchors), 5000):
                self._refresh(ns, anchors[start : start + 5000])
        index = core.backend.windows
        if index is not None:
            index.set_window_rule(WINDOW_RULE)
            self._rule_current = True

    def add(self, records: Sequence[NewRecord]) -> list[AddResult]:
        """Store ``records`` with their context windows (``Backend.add``: all or nothing); one result per record.

        Each new memory's window goes in with its row (see the module
        docstring); then the stored neighbours' windows are brought up to date.
        Raises what ``Backend.add`` raises, and nothing is stored then.
        """
        plan = self._plan(records)
        results = self._core.backend.add(plan.records if plan is not None else records)
        if plan is not None:
            self._finish(plan, records, results)
        return results

    def _plan(self, records: Sequence[NewRecord]) -> Plan | None:
        """The records with the windows of their memories, and what to do after the insert; None: no windows."""
        core = self._core
        if not core.windows_on():
            return None
        fact_keys = core.settings.fact_keys
        events: dict[str, str] = {}
        by_ns: dict[str, list[MemoryItem]] = {}
        for record in records:
            item = record.item
            if item.thread is None:
                events[item.id] = event_time_words(item.content, item.created_at)
                if not (item.context or events[item.id] or wants_fact_key(item, fact_keys)):
                    continue  # stored with an empty window and no window vector: nothing to compute
            by_ns.setdefault(item.namespace, []).append(item)
        if not by_ns:
            return None
        model = space = None
        upgrade = False
        if core.ensure_space(strict=False):
            model, space = core.embedder.model_name, window_model(core.embedder.model_name)
            if not core.backend.has_vector_space(space):
                # First windows in this store: index every stored memory first (see refresh), so the
                # vector channel never searches a partial window space; the new ones follow below.
                core.backend.ensure_vector_space(space, core.embedder.dimension)
                self.rebuild()
            else:
                upgrade = True
        given = {r.item.id: r.vector for r in records if r.vector is not None and r.item.embedding_model == model}
        # The vectors as the store will read them back (SQLite: float16), so these windows equal a recompute.
        stored = core.backend.as_stored(model, list(given.values())) if model is not None and given else []
        known = dict(zip(given, stored, strict=True))
        plan = Plan(model, space, upgrade)
        for ns, items in by_ns.items():
            plan.namespaces[ns] = self._plan_namespace(ns, items, plan, known, events)
        windows = {i: w for ns_plan in plan.namespaces.values() for i, w in ns_plan.windows.items()}
        plan.records = [
            NewRecord(r.item, r.vector, r.ledger, windows[r.item.id]) if r.item.id in windows else r for r in records
        ]
        return plan

    def _plan_namespace(
        self,
        namespace: str,
        items: list[MemoryItem],
        plan: Plan,
        known: Mapping[str, Vector],
        events: Mapping[str, str],
    ) -> NamespacePlan:
        """The windows of a namespace's new memories (from the batch and the stored threads around them)."""
        core = self._core
        size = core.settings.context_window
        backend = core.backend
        out = NamespacePlan({item.id for item in items})
        # An empty namespace (a first import) has no stored thread to read: one query, not two per thread.
        out.empty = not backend.find_ids(self._scope(namespace, None), limit=1)
        by_thread: dict[str | None, list[MemoryItem]] = {}
        for item in items:
            by_thread.setdefault(item.thread, []).append(item)
        affected: _Affected = {}
        for thread, batch in by_thread.items():
            if thread is None:
                for item in sorted(batch, key=lambda i: (i.created_at, i.id)):
                    affected[item.id] = (item, [])
                continue
            new, repeats = new_in_thread(batch)
            plan_thread = ThreadPlan(new, repeats)
            out.threads[thread] = plan_thread
            if not all(reads_back(backend, item.created_at) for item in new):
                continue  # the store orders by the times it reads back: recomputed from it after the insert
            points = [(i.created_at, i.id) for i in new]
            if out.empty:
                stored = Slice([], True, True)
            else:
                stored = thread_slice(backend, self._scope(namespace, thread), points, 2 * size)
            plan_thread.stored = stored
            sequence = sorted([*stored.items, *new], key=lambda i: (i.created_at, i.id))
            _around(sequence, points, size, affected)
        updates = _window_updates(
            backend, namespace, affected, model=plan.model, window_space=plan.space,
            fact_keys=core.settings.fact_keys, embed=lambda texts: embed_chunked(core.embedder, texts),
            known=known, events=events,
        )  # fmt: skip
        for item_id, text, vector in updates:
            if item_id in out.new_ids:
                if text or vector is not None:
                    out.windows[item_id] = NewWindow(text, plan.space if vector is not None else None, vector)
            elif (owner := affected[item_id][0].thread) is not None:  # a stored neighbour (always in a thread)
                out.threads[owner].updates.append((item_id, text, vector))
        return out

    def _finish(self, plan: Plan, records: Sequence[NewRecord], results: Sequence[AddResult]) -> None:
        """After the insert: rewrite the stored neighbours' windows, or recompute where the plan no longer holds."""
        core = self._core
        created = {r.item.id for r, res in zip(records, results, strict=True) if res.created}
        window_index = core.backend.windows
        for ns, ns_plan in plan.namespaces.items():
            if created.isdisjoint(ns_plan.new_ids):
                continue  # nothing new to window here (every record was a duplicate)
            if plan.upgrade:
                self._upgrade_step()
            # Planned on an empty namespace that holds only this batch now: no thread changed meanwhile.
            alone = ns_plan.empty and self._only(ns, {r.item.id for r in records if r.item.namespace == ns} & created)
            updates: list[Update] = []
            again: list[Anchor] = []
            for thread, t in ns_plan.threads.items():
                as_planned = all(i.id in created for i in t.new) and created.isdisjoint(t.repeats)
                if t.stored is not None and as_planned and (alone or self._unchanged(ns, thread, t)):
                    updates.extend(t.updates)
                else:
                    again.extend(anchor_of(item) for item in t.new if item.id in created)
            if updates and window_index is not None:
                window_index.set_windows(ns, plan.space if plan.model is not None else None, updates)
            if again:
                self._refresh(ns, again)

    def _scope(
        self, namespace: str, thread: str | None, since: datetime | None = None, until: datetime | None = None
    ) -> Filter:
        """Every memory of ``namespace`` in ``thread`` created in [since, until) (secret, expired and closed too)."""
        return self._core.filter(
            namespace, thread=thread, clearance="secret", include_expired=True, include_invalid=True,
            since=since, until=until,
        )  # fmt: skip

    def _only(self, namespace: str, ids: set[str]) -> bool:
        """Whether ``namespace`` holds exactly the memories ``ids``."""
        return set(self._core.backend.find_ids(self._scope(namespace, None), limit=len(ids) + 1)) == ids

    def _unchanged(self, namespace: str, thread: str, plan: ThreadPlan) -> bool:
        """Whether ``thread`` around the plan's new memories holds what was read plus them (see :func:`unchanged`)."""
        backend = self._core.backend
        return unchanged(backend, namespace, plan, lambda since, until: self._scope(namespace, thread, since, until))
