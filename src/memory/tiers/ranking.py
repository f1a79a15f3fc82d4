"""Ranking the long-term tiers for a query: persona entries and system memory by relevance (vector + keywords).

Pure apart from ``embed`` (the caller's cached embedder of entry texts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memory.extraction.heuristic import keywords, normalise_name
from memory.tiers.scoring import fscore_of
from memory.tiers.types import ObjectPersona, SystemEntry, TierConfig

__all__ = ["relevant_personas", "rank_system"]

Embed = Callable[[Sequence[str]], list[tuple[float, ...]]]


def relevant_personas(
    personas: Sequence[ObjectPersona],
    user: str,
    query: str,
    q_vector: Sequence[float],
    q_words: Sequence[str],
    config: TierConfig,
    embed: Callable[[Sequence[str]], list[tuple[float, ...]]],
) -> tuple[ObjectPersona | None, tuple[ObjectPersona, ...]]:
    """The user persona and object personas cut to their ``lpm_top_k`` entries most relevant to the query.

    Knowledge and traits entries of the user persona and of every object
    persona are ranked together by the Fscore (vector + keywords) of the
    entry with the query; the user's profile fields stay whole (a few
    stable attributes). An object persona is kept when one of its entries
    made the cut or its name appears in the query.
    """
    user_persona = next((p for p in personas if p.type == "user" and p.identifier == user), None)
    others = [p for p in personas if not (p.type == "user" and p.identifier == user)]
    entries: list[tuple[int, str, str]] = []  # (persona index, field, text)
    pool = ([user_persona] if user_persona else []) + others
    for index, persona in enumerate(pool):
        entries += [(index, "knowledge", k) for k in persona.knowledge]
        entries += [(index, "traits", t) for t in persona.traits]
    chosen: set[tuple[int, str, str]] = set()
    if entries and config.lpm_top_k:
        fscore = fscore_of(config.fscore_function)
        vectors = embed([text for _, _, text in entries])
        scores = [
            fscore(vector, keywords(text, config.segment_keywords), q_vector, q_words)
            for (_, _, text), vector in zip(entries, vectors, strict=True)
        ]
        best = sorted(range(len(entries)), key=lambda i: (-scores[i], i))[: config.lpm_top_k]
        chosen = {entries[i] for i in best}
    lowered = query.lower()

    def cut(index: int, persona: ObjectPersona) -> ObjectPersona:
        return persona.model_copy(
            update={
                "knowledge": tuple(k for k in persona.knowledge if (index, "knowledge", k) in chosen),
                "traits": tuple(t for t in persona.traits if (index, "traits", t) in chosen),
            }
        )

    kept_user = cut(0, user_persona) if user_persona is not None else None
    offset = 1 if user_persona is not None else 0
    kept_objects = []
    for n, persona in enumerate(others):
        trimmed = cut(n + offset, persona)
        named = bool(normalise_name(persona.identifier)) and normalise_name(persona.identifier) in lowered
        if trimmed.knowledge or trimmed.traits or named:
            kept_objects.append(trimmed if not named or trimmed.knowledge else persona)
    return kept_user, tuple(kept_objects[:5])


def rank_system(
    entries: Sequence[SystemEntry],
    q_vector: Sequence[float],
    q_words: Sequence[str],
    config: TierConfig,
    embed: Embed,
) -> list[SystemEntry]:
    """The ``system_top_k`` system entries most relevant to the query: Fscore of the entry with the query
    (its stored vector, else ``embed``) plus a tenth of its importance."""
    if not entries or not config.system_top_k:
        return []
    fscore = fscore_of(config.fscore_function)
    missing = [i for i, e in enumerate(entries) if not e.vector]
    fresh = dict(zip(missing, embed([entries[i].content for i in missing]), strict=True))
    scored = sorted(
        (
            -(fscore(fresh.get(i, e.vector), keywords(e.content, config.segment_keywords), q_vector, q_words)
              + 0.1 * e.importance),
            e.id,
            i,
        )
        for i, e in enumerate(entries)
    )  # fmt: skip
    return [entries[i] for _, _, i in scored[: config.system_top_k]]
