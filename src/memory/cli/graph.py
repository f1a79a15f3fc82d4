"""Knowledge-graph commands: ``memory graph show|query|entities``, ``memory link``, ``memory extract``."""

from __future__ import annotations

from typing import Any

import click

from memory.cli.common import (
    build_settings,
    emit_json,
    global_options,
    json_option,
    open_memory,
    print_table,
    read_text_arg,
    short_id,
)
from memory.config import ProviderSpec
from memory.memory import Memory

__all__ = ["graph", "link", "extract"]

_CLEARANCE = click.option(
    "--clearance", type=click.Choice(["normal", "private", "secret"]), default="private", show_default=True,
    help="Highest sensitivity of the memories seen (a secret needs 'secret').",
)  # fmt: skip


@click.group()
def graph() -> None:
    """Explore the knowledge graph built by extraction: entities, relations, the memories behind them."""


@graph.command("show")
@click.argument("entity")
@click.option("--invalid", is_flag=True, help="Also show relations that were closed (superseded).")
@json_option
@click.pass_context
def show(ctx: click.Context, entity: str, invalid: bool, as_json: bool) -> None:
    """Show an entity (by name or alias): its type, aliases, relations and the memories that mention it.

    \b
    Example:
      memory graph show Alice
    """
    with open_memory(ctx) as mem:
        found = mem.graph.entity(entity)
        facts = mem.graph.facts_about(entity, include_invalid=invalid)
        memory_ids = mem.graph.memories_about(entity)
    if as_json:
        emit_json({
            "entity": found.model_dump(mode="json"),
            "relations": [r.model_dump(mode="json") for r in facts],
            "memory_ids": memory_ids,
        })  # fmt: skip
        return
    aliases = f"  (aliases: {', '.join(found.aliases)})" if found.aliases else ""
    click.echo(f"{found.name}  [{found.type}]{aliases}  {len(memory_ids)} memories")
    rows = [
        [r.text, "closed " + r.invalid_at.isoformat(timespec="seconds") if r.invalid_at else "valid",
         ", ".join(short_id(s) for s in r.source_ids)]
        for r in facts
    ]  # fmt: skip
    _table(["relation", "validity", "sources"], rows, empty="no relations")


@graph.command("query")
@click.argument("entity", required=False)
@click.option("--depth", type=click.IntRange(1, 4), default=1, show_default=True, help="Relations to follow out.")
@click.option("--predicate", "predicates", multiple=True, metavar="P", help="Keep only this predicate (repeatable).")
@click.option("--type", "types", multiple=True, metavar="T", help="Keep only entities of this type (repeatable).")
@click.option("--invalid", is_flag=True, help="Include closed relations.")
@click.option("--limit", type=click.IntRange(1, 1000), default=200, show_default=True, help="Most relations returned.")
@_CLEARANCE
@json_option
@click.pass_context
def query(
    ctx: click.Context, entity: str | None, depth: int, predicates: tuple[str, ...], types: tuple[str, ...],
    invalid: bool, limit: int, clearance: str, as_json: bool,
) -> None:  # fmt: skip
    """List the relations within DEPTH of ENTITY (or the whole graph), filtered by predicate and type.

    \b
    Examples:
      memory graph query Alice --depth 2
      memory graph query --predicate "lives in" --json
    """
    with open_memory(ctx) as mem:
        result = mem.graph.query_graph(
            entity, depth=depth, predicates=predicates or None, entity_types=types or None,
            include_invalid=invalid, limit=limit, clearance=clearance,
        )  # fmt: skip
    if as_json:
        emit_json(result.to_json())
        return
    rows = [[r.subject, r.predicate, r.object, str(len(r.source_ids))] for r in result.relations]
    _table(["subject", "predicate", "object", "sources"], rows, empty="no relations")


@graph.command("entities")
@click.option("--type", "type_", metavar="T", help="Only entities of this type.")
@click.option("--limit", type=click.IntRange(1, 1000), default=100, show_default=True, help="Most entities listed.")
@json_option
@click.pass_context
def entities(ctx: click.Context, type_: str | None, limit: int, as_json: bool) -> None:
    """List entities by name, with their type and aliases."""
    with open_memory(ctx) as mem:
        found = mem.graph.entities(type=type_, limit=limit)
        counts = mem.graph.counts()
    if as_json:
        emit_json({"entities": [e.model_dump(mode="json") for e in found], "counts": counts})
        return
    _table(["name", "type", "aliases"], [[e.name, e.type, ", ".join(e.aliases)] for e in found], empty="no entities")


