"""Connections to PostgreSQL: the driver import, the pool, session settings and error translation."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from memory.backends import redact as redact_url
from memory.errors import ConfigError, Error, InvalidInputError, SchemaError, StorageError

__all__ = [
    "load_driver",
    "session_options",
    "driver_errors",
    "redact",
    "check_pgvector",
    "has_iterative_scan",
    "SCHEMA_PATTERN",
    "MIN_PGVECTOR",
]

#: A schema name memory may create and put first on the search path.
SCHEMA_PATTERN = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
#: HNSW indexes appeared in pgvector 0.5.0.
MIN_PGVECTOR = (0, 5, 0)
#: Iterative index scans (``hnsw.iterative_scan``) appeared in pgvector 0.8.0.
ITERATIVE_SCAN_PGVECTOR = (0, 8, 0)


def load_driver() -> Any:
    """Import psycopg 3 or raise ConfigError naming the extra to install."""
    try:
        import psycopg
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            "the postgres backend needs psycopg 3 and psycopg-pool: pip install 'llm-agent-memory[postgres]'"
        ) from exc
    return psycopg


def redact(dsn: str) -> str:
    """``dsn`` with any password replaced by ``***`` (for messages)."""
    return redact_url(dsn)


def session_options(schema: str | None, *, ef_search: int = 100, iterative_scan: bool = False) -> str:
    """The libpq ``options`` string every connection starts with.

    UTC, custom plans for prepared statements (the filter decides the best
    plan), HNSW search width, pgvector's iterative scan when the server has
    it (pgvector >= 0.8: a filtered HNSW search keeps reading until enough
    rows pass) and the store's schema.
    """
    parts = [
        "-c TimeZone=UTC",
        "-c plan_cache_mode=force_custom_plan",
        f"-c hnsw.ef_search={int(ef_search)}",
    ]
    if iterative_scan:
        parts.append("-c hnsw.iterative_scan=relaxed_order")
    if schema is not None:
        parts.append(f"-c search_path={schema},public")
    return " ".join(parts)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def check_pgvector(conn: Any) -> str:
    """The installed pgvector version; ConfigError when it is missing or older than 0.5 (no HNSW)."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    if row is None:
        raise ConfigError("the pgvector extension is not installed: run `CREATE EXTENSION vector;` (pgvector >= 0.5)")
    version = str(row[0])
    if _version(version) < MIN_PGVECTOR:
        raise ConfigError(f"pgvector {version} has no HNSW index; memory needs pgvector >= 0.5")
    return version


def has_iterative_scan(pgvector_version: str) -> bool:
    """Whether pgvector ``pgvector_version`` has iterative HNSW index scans (0.8.0 and later)."""
    return _version(pgvector_version) >= ITERATIVE_SCAN_PGVECTOR


@contextmanager
def driver_errors(where: str) -> Iterator[None]:
    """Translate psycopg and pool exceptions raised inside the block to :mod:`memory.errors`."""
    import psycopg
    import psycopg_pool

    try:
        yield
    except Error:
        raise
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"text is not valid Unicode (it holds a lone surrogate): {exc}") from exc
    except psycopg_pool.PoolTimeout as exc:
        raise StorageError(f"no PostgreSQL connection available for {where} in time: {exc}") from exc
    except psycopg_pool.PoolClosed as exc:
        raise StorageError(f"the postgres backend for {where} is closed") from exc
    except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn, psycopg.errors.UndefinedFunction) as exc:
        raise SchemaError(f"database {where} does not have the expected schema: {exc}") from exc
    except psycopg.OperationalError as exc:
        raise StorageError(f"PostgreSQL at {where} is not reachable or failed: {exc}") from exc
    except psycopg.errors.DataError as exc:
        raise InvalidInputError(f"PostgreSQL rejected a value: {exc}") from exc
    except psycopg.Error as exc:
        raise StorageError(f"PostgreSQL error on {where}: {exc}") from exc
