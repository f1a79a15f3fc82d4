"""Memory commands: remember, recall, get, forget, history, list, stats."""

from __future__ import annotations

import sys
from typing import Any

import click

from memory.cli.common import (
    changed_fields,
    emit_json,
    filter_kwargs,
    filter_options,
    info,
    json_option,
    one_line,
    open_memory,
    parse_meta,
    print_item,
    print_table,
    read_text_arg,
    scope_options,
    short_id,
)
from memory.types import Hit

__all__ = ["remember", "recall", "get", "forget", "history", "list_memories", "stats"]

CONTENT_WIDTH = 60


@click.command()
@click.argument("text")
@scope_options
@click.option("--kind", "-k", metavar="KIND", help="What sort of memory: fact (default), conversation, document, …")
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="A tag (repeatable).")
@click.option(
    "--meta", "metadata", multiple=True, metavar="KEY=VALUE", callback=parse_meta,
    help="A metadata entry (repeatable); VALUE is parsed as JSON if it parses, else kept as a string.",
)  # fmt: skip
@click.option("--context", metavar="TEXT", help="How or why this was learned.")
@click.option("--importance", type=float, metavar="0..1", help="How much it matters, from 0 to 1 (default 0.5).")
@click.option(
    "--sensitivity", type=click.Choice(["normal", "private", "secret"]),
    help="normal (default), private, or secret (never embedded, never recalled without clearance).",
)  # fmt: skip
@click.option("--ttl", type=float, metavar="SECONDS", help="Forget it automatically after this many seconds.")
@click.option(
    "--extract", "extract", flag_value=True, default=None,
    help="Extract keywords, entities and relations and decide updates (inline or queued, see README).",
)  # fmt: skip
@json_option
@click.pass_context
def remember(ctx: click.Context, /, text: str, as_json: bool, **fields: Any) -> None:
    """Store a memory and print its id.

    TEXT '-' reads the text from stdin. The same text in the same scope is stored once: its existing id is printed.

    \b
    Examples:
      memory remember "Alice prefers dark mode" --user alice --tag ui
      memory remember "Deploys on Fridays" --meta team=infra --meta priority=2
      cat notes.txt | memory remember - --kind document
    """
    content = read_text_arg(text, "text to remember")
    given = {name: value for name, value in fields.items() if value is not None and value != ()}
    if "tags" in given:
        given["tags"] = list(given["tags"])
    with open_memory(ctx) as mem:
        memory_id = mem.remember(content, **given)
    if as_json:
        emit_json({"id": memory_id})
    else:
        click.echo(memory_id)


def _channels(hit: Hit) -> str:
    parts = sorted(hit.channels.values(), key=lambda c: c.channel)
    return " · ".join(f"{c.channel} #{c.rank} {c.raw:.3g}" for c in parts)


@click.command()
@click.argument("query")
@click.option("--limit", "-l", type=click.IntRange(1, 1000), default=10, show_default=True, help="How many hits.")
@filter_options
@json_option
@click.pass_context
def recall(ctx: click.Context, /, query: str, limit: int, as_json: bool, **filters: Any) -> None:
    """Find the memories most relevant to a query.

    Hits come best first (QUERY '-' reads stdin). Each hit shows its score and the channels that found it (rank and raw
    score per channel); --json adds the score parts and the full item. A configured reranker ([reranker] in the
    config, or MEMORY_RERANKER=http MEMORY_RERANKER_OPTIONS='{"base_url": ...}') reorders the fused top-N; its score
    is the hit's `rerank` part. A chat turn (metadata role user/assistant) of the other side than the question asks
    about (first person: the user's; "you mentioned": the assistant's), or of another named speaker (metadata
    speaker) than the one a third-person question names, has its score scaled: its `speaker` part. A question that
    asks for an amount ("how many", "how much", "how old", …) scales the hits that state none: their `quantity` part.

    \b
    Examples:
      memory recall "what does alice like?" --user alice
      memory recall "deploy" --tag ops --limit 3 --json
    """
    text = read_text_arg(query, "query")
    with open_memory(ctx) as mem:
        hits = mem.recall(text, limit=limit, **filter_kwargs(filters))
    if as_json:
        emit_json({"hits": [hit.model_dump(mode="json") for hit in hits]})
        return
    if not hits:
        info("no memories matched")
        return
    rows = [
        [rank, f"{hit.score:.3f}", short_id(hit.id), one_line(hit.content, CONTENT_WIDTH), _channels(hit)]
        for rank, hit in enumerate(hits, 1)
    ]
    print_table(["#", "score", "id", "content", "channels"], rows)


@click.command()
@click.argument("memory_id", metavar="ID")
@json_option
@click.pass_context
def get(ctx: click.Context, memory_id: str, as_json: bool) -> None:
    """Show one memory with every field.

    \b
    Example:
      memory get 0193a0c2-5f1e-7c3a-9b2d-4e5f6a7b8c9d --json
    """
    with open_memory(ctx) as mem:
        item = mem.get(memory_id)
    if as_json:
        emit_json(item.model_dump(mode="json"))
    else:
        print_item(item)


