"""LoCoMo ablation: each retrieval idea's effect, from one command.

Every step is data: a retrieval config plus how the store was written
(context window size, what a thread is). Steps that share a store are run off
one ingestion, and one embedding cache serves every store, so each text is
embedded once per run. ``memory bench locomo --ablation`` prints the table;
docs/retrieval.md holds a measured copy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memory.bench.locomo import (
    CATEGORIES,
    Conversation,
    LocomoResult,
    evaluate_conversations,
    load_conversations,
)
from memory.bench.metrics import mean_metrics
from memory.config import Settings
from memory.embedders import create_embedder
from memory.embedders.base import Embedder
from memory.retrieval.config import CONTENT_ONLY, PRESETS, RetrievalConfig

__all__ = ["Step", "STEPS", "CachedEmbedder", "run_ablation", "ablation_json", "format_ablation"]


@dataclass(frozen=True, slots=True)
class Step:
    """One row of the ablation: what changes, with which config, on which store, and the verdict."""

    name: str
    config: RetrievalConfig
    verdict: str
    context_window: int = 2
    threads: str = "session"
    #: ``Settings.fact_keys`` of the store: "extracted" (the default; the benchmarks do not extract) or "all".
    fact_keys: str = "extracted"


_BALANCED = PRESETS["balanced"]

#: The ablation, in order: from each memory on its own words to the default, then variations.
STEPS: tuple[Step, ...] = (
    Step("plain: own words + own vector (old default)", PRESETS["plain"], "baseline", context_window=0),
    Step(
        "+ time words of created_at",
        _BALANCED.model_copy(update={"fields": {"content": 1.0, "time": 1.0}, "window_vectors": False}),
        "kept",
        context_window=0,
    ),  # fmt: skip
    Step("+ context window, lexical (w=0.3)", _BALANCED.model_copy(update={"window_vectors": False}), "kept"),
    Step("+ window vectors = balanced (default)", _BALANCED, "kept"),
    Step(
        "window vectors only (no window text)",
        _BALANCED.model_copy(update={"fields": {"content": 1.0, "time": 1.0}}),
        "dropped",
    ),  # fmt: skip
    Step("+ fact keys: every turn's facts in its window field", _BALANCED, "measured", fact_keys="all"),
    Step("window 1 turn each side", _BALANCED, "dropped", context_window=1),
    Step("window 3 turns each side", _BALANCED, "dropped", context_window=3),
    Step(
        "window weight 0.6",
        _BALANCED.model_copy(update={"fields": {"content": 1.0, "window": 0.6, "time": 1.0}}),
        "dropped",
    ),  # fmt: skip
    Step("thread = whole conversation", _BALANCED, "dropped", threads="conversation"),
    Step("rrf_k 60 (customary)", _BALANCED.model_copy(update={"rrf_k": 60.0}), "dropped"),
    # What each later idea of the default adds: the default without it.
    Step(
        "default without feedback (where the turns are short)",
        _BALANCED.model_copy(
            update={
                "channels": tuple(c for c in _BALANCED.channels if c != "feedback"),
                "weights": {c: w for c, w in _BALANCED.weights.items() if c != "feedback"},
            }
        ),
        "kept",
    ),
    Step("default without speaker-aware ranking", _BALANCED.model_copy(update={"speaker_penalty": 0.0}), "kept"),
    Step("default without named speakers", _BALANCED.model_copy(update={"named_speaker_penalty": 0.0}), "kept"),
    Step("default without amounts", _BALANCED.model_copy(update={"quantity_penalty": 0.0}), "kept"),
    Step("100 candidates per channel", _BALANCED.model_copy(update={"candidates": 100}), "in best"),
    Step("preset fast (no feedback, 20 candidates)", PRESETS["fast"], "preset"),
    Step("preset best (100 candidates)", PRESETS["best"], "preset"),
    Step("lexical channel only", PRESETS["lexical"], "reference"),
    Step("vector channel only", PRESETS["vector"], "reference"),
    Step(
        "plain, content-only lexical",
        PRESETS["plain"].model_copy(update={"channels": ("lexical",), "fields": CONTENT_ONLY}),
        "reference",
        context_window=0,
    ),  # fmt: skip
)


class CachedEmbedder:
    """Wraps an embedder so each text stored is embedded once (same model name and vectors).

    Only batches of several texts (the stores' ingestion) are cached; a single
    text (a query) is always embedded, so measured recall latency includes it.
    """

    def __init__(self, inner: Embedder) -> None:
        """Wrap ``inner``."""
        self.inner = inner
        self.model_name = inner.model_name
        self._cache: dict[str, npt.NDArray[np.float32]] = {}

    @property
    def dimension(self) -> int:
        """The wrapped embedder's dimension."""
        return self.inner.dimension

    def embed_batch(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed the texts not seen before; return every row from the cache."""
        if len(texts) == 1:
            return np.asarray(self.inner.embed_batch(list(texts)), dtype=np.float32)
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            rows = np.asarray(self.inner.embed_batch(todo), dtype=np.float32)
            self._cache.update(zip(todo, rows, strict=True))
        return np.stack([self._cache[t] for t in texts])


def run_ablation(
    data: str | Path | Sequence[Conversation],
    *,
    embedder: str | Embedder = "auto",
    backend: str = "sqlite",
    steps: Sequence[Step] = STEPS,
    limit_conversations: int | None = None,
    progress: Callable[[str], None] | None = None,
    dsn: str | None = None,
) -> list[tuple[Step, LocomoResult]]:
    """Run every step; returns (step, result) in step order. Raises as :func:`run_locomo`."""
    conversations = list(data) if isinstance(data, Sequence) and not isinstance(data, str) else load_conversations(data)
    if limit_conversations is not None:
        conversations = conversations[:limit_conversations]
    model = CachedEmbedder(create_embedder(embedder) if isinstance(embedder, str) else embedder)
    results = [
        (step, LocomoResult(config={"embedder": model.model_name, "backend": backend, "step": step.name}))
        for step in steps
    ]
    stores: dict[tuple[int, str, str], dict[str, tuple[RetrievalConfig, LocomoResult]]] = {}
    for index, (step, result) in enumerate(results):
        key = (step.context_window, step.threads, step.fact_keys)
        stores.setdefault(key, {})[str(index)] = (step.config, result)
    for (window, threads, fact_keys), runs in stores.items():
        if progress is not None:
            progress(
                f"store: context window {window}, threads per {threads}, fact keys {fact_keys}; {len(runs)} configs"
            )
        settings = Settings(database="memory://", context_window=window, fact_keys=fact_keys)
        evaluate_conversations(conversations, model, backend, settings, runs, threads=threads, dsn=dsn)
    return results


def _halves(rows: Sequence[dict[str, Any]]) -> tuple[float, float]:
    """R@10 on the even-indexed and the odd-indexed conversations (a check that a gain holds on both)."""
    names = sorted({row["conversation"] for row in rows})
    first = set(names[0::2])
    a = mean_metrics([r for r in rows if r["conversation"] in first])["recall@10"]
    b = mean_metrics([r for r in rows if r["conversation"] not in first])["recall@10"]
    return a, b


def ablation_json(results: Sequence[tuple[Step, LocomoResult]]) -> list[dict[str, Any]]:
    """One JSON-ready row per step: its report plus verdict, store and R@10 on each half."""
    rows = []
    for step, result in results:
        report = result.to_json()
        a, b = _halves(result.rows)
        rows.append(
            {
                "step": step.name,
                "verdict": step.verdict,
                "context_window": step.context_window,
                "threads": step.threads,
                "fact_keys": step.fact_keys,
                "halves_recall@10": [round(a, 4), round(b, 4)],
                **report,
            }
        )
    return rows


def _plain(cells: Sequence[str]) -> str:
    widths = [44, 10] + [24] * (len(cells) - 2)
    return "".join(f"{cell:<{width}}" for cell, width in zip(cells, widths, strict=True)).rstrip()


def format_ablation(rows: Sequence[dict[str, Any]], *, markdown: bool = False) -> str:
    """The ablation table: R@5 / R@10 / NDCG@10 overall and per category, halves, latency."""
    groups = [("all", None)] + [(f"{c} {name}", str(c)) for c, name in CATEGORIES.items()]
    head = ["step", "verdict"] + [f"{g} R@5/R@10/NDCG" for g, _ in groups] + ["R@10 halves", "p50/p95 ms"]
    lines = []
    if markdown:
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * 2 + "---:|" * (len(head) - 2))
    else:
        lines.append(_plain(head))
    for row in rows:
        cells = [row["step"], row["verdict"]]
        for _, key in groups:
            m = row["overall"] if key is None else row["by_category"].get(key)
            cells.append("-" if m is None else f"{m['recall@5']:.3f} / {m['recall@10']:.3f} / {m['ndcg@10']:.3f}")
        a, b = row["halves_recall@10"]
        cells.append(f"{a:.3f} / {b:.3f}")
        cells.append(f"{row['latency_ms']['p50']:.1f} / {row['latency_ms']['p95']:.1f}")
        lines.append("| " + " | ".join(cells) + " |" if markdown else _plain(cells))
    return "\n".join(lines)
