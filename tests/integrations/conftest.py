"""Fixtures for the framework integrations: a Memory over each backend (real files, real servers)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memory import Memory
from memory.backends.base import Backend
from memory.embedders.hashing import HashingEmbedder
from memory.registry import create
from pg_support import drop_test_schemas, postgres_dsn, schema_for

BACKENDS = ["inmemory", "sqlite", "postgres"]


def open_backend(name: str, where: Path) -> Backend:
    """A fresh backend of kind ``name`` whose data lives under ``where`` (or in its own postgres schema)."""
    if name == "inmemory":
        return create("backend", "inmemory")
    if name == "sqlite":
        return create("backend", "sqlite", {"path": str(where / "integration.db")})
    return create("backend", "postgres", {"dsn": postgres_dsn(), "schema": schema_for(where)})


@pytest.fixture(scope="session", autouse=True)
def _drop_postgres_schemas() -> Iterator[None]:
    yield
    if dsn := os.environ.get("MEMORY_TEST_DSN"):
        drop_test_schemas(dsn)


@pytest.fixture(params=BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    """Name of the backend under test."""
    return str(request.param)


@pytest.fixture
def make_memory(backend_name: str, tmp_path: Path) -> Iterator[Callable[..., Memory]]:
    """Opens Memory objects on the backend under test (hashing embedder); each call a fresh store."""
    opened: list[Memory] = []

    def factory(**kwargs: object) -> Memory:
        where = tmp_path / f"store{len(opened)}"
        where.mkdir()
        kwargs.setdefault("embedder", HashingEmbedder())
        mem = Memory(backend=open_backend(backend_name, where), **kwargs)  # type: ignore[arg-type]
        opened.append(mem)
        return mem

    yield factory
    for mem in opened:
        mem.close()


@pytest.fixture
def mem(make_memory: Callable[..., Memory]) -> Memory:
    """A Memory on the backend under test."""
    return make_memory()
