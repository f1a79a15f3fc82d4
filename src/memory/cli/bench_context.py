"""`memory bench context`: context assembly time on top of recall, and tokens used vs the full conversation."""

from __future__ import annotations

import json
from pathlib import Path

import click

from memory.errors import Error

__all__ = ["bench_context"]

_DEFAULT_DATA = Path("..") / "shared" / "bench" / "locomo_dev.json"


@click.command("context")
@click.option("--data", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help=f"LoCoMo JSON file [default: {_DEFAULT_DATA} if it exists].")  # fmt: skip
@click.option("--embedder", metavar="NAME", default="auto", show_default=True, help="Embedder provider.")
@click.option("--budget", type=click.IntRange(64), default=4000, show_default=True, help="Token budget per request.")
@click.option("--recall-limit", type=click.IntRange(1, 1000), default=50, show_default=True,
              help="Memories recalled per request (before the budget cuts).")  # fmt: skip
@click.option("--model", metavar="NAME", help="Model name picking the tokenizer (default o200k).")
@click.option("--backend", type=click.Choice(["sqlite", "inmemory"]), default="sqlite", show_default=True,
              help="Store per conversation.")  # fmt: skip
@click.option(
    "--limit-conversations", type=click.IntRange(min=1), metavar="N", help="Use only the first N conversations."
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the JSON report here.")
@click.option("--quiet", "-q", is_flag=True, help="No progress notes on stderr.")
def bench_context(
    data: Path | None, embedder: str, budget: int, recall_limit: int, model: str | None, backend: str,
    limit_conversations: int | None, as_json: bool, out: Path | None, quiet: bool,
) -> None:  # fmt: skip
    """Context assembly on LoCoMo: ms on top of recall (p50/p95), tokens used vs the full conversation.

    \b
    Example:
      memory bench context --data ../shared/bench/locomo_dev.json --budget 4000
    """
    from memory.bench.context import format_context_report, run_context_bench

    if data is None:
        if not _DEFAULT_DATA.is_file():
            raise click.UsageError(f"--data is required ({_DEFAULT_DATA} does not exist here)")
        data = _DEFAULT_DATA

    def note(index: int, total: int, name: str) -> None:
        if not quiet and name:
            click.echo(f"[{index + 1}/{total}] {name}", err=True)

    try:
        result = run_context_bench(
            data, embedder=embedder, backend=backend, budget=budget, recall_limit=recall_limit, model=model,
            limit_conversations=limit_conversations, progress=note,
        )  # fmt: skip
    except Error as exc:
        raise click.ClickException(" ".join(str(exc).split())) from exc
    report = result.to_json()
    document = json.dumps(report, indent=2, allow_nan=False)
    if out is not None:
        out.write_text(document + "\n", encoding="utf-8")
    click.echo(document if as_json else format_context_report(report))
