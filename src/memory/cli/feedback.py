"""Feedback commands: ``memory feedback THREAD …|list|show|summary``, ``memory prompts …``, ``memory reflect``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from memory.cli.common import emit_json, info, json_option, one_line, open_memory, print_table, read_text_arg
from memory.feedback.types import ConversationRecord, PromptVersion

__all__ = ["feedback", "prompts", "reflect"]


def _record_row(r: ConversationRecord) -> list[Any]:
    prompt = f"{r.prompt_name} v{r.prompt_version}" if r.prompt_name else ""
    return [r.thread, r.user, prompt, r.reward, r.rating, r.task_completed, r.corrections,
            one_line(r.feedback, 50), r.reflected_at is not None, r.updated_at]  # fmt: skip


def _print_records(records: Sequence[ConversationRecord], title: str | None = None) -> None:
    print_table(["thread", "user", "prompt", "reward", "rating", "done", "corrections", "feedback", "reflected",
                 "updated"], [_record_row(r) for r in records], title=title)  # fmt: skip


class _RecordByDefault(click.Group):
    """A group whose first argument, when it is not a subcommand, is the THREAD of ``record``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Route ``memory feedback THREAD …`` to ``memory feedback record THREAD …``."""
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["record", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_RecordByDefault)
def feedback() -> None:
    """Conversation feedback: rate a thread, list and inspect conversation records.

    \b
    Examples:
      memory feedback t1 --rating 4 --feedback "good, but too long"
      memory feedback t1 --failed --example "Give the exact command"
      memory feedback list --below 0.5
      memory feedback summary --json
    """


@feedback.command("record")
@click.argument("thread")
@click.option("--rating", type=float, metavar="N", help="Explicit rating: 1–5 stars (or see --scale).")
@click.option("--scale", "rating_scale", type=click.Choice(["stars", "thumbs", "unit"]), default="stars",
              show_default=True, help="Scale of --rating: stars 1–5, thumbs +1/-1, unit 0–1.")  # fmt: skip
@click.option("--reward", type=float, metavar="R", help="An explicit reward in [0, 1] (overrides the computed one).")
@click.option("--feedback", "feedback_text", metavar="TEXT", help="What the user said about the answer ('-': stdin).")
@click.option("--example", metavar="TEXT", help="An example of the behaviour the user wanted.")
@click.option("--suggestion", metavar="TEXT", help="An improvement suggestion for the agent.")
@click.option("--completed/--failed", "task_completed", default=None, help="Whether the task was completed.")
@click.option("--prompt", metavar="NAME", help="Attribute the conversation to this prompt (active version).")
@click.option("--prompt-version", type=int, metavar="N", help="… or to this version of --prompt.")
@click.option("--user", "-u", metavar="USER", help="The user the conversation belongs to (default: from its messages).")
@click.option("--agent", "-a", metavar="AGENT", help="The agent the conversation belongs to.")
@json_option
@click.pass_context
def record(ctx: click.Context, /, thread: str, feedback_text: str | None, as_json: bool, **fields: Any) -> None:
    """Record feedback for THREAD and print its reward (rescored from every signal)."""
    if feedback_text is not None:
        fields["feedback"] = read_text_arg(feedback_text, "feedback")
    given = {k: v for k, v in fields.items() if v is not None and k != "rating_scale"}
    with open_memory(ctx) as mem:
        rec = mem.feedback.record(thread, rating_scale=fields["rating_scale"], **given)
    if as_json:
        emit_json(rec.model_dump(mode="json"))
        return
    reward = "unscored (no signal yet)" if rec.reward is None else f"{rec.reward:.4f}"
    click.echo(f"{rec.thread}: reward {reward} ({rec.reward_components.get('method', 'none')})")


@feedback.command("list")
@click.option("--prompt", metavar="NAME", help="Only conversations of this prompt.")
@click.option("--version", "version", type=int, metavar="N", help="Only this version of --prompt.")
@click.option("--below", "reward_below", type=float, metavar="R", help="Only rewards below R.")
@click.option("--unreflected", is_flag=True, help="Only records the reflection job has not seen yet.")
@click.option("--user", "-u", metavar="USER", help="Only this user's conversations.")
@click.option("--limit", "-l", type=int, default=50, show_default=True, help="How many records.")
@json_option
@click.pass_context
def list_records(ctx: click.Context, /, as_json: bool, **filters: Any) -> None:
    """List conversation records, newest first."""
    with open_memory(ctx) as mem:
        found = mem.feedback.list(
            prompt=filters["prompt"], version=filters["version"], reward_below=filters["reward_below"],
            unreflected=filters["unreflected"], user=filters["user"], limit=filters["limit"],
        )  # fmt: skip
    if as_json:
        emit_json([r.model_dump(mode="json") for r in found])
    else:
        _print_records(found)


@feedback.command("show")
@click.argument("thread")
@json_option
@click.pass_context
def show_record(ctx: click.Context, thread: str, as_json: bool) -> None:
    """Show the conversation record of THREAD: summary, feedback, reward and its components."""
    with open_memory(ctx) as mem:
        rec = mem.feedback.get(thread)
    if as_json:
        emit_json(rec.model_dump(mode="json"))
        return
    for key, value in rec.model_dump(exclude={"message_ids"}).items():
        if value not in (None, "", {}, ()):
            click.echo(f"{key}: {value}")


@feedback.command("forget")
@click.argument("thread")
@json_option
@click.pass_context
def forget_record(ctx: click.Context, thread: str, as_json: bool) -> None:
    """Delete the conversation record of THREAD (its messages stay; the prompt statistics lose it)."""
    with open_memory(ctx) as mem:
        deleted = mem.feedback.forget(thread)
    if as_json:
        emit_json({"thread": thread, "deleted": deleted})
    else:
        click.echo(f"deleted {deleted} record(s)")


@feedback.command("summary")
@json_option
@click.pass_context
def summary(ctx: click.Context, as_json: bool) -> None:
    """Overview of the namespace's conversations: mean reward, low rewards, per prompt version, recent feedback."""
    with open_memory(ctx) as mem:
        result = mem.feedback.summarize()
    if as_json:
        emit_json(result.model_dump(mode="json"))
        return
    mean = "-" if result.mean_reward is None else f"{result.mean_reward:.3f}"
    click.echo(f"{result.records} conversation(s), {result.scored} scored, mean reward {mean}, "
               f"{result.low_reward} below {result.threshold:g}, {result.unreflected} not reflected yet")  # fmt: skip
    _print_stats(result.prompts)
    for text in result.recent_feedback:
        click.echo(f"- {one_line(text, 100)}")