@click.command()
@click.argument("source")
@click.argument("target")
@click.option("--type", "type_", default="relates_to", show_default=True, help="The kind of link.")
@_CLEARANCE
@json_option
@click.pass_context
def link(ctx: click.Context, source: str, target: str, type_: str, clearance: str, as_json: bool) -> None:
    """Link memory SOURCE to memory TARGET with a typed edge (idempotent).

    \b
    Example:
      memory link 01J...A 01J...B --type follows
    """
    with open_memory(ctx) as mem:
        made = mem.link(source, target, type_, clearance=clearance)
    if as_json:
        emit_json(made.model_dump(mode="json"))
    else:
        click.echo(f"{made.source_id} -[{made.type}]-> {made.target_id}")


def _table(columns: list[str], rows: list[list[Any]], *, empty: str) -> None:
    if rows:
        print_table(columns, rows)
    else:
        click.echo(f"({empty})")


def _open_with_llm(ctx: click.Context, llm: str | None) -> Memory:
    settings = build_settings(global_options(ctx))
    if llm and llm != settings.llm.provider:
        settings = settings.model_copy(update={"llm": ProviderSpec(provider=llm)})
    return Memory(settings=settings)


@click.command()
@click.argument("text", required=False)
@click.option("--user", "-u", metavar="USER", help="Who is speaking ('I' and 'my' refer to them).")
@click.option("--llm", metavar="NAME", help="LLM provider: heuristic, openai, ollama [env: MEMORY_LLM].")
@click.option("--pending", is_flag=True, help="Instead of TEXT: run extraction for memories queued in the background.")
@click.option("--retry-failed", is_flag=True, help="With --pending: also retry memories whose extraction failed.")
@click.option(
    "--limit", type=click.IntRange(1, 1000), default=100, show_default=True, help="With --pending: most memories."
)
@json_option
@click.pass_context
def extract(
    ctx: click.Context, text: str | None, user: str | None, llm: str | None, pending: bool, retry_failed: bool,
    limit: int, as_json: bool,
) -> None:  # fmt: skip
    """Show what extraction would store for TEXT (facts, keywords, entities, relations); writes nothing.

    TEXT '-' reads stdin. With --pending, process the background extraction queue instead (this writes).

    \b
    Examples:
      memory extract "Alice moved to Berlin in 2021"
      MEMORY_LLM=openai memory extract --pending
    """
    if pending == (text is not None):
        raise click.UsageError("give TEXT to preview, or --pending to process the queue (not both)")
    with _open_with_llm(ctx, llm) as mem:
        if pending:
            reports = mem.extract_pending(limit=limit, retry_failed=retry_failed)
            if as_json:
                emit_json({"processed": [r.to_json() for r in reports]})
                return
            rows = [
                [short_id(r.memory_id), r.status, r.decision.action if r.decision else "-", str(len(r.relation_ids)),
                 (r.error or "")[:60]]
                for r in reports
            ]  # fmt: skip
            _table(["memory", "status", "decision", "relations", "error"], rows, empty="nothing pending")
            return
        result = mem.extract(read_text_arg(text or "", "text to extract from"), speaker=user)
    if as_json:
        emit_json(result.to_json())
        return
    _print_extraction(result.to_json())


def _print_extraction(data: dict[str, Any]) -> None:
    click.echo(f"model {data['model']}  prompt {data['prompt_version']}  tokens {data['usage']['total_tokens']}"
               + (" (estimated)" if data["usage"]["estimated"] else ""))  # fmt: skip
    click.echo("keywords: " + (", ".join(data["keywords"]) or "-"))
    _table(["fact"], [[f] for f in data["facts"]], empty="no facts")
    _table(["entity", "type"], [[e["name"], e["type"]] for e in data["entities"]], empty="no entities")
    _table(
        ["subject", "predicate", "object"],
        [[r["subject"], r["predicate"], r["object"]] for r in data["relations"]],
        empty="no relations",
    )
