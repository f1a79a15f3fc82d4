"""Feedback, reflection and prompt versions (procedural memory; seed 003 §2.4, §5, §6).

``mem.feedback`` records how each conversation went (summary, feedback,
example, reward), ``mem.prompts`` keeps versioned prompts with their measured
reward, and ``mem.reflect()`` turns scored conversations into ``procedural``
memories the context assembler includes. See docs/feedback.md.
"""

from memory.feedback.types import (
    ConversationRecord,
    FeedbackSummary,
    PromotionDecision,
    PromptSuggestion,
    PromptVersion,
    ReflectionReport,
    VersionStats,
)

__all__ = [
    "ConversationRecord",
    "PromptVersion",
    "VersionStats",
    "PromptSuggestion",
    "PromotionDecision",
    "ReflectionReport",
    "FeedbackSummary",
]