# -- prompts -----------------------------------------------------------------


def _print_stats(stats: Sequence[Any]) -> None:
    if stats:
        print_table(["prompt", "version", "status", "origin", "scored", "mean", "95% CI", "conversations"], [
            [s.name, s.version, s.status, s.origin, s.count, s.mean,
             "" if s.ci_low is None else f"{s.ci_low:.3f}–{s.ci_high:.3f}", s.conversations] for s in stats
        ])  # fmt: skip


def _version_json(v: PromptVersion) -> dict[str, Any]:
    data: dict[str, Any] = v.model_dump(mode="json")
    return data


@click.group()
def prompts() -> None:
    """Versioned prompts: list, show, add, use, suggest a refinement, promote, stats per version.

    \b
    Examples:
      memory prompts add support "You are a support agent."
      memory prompts stats support
      memory prompts suggest support
      memory prompts promote support 2
    """


@prompts.command("list")
@json_option
@click.pass_context
def list_prompts(ctx: click.Context, as_json: bool) -> None:
    """List the prompts of the namespace with their active version."""
    with open_memory(ctx) as mem:
        found = mem.prompts.list()
    if as_json:
        emit_json([_version_json(v) for v in found])
        return
    print_table(["prompt", "active", "origin", "created", "text"],
                [[v.name, v.version, v.origin, v.created_at, one_line(v.text, 70)] for v in found])  # fmt: skip


@prompts.command("show")
@click.argument("name")
@click.option("--version", "version", type=int, metavar="N", help="This version instead of the active one.")
@click.option("--all", "show_all", is_flag=True, help="List every version instead of showing one.")
@json_option
@click.pass_context
def show_prompt(ctx: click.Context, name: str, version: int | None, show_all: bool, as_json: bool) -> None:
    """Print the text of prompt NAME (the active version unless --version), or --all its versions."""
    with open_memory(ctx) as mem:
        found = mem.prompts.versions(name) if show_all else [mem.prompts.get(name, version)]
    if as_json:
        emit_json([_version_json(v) for v in found] if show_all else _version_json(found[0]))
    elif show_all:
        print_table(["version", "status", "origin", "parent", "created", "note", "text"],
                    [[v.version, v.status, v.origin, v.parent, v.created_at, one_line(v.note, 40),
                      one_line(v.text, 60)] for v in found])  # fmt: skip
    else:
        v = found[0]
        info(f"{v.name} v{v.version} ({v.status}, {v.origin})")
        click.echo(v.text)


@prompts.command("use")
@click.argument("thread")
@click.argument("name")
@click.option("--user", "-u", metavar="USER", help="The user the conversation belongs to.")
@click.option("--agent", "-a", metavar="AGENT", help="The agent the conversation belongs to.")
@json_option
@click.pass_context
def use_prompt(ctx: click.Context, thread: str, name: str, user: str | None, agent: str | None, as_json: bool) -> None:
    """Attribute THREAD to a version of prompt NAME (the one it has, else the active one) and print its text."""
    with open_memory(ctx) as mem:
        text = mem.prompts.use(thread, name, user=user, agent=agent)
        version = mem.feedback.get(thread).prompt_version
    if as_json:
        emit_json({"thread": thread, "name": name, "version": version, "text": text})
    else:
        info(f"{thread}: {name} v{version}")
        click.echo(text)


