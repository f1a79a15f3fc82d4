"""Shared CLI plumbing: global options, opening a Memory, option groups, output helpers.

Commands stay thin: they parse options with the decorators here, call the
:class:`~memory.memory.Memory` facade, and print with :func:`emit_json` or a
rich table. Nothing here knows about a particular backend.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from memory.config import ProviderSpec, Settings, config_path, load_settings
from memory.errors import ConfigError
from memory.memory import Memory
from memory.types import LedgerEntry, MemoryItem

__all__ = [
    "GlobalOptions",
    "global_options",
    "config_file",
    "build_settings",
    "open_memory",
    "json_option",
    "scope_options",
    "filter_options",
    "filter_kwargs",
    "parse_meta",
    "read_text_arg",
    "emit_json",
    "print_table",
    "print_item",
    "changed_fields",
    "short_id",
    "one_line",
    "info",
    "progress",
]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class GlobalOptions:
    """The root group's options, shared with every command through ``ctx.obj``."""

    database: str | None = None
    namespace: str | None = None
    embedder: str | None = None
    config: Path | None = None


def global_options(ctx: click.Context) -> GlobalOptions:
    """The root options of this invocation (defaults when a command runs on its own)."""
    root = ctx.find_root()
    obj = root.obj
    return obj if isinstance(obj, GlobalOptions) else GlobalOptions()


def config_file(options: GlobalOptions) -> Path:
    """The config file this invocation reads and ``init`` writes: ``--config``, else :func:`config_path`."""
    return options.config if options.config is not None else config_path()


def build_settings(options: GlobalOptions, *, database: str | None = None, embedder: str | None = None) -> Settings:
    """Settings with the usual precedence: flags > MEMORY_* environment > config file > defaults.

    ``database``/``embedder`` override the global flags (``init`` has its own).
    An embedder flag naming the configured provider keeps its configured options.
    Raises ConfigError.
    """
    if options.config is not None and not options.config.exists():
        raise ConfigError(
            f"config file {options.config} does not exist; create it with `memory --config {options.config} init`"
        )
    overrides: dict[str, Any] = {"database": database or options.database, "namespace": options.namespace}
    settings = load_settings(overrides, path=config_file(options))
    provider = embedder or options.embedder
    if provider and provider != settings.embedder.provider:
        settings = settings.model_copy(update={"embedder": ProviderSpec(provider=provider)})
    return settings


def open_memory(ctx: click.Context) -> Memory:
    """Open the store the global options and settings name. Raises ConfigError, StorageError."""
    return Memory(settings=build_settings(global_options(ctx)))


# -- option groups -----------------------------------------------------------


def json_option(func: F) -> F:
    """Add ``--json``: one JSON document on stdout instead of a table."""
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of a table.")(func)


def scope_options(func: F) -> F:
    """Add ``--user``, ``--agent`` and ``--thread``."""
    for option in reversed(
        [
            click.option("--user", "-u", metavar="USER", help="Only this user's memories (exact match)."),
            click.option("--agent", "-a", metavar="AGENT", help="Only this agent's memories (exact match)."),
            click.option("--thread", "-t", metavar="THREAD", help="Only this thread's memories (exact match)."),
        ]
    ):
        func = option(func)
    return func


def parse_meta(
    ctx: click.Context | None, param: click.Parameter | None, values: tuple[str, ...]
) -> dict[str, Any] | None:
    """Parse repeated ``key=value`` options; a value that is valid JSON is decoded, else kept as a string."""
    if not values:
        return None
    result: dict[str, Any] = {}
    for raw in values:
        key, sep, value = raw.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{raw!r} is not key=value", ctx=ctx, param=param)
        if key in result:
            raise click.BadParameter(f"key {key!r} is given twice", ctx=ctx, param=param)
        try:
            result[key] = json.loads(value, parse_constant=_no_constant)
        except ValueError:
            result[key] = value
    return result


def _no_constant(name: str) -> None:
    raise ValueError(name)


