"""The tiers service behind ``mem.tiers``: add pages, consolidate STM→MTM→LPM→system memory, retrieve.

Flow (MemoryOS, DESIGN §7): :meth:`Tiers.add_page` appends a page to the STM
queue of (agent, user) — and, unless ``record=False``, its query and
response to the episodic message store, so pages are never lost when a
segment is evicted; :meth:`Tiers.observe_messages` does it by itself for
agents with ``auto_pages`` (every user+assistant pair appended to the
message store). When the queue holds more than ``stm_capacity`` pages,
:meth:`Tiers.consolidate` (inline by default, or from the worker job
``tiers``) moves the oldest pages to MTM: as MemoryOS does, each page's topic
summary and keywords are matched against every segment's summary and
keywords (Fscore = cos of the summary embeddings + keyword Jaccard, or the
configured ``fscore_function``); the page joins the best segment at or above
``fscore_threshold`` — whose summary, keywords and embedding are redone at
once — or starts a new one. Segments over ``mtm_capacity`` are evicted
coldest first. Segments whose heat reaches ``heat_threshold`` have their
unanalysed pages analysed into persona updates (user persona, other object
personas, agent persona, shared-knowledge candidates) and their visit and
interaction counters reset (MemoryOS). Candidates whose importance reaches
``system_importance_threshold`` and that are not about a particular person
(:mod:`memory.tiers.privacy`, unless the policy ``system_promotion`` is
``any``; never from private pages) enter the namespace's system memory,
which keeps ``system_capacity`` entries by importance. One pass for one
(agent, user) is written in one transaction.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memory.backends.tiers import TierChanges, TierStore
from memory.errors import EmbedderError, InvalidInputError, StoreUnavailableError
from memory.extraction.heuristic import keywords, normalise_name
from memory.ids import new_id
from memory.records import check_name, check_query
from memory.tiers import analysis
from memory.tiers.config import agent_type_of, resolve_config, store_config
from memory.tiers.privacy import likely_person, personal_reason
from memory.tiers.ranking import rank_system, relevant_personas
from memory.tiers.scoring import default_fscore, fscore_of, heat_of, topic_text
from memory.tiers.search import PageTurns, rank_pages_by_turns
from memory.tiers.types import (
    AgentPersona,
    ConsolidationReport,
    DialoguePage,
    ObjectPersona,
    PageHit,
    Segment,
    SegmentHit,
    SystemEntry,
    TierConfig,
    TierContext,
    TierSnapshot,
)
from memory.types import SENSITIVITY_LEVELS

if TYPE_CHECKING:
    from memory.episodic.messages import Messages
    from memory.services import Core

__all__ = ["Tiers", "segment_heat", "similarity"]

_ENTRY_CACHE = 20_000


def similarity(
    vector_a: Sequence[float], keywords_a: Sequence[str], vector_b: Sequence[float], keywords_b: Sequence[str]
) -> float:
    """Fscore (:func:`memory.tiers.formulas.fscore`, cosine in numpy) that tolerates missing or
    mismatched vectors: then only the keyword Jaccard counts."""
    return default_fscore(vector_a, keywords_a, vector_b, keywords_b)


def segment_heat(segment: Segment, config: TierConfig, now: datetime) -> float:
    """Heat of ``segment`` at ``now`` under ``config`` (its ``heat_function``, else the seed's formula)."""
    return heat_of(
        config.heat_function, segment.visits, segment.interactions, segment.last_accessed, now,
        mu=config.recency_mu, alpha=config.heat_alpha, beta=config.heat_beta, gamma=config.heat_gamma,
    )  # fmt: skip


def _queue(old: Sequence[str], new: Sequence[str], capacity: int) -> tuple[tuple[str, ...], int]:
    """Append the entries of ``new`` not yet in ``old`` (by normalised text); keep the last ``capacity``."""
    seen = {normalise_name(x) for x in old}
    added = []
    for entry in new:
        key = normalise_name(entry)
        if key and key not in seen:
            seen.add(key)
            added.append(entry.strip())
    merged = (*old, *added)
    return tuple(merged[-capacity:]), len(added)


class Tiers:
    """Hierarchical memory of a :class:`~memory.Memory` (``mem.tiers``)."""

    def __init__(self, core: Core, messages: Messages) -> None:
        """Bind to the store's ``core`` (backend, embedder, LLM, clock, namespace) and its message log."""
        self._core = core
        self._messages = messages
        self._lock = threading.RLock()
        self._entry_vectors: dict[str, tuple[float, ...]] = {}
        self._page_turns: dict[str, PageTurns] = {}

    # -- plumbing ----------------------------------------------------------
    @property
    def store(self) -> TierStore:
        """The backend's tier store. Raises StoreUnavailableError when the backend has none."""
        store = self._core.backend.tiers
        if store is None:
            raise StoreUnavailableError(
                f"the {self._core.backend.name} backend has no tier store; use sqlite, postgres or inmemory for tiers"
            )
        return store

    def _ns(self, namespace: str | None) -> str:
        return check_name(namespace, "namespace") or self._core.namespace

    def _embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """Unit vectors of ``texts``; empty tuples when the embedder fails (keywords still work)."""
        from memory.embedders.base import embed_texts

        try:
            rows = embed_texts(self._core.embedder, list(texts))
        except EmbedderError:
            return [() for _ in texts]
        return [tuple(float(x) for x in row) for row in rows]

    def _embed_entries(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """Vectors of persona and system entries, cached in process (entries change rarely, queries often)."""
        missing = sorted({t for t in texts if t not in self._entry_vectors})
        if missing:
            if len(self._entry_vectors) + len(missing) > _ENTRY_CACHE:
                self._entry_vectors.clear()
            for text, vector in zip(missing, self._embed(missing), strict=True):
                if vector:
                    self._entry_vectors[text] = vector
        return [self._entry_vectors.get(t, ()) for t in texts]

    # -- configuration -----------------------------------------------------
    def config(
        self, agent: str | None = None, *, agent_type: str | None = None, namespace: str | None = None
    ) -> TierConfig:
        """The effective configuration of ``agent`` (defaults < its type's overrides < its own)."""
        check_name(agent, "agent")
        check_name(agent_type, "agent_type")
        return resolve_config(self.store, self._ns(namespace), agent, agent_type)

    def configure(
        self,
        *,
        agent: str | None = None,
        agent_type: str | None = None,
        namespace: str | None = None,
        namespace_wide: bool = False,
        **values: Any,
    ) -> TierConfig:
        """Store overrides for ``agent`` (optionally assigning it ``agent_type``), for ``agent_type``, or —
        ``namespace_wide=True`` — for every agent of the namespace (e.g. the ``system_promotion`` policy).

        Resolution: defaults < namespace < agent type < agent. Returns the
        effective configuration. Raises InvalidInputError for an unknown
        setting or a bad value (nothing is stored then).
        """
        check_name(agent, "agent")
        check_name(agent_type, "agent_type")
        if namespace_wide and (agent is not None or agent_type is not None):
            raise InvalidInputError("namespace_wide configures every agent: leave out agent and agent_type")
        return store_config(self.store, self._ns(namespace), agent=agent, agent_type=agent_type, values=values,
                            namespace_wide=namespace_wide)  # fmt: skip

    # -- writing -----------------------------------------------------------
    def add_page(
        self,
        query: str,
        response: str = "",
        *,
        agent: str,
        user: str,
        namespace: str | None = None,
        thread: str | None = None,
        metadata: dict[str, Any] | None = None,
        created_at: datetime | None = None,
        record: bool = True,
        consolidate: bool = True,
        sensitivity: str = "normal",
        message_ids: Sequence[str] = (),
    ) -> DialoguePage:
        """Append one exchange to the STM queue of (agent, user) and return the stored page.

        ``record`` also appends query and response to the episodic message
        store (thread ``thread``, default ``tiers-<agent>-<user>``);
        ``consolidate`` runs consolidation inline when the queue overflows
        (else the ``tiers`` worker job or :meth:`consolidate` does it).
        ``sensitivity`` (normal | private | secret) goes to the page and its
        messages: retrieval leaves pages above the caller's clearance out,
        and secret pages are never analysed into personas or system memory.
        Raises InvalidInputError.
        """
        agent_name = check_name(agent, "agent", optional=False)
        user_name = check_name(user, "user", optional=False)
        assert agent_name is not None and user_name is not None
        if not isinstance(query, str) or not isinstance(response, str) or not (query.strip() or response.strip()):
            raise InvalidInputError("a page needs a non-empty query or response (strings)")
        if metadata is not None and not isinstance(metadata, dict):
            raise InvalidInputError("metadata must be a dict")
        if sensitivity not in SENSITIVITY_LEVELS:
            raise InvalidInputError(f"sensitivity must be one of {', '.join(SENSITIVITY_LEVELS)}, got {sensitivity!r}")
        ns = self._ns(namespace)
        store = self.store
        config = resolve_config(store, ns, agent_name)
        now = created_at or self._core.now()
        with self._lock:
            stm = store.stm(ns, agent_name, user_name)
            text = f"{query}\n{response}".strip()
            words = keywords(topic_text(text), config.segment_keywords)
            # a secret page never feeds the meta-chain of another page
            previous = next((p for p in reversed(stm) if p.sensitivity != "secret"), None)
            chain, _ = analysis.meta_chain(self._core.llm, previous, text, words)
            message_ids = tuple(message_ids)
            if record:
                thread_name = thread or f"tiers-{agent_name}-{user_name}"
                entries = [{"thread": thread_name, "content": query, "role": "user"}] if query.strip() else []
                if response.strip():
                    entries.append({"thread": thread_name, "content": response, "role": "assistant"})
                stored = self._messages.append_many(
                    entries, namespace=ns, user=user_name, agent=agent_name, sensitivity=sensitivity
                )
                message_ids += tuple(m.id for m in stored)
            turns = [t for t in (query, response) if t.strip()]
            # the page's vector and one per turn, in one call (turns are ranked on their own: tiers.search)
            page_vector, *turn_vectors = self._embed([text, *turns])
            page = DialoguePage(
                id=new_id(), namespace=ns, agent=agent_name, user=user_name, query=query, response=response,
                created_at=now, meta_chain=chain, keywords=tuple(words), vector=page_vector,
                turn_vectors=tuple(turn_vectors) if all(turn_vectors) else (),
                message_ids=message_ids, thread=thread, metadata=dict(metadata or {}),
                sensitivity=sensitivity,
            )  # fmt: skip
            store.write(ns, TierChanges(pages=[page]))
            if consolidate and len(stm) + 1 > config.stm_capacity:
                self._consolidate_owner(ns, agent_name, user_name)
        return page

    def observe_messages(self, messages: Sequence[Any]) -> builtins.list[DialoguePage]:
        """Pages from messages just stored, for agents whose tiers are on (``auto_pages``); returns them.

        An assistant message of an agent, with the user message it answers
        (the latest user message before it in its thread, with no assistant
        message between), becomes one page of (agent, user) — recorded already,
        so ``record=False``; the page keeps both message ids and the stricter
        sensitivity. Messages of agents without ``auto_pages`` cost one
        configuration read. Failures here never fail the append (logged).
        """
        pages: list[DialoguePage] = []
        enabled: dict[tuple[str, str], bool] = {}
        for message in messages:
            if message.role != "assistant" or not message.agent or not (message.content or "").strip():
                continue
            key = (message.namespace, message.agent)
            if key not in enabled:
                enabled[key] = resolve_config(self.store, message.namespace, message.agent).auto_pages
            if not enabled[key]:
                continue
            before = [
                m for m in self._messages.recent(message.thread, 6, namespace=message.namespace, clearance="secret")
                if m.turn < message.turn
            ]  # fmt: skip
            asked = before[-1] if before and before[-1].role == "user" else None
            user = message.user or (asked.user if asked is not None else None)
            if asked is None or not user or not (asked.content or "").strip():
                continue
            strict = max((asked.sensitivity, message.sensitivity), key=lambda s: SENSITIVITY_LEVELS[s])
            pages.append(
                self.add_page(
                    asked.content or "", message.content or "", agent=message.agent, user=user,
                    namespace=message.namespace, thread=message.thread, created_at=message.created_at, record=False,
                    sensitivity=strict, message_ids=(asked.id, message.id),
                )
            )  # fmt: skip
        return pages

    def consolidate(
        self, *, agent: str | None = None, user: str | None = None, namespace: str | None = None
    ) -> ConsolidationReport:
        """Run one consolidation pass for (agent, user), or for every pair of the namespace; returns the counts."""
        check_name(agent, "agent")
        check_name(user, "user")
        ns = self._ns(namespace)
        pairs = [
            (a, u) for a, u in self.store.owners(ns) if (agent is None or a == agent) and (user is None or u == user)
        ]
        totals: dict[str, int] = {}
        for a, u in pairs:
            for key, value in self._consolidate_owner(ns, a, u).to_dict().items():
                totals[key] = totals.get(key, 0) + value
        return ConsolidationReport(**totals)

    def _consolidate_owner(self, ns: str, agent: str, user: str) -> ConsolidationReport:
        with self._lock:
            store = self.store
            config = resolve_config(store, ns, agent)
            now = self._core.now()
            llm = self._core.llm
            counts = {k: 0 for k in ConsolidationReport.model_fields}
            changes = TierChanges()
            stm = store.stm(ns, agent, user)
            overflow = stm[: max(0, len(stm) - config.stm_capacity)]
            segments: dict[str, Segment] = {s.id: s for s in store.segments(ns, agent, user)}
            dirty: set[str] = set()
            missing = [p for p in overflow if not p.vector]
            if missing:
                vectors = dict(zip((p.id for p in missing), self._embed([p.text for p in missing]), strict=True))
                overflow = [p.model_copy(update={"vector": vectors.get(p.id, p.vector)}) for p in overflow]
            fscore = fscore_of(config.fscore_function)
            # MemoryOS matches a page's topic summary + keywords against each segment's summary + keywords
            topics = [analysis.summarize(llm, [p], config.segment_keywords) for p in overflow]
            counts["llm_fallbacks"] += sum(int(t[2] and getattr(llm, "provider", "") != "heuristic") for t in topics)
            topic_vectors = self._embed([t[0] for t in topics])
            for page, (summary, words, _), topic_vector in zip(overflow, topics, topic_vectors, strict=True):
                scored = [(fscore(s.vector, s.keywords, topic_vector, words), s.id) for s in segments.values()]
                best = max(scored, key=lambda x: (x[0], x[1])) if scored else None
                if best is not None and best[0] >= config.fscore_threshold:
                    seg = segments[best[1]]
                    pages = (*seg.pages, page)
                    # the segment's summary, keywords and embedding are kept current as pages join
                    new_summary, new_words, fell_back = analysis.summarize(llm, pages, config.segment_keywords)
                    counts["llm_fallbacks"] += int(fell_back and getattr(llm, "provider", "") != "heuristic")
                    new_vector = self._embed([new_summary])[0] or seg.vector
                    segments[seg.id] = seg.model_copy(
                        update={
                            "pages": pages, "interactions": seg.interactions + 1, "last_accessed": now,
                            "summary": new_summary, "keywords": tuple(new_words), "vector": new_vector,
                        }
                    )  # fmt: skip
                    counts["segments_joined"] += 1
                else:
                    seg = Segment(
                        id=new_id(), namespace=ns, agent=agent, user=user, summary=summary, keywords=tuple(words),
                        vector=topic_vector, pages=(page,), visits=0, interactions=1, created_at=now,
                        last_accessed=now,
                    )  # fmt: skip
                    segments[seg.id] = seg
                    counts["segments_created"] += 1
                dirty.add(seg.id)
                counts["pages_moved"] += 1
            changes.delete_pages.extend(overflow)
            # Evict the coldest segments over capacity (their pages stay in the episodic store).
            excess = len(segments) - config.mtm_capacity
            if excess > 0:
                ranked = sorted(segments.values(), key=lambda s: (segment_heat(s, config, now), s.last_accessed, s.id))
                for seg in ranked[:excess]:
                    del segments[seg.id]
                    dirty.discard(seg.id)
                    changes.delete_segments.append(seg)
                    counts["segments_evicted"] += 1
            # Hot segments feed LPM; their counters are reset.
            persona_pages: list[DialoguePage] = []
            for seg in list(segments.values()):
                if segment_heat(seg, config, now) < config.heat_threshold:
                    continue
                fresh = [p for p in seg.pages if not p.analyzed and p.sensitivity != "secret"]
                persona_pages.extend(fresh)
                segments[seg.id] = seg.model_copy(
                    update={
                        "visits": 0,
                        "interactions": 0,
                        "pages": tuple(p.model_copy(update={"analyzed": True}) for p in seg.pages),
                    }
                )
                dirty.add(seg.id)
                counts["segments_analysed"] += 1
            if persona_pages:
                self._update_personas(ns, agent, user, persona_pages, config, now, changes, counts)
            changes.segments.extend(segments[s] for s in sorted(dirty))
            if changes:
                store.write(ns, changes)
            return ConsolidationReport(**counts)

    def _update_personas(
        self,
        ns: str,
        agent: str,
        user: str,
        pages: Sequence[DialoguePage],
        config: TierConfig,
        now: datetime,
        changes: TierChanges,
        counts: dict[str, int],
    ) -> None:
        store = self.store
        llm = self._core.llm
        update, fell_back = analysis.analyse(llm, user, agent, pages)
        counts["llm_fallbacks"] += int(fell_back and getattr(llm, "provider", "") != "heuristic")
        targets = [("user", user, update.user_profile, update.user_knowledge, update.user_traits)]
        targets += [(o.type, o.identifier, o.profile, o.knowledge, o.traits) for o in update.objects]
        merged: dict[tuple[str, str], ObjectPersona] = {}
        for kind, identifier, profile, knowledge, traits in targets:
            key = (kind, identifier)
            old = merged.get(key) or store.object_persona(ns, agent, kind, identifier)
            kb, kb_added = _queue(old.knowledge if old else (), knowledge, config.kb_capacity)
            tr, tr_added = _queue(old.traits if old else (), traits, config.traits_capacity)
            new_profile = {**(old.profile if old else {}), **profile}
            changed = kb_added + tr_added + int(new_profile != (old.profile if old else {}))
            if changed or old is None and kind == "user":
                merged[key] = ObjectPersona(
                    namespace=ns, agent=agent, type=kind, identifier=identifier, profile=new_profile,
                    knowledge=kb, traits=tr, updated_at=now,
                )  # fmt: skip
                counts["persona_updates"] += changed
        changes.objects.extend(merged.values())
        old_agent = store.agent_persona(ns, agent)
        agent_traits, added = _queue(old_agent.traits if old_agent else (), update.agent_traits, config.traits_capacity)
        if added or old_agent is None:
            changes.agents.append(
                AgentPersona(
                    namespace=ns,
                    agent=agent,
                    profile=dict(old_agent.profile) if old_agent else {},
                    traits=agent_traits,
                    updated_at=now,
                )  # fmt: skip
            )
            counts["persona_updates"] += added
        people = {user} | {o.identifier for o in update.objects if o.type == "person" and likely_person(o.identifier)}
        people |= {
            p.identifier
            for p in store.object_personas(ns, agent)
            if p.type == "user" or (p.type == "person" and likely_person(p.identifier))
        }
        private = [p.text for p in pages if p.sensitivity != "normal"]
        self._promote(ns, agent, user, update.shared, config, now, changes, counts, people=people, private=private)

    def _promote(
        self,
        ns: str,
        agent: str,
        user: str,
        shared: Sequence[analysis.SharedFact],
        config: TierConfig,
        now: datetime,
        changes: TierChanges,
        counts: dict[str, int],
        *,
        people: set[str],
        private: Sequence[str],
    ) -> None:
        """Shared facts at or above the importance threshold join system memory; evict by importance at capacity.

        A fact about a particular person (:mod:`memory.tiers.privacy`) is refused unless the policy
        ``system_promotion`` is ``any``; a fact drawn from a private page is always refused.
        """
        chosen = []
        for fact in shared:
            if fact.importance < config.system_importance_threshold:
                continue
            words = set(normalise_name(fact.content).split())
            from_private = any(
                words and len(words & set(normalise_name(text).split())) / len(words) >= 0.6 for text in private
            )
            personal = config.system_promotion != "any" and personal_reason(fact.content, user=user, people=people)
            if from_private or personal:
                counts["system_refused"] += 1
                continue
            chosen.append(fact)
        if not chosen:
            return
        entries = {normalise_name(e.content): e for e in self.store.system_entries(ns)}
        fresh = [f for f in chosen if normalise_name(f.content) not in entries]
        vectors = self._embed([f.content for f in fresh])
        new_ids: set[str] = set()
        for fact in chosen:
            key = normalise_name(fact.content)
            existing = entries.get(key)
            if existing is not None:
                if fact.importance > existing.importance:
                    entries[key] = existing.model_copy(update={"importance": fact.importance})
                    changes.system.append(entries[key])
                continue
            entry = SystemEntry(
                id=new_id(), namespace=ns, content=fact.content.strip(), importance=fact.importance,
                source_agent=agent, vector=vectors[fresh.index(fact)], created_at=now,
            )  # fmt: skip
            entries[key] = entry
            new_ids.add(entry.id)
            changes.system.append(entry)
            counts["system_promoted"] += 1
        excess = len(entries) - config.system_capacity
        if excess > 0:
            evicted = sorted(entries.values(), key=lambda e: (e.importance, e.created_at, e.id))[:excess]
            gone = {e.id for e in evicted}
            kept_new = [e for e in changes.system if e.id not in gone]
            counts["system_promoted"] -= len(gone & new_ids)
            changes.system = kept_new
            changes.delete_system.extend(evicted)
            counts["system_evicted"] += excess

    # -- reading -----------------------------------------------------------
    def retrieve(
        self,
        query: str,
        *,
        agent: str,
        user: str,
        namespace: str | None = None,
        top_m: int | None = None,
        top_k: int | None = None,
        clearance: str = "private",
    ) -> TierContext:
        """All STM pages, the top-k MTM pages, personas and system memory ranked by relevance.

        Segments are ranked by Fscore with the query; their pages, in that
        order up to ``candidate_pages`` (the bound on work), are the
        candidates — every segment's at usual sizes; an explicit ``top_m``
        keeps only the top-m segments' pages (MemoryOS's gate). Each turn of a
        candidate is ranked as flat recall ranks a memory and a page scores
        the sum of its turns' fused scores (:mod:`memory.tiers.search`).
        Visiting a segment counts: the top-m by Fscore and every segment a
        returned page is from have their visit counter and last access
        updated (their heat rises). Pages above ``clearance`` (normal |
        private | secret; default private) are left out. Raises
        InvalidInputError.
        """
        agent_name = check_name(agent, "agent", optional=False)
        user_name = check_name(user, "user", optional=False)
        assert agent_name is not None and user_name is not None
        query = check_query(query)
        if clearance not in SENSITIVITY_LEVELS:
            raise InvalidInputError(f"clearance must be one of {', '.join(SENSITIVITY_LEVELS)}, got {clearance!r}")
        allowed = SENSITIVITY_LEVELS[clearance]
        for name, value in (("top_m", top_m), ("top_k", top_k)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise InvalidInputError(f"{name} must be a positive integer, got {value!r}")
        ns = self._ns(namespace)
        store = self.store
        config = resolve_config(store, ns, agent_name)
        now = self._core.now()
        q_vector = self._embed([query])[0]
        q_words = keywords(topic_text(query), config.segment_keywords)
        fscore = fscore_of(config.fscore_function)
        with self._lock:
            stm = store.stm(ns, agent_name, user_name)
            segments = store.segments(ns, agent_name, user_name)
            ranked = sorted(
                ((fscore(s.vector, s.keywords, q_vector, q_words), s) for s in segments),
                key=lambda x: (-x[0], x[1].id),
            )
            # the pool: an explicit top_m keeps only those segments (MemoryOS's gate); otherwise segments in
            # Fscore order until they hold candidate_pages pages (the bound on work), their Fscore a prior
            if top_m is not None:
                pooled = ranked[:top_m]
            else:
                pooled, size = [], 0
                for entry in ranked:
                    if pooled and size >= config.candidate_pages:
                        break
                    pooled.append(entry)
                    size += len(entry[1].pages)
            candidates = [
                (p, s.id, score) for score, s in pooled for p in s.pages if SENSITIVITY_LEVELS[p.sensitivity] <= allowed
            ]
            context = [p for p in stm if SENSITIVITY_LEVELS[p.sensitivity] <= allowed]  # windows only
            order = rank_pages_by_turns(
                query, q_vector, [p for p, _, _ in candidates] + context,
                [score for _, _, score in candidates] + [0.0] * len(context),
                ranked=[True] * len(candidates) + [False] * len(context), cache=self._page_turns,
                segment_weight=config.segment_prior,
            )[: top_k or config.top_k_pages]  # fmt: skip
            page_hits = [
                PageHit(page=candidates[i][0], segment_id=candidates[i][1], score=round(score, 6)) for i, score in order
            ]
            # visiting a segment counts (heat): the top-m by Fscore and every segment a returned page is from
            used = {h.segment_id for h in page_hits}
            visited = [
                (score, s.model_copy(update={"visits": s.visits + 1, "last_accessed": now}))
                for n, (score, s) in enumerate(ranked)
                if n < (top_m or config.top_m_segments) or s.id in used
            ]
            if visited:
                store.write(ns, TierChanges(segments=[s for _, s in visited]))
            if len(self._page_turns) > _ENTRY_CACHE:
                self._page_turns.clear()
        user_persona, objects = relevant_personas(
            store.object_personas(ns, agent_name), user_name, query, q_vector, q_words, config, self._embed_entries
        )
        ranked_system = rank_system(store.system_entries(ns), q_vector, q_words, config, self._embed_entries)
        return TierContext(
            query=query,
            agent=agent_name,
            user=user_name,
            stm=tuple(p for p in stm if SENSITIVITY_LEVELS[p.sensitivity] <= allowed),
            segments=tuple(
                SegmentHit(
                    segment_id=s.id,
                    summary="" if hidden else s.summary,
                    keywords=() if hidden else s.keywords,
                    fscore=score,
                    heat=segment_heat(s, config, now),
                )
                for score, s in visited
                # a segment holding pages above the clearance does not show its summary or keywords
                for hidden in [any(SENSITIVITY_LEVELS[p.sensitivity] > allowed for p in s.pages)]
            ),  # fmt: skip
            pages=tuple(page_hits),
            user_persona=user_persona,
            objects=objects,
            agent_persona=store.agent_persona(ns, agent_name),
            system=tuple(ranked_system),
        )

    def show(self, *, agent: str, user: str, namespace: str | None = None) -> TierSnapshot:
        """Every tier of (agent, user): config, STM, segments with their heat now, personas, system memory."""
        agent_name = check_name(agent, "agent", optional=False)
        user_name = check_name(user, "user", optional=False)
        assert agent_name is not None and user_name is not None
        ns = self._ns(namespace)
        store = self.store
        config = resolve_config(store, ns, agent_name)
        now = self._core.now()
        personas = store.object_personas(ns, agent_name)
        return TierSnapshot(
            namespace=ns,
            agent=agent_name,
            user=user_name,
            config=config,
            agent_type=agent_type_of(store, ns, agent_name),
            stm=tuple(store.stm(ns, agent_name, user_name)),
            segments=tuple((s, segment_heat(s, config, now)) for s in store.segments(ns, agent_name, user_name)),
            user_persona=next((p for p in personas if p.type == "user" and p.identifier == user_name), None),
            objects=tuple(p for p in personas if p.type != "user"),
            agent_persona=store.agent_persona(ns, agent_name),
            system=tuple(store.system_entries(ns)),
        )

    def forget(self, *, user: str, agent: str | None = None, namespace: str | None = None) -> int:
        """Delete what the tiers hold about ``user`` (with every agent, or only ``agent``): STM pages,
        MTM segments and the user's persona. Returns how many records went. Messages recorded by
        :meth:`add_page` stay in the conversation store (delete them there); agent personas and
        system memory are shared and stay. Raises InvalidInputError."""
        user_name = check_name(user, "user", optional=False)
        check_name(agent, "agent")
        ns = self._ns(namespace)
        store = self.store
        changes = TierChanges()
        with self._lock:
            agents = {a for a, u in store.owners(ns) if u == user_name and (agent is None or a == agent)}
            for a in sorted(agents):
                changes.delete_pages.extend(store.stm(ns, a, user_name or ""))
                changes.delete_segments.extend(store.segments(ns, a, user_name or ""))
                persona = store.object_persona(ns, a, "user", user_name or "")
                if persona is not None:
                    changes.delete_objects.append(persona)
            if agent is not None and agent not in agents:
                persona = store.object_persona(ns, agent, "user", user_name or "")
                if persona is not None:
                    changes.delete_objects.append(persona)
            if changes:
                store.write(ns, changes)
        return len(changes.delete_pages) + len(changes.delete_segments) + len(changes.delete_objects)

    def system(self, *, namespace: str | None = None, source_agent: str | None = None) -> builtins.list[SystemEntry]:
        """The namespace's system memory (what was promoted and is shared by every agent), most important first."""
        check_name(source_agent, "agent")
        entries = self.store.system_entries(self._ns(namespace))
        chosen = [e for e in entries if source_agent is None or e.source_agent == source_agent]
        return sorted(chosen, key=lambda e: (-e.importance, e.created_at, e.id))

    def withdraw(self, ids: str | Sequence[str], *, namespace: str | None = None) -> int:
        """Take entries out of system memory by id (every agent stops seeing them); returns how many went.

        Unknown ids are skipped. Raises InvalidInputError for a bad id.
        """
        wanted = [ids] if isinstance(ids, str) else list(ids)
        if not wanted or not all(isinstance(i, str) and i.strip() for i in wanted):
            raise InvalidInputError("withdraw needs one or more system entry ids (non-empty strings)")
        ns = self._ns(namespace)
        with self._lock:
            gone = [e for e in self.store.system_entries(ns) if e.id in set(wanted)]
            if gone:
                self.store.write(ns, TierChanges(delete_system=gone))
        return len(gone)

    def owners(self, namespace: str | None = None) -> builtins.list[tuple[str, str]]:
        """(agent, user) pairs with STM pages or segments in the namespace."""
        return self.store.owners(self._ns(namespace))
