"""The ``memory`` command: root group, global options, and one-line error reporting.

Every failure ends as one line on stderr: ``error: …`` with exit code 1, or 2
for usage errors (bad options or arguments). Unexpected exceptions print one
line too; ``MEMORY_DEBUG=1`` shows their traceback instead.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import click

from memory import __version__, verbose
from memory.cli.bench import bench
from memory.cli.bench_context import bench_context
from memory.cli.bench_disk import bench_disk
from memory.cli.bench_longmemeval import bench_longmemeval
from memory.cli.common import GlobalOptions
from memory.cli.context import chat, context
from memory.cli.doctor import doctor
from memory.cli.episodic import blocks, end_conversation, messages, namespaces, prune, sync, tail, threads, worker
from memory.cli.feedback import feedback, prompts, reflect
from memory.cli.graph import extract, graph, link
from memory.cli.memories import forget, get, history, list_memories, recall, remember, stats
from memory.cli.migrate import migrate
from memory.cli.repl import repl
from memory.cli.servers import keys, mcp, serve
from memory.cli.setup import init
from memory.cli.tiers import tiers
from memory.cli.transfer import export, import_memories
from memory.cli.ui import ui
from memory.errors import Error

__all__ = ["cli", "main"]

DEBUG_VAR = "MEMORY_DEBUG"
# Raised by click >= 8.2 when a group runs without a subcommand; its message is the whole help.
_NO_ARGS_IS_HELP: type[click.UsageError] | None = getattr(click.exceptions, "NoArgsIsHelpError", None)


def _debug() -> bool:
    return os.environ.get(DEBUG_VAR, "").strip().lower() not in ("", "0", "false", "no")


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"error: {' '.join(message.split())}", err=True)
    sys.exit(code)


class MemoryGroup(click.Group):
    """A click group whose errors end as one ``error: …`` line and an exit code."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the command line; in standalone mode, exit with 0, 1 (error) or 2 (usage error)."""
        self.argv = list(args) if args is not None else sys.argv[1:]
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            result = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as exc:
            if _NO_ARGS_IS_HELP is not None and isinstance(exc, _NO_ARGS_IS_HELP) and exc.ctx is not None:
                click.echo(exc.ctx.get_help(), err=True)  # bare `memory` / `memory bench`: show the help
                sys.exit(exc.exit_code)
            hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            _fail(exc.format_message() + hint, exc.exit_code)
        except click.ClickException as exc:
            _fail(exc.format_message(), exc.exit_code)
        except click.Abort:
            _fail("aborted", 1)
        except Error as exc:
            if _debug():
                raise
            _fail(str(exc) or type(exc).__name__, 1)
        except BrokenPipeError:
            # The reader went away (e.g. `memory list | head`): stop quietly.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(1)
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        except Exception as exc:
            if _debug() or (isinstance(exc, OSError) and exc.errno == errno.EPIPE):
                raise
            _fail(f"unexpected {type(exc).__name__}: {exc} — run with {DEBUG_VAR}=1 for the traceback", 1)
        if isinstance(sys.stdout, verbose.Tee):
            sys.stdout.close_echo()
            verbose.response("cli", "exit", 0)
        sys.exit(result if isinstance(result, int) and not isinstance(result, bool) else 0)


EPILOG = """\b
Examples:
  memory init
  memory remember "Alice prefers dark mode" --user alice --tag ui
  memory recall "what does alice like?" --user alice
  memory list --user alice --json
  memory export --out backup.jsonl && memory import backup.jsonl
  memory mcp                      (MCP server on stdio, for Claude Desktop)
  memory serve                    (REST API; keys: memory keys create)
  memory ui                       (web inspector in the browser)

Settings come from flags, then MEMORY_* environment variables, then the
config file (`memory init` writes it), then defaults.
"""


@click.group(
    "memory",
    cls=MemoryGroup,
    epilog=EPILOG,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--db", "database", metavar="URL",
    help="Database: sqlite:///rel.db, sqlite:////abs.db, a file path, postgresql://..., libsql:///file.db "
    "(libsql extra), or memory:// [env: MEMORY_DATABASE or MEMORY_DSN].",
)  # fmt: skip
@click.option("--namespace", "-n", metavar="NS", help="Namespace (tenant) to work in [env: MEMORY_NAMESPACE].")
@click.option(
    "--embedder",
    metavar="NAME",
    help="Embedder provider: auto, minilm, hashing, openai, ollama [env: MEMORY_EMBEDDER].",
)
@click.option(
    "--config", "config", metavar="PATH", type=click.Path(dir_okay=False, path_type=Path),
    help="Config file to read (and `init` to write) instead of the default [env: MEMORY_CONFIG].",
)  # fmt: skip
@click.option(
    "--interactive", "-I", is_flag=True,
    help="JSON REPL: one request per line on stdin, one JSON answer per line on stdout (see `memory repl --help`).",
)  # fmt: skip
@click.option(
    "--verbose", "-V", "verbose_", is_flag=True,
    help="Echo requests and responses on stderr ('> ' and '< ' lines): the command and its output, REPL lines, "
    "and every request to `memory serve` and `memory mcp`.",
)  # fmt: skip
@click.version_option(__version__, "--version", prog_name="memory", message="%(prog)s %(version)s")
@click.pass_context
def cli(
    ctx: click.Context, database: str | None, namespace: str | None, embedder: str | None, config: Path | None,
    interactive: bool, verbose_: bool,
) -> None:  # fmt: skip
    """Long-term memory for LLM agents: remember, recall, forget — offline by default."""
    ctx.obj = GlobalOptions(database=database, namespace=namespace, embedder=embedder, config=config)
    if verbose_:
        verbose.enable()
        group = ctx.command
        verbose.request("cli", "memory", getattr(group, "argv", None) or sys.argv[1:])
        if not interactive and not isinstance(sys.stdout, verbose.Tee):  # the REPL echoes its own lines
            sys.stdout = verbose.Tee(sys.stdout, "cli", "out")
    if interactive:
        if ctx.invoked_subcommand is not None:
            raise click.UsageError(
                f"-I/--interactive runs the JSON REPL; it takes no command ({ctx.invoked_subcommand})"
            )
        ctx.invoke(repl)
    elif ctx.invoked_subcommand is None:
        click.echo(ctx.get_help(), err=True)
        ctx.exit(2)


for command in (
    init, remember, recall, get, forget, history, list_memories, stats, export, import_memories, bench,
    graph, link, extract,
):  # fmt: skip
    cli.add_command(command)
for command in (context, chat):
    cli.add_command(command)
bench.add_command(bench_context)
bench.add_command(bench_longmemeval)
bench.add_command(bench_disk)
for command in (messages, tail, threads, namespaces, blocks, end_conversation, sync, prune, worker):
    cli.add_command(command)
cli.add_command(tiers)
for command in (feedback, prompts, reflect):
    cli.add_command(command)
for command in (serve, mcp, keys, doctor, migrate, repl):
    cli.add_command(command)
cli.add_command(ui)


class _OneLineFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"{record.levelname.lower()}: {record.getMessage()}"


def _setup_logging() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLineFormatter())
    root = logging.getLogger("memory")
    if not root.handlers:
        root.addHandler(handler)
        root.setLevel(logging.DEBUG if _debug() else logging.WARNING)
        root.propagate = False


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point of ``memory``; exits the process with the command's status."""
    _setup_logging()
    cli.main(args=list(argv) if argv is not None else None, prog_name="memory")
