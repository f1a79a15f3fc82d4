"""Conversation commands: messages, tail, threads, namespaces, blocks, end-conversation, sync, prune, worker."""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from typing import Any

import click

from memory.cli.common import emit_json, info, json_option, one_line, open_memory, print_table, read_text_arg
from memory.episodic.types import Message

__all__ = [
    "messages",
    "tail",
    "threads",
    "namespaces",
    "blocks",
    "end_conversation",
    "sync",
    "prune",
    "worker",
]

CONTENT_WIDTH = 70


def _message_row(m: Message) -> list[Any]:
    text = m.content or (f"[{m.content_type}] {m.media.name or m.media.sha256 or m.media.uri}" if m.media else "")
    return [m.turn, m.role if not m.speaker else f"{m.role}:{m.speaker}", m.created_at, one_line(text, CONTENT_WIDTH),
            m.embedding_status]  # fmt: skip


def _print_messages(found: list[Message], title: str | None = None) -> None:
    print_table(["turn", "role", "created", "content", "embedding"], [_message_row(m) for m in found], title=title)


def _dump(m: Message) -> dict[str, Any]:
    data: dict[str, Any] = m.model_dump(mode="json")
    return data


# -- messages ----------------------------------------------------------------


@click.group()
def messages() -> None:
    """Conversation history: append, show, search and archive messages of a thread."""


@messages.command("append")
@click.argument("thread")
@click.argument("text", required=False)
@click.option("--role", "-r", default="user", show_default=True, help="Who wrote it: user, assistant, system, tool, …")
@click.option("--speaker", metavar="NAME", help="The speaker's name, if not just the role.")
@click.option("--user", "-u", metavar="USER", help="The user the conversation belongs to.")
@click.option("--agent", "-a", metavar="AGENT", help="The agent the conversation belongs to.")
@click.option(
    "--type", "content_type", type=click.Choice(["text", "image", "audio", "file", "snapshot"]), default="text",
    show_default=True, help="Content type; non-text messages need --media or --uri.",
)  # fmt: skip
@click.option(
    "--media", type=click.Path(exists=True, dir_okay=False), help="A file to store (by content hash) with it."
)
@click.option("--uri", metavar="URI", help="An external reference (e.g. a snapshot's durable location).")
@click.option(
    "--sensitivity", type=click.Choice(["normal", "private", "secret"]),
    help="normal (default), private, or secret (never embedded, hidden without clearance).",
)  # fmt: skip
@click.option("--ttl", type=float, metavar="SECONDS", help="Delete it automatically (memory prune) after this long.")
@click.option("--embed", is_flag=True, help="Embed it now instead of leaving it to the sync job.")
@json_option
@click.pass_context
def append_message(ctx: click.Context, /, thread: str, text: str | None, as_json: bool, **fields: Any) -> None:
    """Append a message to THREAD and print its turn number.

    TEXT '-' reads the text from stdin.

    \b
    Examples:
      memory messages append t1 "I moved to Berlin" --user alice
      memory messages append t1 "Sounds great" --role assistant
      memory messages append t1 "holiday" --type image --media cat.png
    """
    content = read_text_arg(text, "message text") if text is not None else None
    embed = bool(fields.pop("embed"))
    given = {name: value for name, value in fields.items() if value is not None}
    with open_memory(ctx) as mem:
        message = mem.messages.append(thread, content, embed=embed, **given)
    if as_json:
        emit_json(_dump(message))
    else:
        click.echo(f"{message.thread} turn {message.turn} ({message.id})")


@messages.command("show")
@click.argument("thread")
@click.option("--last", "-n", "last", type=int, default=20, show_default=True, help="How many of the newest messages.")
@click.option("--archived", is_flag=True, help="Show the thread's archived messages instead.")
@click.option("--clearance", type=click.Choice(["normal", "private", "secret"]), default="private",
              show_default=True, help="Show messages up to this sensitivity.")  # fmt: skip
