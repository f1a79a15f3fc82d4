"""What the CLI and the benchmarks ask of database servers, without importing an engine's modules.

URLs are redacted here for every engine. Finding a local server, preparing
a database on it and making scratch databases are asked of the engine that
offers them (PostgreSQL today), whose module is imported only when called.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from memory.backends import backend_name_for, redact
from memory.errors import InvalidInputError

if TYPE_CHECKING:
    from memory.backends.postgres.admin import LocalServer

__all__ = [
    "redact", "detect_local_server", "prepare_database", "scratch_database", "store_size_mb", "sqlite_space",
]  # fmt: skip


def detect_local_server(timeout: float = 2.0) -> LocalServer | None:
    """A local database server that accepts a connection (socket or 127.0.0.1), or None."""
    from memory.backends.postgres.admin import detect_local

    return detect_local(timeout=timeout)


def prepare_database(server: LocalServer, name: str) -> bool:
    """Create database ``name`` on ``server`` with what memory needs; True when it was created now."""
    from memory.backends.postgres.admin import create_database

    return create_database(server, name)


@contextmanager
def scratch_database(server_url: str, prefix: str) -> Iterator[str]:
    """The URL of a new, empty database on ``server_url``'s server, dropped when the block ends."""
    name, _ = backend_name_for(server_url)
    if name != "postgres":
        raise InvalidInputError(f"scratch databases need a database server URL (postgresql://...), got {name!r}")
    from memory.backends.postgres.admin import drop_database
    from memory.backends.postgres.admin import scratch_database as create_scratch

    url = create_scratch(server_url, prefix)
    try:
        yield url
    finally:
        drop_database(url)


def store_size_mb(url: str, directory: Path) -> float:
    """Size of the store ``url`` names, in MB: the server's own figure, else the files under ``directory``."""
    name, _ = backend_name_for(url)
    if name == "postgres":
        from memory.backends.postgres.admin import database_size_mb

        return database_size_mb(url)
    total = sum(f.stat().st_size for f in directory.rglob("*") if f.is_file()) if directory.exists() else 0
    return round(total / 1024**2, 1)


def sqlite_space(path: Path) -> tuple[dict[str, int], dict[str, str]]:
    """Bytes per table/index of the SQLite file ``path``, and vector table -> model (for ``bench disk``).

    Raises ConfigError when the file cannot be read or SQLite lacks ``dbstat``.
    """
    from memory.backends.sqlite.space import table_bytes, vector_tables

    return table_bytes(path), vector_tables(path)