@prompts.command("add")
@click.argument("name")
@click.argument("text")
@click.option("--activate", is_flag=True, help="Make the new version the active one now.")
@click.option("--note", default="", metavar="TEXT", help="Why this version exists.")
@json_option
@click.pass_context
def add_prompt(ctx: click.Context, name: str, text: str, activate: bool, note: str, as_json: bool) -> None:
    """Add a version of prompt NAME with TEXT ('-': stdin); the first version of a name is active."""
    content = read_text_arg(text, "prompt text")
    with open_memory(ctx) as mem:
        version = mem.prompts.add_version(name, content, activate=activate, note=note)
    if as_json:
        emit_json(_version_json(version))
    else:
        click.echo(f"{version.name} v{version.version} ({version.status})")


@prompts.command("suggest")
@click.argument("name")
@click.option("--limit", "-l", type=int, default=20, show_default=True, help="Low-reward conversations to learn from.")
@click.option("--no-llm", is_flag=True, help="Use the deterministic learned-rules template even with an LLM.")
@json_option
@click.pass_context
def suggest(ctx: click.Context, name: str, limit: int, no_llm: bool, as_json: bool) -> None:
    """Propose a refined version of NAME from low-reward feedback (stored as a candidate, not active)."""
    with open_memory(ctx) as mem:
        result = mem.prompts.suggest(name, limit=limit, use_llm=False if no_llm else None)
    if as_json:
        emit_json(result.model_dump(mode="json"))
        return
    info(f"{name} v{result.version.version} (candidate, {result.path}) from {len(result.based_on)} conversation(s)")
    if result.fallback_reason:
        info(f"the LLM failed, learned-rules template used: {result.fallback_reason}")
    click.echo(result.version.text)


@prompts.command("promote")
@click.argument("name")
@click.argument("version", type=int, required=False)
@click.option("--auto", "auto", is_flag=True, help="Promote the best candidate only if it measurably beats the active.")
@click.option("--dry-run", is_flag=True, help="With --auto: say what would happen, change nothing.")
@json_option
@click.pass_context
def promote(ctx: click.Context, name: str, version: int | None, auto: bool, dry_run: bool, as_json: bool) -> None:
    """Make VERSION the active version of NAME, or --auto: the candidate that beats it (if any)."""
    if (version is None) == (not auto):
        raise click.UsageError("give a VERSION or --auto")
    with open_memory(ctx) as mem:
        if auto:
            decision = mem.prompts.auto_promote(name, dry_run=dry_run)
            if as_json:
                emit_json(decision.model_dump(mode="json"))
            else:
                verb = "would promote" if dry_run and decision.candidate else "promoted"
                click.echo(f"{verb} v{decision.candidate}" if decision.candidate else "no promotion")
                info(decision.reason)
            return
        assert version is not None
        promoted = mem.prompts.promote(name, version)
    if as_json:
        emit_json(_version_json(promoted))
    else:
        click.echo(f"{promoted.name} v{promoted.version} is active")


@prompts.command("stats")
@click.argument("name")
@json_option
@click.pass_context
def prompt_stats(ctx: click.Context, name: str, as_json: bool) -> None:
    """Per version of NAME: scored conversations, mean reward and 95 % t interval."""
    with open_memory(ctx) as mem:
        stats = mem.prompts.stats(name)
    if as_json:
        emit_json([s.model_dump(mode="json") for s in stats])
    else:
        _print_stats(stats)


# -- reflect -------------------------------------------------------------------


@click.command()
@click.option("--limit", "-l", type=int, metavar="N", help="Records to examine (default: feedback.reflect_batch).")
@click.option("--dry-run", is_flag=True, help="Print the lessons without storing them or moving the cursor.")
@json_option
@click.pass_context
def reflect(ctx: click.Context, limit: int | None, dry_run: bool, as_json: bool) -> None:
    """Self-reflection: turn scored conversations into procedural memories (lessons) once each."""
    with open_memory(ctx) as mem:
        report = mem.reflect(limit=limit, dry_run=dry_run)
    if as_json:
        emit_json(report.to_dict())
        return
    verb = "would write" if dry_run else "wrote"
    count = len(report.lessons) if dry_run else report.written
    click.echo(f"examined {report.examined} conversation(s); {verb} {count} lesson(s), replaced {report.replaced}, "
               f"skipped {report.skipped} ({report.path}, {report.seconds:.3f} s)")  # fmt: skip
    if report.fallback_reason:
        info(f"the LLM failed, rules used: {report.fallback_reason}")
    for lesson in report.lessons:
        click.echo(f"- {one_line(lesson, 200)}")