@json_option
@click.pass_context
def show_messages(ctx: click.Context, thread: str, last: int, archived: bool, clearance: str, as_json: bool) -> None:
    """Show the newest messages of THREAD (oldest first)."""
    with open_memory(ctx) as mem:
        found = mem.messages.archived(thread) if archived else mem.messages.recent(thread, last, clearance=clearance)
    if as_json:
        emit_json({"thread": thread, "messages": [_dump(m) for m in found]})
    else:
        _print_messages(found, title=f"{thread}{' (archived)' if archived else ''}")


@messages.command("search")
@click.argument("query")
@click.option("--thread", "-t", metavar="THREAD", help="Only this thread.")
@click.option("--user", "-u", metavar="USER", help="Only this user's messages.")
@click.option("--limit", "-l", type=int, default=10, show_default=True, help="How many results.")
@json_option
@click.pass_context
def search_messages(
    ctx: click.Context, query: str, thread: str | None, user: str | None, limit: int, as_json: bool
) -> None:
    """Search chat history (BM25 + vectors fused, like recall)."""
    with open_memory(ctx) as mem:
        hits = mem.messages.search(query, thread=thread, user=user, limit=limit)
    if as_json:
        emit_json({"query": query, "hits": [h.model_dump(mode="json") for h in hits]})
        return
    rows = [
        [f"{h.score:.3f}", h.message.thread, h.message.turn, h.message.role, one_line(h.message.content, CONTENT_WIDTH),
         " · ".join(f"{c.channel} #{c.rank}" for c in h.channels.values())]
        for h in hits
    ]  # fmt: skip
    print_table(["score", "thread", "turn", "role", "content", "channels"], rows)


@messages.command("archive")
@click.argument("thread")
@click.option("--keep-last", type=int, metavar="N", help="Keep the newest N messages hot.")
@click.option("--older-than", type=float, metavar="SECONDS", help="Archive messages older than this.")
@click.option("--delete", is_flag=True, help="Delete them for good (hot and archived) instead of archiving.")
@json_option
@click.pass_context
def archive_messages(
    ctx: click.Context, thread: str, keep_last: int | None, older_than: float | None, delete: bool, as_json: bool
) -> None:
    """Move older messages of THREAD to the archive (still exported), or --delete them."""
    with open_memory(ctx) as mem:
        action = mem.messages.clear if delete else mem.messages.archive
        count = action(thread, keep_last=keep_last, older_than=older_than)
    if as_json:
        emit_json({"thread": thread, "deleted" if delete else "archived": count})
    else:
        click.echo(f"{'deleted' if delete else 'archived'} {count} message(s) of {thread}")


# -- tail, threads, namespaces ------------------------------------------------


@click.command()
@click.argument("thread")
@click.option("--last", "-n", "last", type=int, default=10, show_default=True, help="Messages shown before following.")
@click.option("--once", is_flag=True, help="Print the newest messages and exit instead of following.")
@click.option("--timeout", type=float, metavar="SECONDS", help="Stop following after this long.")
@click.option("--interval", type=float, default=0.5, show_default=True, help="Seconds between polls.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per message (JSON Lines).")
@click.pass_context
def tail(
    ctx: click.Context, thread: str, last: int, once: bool, timeout: float | None, interval: float, as_json: bool
) -> None:
    """Print the newest messages of THREAD, then follow new ones (Ctrl-C stops)."""

    def show(message: Message) -> None:
        if as_json:
            click.echo(json.dumps(_dump(message), ensure_ascii=False))
        else:
            who = message.speaker or message.role
            click.echo(f"[{message.turn}] {message.created_at.isoformat(timespec='seconds')} {who}: "
                       f"{one_line(message.content or f'[{message.content_type}]')}")  # fmt: skip
        sys.stdout.flush()

    deadline = None if timeout is None else time.monotonic() + timeout
    with open_memory(ctx) as mem:
        recent = mem.messages.recent(thread, last)
        for message in recent:
            show(message)
        after = recent[-1].turn if recent else 0
        if once:
            return
        # Ctrl-C sets a flag the loop checks between polls: a KeyboardInterrupt raised at a random
        # point (say, just after a lock was taken) could leave the store unable to close.
        stop = threading.Event()
        previous = signal.getsignal(signal.SIGINT)
        catch = previous is not signal.SIG_IGN and threading.current_thread() is threading.main_thread()
        if catch:
            signal.signal(signal.SIGINT, lambda signum, frame: stop.set())
        try:
            while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
                for message in mem.messages.get_thread(thread, after_turn=after):
                    show(message)
                    after = message.turn
                stop.wait(max(interval, 0.05))
        finally:
            if catch:
                signal.signal(signal.SIGINT, previous)


