"""``memory export`` and ``memory import``: JSONL backups (the logic is in :mod:`memory.transfer`)."""

from __future__ import annotations

import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

import click

from memory.cli.common import emit_json, filter_kwargs, filter_options, info, json_option, open_memory, progress
from memory.transfer import export_jsonl, import_jsonl

__all__ = ["export", "import_memories"]


@click.command()
@click.option(
    "--out", "-o", "out", default="-", show_default=True, metavar="FILE|-",
    help="Where to write the JSONL ('-' is stdout). A file is written in full or not at all.",
)  # fmt: skip
@filter_options
@click.option("--include-secret", is_flag=True, help="Also export secret memories (left out by default).")
@json_option
@click.pass_context
def export(ctx: click.Context, /, out: str, include_secret: bool, as_json: bool, **filters: Any) -> None:
    """Write memories to JSONL, vectors included.

    Exports the namespace's memories, or the filtered ones. The first line is
    a header, then one memory per line with every field and its vector;
    `memory import` reads it back losslessly. Expired memories are left out,
    closed (no longer valid) facts are kept.

    \b
    Examples:
      memory export --out backup.jsonl
      memory export --user alice --tag ui > alice.jsonl
    """
    if as_json and out == "-":
        raise click.UsageError("the export itself goes to stdout; use --out FILE with --json")
    clearance = "secret" if include_secret else "private"
    with open_memory(ctx) as mem, progress("exporting") as on_progress:
        if out == "-":
            count = export_jsonl(
                mem, sys.stdout, clearance=clearance, on_progress=on_progress, **filter_kwargs(filters)
            )
        else:
            target = Path(out)
            partial = target.with_name(target.name + ".partial")
            try:
                with partial.open("w", encoding="utf-8", newline="\n") as stream:
                    count = export_jsonl(
                        mem, stream, clearance=clearance, on_progress=on_progress, **filter_kwargs(filters)
                    )
                os.replace(partial, target)
            finally:
                partial.unlink(missing_ok=True)
    if as_json:
        emit_json({"exported": count, "out": out})
    elif out == "-":
        info(f"exported {count} memories")
    else:
        click.echo(f"exported {count} memories to {out}")


@click.command("import")
@click.argument("source", metavar="FILE|-")
@click.option(
    "--from", "origin", type=click.Choice(["memory", "mem0", "letta"]), default="memory", show_default=True,
    help="What wrote FILE: this tool's export, mem0 (get_all JSON) or Letta (an agent file, .af).",
)  # fmt: skip
@json_option
@click.pass_context
def import_memories(ctx: click.Context, source: str, origin: str, as_json: bool) -> None:
    """Import memories from a JSONL export (or from mem0 or Letta with --from).

    FILE is a file written by `memory export`, or '-' for stdin. The whole
    file is checked first: a bad line stops the import with its line number
    and nothing is written. Memories keep their ids and namespaces; ids
    already stored are skipped, same content in the same scope counts as a
    duplicate. Vectors are reused when the file's embedding model is the
    store's; otherwise the memories are re-embedded.

    \b
    Examples:
      memory import backup.jsonl
      memory --db sqlite:///copy.db import backup.jsonl --json
      memory import --from mem0 mem0_get_all.json
      memory import --from letta agent.af
    """
    if origin != "memory":
        _import_foreign(ctx, origin, source, as_json)
        return
    with open_memory(ctx) as mem, progress("importing") as on_progress:
        if source == "-":
            report = import_jsonl(mem, sys.stdin, on_progress=on_progress)
        else:
            stream: IO[str]
            try:
                stream = open(source, encoding="utf-8")  # noqa: SIM115 - closed below
            except OSError as exc:
                raise click.BadParameter(f"cannot open {source}: {exc.strerror}", param_hint="FILE") from exc
            with stream:
                report = import_jsonl(mem, stream, on_progress=on_progress)
    if as_json:
        emit_json(asdict(report))
        return
    click.echo(
        f"imported {report.imported} memories; {report.duplicates} duplicates, "
        f"{report.skipped_existing} already present, {report.reembedded} re-embedded"
        + (f", {report.pending} left pending (embedder failed)" if report.pending else "")
        + (f"; {report.messages} messages, {report.blocks} blocks" if report.messages or report.blocks else "")
        + (f"; {report.tiers} tier records" if report.tiers else "")
        + (f"; {report.feedback} feedback records and prompt versions" if report.feedback else "")
    )


def _import_foreign(ctx: click.Context, origin: str, source: str, as_json: bool) -> None:
    """``memory import --from mem0|letta``: see :mod:`memory.importers`."""
    from memory.importers import import_foreign

    with open_memory(ctx) as mem:
        if source == "-":
            report = import_foreign(mem, origin, sys.stdin)
        else:
            try:
                stream = open(source, encoding="utf-8")  # noqa: SIM115 - closed below
            except OSError as exc:
                raise click.BadParameter(f"cannot open {source}: {exc.strerror}", param_hint="FILE") from exc
            with stream:
                report = import_foreign(mem, origin, stream)
    if as_json:
        emit_json(report.to_dict())
        return
    written = ", ".join(f"{n} {kind}" for kind, n in sorted(report.imported.items())) or "nothing"
    click.echo(f"imported from {origin}: {written}; skipped {len(report.skipped)}")
    for reason, count in sorted(report.skipped_by_reason().items()):
        click.echo(f"  skipped {count}: {reason}")
