"""Shrinking a section's text to a token target: truncation and an extractive summary.

The extractive summariser is deterministic and needs no model: it splits a
text into lines (or sentences, for a one-paragraph text), scores each by
overlap with the query and by how central its words are to the text, keeps
the best ones that fit, and returns them in their original order. An LLM can
be plugged in instead (:data:`Summariser`; :class:`LLMSectionSummariser`
is used by ``Memory.context`` when an LLM provider other than ``heuristic`` is
configured); whatever it returns is checked and cut to the target, so it can
never break the budget, and an empty answer (an LLM failure) falls back to the
extractive summary.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from memory.context.tokens import TokenCounter
from memory.errors import LLMError

if TYPE_CHECKING:
    from memory.context.types import SourceNote
    from memory.llms.base import LLM

__all__ = ["Summariser", "LLMSectionSummariser", "llm_summariser", "extractive_summary", "shrink_text", "ELLIPSIS"]

#: ``(text, max_tokens, query) -> summary``; the result is cut to ``max_tokens`` if longer.
Summariser = Callable[[str, int, str | None], str]
ELLIPSIS = "…"

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_STOP = frozenset(
    "a an the and or but of to in on at for with by from is are was were be been it its this that "
    "i you he she we they me my your our their his her them us do did does have has had not no so as "
    "if then than there what which who whom how when where why will would can could should".split()
)


def _words(text: str) -> list[str]:
    return [w for w in (m.casefold() for m in _WORD.findall(text)) if w not in _STOP and len(w) > 1]


def _units(text: str) -> tuple[list[str], str]:
    lines = [line for line in text.split("\n") if line.strip()]
    if len(lines) > 1:
        return lines, "\n"
    sentences = [s for s in _SENTENCE.split(text.strip()) if s]
    return sentences, " "


class SectionSummary(BaseModel):
    """The model's shortened section."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    summary: str = Field(max_length=100_000)


class LLMSectionSummariser:
    """A :data:`Summariser` that asks an LLM provider (task ``summarise_section``) to shorten a section.

    On an LLMError it returns ``""``, so :func:`shrink_text` uses the
    extractive summary instead; :meth:`note` reports calls and failures for
    the compile trace.
    """

    def __init__(self, llm: LLM) -> None:
        """Use ``llm`` (an openai/ollama provider; the heuristic one has no model for this)."""
        self.llm = llm
        self.calls = 0
        self.failures: list[str] = []

    def __call__(self, text: str, max_tokens: int, query: str | None) -> str:
        """The model's summary of ``text`` for ``query`` (cut to ``max_tokens`` by the caller), or "" on failure."""
        from memory.llms.prompts import structured

        self.calls += 1
        inputs = {"text": text, "query": query or "", "max_words": max(1, int(max_tokens * 0.75))}
        try:
            return structured(self.llm, "summarise_section", inputs, SectionSummary).output.summary
        except LLMError as exc:
            self.failures.append(f"{type(exc).__name__}: {exc}"[:300])
            return ""

    def note(self) -> SourceNote | None:
        """A trace note when the LLM was asked: how often, and why it fell back (None if never asked)."""
        from memory.context.types import SourceNote

        if not self.calls:
            return None
        if not self.failures:
            return SourceNote(source="llm_summariser", status="used", sections=self.calls, note=self.llm.model_name)
        return SourceNote(
            source="llm_summariser", status="failed", sections=self.calls,
            note=f"{len(self.failures)} of {self.calls} summaries fell back to extractive: {self.failures[-1]}",
        )  # fmt: skip


def llm_summariser(llm: LLM) -> LLMSectionSummariser:
    """A section summariser backed by ``llm`` with the extractive fallback (see :class:`LLMSectionSummariser`)."""
    return LLMSectionSummariser(llm)


def extractive_summary(text: str, max_tokens: int, counter: TokenCounter, query: str | None = None) -> str:
    """The best lines/sentences of ``text`` that fit ``max_tokens``, in original order.

    Score = 2 × (query words present) + centrality (mean frequency of the
    unit's words in the whole text) + a small bonus for the first unit.
    Falls back to truncation when no unit fits whole.
    """
    if max_tokens <= 0:
        return ""
    if counter.count(text) <= max_tokens:
        return text
    units, joiner = _units(text)
    if len(units) <= 1:
        return counter.truncate(text, max_tokens)
    unit_words = [_words(unit) for unit in units]
    freq = Counter(w for words in unit_words for w in words)
    top = max(freq.values(), default=1) or 1
    query_words = set(_words(query or ""))
    scored = []
    for index, words in enumerate(unit_words):
        centrality = sum(freq[w] for w in words) / (len(words) or 1) / top
        overlap = len(query_words.intersection(words))
        scored.append((2.0 * overlap + centrality + (0.25 if index == 0 else 0.0), index))
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    # greedy on per-unit counts (+1 per joiner), then verify the joined text and drop the weakest while over
    joiner_cost = counter.count(joiner) or 1
    chosen: list[int] = []
    used = 0
    for _, index in scored:
        cost = counter.count(units[index]) + joiner_cost
        if used + cost <= max_tokens + joiner_cost:
            chosen.append(index)
            used += cost
    while chosen:
        text_out = joiner.join(units[i] for i in sorted(chosen))
        if counter.count(text_out) <= max_tokens:
            return text_out
        chosen.pop()
    return counter.truncate(units[scored[0][1]], max_tokens)


def shrink_text(
    text: str,
    max_tokens: int,
    mode: str,
    counter: TokenCounter,
    *,
    query: str | None = None,
    summariser: Summariser | None = None,
) -> str:
    """``text`` cut to at most ``max_tokens`` by ``mode`` (truncate, truncate_start, summarise).

    Truncation marks the cut with an ellipsis when it fits. The result always
    counts ``<= max_tokens``.
    """
    if max_tokens <= 0:
        return ""
    if counter.count(text) <= max_tokens:
        return text
    if mode == "summarise":
        out = summariser(text, max_tokens, query) if summariser is not None else None
        if out is None or not out.strip():
            out = extractive_summary(text, max_tokens, counter, query)
        return out if counter.count(out) <= max_tokens else counter.truncate(out, max_tokens)
    keep_end = mode == "truncate_start"
    marked = max_tokens - counter.count(ELLIPSIS)
    if marked >= 4:
        cut = counter.truncate(text, marked, keep_end=keep_end)
        out = (ELLIPSIS + cut) if keep_end else (cut + ELLIPSIS)
        if counter.count(out) <= max_tokens:
            return out
    return counter.truncate(text, max_tokens, keep_end=keep_end)