@click.command()
@click.option("--user", "-u", metavar="USER", help="Only threads with messages of this user.")
@click.option("--limit", "-l", type=int, default=100, show_default=True, help="How many threads.")
@json_option
@click.pass_context
def threads(ctx: click.Context, user: str | None, limit: int, as_json: bool) -> None:
    """List the conversation threads of the namespace, most recent first."""
    with open_memory(ctx) as mem:
        found = mem.messages.threads(user=user, limit=limit)
    if as_json:
        emit_json({"threads": [t.model_dump(mode="json") for t in found]})
    else:
        print_table(["thread", "messages", "archived", "last turn", "last message"],
                    [[t.thread, t.messages, t.archived, t.last_turn, t.last_at] for t in found])  # fmt: skip


@click.command()
@json_option
@click.pass_context
def namespaces(ctx: click.Context, as_json: bool) -> None:
    """List the namespaces that hold memories, messages or blocks."""
    with open_memory(ctx) as mem:
        found = mem.namespaces()
    if as_json:
        emit_json({"namespaces": found})
    else:
        for name in found:
            click.echo(name)


# -- blocks ------------------------------------------------------------------


def _block_scope(func: Any) -> Any:
    func = click.option("--agent", "-a", metavar="AGENT", help="The agent whose block it is.")(func)
    return click.option("--user", "-u", metavar="USER", help="The user whose block it is.")(func)


@click.group()
def blocks() -> None:
    """Working-memory blocks (user_info, last_conversation_summary, …): show, set, append, history."""


@blocks.command("show")
@click.argument("label", required=False)
@_block_scope
@json_option
@click.pass_context
def show_blocks(ctx: click.Context, label: str | None, user: str | None, agent: str | None, as_json: bool) -> None:
    """Show one block, or every block of the scope."""
    with open_memory(ctx) as mem:
        found = [mem.blocks.get(label, user=user, agent=agent)] if label else mem.blocks.all(user=user, agent=agent)
    if as_json:
        emit_json({"blocks": [b.model_dump(mode="json") for b in found]})
    else:
        print_table(["label", "chars", "limit", "version", "value"],
                    [[b.label, len(b.value), b.limit, b.version, b.value] for b in found])  # fmt: skip


@blocks.command("set")
@click.argument("label")
@click.argument("text")
@_block_scope
@click.option("--limit", type=int, metavar="CHARS", help="Change the block's size limit.")
@json_option
@click.pass_context
def set_block(
    ctx: click.Context, label: str, text: str, user: str | None, agent: str | None, limit: int | None, as_json: bool
) -> None:
    """Replace the text of block LABEL (TEXT '-' reads stdin)."""
    with open_memory(ctx) as mem:
        block = mem.blocks.replace(label, read_text_arg(text, "block text"), user=user, agent=agent, limit=limit)
    if as_json:
        emit_json(block.model_dump(mode="json"))
    else:
        click.echo(f"{block.label}: {len(block.value)}/{block.limit} characters (version {block.version})")


