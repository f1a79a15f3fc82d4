"""``memory migrate``: copy a whole store to another backend (the logic is in :mod:`memory.storecopy`)."""

from __future__ import annotations

from dataclasses import asdict

import click

from memory.backends import open_backend
from memory.backends.servers import redact
from memory.cli.common import build_settings, emit_json, global_options, json_option, progress
from memory.storecopy import copy_store

__all__ = ["migrate"]


@click.command()
@click.option("--from", "source", metavar="URL", help="Store to copy (default: the configured database).")
@click.option("--to", "target", required=True, metavar="URL", help="Empty store to copy into (created if needed).")
@json_option
@click.pass_context
def migrate(ctx: click.Context, source: str | None, target: str, as_json: bool) -> None:
    """Copy a whole store to another one, losslessly: memories, graph, tiers, chats.

    Every namespace is copied, secrets included: memories with ids, times,
    access statistics, vectors and each item's history (ledger); the
    knowledge graph (entities with aliases and vectors, relations including
    invalidated ones, mentions, links); the tiers (STM pages, MTM segments,
    personas, system memory, tier configs); conversations and blocks;
    feedback (conversation records, prompt versions); API keys. Context
    windows are rebuilt on the target (context_window setting). Job state
    is not copied. The target must be empty; the source is not changed.

    \b
    Examples:
      memory migrate --from sqlite:///memory.db --to postgresql://me@localhost/memory
      memory migrate --from postgresql://me@localhost/memory --to sqlite:///backup.db --json
    """
    settings = build_settings(global_options(ctx))
    source_url = source or settings.database
    if source_url == target:
        raise click.UsageError("--from and --to name the same store")
    src = open_backend(source_url)
    try:
        dst = open_backend(target)
        try:
            with progress("copying") as on_progress:
                report = copy_store(src, dst, on_progress=on_progress, window_size=settings.context_window)
        finally:
            dst.close()
    finally:
        src.close()
    result = {"from": redact(source_url), "to": redact(target), **asdict(report)}
    if as_json:
        emit_json(result)
        return
    click.echo(
        f"copied {report.items} memories ({report.vectors} vectors, {report.ledger_entries} ledger entries, "
        f"{report.namespaces} namespaces, {report.vector_spaces} vector spaces)"
    )
    click.echo(
        f"graph: {report.entities} entities, {report.relations} relations, {report.mentions} mentions, "
        f"{report.links} links"
    )
    click.echo(f"tiers: {report.tier_records} tier records")
    click.echo(f"conversations: {report.messages} messages, {report.blocks} blocks; {report.api_keys} API keys")
    click.echo(f"feedback: {report.feedback_records} conversation records, {report.prompt_versions} prompt versions")
    click.echo(f"windows: {report.windows} context windows rebuilt")
    for note in report.skipped:
        click.echo(f"skipped {note}")
    click.echo(f"from {result['from']}")
    click.echo(f"to   {result['to']}")
