"""Context assembly benchmark on LoCoMo: time on top of recall, tokens used vs the whole conversation.

Per conversation a fresh store holds every turn (as in :mod:`memory.bench.locomo`).
For each question of category 1–4 with evidence, :meth:`Memory.context` builds
a prompt under the budget (no system prompt, no clock) and the trace gives:

* recall time — the :meth:`Memory.recall` call inside the recall source (query
  embedding, search, fusion, access statistics);
* assembly time — everything else: the other sources, building the sections,
  dedup, ranking, shrinking, rendering and exact token counting; as wall
  time and as this thread's CPU time (which other processes on a busy
  machine do not inflate);
* tokens used by the whole request, against the tokens of the full
  conversation transcript (what a "send everything" agent would pay);
* evidence in context — the share of the question's evidence turns whose
  memory made it into the compiled prompt.
"""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory.bench.locomo import CATEGORIES, Conversation, _store_conversation, database_url, load_conversations
from memory.bench.metrics import percentile
from memory.config import Settings
from memory.context.tokens import counter_for
from memory.context.types import ContextRequest, ContextStrategy, TokenBudget
from memory.embedders import create_embedder
from memory.embedders.base import Embedder
from memory.errors import InvalidInputError
from memory.memory import Memory

__all__ = ["ContextBenchResult", "run_context_bench", "format_context_report"]


@dataclass
class ContextBenchResult:
    """Per-question measurements and the configuration."""

    config: dict[str, Any]
    recall_ms: list[float] = field(default_factory=list)
    assembly_ms: list[float] = field(default_factory=list)
    assembly_cpu_ms: list[float] = field(default_factory=list)
    tokens_used: list[int] = field(default_factory=list)
    full_tokens: list[int] = field(default_factory=list)
    evidence_in_context: list[float] = field(default_factory=list)
    sections_cut: list[int] = field(default_factory=list)
    cache_hits: list[bool] = field(default_factory=list)
    conversations: int = 0

    def to_json(self) -> dict[str, Any]:
        """The report as one JSON-ready object."""

        def pct(values: list[float]) -> dict[str, float]:
            return {"p50": round(percentile(values, 50), 3), "p95": round(percentile(values, 95), 3)}

        used = statistics.fmean(self.tokens_used) if self.tokens_used else 0.0
        full = statistics.fmean(self.full_tokens) if self.full_tokens else 0.0
        return {
            "n": len(self.tokens_used),
            "conversations": self.conversations,
            "assembly_ms": pct(self.assembly_ms),
            "assembly_cpu_ms": pct(self.assembly_cpu_ms),
            "recall_ms": pct(self.recall_ms),
            "tokens_used_mean": round(used, 1),
            "full_conversation_tokens_mean": round(full, 1),
            "tokens_ratio": round(used / full, 4) if full else None,
            "evidence_in_context": round(statistics.fmean(self.evidence_in_context), 4)
            if self.evidence_in_context
            else None,
            "sections_cut_mean": round(statistics.fmean(self.sections_cut), 2) if self.sections_cut else 0.0,
            # share of requests whose IR was compiled before (memory.context.cache): repeated questions
            "cache_hit_rate": round(sum(self.cache_hits) / len(self.cache_hits), 4) if self.cache_hits else None,
            "config": dict(self.config),
        }


def run_context_bench(
    data: str | Path | Sequence[Conversation],
    *,
    embedder: str | Embedder = "auto",
    backend: str = "sqlite",
    budget: int = 4000,
    recall_limit: int = 50,
    model: str | None = None,
    limit_conversations: int | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> ContextBenchResult:
    """Run the benchmark (see the module docs). Raises InvalidInputError or ConfigError."""
    conversations = list(data) if isinstance(data, Sequence) and not isinstance(data, str) else load_conversations(data)
    if limit_conversations is not None:
        if limit_conversations < 1:
            raise InvalidInputError("limit_conversations must be at least 1")
        conversations = conversations[:limit_conversations]
    counter = counter_for(model)
    encoder = create_embedder(embedder) if isinstance(embedder, str) else embedder
    result = ContextBenchResult(
        config={"embedder": encoder.model_name, "backend": backend, "budget": budget, "recall_limit": recall_limit,
                "tokenizer": counter.name, "tokenizer_exact": counter.exact}
    )  # fmt: skip
    strategy = ContextStrategy(semantic_limit=recall_limit, include_time=False)
    with tempfile.TemporaryDirectory(prefix="memory-context-bench-") as tmp:
        for index, conv in enumerate(conversations):
            if progress is not None:
                progress(index, len(conversations), conv.sample_id)
            namespace = f"locomo-{conv.sample_id}"
            url = database_url(backend, Path(tmp), conv.sample_id)
            full = counter.count("\n".join(turn.content for turn in conv.turns))
            with Memory(url, embedder=encoder, settings=Settings(database=url)) as mem:
                turns_of = _store_conversation(mem, conv, namespace)
                for question in conv.questions:
                    if question.category not in CATEGORIES or not question.evidence:
                        continue
                    request = ContextRequest(
                        observation=question.question, namespace=namespace, model=model,
                        budget=TokenBudget(total=budget), strategy=strategy,
                    )  # fmt: skip
                    compiled = mem.context(request)
                    timings = compiled.trace.timings_ms
                    recall = timings.get("recall", 0.0)  # the Memory.recall call alone
                    result.recall_ms.append(recall)
                    result.assembly_ms.append(timings["total"] - recall)
                    result.assembly_cpu_ms.append(timings["total_cpu"] - timings.get("recall_cpu", 0.0))
                    result.tokens_used.append(compiled.trace.tokens["total"])
                    result.full_tokens.append(full)
                    result.sections_cut.append(sum(1 for s in compiled.trace.sections if s.status == "dropped"))
                    result.cache_hits.append(compiled.trace.cache_hit)
                    in_context = {
                        dia
                        for section in compiled.sections
                        if section.source.ref is not None
                        for dia in turns_of.get(section.source.ref, [])
                    }
                    found = sum(1 for e in question.evidence if e in in_context)
                    result.evidence_in_context.append(found / len(question.evidence))
            result.conversations += 1
    if progress is not None:
        progress(len(conversations), len(conversations), "")
    return result


def format_context_report(report: dict[str, Any]) -> str:
    """Plain-text summary of :meth:`ContextBenchResult.to_json`."""
    c = report["config"]
    return "\n".join(
        [
            f"Context assembly on LoCoMo  embedder={c['embedder']}  backend={c['backend']}  budget={c['budget']}  "
            f"recall limit={c['recall_limit']}  tokenizer={c['tokenizer']}",
            f"questions: {report['n']} in {report['conversations']} conversations",
            f"assembly on top of recall: p50 {report['assembly_ms']['p50']:.2f} ms, "
            f"p95 {report['assembly_ms']['p95']:.2f} ms wall (target p95 <= 5 ms at a 4k budget); "
            f"CPU p50 {report['assembly_cpu_ms']['p50']:.2f} ms, p95 {report['assembly_cpu_ms']['p95']:.2f} ms",
            f"recall (embedding + search): p50 {report['recall_ms']['p50']:.2f} ms, "
            f"p95 {report['recall_ms']['p95']:.2f} ms",
            f"tokens per request: {report['tokens_used_mean']:.0f} vs {report['full_conversation_tokens_mean']:.0f} "
            f"for the full conversation (ratio {report['tokens_ratio']})",
            f"evidence turns in the prompt: {report['evidence_in_context']}; sections cut per request: "
            f"{report['sections_cut_mean']}; compiled-prompt cache hit rate: {report.get('cache_hit_rate')}",
        ]
    )
