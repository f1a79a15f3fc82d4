"""`memory context` (show the compiled prompt and its trace) and `memory chat` (an interactive MemoryAgent)."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from memory.cli.common import build_settings, emit_json, global_options, info, json_option, print_table, read_text_arg
from memory.context.compile import CompiledPrompt
from memory.context.types import ContextRequest, ContextStrategy, TokenBudget
from memory.errors import Error
from memory.memory import Memory

__all__ = ["context", "chat", "print_trace"]

_ALLOCATIONS = click.Choice(["relevance", "information", "fixed"])


def print_trace(compiled: CompiledPrompt) -> None:
    """A table of every section (kept/shrunk/dropped, tokens, value, why) and a one-line summary."""
    trace = compiled.trace
    rows = [
        [_short_id(t.id), t.label or "(system)", t.source, t.status,
         f"{t.tokens_before}→{t.tokens_after}", f"{t.value:.3g}", t.reason]
        for t in (*trace.sections, *trace.tools)
    ]  # fmt: skip
    print_table(["section", "label", "source", "status", "tokens", "value", "why"], rows, no_wrap=("tokens",))
    skipped = [f"{n.source} ({n.note})" for n in trace.sources if n.status != "used"]
    tokens = trace.tokens
    kind = "exact" if trace.tokenizer_exact else "estimated"
    info(
        f"tokens: {tokens['total']} of {trace.budget_usable} usable ({trace.budget_total} budget) — system "
        f"{tokens['system']}, observation {tokens['observation']}, tools {tokens['tools']}, overhead "
        f"{tokens['overhead']}; kept {trace.compression_ratio:.0%} of {trace.tokens_in} hydrated tokens; "
        f"{trace.tokenizer} ({kind}); {trace.timings_ms.get('total', 0):.1f} ms"
    )
    if skipped:
        info("sources not used: " + "; ".join(skipped))


@click.command()
@click.argument("question")
@click.option("--user", "-u", metavar="USER", help="Whose memories to draw from.")
@click.option("--agent", "-a", metavar="AGENT", help="Only this agent's memories.")
@click.option("--thread", "-t", metavar="THREAD", help="Conversation thread (recent turns, when the store has them).")
@click.option("--budget", "-b", type=click.IntRange(16, 10_000_000), default=2000, show_default=True,
              help="Token budget of the whole request.")  # fmt: skip
@click.option("--reserve", type=click.FloatRange(0, 0.95), default=0.0, show_default=True,
              help="Share of the budget kept free for the reply.")  # fmt: skip
@click.option("--allocation", type=_ALLOCATIONS, default="relevance", show_default=True,
              help="How space is shared when not everything fits.")  # fmt: skip
@click.option("--system", "-s", metavar="TEXT", help="A system prompt to put first.")
@click.option("--goal", metavar="TEXT", help="What the agent is trying to do (a constraint section).")
@click.option(
    "--model", "-m", metavar="NAME", help="Model name; picks the tokenizer (default: o200k, exact for gpt-4o)."
)
@click.option("--limit", "-l", type=click.IntRange(0, 1000), default=10, show_default=True,
              help="Max memories to recall.")  # fmt: skip
@click.option("--no-time", is_flag=True, help="Leave out the current date and time section.")
@click.option("--clearance", type=click.Choice(["normal", "private", "secret"]), default="private",
              show_default=True, help="Most sensitive memories allowed into the prompt.")  # fmt: skip
@json_option
@click.pass_context
def context(
    ctx: click.Context, /, question: str, budget: int, reserve: float, allocation: str, limit: int, no_time: bool,
    as_json: bool, **fields: Any,
) -> None:  # fmt: skip
    """Build the prompt for QUESTION from memory under a token budget and show what went in.

    Prints the compiled chat messages, then a table of every section: kept, shrunk (truncated or summarised), dropped
    or duplicate, its tokens before and after, its value (priority × relevance × recency) and why. --json prints the
    messages (OpenAI and Anthropic shapes) and the full trace.

    \b
    Examples:
      memory context "where does alice live?" --user alice --budget 2000
      memory context "plan my week" -u alice -s "You are a planner." --reserve 0.25 --json
    """
    text = read_text_arg(question, "question")
    request = ContextRequest(
        observation=text,
        **{k: v for k, v in fields.items() if v is not None},
        budget=TokenBudget(total=budget, reserve_ratio=reserve, allocation=allocation),
        strategy=ContextStrategy(semantic_limit=limit, include_time=not no_time),
    )
    with Memory(settings=build_settings(global_options(ctx))) as mem:
        compiled = mem.context(request)
    if as_json:
        emit_json(
            {
                "openai": compiled.openai(),
                "anthropic": compiled.anthropic(),
                "trace": compiled.trace.model_dump(mode="json"),
            }
        )
        return
    for message in compiled.messages:
        click.echo(click.style(f"--- {message['role']} ---", bold=True))
        click.echo(message["content"])
    print_trace(compiled)


@click.command()
@click.option("--user", "-u", metavar="USER", help="Who is chatting (scopes memories and tools).")
@click.option("--thread", "-t", metavar="THREAD", help="Conversation thread id (default: a new one).")
@click.option(
    "--url",
    metavar="URL",
    help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1 [config: chat.base_url, env: MEMORY_CHAT_URL].",
)
@click.option("--model", "-m", metavar="NAME", help="Chat model [config: chat.model, env: MEMORY_CHAT_MODEL].")
@click.option(
    "--budget", "-b", type=click.IntRange(64, 10_000_000), help="Context token budget per call [config: chat.budget]."
)
@click.option(
    "--system", "-s", metavar="TEXT", help="System prompt [config: chat.system; default: a memory-aware one]."
)
@click.option("--show-context", is_flag=True, help="After each answer, show the section table of the last model call.")
@click.pass_context
def chat(
    ctx: click.Context, user: str | None, thread: str | None, url: str | None, model: str | None,
    budget: int | None, system: str | None, show_context: bool,
) -> None:  # fmt: skip
    """Chat with a model that remembers: every call gets context from memory and can use the memory tools.

    Reads one message per line from stdin (type /exit or send EOF to stop, /context to show the last prompt's
    sections). The API key, if the endpoint needs one, is read from $MEMORY_CHAT_API_KEY (or the variable named by
    chat.api_key_env).

    \b
    Examples:
      memory chat --user alice --model llama3.2            # Ollama on 127.0.0.1:11434
      MEMORY_CHAT_API_KEY=sk-… memory chat -u alice --url https://api.openai.com/v1 -m gpt-4o-mini
    """
    from memory.agent import DEFAULT_SYSTEM, ChatClient, MemoryAgent

    settings = build_settings(global_options(ctx))
    conf = settings.chat
    model = model or conf.model
    if not model:
        raise click.UsageError("no chat model: pass --model, set MEMORY_CHAT_MODEL, or [chat] model in the config")
    client = ChatClient(url or conf.base_url, model, api_key=os.environ.get(conf.api_key_env), timeout=conf.timeout)
    interactive = sys.stdin.isatty()
    with Memory(settings=settings) as mem:
        agent = MemoryAgent(
            mem, client, system=system or conf.system or DEFAULT_SYSTEM, user=user, thread=thread,
            budget=budget or conf.budget, max_steps=conf.max_steps,
        )  # fmt: skip
        info(f"chatting with {model} at {client.url} (thread {agent.scope.thread}); /exit to stop")
        last = None
        while True:
            if interactive:
                click.echo("you> ", nl=False)
            line = sys.stdin.readline()
            if not line:
                break
            message = line.strip()
            if not message:
                continue
            if message == "/exit":
                break
            if message == "/context":
                if last is not None:
                    print_trace(last)
                continue
            try:
                turn = agent.run(message)
            except Error as exc:  # the endpoint failed or the model looped: report, keep chatting
                click.echo(f"error: {' '.join(str(exc).split())}", err=True)
                continue
            last = turn.last_context
            for step in turn.steps:
                for call in step.tool_calls:
                    info(f"[tool] {call['name']}({call['arguments']}) → {_short(call['result'])}")
            click.echo(f"assistant> {turn.reply}")
            if show_context:
                print_trace(turn.last_context)
        client.close()


def _short_id(section_id: str) -> str:
    """``memory:01a2…`` ids cut to their kind and the distinguishing end; short ids unchanged."""
    kind, sep, rest = section_id.partition(":")
    if sep and len(rest) > 12:
        return f"{kind}:…{rest[-8:]}"
    return section_id if len(section_id) <= 24 else "…" + section_id[-20:]


def _short(value: Any, limit: int = 160) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