@blocks.command("append")
@click.argument("label")
@click.argument("text")
@_block_scope
@json_option
@click.pass_context
def append_block(ctx: click.Context, label: str, text: str, user: str | None, agent: str | None, as_json: bool) -> None:
    """Append TEXT to block LABEL on a new line."""
    with open_memory(ctx) as mem:
        block = mem.blocks.append(label, read_text_arg(text, "block text"), user=user, agent=agent)
    if as_json:
        emit_json(block.model_dump(mode="json"))
    else:
        click.echo(f"{block.label}: {len(block.value)}/{block.limit} characters (version {block.version})")


@blocks.command("history")
@click.argument("label")
@_block_scope
@json_option
@click.pass_context
def block_history(ctx: click.Context, label: str, user: str | None, agent: str | None, as_json: bool) -> None:
    """Every change of block LABEL, oldest first."""
    with open_memory(ctx) as mem:
        changes = mem.blocks.history(label, user=user, agent=agent)
    if as_json:
        emit_json({"changes": [c.model_dump(mode="json") for c in changes]})
    else:
        print_table(["version", "op", "at", "after"], [[c.version, c.op, c.at, one_line(c.after, 80)] for c in changes])


@click.command("end-conversation")
@click.argument("thread")
@_block_scope
@json_option
@click.pass_context
def end_conversation(ctx: click.Context, thread: str, user: str | None, agent: str | None, as_json: bool) -> None:
    """Summarise THREAD into the working-memory blocks of its user/agent."""
    with open_memory(ctx) as mem:
        result = mem.end_conversation(thread, user=user, agent=agent)
    if as_json:
        emit_json({"thread": result.thread, "messages": result.messages, "user": result.user, "agent": result.agent,
                   "summarizer": result.summarizer, "fallback_reason": result.fallback_reason,
                   "updated": {k: b.model_dump(mode="json") for k, b in result.updated.items()},
                   "reward": result.record.reward if result.record is not None else None,
                   "record": result.record.model_dump(mode="json") if result.record is not None else None})  # fmt: skip
    else:
        click.echo(f"{result.messages} message(s) read; updated: {', '.join(result.updated) or 'nothing'} "
                   f"({result.summarizer} summarizer)")  # fmt: skip
        if result.record is not None:
            reward = "unscored" if result.record.reward is None else f"{result.record.reward:.4f}"
            click.echo(f"conversation record written; reward {reward}")
        if result.fallback_reason:
            click.echo(f"the LLM failed, extractive summary used: {result.fallback_reason}", err=True)


# -- jobs --------------------------------------------------------------------


@click.command()
@click.option("--status", is_flag=True, help="Show pending counts, the cursor and the last error; do no work.")
@click.option("--dry-run", is_flag=True, help="Estimate the work (count, characters, batches); claim nothing.")
@click.option("--batch-size", type=int, metavar="N", help="Rows per claimed batch (default: limits.embed_batch_size).")
@click.option("--lease", type=float, metavar="SECONDS", default=300.0, show_default=True,
              help="How long a claim holds before another worker may take the rows.")  # fmt: skip
