"""Prompt IR analysis (seed 000): impact, equivalence, entropy, section and tool embeddings.

- :func:`estimate_impact` — how much a section can change the model's answer. The
  seed proposes the magnitude of its embedding; every embedder here returns
  unit-length vectors (memory.embedders.base), so that magnitude is 1 for every
  text and says nothing. Instead: the section's information content in bits
  (its zlib-compressed size × 8, the measure ``allocation="information"`` uses),
  weighted by its priority and relevance; with an unnormalised ``section.embedding``
  supplied by the caller, its L2 norm multiplies in, as the seed describes.
- :func:`equivalent` — two IRs are equivalent within ``eps`` when the embeddings of
  their rendered prompts have cosine similarity >= 1 - eps (identical text always is;
  with the zero embedder only identical text is).
- :func:`estimated_entropy` — bits per character of the rendered prompt, estimated
  by its zlib-compressed size (an upper bound on its entropy rate); PromptMeta's
  ``estimated_entropy``.
- :func:`embed_ir` — fills ``Section.embedding`` and ``ToolDef.embedding`` that are
  unset, in one batch (``ContextStrategy.embed_sections`` asks for it).
"""

from __future__ import annotations

import json
import math

import numpy as np

from memory.context.compile import render_sections
from memory.context.entropy import estimated_entropy, information_bits
from memory.context.types import PRIORITY_WEIGHTS, PromptIR, Section
from memory.embedders.base import Embedder, embed_texts
from memory.errors import InvalidInputError

__all__ = ["estimate_impact", "equivalent", "estimated_entropy", "embed_ir", "prompt_text", "information_bits"]


def estimate_impact(section: Section) -> float:
    """Information bits × priority weight × relevance (× the norm of a given unnormalised embedding); >= 0."""
    impact = information_bits(section.content) * PRIORITY_WEIGHTS[section.priority]
    impact *= section.relevance if section.relevance is not None else 1.0
    if section.embedding is not None:
        norm = math.sqrt(sum(x * x for x in section.embedding))
        if math.isfinite(norm) and norm > 0:
            impact *= norm
    return impact


def prompt_text(ir: PromptIR) -> str:
    """What the model would read from ``ir``: its sections rendered, its tools as JSON, its observation."""
    tools = "\n".join(json.dumps(t.openai(), sort_keys=True) for t in ir.tools)
    return "\n\n".join(part for part in (render_sections(ir.sections), tools, ir.observation) if part)


def equivalent(eps: float, a: PromptIR, b: PromptIR, *, embedder: Embedder | None = None) -> bool:
    """Whether ``a`` and ``b`` read alike: cosine of their prompts' embeddings >= 1 - eps.

    ``embedder`` defaults to the dependency-free hashing embedder. Raises
    InvalidInputError for ``eps`` outside 0..2, EmbedderError when the embedder fails.
    """
    if isinstance(eps, bool) or not isinstance(eps, int | float) or not 0.0 <= eps <= 2.0:
        raise InvalidInputError(f"eps must be a number from 0 to 2, got {eps!r}")
    text_a, text_b = prompt_text(a), prompt_text(b)
    if text_a == text_b:
        return True
    if embedder is None:
        from memory.embedders.hashing import HashingEmbedder

        embedder = HashingEmbedder()
    vectors = embed_texts(embedder, [text_a, text_b])
    if not vectors[0].any() or not vectors[1].any():  # no direction (the zero embedder): only identical text
        return False
    return float(np.dot(vectors[0], vectors[1])) >= 1.0 - eps


def embed_ir(ir: PromptIR, embedder: Embedder) -> PromptIR:
    """``ir`` with every unset section and tool embedding filled (one batch). Raises EmbedderError."""
    sections = [s for s in ir.sections if s.embedding is None]
    tools = [t for t in ir.tools if t.embedding is None]
    texts = [s.content for s in sections] + [f"{t.name}: {t.description}" for t in tools]
    if not texts:
        return ir
    vectors = embed_texts(embedder, texts)
    filled = {id(s): tuple(float(x) for x in vectors[i]) for i, s in enumerate(sections)}
    offset = len(sections)
    tool_vectors = {id(t): tuple(float(x) for x in vectors[offset + i]) for i, t in enumerate(tools)}
    return ir.model_copy(
        update={
            "sections": tuple(
                s.model_copy(update={"embedding": filled[id(s)]}) if id(s) in filled else s for s in ir.sections
            ),
            "tools": tuple(
                t.model_copy(update={"embedding": tool_vectors[id(t)]}) if id(t) in tool_vectors else t
                for t in ir.tools
            ),
        }
    )
