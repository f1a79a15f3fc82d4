"""Seed 003's graph data flows on LoCoMo with extraction (issue 23 item 5): each on and off.

Every conversation is stored once with inline extraction (the heuristic
extractor unless an LLM is configured) and each question is recalled with four
configs of the default preset: ``base``, ``hop`` (data flow 1: the entities of
the top 3 fused hits seed a second graph search), ``entities`` (data flow 2:
entities near the query's vector seed the graph channel) and ``both``.

Run: ``python -m memory.bench.graph_flows [--data PATH] [--embedder NAME]``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from memory.bench.locomo import LocomoResult, evaluate_conversations, format_report, load_conversations
from memory.config import Settings
from memory.retrieval.config import RetrievalConfig

__all__ = ["flow_configs", "main"]


def flow_configs(base: RetrievalConfig, hop: int = 3) -> dict[str, RetrievalConfig]:
    """The four configs compared: neither flow, each alone, both."""
    return {
        "base": base,
        "hop": base.model_copy(update={"graph_hop": hop}),
        "entities": base.model_copy(update={"graph_entity_vectors": True}),
        "both": base.model_copy(update={"graph_hop": hop, "graph_entity_vectors": True}),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: one per-category table per config."""
    from memory.bench.vector_cache import DiskCachedEmbedder
    from memory.embedders import create_embedder

    parser = argparse.ArgumentParser(prog="python -m memory.bench.graph_flows", description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="../shared/bench/locomo_dev.json")
    parser.add_argument("--embedder", default="auto")
    parser.add_argument("--hop", type=int, default=3, help="top fused hits whose entities seed the second hop")
    args = parser.parse_args(argv)
    model = DiskCachedEmbedder(create_embedder(args.embedder))
    settings = Settings(database="memory://")
    runs = {
        name: (
            config,
            LocomoResult(config={"run": name, "embedder": model.model_name, "backend": "sqlite", "preset": name}),
        )
        for name, config in flow_configs(settings.retrieval_config(), args.hop).items()
    }
    evaluate_conversations(load_conversations(args.data), model, "sqlite", settings, runs, extract=True)
    model.flush()
    for name, (_, result) in runs.items():
        sys.stdout.write(f"== {name}\n{format_report(result.to_json(), dropped=result.dropped)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
