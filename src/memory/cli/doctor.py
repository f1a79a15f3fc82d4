"""``memory doctor``: what is configured, and whether it is reachable and usable."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from memory import __version__
from memory.backends import backend_name_for, open_backend
from memory.backends.servers import detect_local_server, redact
from memory.cli.common import build_settings, config_file, emit_json, global_options, json_option
from memory.embedders import create_embedder
from memory.errors import Error

__all__ = ["doctor"]


def _database_source(ctx: click.Context) -> str:
    if global_options(ctx).database:
        return "--db"
    if os.environ.get("MEMORY_DATABASE"):
        return "MEMORY_DATABASE"
    if os.environ.get("MEMORY_DSN"):
        return "MEMORY_DSN"
    return "config file" if config_file(global_options(ctx)).exists() else "default"


def _check_database(url: str) -> dict[str, Any]:
    name, options = backend_name_for(url)
    report: dict[str, Any] = {"backend": name, "reachable": False}
    if "path" in options and not Path(str(options["path"])).expanduser().exists():  # a local file (SQLite, libSQL)
        report["error"] = "the file does not exist yet (`memory init` creates it)"
        return report
    try:
        backend = open_backend(url)
    except Error as exc:
        report["error"] = str(exc)
        return report
    try:
        report["reachable"] = True
        report["namespaces"] = len(backend.namespaces())
        report["vector_spaces"] = [f"{s.model} ({s.dim})" for s in backend.vector_spaces()]
        info = backend.server_info()
        if info is not None:
            report["server"] = info
    except Error as exc:
        report["reachable"] = False
        report["error"] = str(exc)
    finally:
        backend.close()
    return report


def _check_embedder(provider: str, options: dict[str, Any]) -> dict[str, Any]:
    try:
        embedder = create_embedder(provider, options)
        runtime = getattr(embedder, "runtime", None)  # MiniLM: numpy (fp32) or onnx (int8)
        return {"provider": provider, "usable": True, "model": embedder.model_name, "runtime": runtime}
    except Error as exc:
        return {"provider": provider, "usable": False, "error": str(exc)}


def _local_postgres() -> dict[str, Any] | None:
    server = detect_local_server(timeout=1.0)
    if server is None:
        return None
    return {"via": server.via, "user": server.user, "version": server.version, "pgvector": server.pgvector_available}


@click.command()
@json_option
@click.pass_context
def doctor(ctx: click.Context, as_json: bool) -> None:
    """Report the configuration and check that the database and embedder work.

    Exits with status 1 when the configured database cannot be opened.

    \b
    Examples:
      memory doctor
      MEMORY_DSN=postgresql://me@localhost/memory memory doctor --json
    """
    options = global_options(ctx)
    settings = build_settings(options)
    config = config_file(options)
    database = _check_database(settings.database)
    report: dict[str, Any] = {
        "version": __version__,
        "config_file": str(config),
        "config_file_exists": config.exists(),
        "database": redact(settings.database),
        "database_source": _database_source(ctx),
        "database_check": database,
        "namespace": settings.namespace,
        "embedder": _check_embedder(settings.embedder.provider, dict(settings.embedder.options)),
        "local_postgres": _local_postgres(),
    }
    if as_json:
        emit_json(report)
    else:
        click.echo(f"memory        {__version__}")
        click.echo(f"config file   {config} ({'found' if config.exists() else 'missing: run `memory init`'})")
        click.echo(f"database      {report['database']} (from {report['database_source']})")
        if database["reachable"]:
            click.echo(f"  backend     {database['backend']}: reachable, {database['namespaces']} namespaces")
            server = database.get("server")
            if server:
                click.echo(
                    f"  server      PostgreSQL {server['server_version']}, pgvector {server['pgvector_version']}, "
                    f"schema {server['schema']}, migrations {server['migrations_applied']}/{server['migrations_known']}"
                )
                scan = "iterative index scans" if server["pgvector_iterative_scan"] else "no iterative scans (< 0.8)"
                click.echo(f"  pgvector    {server['pgvector_version']}: CPU code {server['pgvector_runs']}; {scan}")
                for space in server["vector_spaces"]:
                    click.echo(f"  space       {space['model']} ({space['dim']}): HNSW index {space['hnsw_index']}")
        else:
            click.echo(f"  backend     {database['backend']}: NOT usable: {database.get('error')}")
        emb = report["embedder"]
        runtime = f" (runtime {emb['runtime']})" if emb.get("runtime") else ""
        state = f"usable, model {emb['model']}{runtime}" if emb["usable"] else f"NOT usable: {emb['error']}"
        click.echo(f"embedder      {emb['provider']}: {state}")
        local = report["local_postgres"]
        if local:
            click.echo(f"local pg      PostgreSQL {local['version']} at {local['via']} (pgvector {local['pgvector']})")
        else:
            click.echo("local pg      none found (socket or 127.0.0.1)")
    if not database["reachable"]:
        ctx.exit(1)