def filter_options(func: F) -> F:
    """Add the scope options plus ``--kind``, ``--tag``, ``--meta``, ``--since``, ``--until``."""
    options = [
        click.option("--kind", "-k", "kinds", multiple=True, metavar="KIND", help="Only this kind (repeatable: any)."),
        click.option("--tag", "tags", multiple=True, metavar="TAG", help="Only memories with this tag (repeatable)."),
        click.option(
            "--meta", "metadata", multiple=True, metavar="KEY=VALUE", callback=parse_meta,
            help="Only memories whose metadata KEY equals VALUE (JSON if it parses, else a string; repeatable: all).",
        ),
        click.option("--since", metavar="DATETIME", help="Only memories created at or after this ISO 8601 time."),
        click.option("--until", metavar="DATETIME", help="Only memories created before this ISO 8601 time."),
    ]  # fmt: skip
    for option in reversed(options):
        func = option(func)
    return scope_options(func)


def filter_kwargs(values: Mapping[str, Any]) -> dict[str, Any]:
    """Facade keyword arguments from the values of :func:`filter_options` (unset ones left out)."""
    out: dict[str, Any] = {}
    for name in ("user", "agent", "thread", "metadata", "since", "until"):
        if values.get(name) is not None:
            out[name] = values[name]
    for name in ("kinds", "tags"):
        if values.get(name):
            out[name] = list(values[name])
    return out


def read_text_arg(value: str, what: str) -> str:
    """The argument itself, or all of stdin when it is ``-``."""
    if value != "-":
        return value
    text = sys.stdin.read()
    if not text.strip():
        raise click.BadParameter(f"stdin held no {what}")
    return text


# -- output ------------------------------------------------------------------


def emit_json(data: Any) -> None:
    """Print ``data`` as one indented JSON document on stdout."""
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False))


def _stdout() -> Console:
    # Resolved on each call: click's test runner swaps sys.stdout.
    return Console(file=sys.stdout, highlight=False, soft_wrap=False)


def _stderr() -> Console:
    return Console(file=sys.stderr, highlight=False)


def one_line(text: str | None, limit: int | None = None) -> str:
    """``text`` on a single line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join((text or "").split())
    if limit is not None and len(flat) > limit:
        return flat[: limit - 1] + "…"
    return flat


def short_id(item_id: str) -> str:
    """The distinguishing end of an id (ids start with their creation time); use --json for full ids."""
    return "…" + item_id[-12:] if len(item_id) > 13 else item_id


def _cell(value: Any) -> Text:
    """A table cell shown literally: user text is never read as rich markup."""
    if value is None:
        return Text("")
    if isinstance(value, datetime):
        return Text(value.isoformat(timespec="seconds"))
    if isinstance(value, (list, tuple)):
        return Text(", ".join(str(v) for v in value))
    if isinstance(value, dict):
        return Text(json.dumps(value, ensure_ascii=False))
    if isinstance(value, float):
        return Text(f"{value:.3g}")
    return Text(str(value))


def print_table(
    columns: list[str],
    rows: list[list[Any]],
    *,
    title: str | None = None,
    no_wrap: tuple[str, ...] = (),
) -> None:
    """Print a rich table to stdout; cells are shown literally; ``no_wrap`` columns stay on one line."""
    table = Table(title=title, title_justify="left", show_lines=False)
    for name in columns:
        table.add_column(name, overflow="fold", no_wrap=name in no_wrap)
    for row in rows:
        table.add_row(*(_cell(value) for value in row))
    _stdout().print(table)


def print_item(item: MemoryItem) -> None:
    """Print every field of a memory as a two-column table."""
    print_table(["field", "value"], [[name, getattr(item, name)] for name in type(item).model_fields])


def changed_fields(entry: LedgerEntry) -> list[str]:
    """Names of the fields a ledger entry changed, from its before/after snapshots.

    ``updated_at`` is left out (every change sets it); an entry without both
    snapshots (add, delete) changed no individual field and gives ``[]``.
    """
    if not entry.before or not entry.after:
        return []
    before, after = entry.before, entry.after
    names = list(after) + [name for name in before if name not in after]
    return [name for name in names if name != "updated_at" and before.get(name) != after.get(name)]


def info(message: str) -> None:
    """A human note on stderr (never mixed into stdout data)."""
    _stderr().print(Text(message))


@contextmanager
def progress(label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar on stderr when stderr is a terminal; yields its update function or None."""
    if not sys.stderr.isatty():
        yield None
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=_stderr(), transient=True) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update