def _confirm(question: str, yes: bool) -> None:
    """Go on when --yes was given or the user agrees at a terminal; otherwise stop."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise click.UsageError("refusing to delete without confirmation: add --yes")
    if not click.confirm(question, default=False, err=True):
        raise click.Abort()


@click.command()
@click.argument("memory_ids", metavar="[ID]...", nargs=-1)
@click.option("--all", "forget_all", is_flag=True, help="Forget every memory in the namespace, or in the scope given.")
@scope_options
@click.option("--reason", metavar="TEXT", help="Why; kept in the history.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@json_option
@click.pass_context
def forget(
    ctx: click.Context,
    memory_ids: tuple[str, ...],
    forget_all: bool,
    user: str | None,
    agent: str | None,
    thread: str | None,
    reason: str | None,
    yes: bool,
    as_json: bool,
) -> None:
    """Delete memories by id, or a whole scope with --all.

    Their history is kept. --all deletes secret, expired and closed memories too, and needs --yes (or
    a yes at the terminal).

    \b
    Examples:
      memory forget 0193a0c2-5f1e-7c3a-9b2d-4e5f6a7b8c9d
      memory forget --all --user alice --yes
    """
    if forget_all == bool(memory_ids):
        raise click.UsageError("give memory ids, or --all (with --user/--agent/--thread to narrow it)")
    if not forget_all and (user or agent or thread):
        raise click.UsageError("--user/--agent/--thread go with --all")
    with open_memory(ctx) as mem:
        if forget_all:
            scope = ", ".join(f"{k}={v}" for k, v in (("user", user), ("agent", agent), ("thread", thread)) if v)
            _confirm(f"Forget every memory in namespace {mem.namespace!r}{' for ' + scope if scope else ''}?", yes)
            count = mem.forget_all(user=user, agent=agent, thread=thread, reason=reason)
        else:
            ids = list(dict.fromkeys(memory_ids))
            if len(ids) > 1 and not yes and sys.stdin.isatty():
                _confirm(f"Forget {len(ids)} memories?", yes)
            count = mem.forget(ids[0] if len(ids) == 1 else ids, reason=reason)
    if as_json:
        emit_json({"forgotten": count})
    else:
        click.echo(f"forgot {count} memor{'y' if count == 1 else 'ies'}")
    if not forget_all and count < len(set(memory_ids)):
        info(f"warning: {len(set(memory_ids)) - count} of the ids were not found")


@click.command()
@click.argument("memory_id", metavar="ID")
@json_option
@click.pass_context
def history(ctx: click.Context, memory_id: str, as_json: bool) -> None:
    """Show every recorded change of a memory.

    Oldest first, with the fields each change touched; the history is kept
    after a memory is forgotten.

    \b
    Example:
      memory history 0193a0c2-5f1e-7c3a-9b2d-4e5f6a7b8c9d
    """
    with open_memory(ctx) as mem:
        entries = mem.history(memory_id)
    if as_json:
        emit_json(
            {"id": memory_id, "entries": [{**e.model_dump(mode="json"), "changed": changed_fields(e)} for e in entries]}
        )
        return
    summary = {"add": "(created)", "delete": "(removed)"}
    rows = [[e.op, e.at, e.reason, ", ".join(changed_fields(e)) or summary.get(e.op, "")] for e in entries]
    print_table(["op", "at", "reason", "changed"], rows, title=f"history of {memory_id}")


@click.command("list")
@filter_options
@click.option("--limit", "-l", type=click.IntRange(1, 1000), default=20, show_default=True, help="Page size.")
@click.option("--cursor", metavar="CURSOR", help="Continue after a previous page (its printed next cursor).")
@click.option("--oldest-first", is_flag=True, help="Oldest first instead of newest first.")
@json_option
@click.pass_context
def list_memories(
    ctx: click.Context, /, limit: int, cursor: str | None, oldest_first: bool, as_json: bool, **filters: Any
) -> None:
    """List memories page by page, newest first.

    Prints the cursor of the next page; pass it back with --cursor.

    \b
    Examples:
      memory list --user alice --tag ui
      memory list --limit 50 --cursor <next cursor>
    """
    with open_memory(ctx) as mem:
        page = mem.list(limit=limit, cursor=cursor, oldest_first=oldest_first, **filter_kwargs(filters))
    if as_json:
        emit_json({"items": [item.model_dump(mode="json") for item in page.items], "next_cursor": page.next_cursor})
        return
    if not page.items:
        info("no memories")
        return
    rows = [
        [
            item.id,
            f"{item.created_at:%Y-%m-%d %H:%M}",
            item.kind,
            item.user,
            item.tags,
            one_line(item.content, CONTENT_WIDTH),
        ]
        for item in page.items
    ]
    print_table(["id", "created", "kind", "user", "tags", "content"], rows, no_wrap=("id",))
    if page.next_cursor:
        click.echo(f"next cursor: {page.next_cursor}")


@click.command()
@scope_options
@json_option
@click.pass_context
def stats(ctx: click.Context, user: str | None, agent: str | None, thread: str | None, as_json: bool) -> None:
    """Show counts of memories in the namespace.

    Counts by kind, sensitivity and embedding status, for the namespace or
    the scope given by --user/--agent/--thread.
    """
    with open_memory(ctx) as mem:
        result = mem.stats(user=user, agent=agent, thread=thread, clearance="secret")  # the file's owner sees all
    if as_json:
        emit_json(result.model_dump(mode="json"))
        return
    rows: list[list[Any]] = [
        ["namespace", result.namespace],
        ["backend", result.backend],
        ["memories", result.total],
        ["ledger entries", result.ledger_entries],
        ["embedding model", result.embedding_model],
        ["embedding dim", result.embedding_dim],
    ]
    for label, counts in (("kind", result.by_kind), ("sensitivity", result.by_sensitivity),
                          ("embedding", result.by_embedding_status)):  # fmt: skip
        rows.extend([f"{label}: {key}", value] for key, value in sorted(counts.items()))
    print_table(["", "value"], rows)
