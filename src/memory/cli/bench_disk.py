"""`memory bench disk`: bytes per memory by component on SQLite, and the process's RSS while it searches."""

from __future__ import annotations

import json
from pathlib import Path

import click

from memory.errors import Error

__all__ = ["bench_disk"]


@click.command("disk")
@click.option("--size", type=click.IntRange(min=1), default=100_000, show_default=True, help="Memories stored.")
@click.option("--queries", type=click.IntRange(min=1), default=200, show_default=True,
              help="Searches per retrieval mode (the preset, then vector-only) while RSS is watched.")  # fmt: skip
@click.option("--thread-size", type=click.IntRange(min=0), default=0, show_default=True,
              help="Put every run of N memories in one thread (window vectors, texts kept); 0: none.")  # fmt: skip
@click.option("--embedder", metavar="NAME",
              help="Embedder of the vectors [default: hashing at 384 dimensions, MiniLM's size].")  # fmt: skip
@click.option("--preset", default="balanced", show_default=True, metavar="NAME", help="Retrieval preset searched.")
@click.option("--data", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="LoCoMo JSON file for realistic sentences [default: built-in sentences].")  # fmt: skip
@click.option("--cache/--no-cache", default=True, show_default=True,
              help="Keep the corpus vectors in the user cache dir (as bench speed does) across runs.")  # fmt: skip
@click.option("--namespaces", type=click.IntRange(min=1), default=1, show_default=True,
              help="Store SIZE memories in each of N namespaces, searched in turn (a server's users).")  # fmt: skip
@click.option("--vector-cache-total-mb", type=click.IntRange(min=0), metavar="MB",
              help="The SQLite backend's budget for the vector copies of all namespaces [default: 1024].")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@click.option("--out", type=click.Path(dir_okay=False, writable=True, path_type=Path),
              help="Also write the JSON report to this file.")  # fmt: skip
@click.option("--quiet", "-q", is_flag=True, help="No progress notes on stderr.")
def bench_disk(
    size: int, queries: int, thread_size: int, embedder: str | None, preset: str, data: Path | None, cache: bool,
    namespaces: int, vector_cache_total_mb: int | None, as_json: bool, out: Path | None, quiet: bool,
) -> None:  # fmt: skip
    """Disk bytes per memory by component (rows, full-text, vectors, sign bits, windows, ledger) and RSS.

    Stores SIZE generated memories with precomputed vectors in a new SQLite
    file, checkpoints it, reads SQLite's page statistics, then runs searches
    and reports this process's RSS after the load, its peak during the
    searches and after them.

    \b
    Examples:
      memory bench disk --size 100000
      memory bench disk --size 20000 --thread-size 20 --json
      memory bench disk --size 100000 --namespaces 12   # RSS of a server with 12 large users
    """
    import platformdirs

    from memory.bench.disk import format_disk, run_disk

    note = (lambda message: None) if quiet else (lambda message: click.echo(message, err=True))
    try:
        report = run_disk(
            size=size, queries=queries, thread_size=thread_size, embedder=embedder, preset=preset, data=data,
            namespaces=namespaces, vector_cache_total_mb=vector_cache_total_mb,
            cache_dir=Path(platformdirs.user_cache_dir("memory")) / "bench" if cache else None, progress=note,
        )  # fmt: skip
    except Error as exc:
        raise click.ClickException(" ".join(str(exc).split()) or type(exc).__name__) from exc
    document = json.dumps(report, indent=2)
    if out is not None:
        out.write_text(document + "\n", encoding="utf-8")
    click.echo(document if as_json else format_disk(report))
