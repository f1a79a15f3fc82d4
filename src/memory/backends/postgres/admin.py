"""Finding a local PostgreSQL and preparing a database on it (used by ``memory init`` and ``memory doctor``).

Detection tries, in order: ``$PGHOST`` (a host or a socket directory), the
usual Unix socket directories (``/var/run/postgresql``, ``/run/postgresql``,
``/tmp``) and TCP on 127.0.0.1, all on ``$PGPORT`` (default 5432), as
``$PGUSER`` (default: the login name), then as ``postgres``. Nothing is
created unless asked: :func:`create_database` makes the database and the
``vector`` extension.
"""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from memory.backends.postgres.connection import MIN_PGVECTOR, load_driver, redact
from memory.errors import ConfigError, StorageError

__all__ = ["LocalServer", "detect_local", "create_database", "SOCKET_DIRS"]

SOCKET_DIRS = ("/var/run/postgresql", "/run/postgresql", "/tmp")


@dataclass(frozen=True, slots=True)
class LocalServer:
    """A PostgreSQL server that accepted a connection: where, as whom, which version."""

    host: str
    port: int
    user: str
    version: str
    pgvector_available: str | None

    @property
    def via(self) -> str:
        """'socket <dir>' or 'tcp <host>:<port>'."""
        return f"socket {self.host}" if self.host.startswith("/") else f"tcp {self.host}:{self.port}"

    def url(self, database: str) -> str:
        """A ``postgresql://`` URL for ``database`` on this server."""
        user = quote(self.user, safe="")
        if self.host.startswith("/"):
            return f"postgresql://{user}@/{quote(database, safe='')}?host={quote(self.host, safe='')}&port={self.port}"
        return f"postgresql://{user}@{self.host}:{self.port}/{quote(database, safe='')}"


def _candidates() -> list[str]:
    port = os.environ.get("PGPORT", "5432")
    hosts: list[str] = []
    if env_host := os.environ.get("PGHOST"):
        hosts.append(env_host)
    hosts += [d for d in SOCKET_DIRS if (Path(d) / f".s.PGSQL.{port}").exists()]
    hosts.append("127.0.0.1")
    return list(dict.fromkeys(hosts))


def detect_local(timeout: float = 2.0) -> LocalServer | None:
    """The first local PostgreSQL that accepts a connection to its ``postgres`` database, or None."""
    try:
        psycopg = load_driver()
    except ConfigError:
        return None
    try:
        port = int(os.environ.get("PGPORT", "5432"))
    except ValueError:
        return None
    login = os.environ.get("PGUSER") or getpass.getuser()
    users = list(dict.fromkeys([login, "postgres"]))
    for host in _candidates():
        for user in users:
            try:
                with psycopg.connect(
                    host=host, port=port, user=user, dbname="postgres", connect_timeout=max(1, int(timeout))
                ) as conn:
                    version = str(conn.execute("SHOW server_version").fetchone()[0])
                    row = conn.execute(
                        "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
                    ).fetchone()
                    return LocalServer(host, port, user, version, None if row is None else str(row[0]))
            except psycopg.Error:
                continue
    return None


def _version(text: str) -> tuple[int, ...]:
    import re

    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def create_database(server: LocalServer, database: str) -> bool:
    """Create ``database`` (if missing) on ``server`` and the ``vector`` extension in it.

    Returns True when the database was created now. Raises ConfigError when
    the server has no pgvector >= 0.5, StorageError when PostgreSQL refuses.
    """
    psycopg = load_driver()
    from psycopg import sql

    if server.pgvector_available is None:
        raise ConfigError(
            f"PostgreSQL {server.version} at {server.via} has no pgvector extension; install pgvector >= 0.5 "
            "(e.g. the postgresql-NN-pgvector package or the pgvector/pgvector image)"
        )
    if _version(server.pgvector_available) < MIN_PGVECTOR:
        raise ConfigError(f"pgvector {server.pgvector_available} at {server.via} is older than 0.5 (no HNSW)")
    created = False
    try:
        with psycopg.connect(
            host=server.host, port=server.port, user=server.user, dbname="postgres", autocommit=True
        ) as c:
            exists = c.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone()
            if exists is None:
                c.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
                created = True
        with psycopg.connect(server.url(database), autocommit=True) as c:
            c.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        raise StorageError(f"cannot prepare database {database!r} at {redact(server.url(database))}: {exc}") from exc
    return created


def scratch_database(dsn: str, prefix: str) -> str:
    """Create a new, empty database (with pgvector) on ``dsn``'s server; return its URL.

    Named ``<prefix>_<random hex>``; drop it with :func:`drop_database`.
    Used by the benchmarks to measure a fresh store.
    """
    import re
    import uuid
    from urllib.parse import urlsplit, urlunsplit

    psycopg = load_driver()
    from psycopg import sql

    name = re.sub(r"[^a-z0-9_]", "_", f"{prefix}_{uuid.uuid4().hex[:10]}".lower())[:60]
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        url = urlunsplit(urlsplit(dsn)._replace(path="/" + name))
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        raise StorageError(f"cannot create a scratch database on {redact(dsn)}: {exc}") from exc
    return url


def drop_database(url: str) -> None:
    """Drop the database ``url`` names (connecting to the server's ``postgres`` database)."""
    from urllib.parse import urlsplit, urlunsplit

    psycopg = load_driver()
    from psycopg import sql

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    try:
        with psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    except psycopg.Error as exc:
        raise StorageError(f"cannot drop database {name!r}: {exc}") from exc


def database_size_mb(url: str) -> float:
    """Size on disk of the database ``url`` names, in MB (tables, indexes, TOAST)."""
    psycopg = load_driver()
    with psycopg.connect(url) as conn:
        size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    return round(int(size) / (1024 * 1024), 1)
