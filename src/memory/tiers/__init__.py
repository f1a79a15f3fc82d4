"""Hierarchical memory (MemoryOS, seed 002): STM pages, MTM segments, LPM personas and system memory.

``mem.tiers`` is a :class:`~memory.tiers.service.Tiers`; the pure formulas
live in :mod:`memory.tiers.formulas`, the records in :mod:`memory.tiers.types`.
"""

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
    TierRecord,
    TierSnapshot,
)

__all__ = [
    "AgentPersona",
    "ConsolidationReport",
    "DialoguePage",
    "ObjectPersona",
    "PageHit",
    "Segment",
    "SegmentHit",
    "SystemEntry",
    "TierConfig",
    "TierContext",
    "TierRecord",
    "TierSnapshot",
]