@click.option("--max-batches", type=int, metavar="N", help="Stop after N batches.")
@json_option
@click.pass_context
def sync(
    ctx: click.Context,
    status: bool,
    dry_run: bool,
    batch_size: int | None,
    lease: float,
    max_batches: int | None,
    as_json: bool,
) -> None:
    """Embed pending messages and memories (the episodic→semantic sync job).

    Exit code 1 when the embedder failed (the rows stay failed/pending with the error; rerun later).
    """
    from memory.episodic.sync import SyncJob

    ns = ctx.find_root().obj.namespace if ctx.find_root().obj is not None else None
    with open_memory(ctx) as mem:
        job = SyncJob(mem.core, namespace=ns, batch_size=batch_size, lease_seconds=lease)
        if status:
            data = job.status().to_dict()
            if as_json:
                emit_json(data)
                return
            state = data["state"] or {}
            print_table(["", "pending", "failed", "done", "skipped"], [
                ["messages", *(data["messages"].get(s, 0) for s in ("pending", "failed", "done", "skipped"))],
                ["memories", *(data["items"].get(s, 0) for s in ("pending", "failed", "done", "skipped"))],
            ])  # fmt: skip
            click.echo(f"claimed (in flight): {data['claimed'] or 'none'}")
            for key in ("cursor", "runs", "processed", "failed", "skipped", "last_finished_at", "last_error",
                        "last_error_at", "worker"):  # fmt: skip
                click.echo(f"{key}: {state.get(key)}")
            return
        if dry_run:
            estimate = job.estimate().to_dict()
            if as_json:
                emit_json(estimate)
            else:
                click.echo(
                    f"would embed {estimate['messages']} message(s) ({estimate['message_chars']} chars) and "
                    f"{estimate['items']} memory(ies) ({estimate['item_chars']} chars) in {estimate['batches']} "
                    f"batch(es), about {estimate['approx_tokens']} tokens, with {estimate['embedder']}"
                )
            return
        report = job.run(max_batches=max_batches)
    if as_json:
        emit_json(report.to_dict())
    else:
        click.echo(
            f"embedded {report.messages_done} message(s) and {report.items_done} memory(ies); "
            f"{report.messages_skipped} skipped, {report.messages_failed + report.items_failed} failed "
            f"in {report.batches} batch(es), {report.seconds:.2f} s"
        )
    if report.error:
        info(f"embedder failed: {report.error}")
        ctx.exit(1)


@click.command()
@json_option
@click.pass_context
def prune(ctx: click.Context, as_json: bool) -> None:
    """Delete expired messages and memories (TTL) in every namespace, or in --namespace.

    Without --namespace, media files no message references any more (older than an hour) go too.
    """
    ns = ctx.find_root().obj.namespace if ctx.find_root().obj is not None else None
    with open_memory(ctx) as mem:
        report = mem.prune(namespace=ns)
    if as_json:
        emit_json(report.to_dict())
    else:
        click.echo(
            f"deleted {report.messages} expired message(s), {report.memories} expired memory(ies) and "
            f"{report.media_files} unreferenced media file(s)"
        )


@click.command()
@click.option(
    "--jobs",
    default="sync,prune",
    show_default=True,
    metavar="LIST",
    help="Comma-separated jobs to run each pass (sync, prune, extract, tiers, reflect, and any registered by plugins).",
)
@click.option("--interval", type=float, default=5.0, show_default=True, help="Seconds to wait between passes.")
@click.option("--max-passes", type=int, metavar="N", help="Exit after N passes (default: run until stopped).")
@click.option(
    "--batch-size", type=int, metavar="N", help="Rows per claimed sync batch (default: limits.embed_batch_size)."
)
@click.option("--lease", type=float, metavar="SECONDS", default=300.0, show_default=True,
              help="How long a sync claim holds before another worker may take the rows.")  # fmt: skip
@click.pass_context
def worker(
    ctx: click.Context, jobs: str, interval: float, max_passes: int | None, batch_size: int | None, lease: float
) -> None:
    """Run the background jobs in a loop; SIGTERM/SIGINT finish the batch in flight, then exit 0."""
    from memory.episodic.worker import Worker

    names = [name.strip() for name in jobs.split(",") if name.strip()]
    with open_memory(ctx) as mem:
        ns = ctx.find_root().obj.namespace if ctx.find_root().obj is not None else None
        options = {
            "sync": {"batch_size": batch_size, "lease_seconds": lease, "namespace": ns},
            "prune": {"namespace": ns},
            "reflect": {"namespace": ns},
        }
        runner = Worker(mem, jobs=names, interval=interval, options=options)
        info(f"worker started: jobs {', '.join(names)} every {interval:g} s")

        def report(results: dict[str, dict[str, Any]]) -> None:
            done = {name: {k: v for k, v in r.items() if v} for name, r in results.items()}
            click.echo(json.dumps({"pass": runner.report.passes, **done}, default=str))
            sys.stdout.flush()

        result = runner.run(max_passes=max_passes, on_pass=report)
    info(f"worker stopped ({result.stopped_by or 'done'}) after {result.passes} pass(es)")
