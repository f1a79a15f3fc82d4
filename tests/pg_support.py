"""How tests reach the real PostgreSQL server: ``MEMORY_TEST_DSN`` (see scripts/pg.sh).

Without it the postgres tests skip with a reason, unless ``MEMORY_REQUIRE_POSTGRES``
is set (``make test`` and CI set it), where a missing server is a failure.
Each test's store lives in its own PostgreSQL schema, named after its tmp_path.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

SCHEMA_PREFIX = "mt_"


def postgres_dsn() -> str:
    """The test server's DSN, or skip (fail when MEMORY_REQUIRE_POSTGRES is set)."""
    dsn = os.environ.get("MEMORY_TEST_DSN", "").strip()
    if dsn:
        return dsn
    if os.environ.get("MEMORY_REQUIRE_POSTGRES"):
        pytest.fail("MEMORY_REQUIRE_POSTGRES is set but MEMORY_TEST_DSN is not: start one with scripts/pg.sh start")
    pytest.skip("no PostgreSQL server: set MEMORY_TEST_DSN (eval $(scripts/pg.sh start)) to run the postgres tests")


def schema_for(path: Path) -> str:
    """A schema name unique to ``path`` (a test's tmp_path), so each test gets an empty store."""
    digest = hashlib.sha1(f"{os.getpid()}:{path}".encode()).hexdigest()[:20]
    return f"{SCHEMA_PREFIX}{digest}"


def drop_test_schemas(dsn: str) -> None:
    """Drop every schema the tests created (best effort)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s", (SCHEMA_PREFIX.replace("_", "\\_") + "%",)
        ).fetchall()
        for (name,) in rows:
            conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


def database_url(dsn: str, name: str) -> str:
    """``dsn`` with its database name replaced by ``name``."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path="/" + name))


@contextmanager
def fresh_database(dsn: str) -> Iterator[str]:
    """A new, empty database with the vector extension on the test server; dropped afterwards."""
    import psycopg

    name = f"{SCHEMA_PREFIX}db_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = database_url(dsn, name)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield url
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
