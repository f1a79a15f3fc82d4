"""`memory bench longmemeval`: session and turn recall on LongMemEval, per question type, with baselines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from memory.cli.bench_options import rerank_options, rerank_settings
from memory.errors import Error

__all__ = ["bench_longmemeval"]

_DEFAULT_DATA = Path("..") / "shared" / "bench" / "longmemeval_dev.json"


@click.command("longmemeval")
@click.option("--data", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help=f"LongMemEval JSON file [default: {_DEFAULT_DATA} if it exists].")  # fmt: skip
@click.option("--embedder", metavar="NAME", help="Embedder provider (auto, minilm, hashing, …) [default: auto].")
@click.option("--preset", "presets", default="balanced", show_default=True, metavar="NAMES",
              help="Retrieval preset(s) to recall with, comma-separated; all run on the same stores.")  # fmt: skip
@click.option("--interface", type=click.Choice(["both", "memories", "messages"]), default="both", show_default=True,
              help="remember/recall, messages.append/search, or both.")  # fmt: skip
@click.option("--baseline", is_flag=True,
              help="Also rank each haystack with BM25 (the project's own Okapi BM25), dense cosine and "
              "RRF(k=60) of the two, in the same run.")  # fmt: skip
@click.option("--backend", type=click.Choice(["sqlite", "inmemory", "postgres"]), default="sqlite",
              show_default=True, help="Store per question.")  # fmt: skip
@click.option("--dsn", envvar="MEMORY_BENCH_DSN", metavar="URL", help="PostgreSQL server for --backend postgres.")
@click.option("--limit-questions", type=click.IntRange(min=1), metavar="N",
              help="Use only N questions, taken round-robin over the question types.")  # fmt: skip
@click.option("--cache/--no-cache", default=True, show_default=True,
              help="Keep haystack vectors in ~/.cache/memory/vectors ($MEMORY_CACHE_DIR) across runs.")  # fmt: skip
@click.option("--fact-keys", type=click.Choice(["extracted", "all", "off"]), default="extracted", show_default=True,
              help="Which turns carry their extracted facts in their index key (Settings.fact_keys).")  # fmt: skip
@click.option("--ablation", is_flag=True,
              help="Run the retrieval ablation's steps (memory.bench.lme_ablation) through remember/recall, "
              "with the RRF(k=60) baseline, and print its table.")  # fmt: skip
@click.option("--markdown", is_flag=True, help="With --ablation: print the table as Markdown.")
@click.option("--ingest", "ingest_only", is_flag=True,
              help="Only time remember_batch of each haystack with precomputed vectors "
              "(turns/s, CPU, cost split).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
@click.option("--out", type=click.Path(dir_okay=False, writable=True, path_type=Path),
              help="Also write the JSON report to this file.")  # fmt: skip
@click.option("--quiet", "-q", is_flag=True, help="No progress notes on stderr.")
@rerank_options
@click.pass_context
def bench_longmemeval(
    ctx: click.Context,
    data: Path | None,
    embedder: str | None,
    presets: str,
    interface: str,
    baseline: bool,
    backend: str,
    dsn: str | None,
    limit_questions: int | None,
    cache: bool,
    fact_keys: str,
    ablation: bool,
    markdown: bool,
    ingest_only: bool,
    as_json: bool,
    out: Path | None,
    quiet: bool,
    reranker: str | None,
    rerank_top_n: int,
    rerank_weight: float,
) -> None:
    """Evidence retrieval on LongMemEval: session and turn recall@1/3/5/10 and NDCG@10, per type.

    Per question a fresh store holds its haystack (one memory or message per
    turn, thread = session, created at the session date, clock = question
    date); the question is recalled (limit 50) and sessions ranked by their
    best turn. Recall latency includes embedding the query. ``--reranker``
    reranks the fused top N of both interfaces (recall and message search).
    """
    from memory.bench.longmemeval import format_report, run_longmemeval
    from memory.bench.vector_cache import DiskCachedEmbedder
    from memory.config import Settings
    from memory.embedders import create_embedder

    path = data or (_DEFAULT_DATA if _DEFAULT_DATA.is_file() else None)
    if path is None:
        raise click.UsageError(f"--data is required ({_DEFAULT_DATA} does not exist here)")
    root = ctx.find_root().obj
    name = embedder or getattr(root, "embedder", None) or "auto"
    names = [p.strip() for p in presets.split(",") if p.strip()]
    interfaces = ("memories", "messages") if interface == "both" else (interface,)
    try:
        model = create_embedder(name)
        if cache:
            model = DiskCachedEmbedder(model)
        try:
            if ingest_only:
                from memory.bench.longmemeval import measure_ingest

                result = measure_ingest(path, embedder=model, backend=backend, dsn=dsn, limit_questions=limit_questions)
                document = json.dumps(result, indent=2, allow_nan=True)
                if out is not None:
                    out.write_text(document + "\n", encoding="utf-8")
                click.echo(document)
                return
            if ablation:
                _ablation(model, path, backend, dsn, limit_questions, quiet, markdown, as_json, out)
                return
            report = run_longmemeval(
                path,
                embedder=model,
                presets=names,
                interfaces=interfaces,
                baseline=baseline,
                backend=backend,
                dsn=dsn,
                limit_questions=limit_questions,
                settings=Settings(
                    database="memory://",
                    fact_keys=fact_keys,
                    reranker=rerank_settings(reranker, rerank_top_n, rerank_weight),
                ),
                progress=None
                if quiet
                else lambda done, total, qid: (
                    click.echo(f"question {done + 1}/{total}: {qid}", err=True) if qid else None
                ),
            )
        finally:
            if isinstance(model, DiskCachedEmbedder):
                model.flush()
    except Error as exc:
        raise click.ClickException(" ".join(str(exc).split()) or type(exc).__name__) from exc
    document = json.dumps(report, indent=2, allow_nan=True)
    if out is not None:
        out.write_text(document + "\n", encoding="utf-8")
    click.echo(document if as_json else format_report(report))


def _ablation(
    model: Any,
    path: Path,
    backend: str,
    dsn: str | None,
    limit_questions: int | None,
    quiet: bool,
    markdown: bool,
    as_json: bool,
    out: Path | None,
) -> None:
    """`memory bench longmemeval --ablation`: every applicable ablation step, one table."""
    from memory.bench.lme_ablation import format_lme_ablation, run_lme_ablation

    rows = run_lme_ablation(
        path,
        embedder=model,
        backend=backend,
        dsn=dsn,
        limit_questions=limit_questions,
        progress=None
        if quiet
        else lambda done, total, qid: click.echo(f"question {done + 1}/{total}: {qid}", err=True) if qid else None,
    )
    document = json.dumps(rows, indent=2, allow_nan=True)
    if out is not None:
        out.write_text(document + "\n", encoding="utf-8")
    click.echo(document if as_json else format_lme_ablation(rows, markdown=markdown))
