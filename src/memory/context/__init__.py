"""Context assembly (DESIGN §8, seed 000): ContextRequest → hydrate → PromptIR → compile → messages.

>>> from memory.context import ContextRequest, TokenBudget
>>> # mem.context(ContextRequest(observation="Where does she live?", user="alice",
>>> #                            budget=TokenBudget(total=2000))).messages
"""

from memory.context.analysis import embed_ir, equivalent, estimate_impact, estimated_entropy
from memory.context.cache import DEFAULT_CACHE, PromptCache, ir_key
from memory.context.compile import CompiledPrompt, compile_prompt, compress, render_sections, section_value
from memory.context.compose import compose
from memory.context.hydrate import (
    ContextSource,
    HydrationContext,
    Skipped,
    default_sources,
    hydrate,
    register_source,
    unregister_source,
)
from memory.context.pipeline import build_context, memory_context_text
from memory.context.summarise import Summariser, extractive_summary
from memory.context.tokens import EstimateCounter, TiktokenCounter, TokenCounter, counter_for
from memory.context.types import (
    ContextRequest,
    ContextStrategy,
    FixedRatios,
    PromptIR,
    PromptMeta,
    Section,
    SectionSource,
    SectionTrace,
    SourceNote,
    TokenBudget,
    ToolDef,
    Trace,
)

__all__ = [
    "ContextRequest",
    "ContextStrategy",
    "TokenBudget",
    "FixedRatios",
    "Section",
    "SectionSource",
    "ToolDef",
    "PromptIR",
    "PromptMeta",
    "Trace",
    "SectionTrace",
    "SourceNote",
    "CompiledPrompt",
    "ContextSource",
    "HydrationContext",
    "Skipped",
    "hydrate",
    "compile_prompt",
    "compress",
    "estimate_impact",
    "equivalent",
    "estimated_entropy",
    "embed_ir",
    "PromptCache",
    "DEFAULT_CACHE",
    "ir_key",
    "compose",
    "build_context",
    "memory_context_text",
    "register_source",
    "unregister_source",
    "default_sources",
    "render_sections",
    "section_value",
    "Summariser",
    "extractive_summary",
    "TokenCounter",
    "TiktokenCounter",
    "EstimateCounter",
    "counter_for",
]
