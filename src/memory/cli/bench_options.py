"""Options the retrieval benchmarks share: the optional rerank stage (``--reranker`` and its top N and weight)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from memory.config import RerankSettings

__all__ = ["rerank_options", "rerank_settings"]

F = TypeVar("F", bound=Callable[..., Any])


def rerank_options(command: F) -> F:
    """Add ``--reranker``, ``--rerank-top-n`` and ``--rerank-weight`` to a benchmark command."""
    command = click.option(
        "--rerank-weight", type=click.FloatRange(0.0, 1.0), default=0.4, show_default=True, metavar="W",
        help="With --reranker: the reranker's share of the final score (1: its order alone).",
    )(command)  # fmt: skip
    command = click.option(
        "--rerank-top-n", type=click.IntRange(2, 200), default=20, show_default=True, metavar="N",
        help="With --reranker: how many fused candidates it scores.",
    )(command)  # fmt: skip
    command = click.option(
        "--reranker", metavar="NAME",
        help="Rerank the fused top N of recall (and message search) with this provider (e.g. local: the "
        "bundled offline cross-encoder; needs the rerank extra) [default: none].",
    )(command)  # fmt: skip
    return command


def rerank_settings(reranker: str | None, top_n: int, weight: float) -> RerankSettings | None:
    """The rerank stage the options ask for, or None without ``--reranker``."""
    if reranker is None:
        return None
    return RerankSettings(provider=reranker, top_n=top_n, weight=weight)
