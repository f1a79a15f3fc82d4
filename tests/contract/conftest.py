"""The contract suite's backend fixture: every test runs against every backend."""

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

#: memory:// is SQLite on a throwaway file (tests/backends/test_throwaway.py), so two engines cover every backend.
BACKENDS = ["sqlite", "libsql", "postgres"]


def make_backend(name: str, tmp_path: Path) -> Backend:
    """Open a fresh backend of kind ``name`` (real files, real servers)."""
    if name == "sqlite":
        backend: Backend = create("backend", "sqlite", {"path": str(tmp_path / "contract.db")})
    elif name == "libsql":  # the SQLite engine's stores over the Turso client library
        backend = create("backend", "libsql", {"path": str(tmp_path / "contract.db")})
    elif name == "postgres":  # one schema per test: a fresh store that a second open sees again
        backend = create("backend", "postgres", {"dsn": postgres_dsn(), "schema": schema_for(tmp_path)})
    else:  # pragma: no cover - new backends add a branch here
        raise AssertionError(name)
    return backend


@pytest.fixture(scope="session", autouse=True)
def _drop_postgres_schemas() -> Iterator[None]:
    """Remove the per-test schemas when the session ends."""
    yield
    if dsn := os.environ.get("MEMORY_TEST_DSN"):
        drop_test_schemas(dsn)


@pytest.fixture(params=BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    """Name of the backend under test."""
    return str(request.param)


@pytest.fixture
def open_backend(backend_name: str, tmp_path: Path) -> Callable[[], Backend]:
    """Opens (another) backend of the kind under test on the same files; the caller closes it."""
    return lambda: make_backend(backend_name, tmp_path)


@pytest.fixture
def backend(backend_name: str, tmp_path: Path) -> Iterator[Backend]:
    """A fresh, empty backend."""
    instance = make_backend(backend_name, tmp_path)
    yield instance
    instance.close()


@pytest.fixture
def twin_backend(backend_name: str, tmp_path: Path) -> Iterator[Backend]:
    """A second, empty backend of the kind under test (its own file or schema), e.g. to copy into."""
    where = tmp_path / "twin"
    where.mkdir()
    instance = make_backend(backend_name, where)
    yield instance
    instance.close()


@pytest.fixture
def make_memory(backend_name: str, tmp_path: Path, clock: Callable[[], object]) -> Iterator[Callable[..., Memory]]:
    """Factory for Memory objects over the backend under test (hashing embedder, test clock)."""
    opened: list[Memory] = []

    def factory(**kwargs: object) -> Memory:
        kwargs.setdefault("embedder", HashingEmbedder())
        kwargs.setdefault("clock", clock)
        backend = make_backend(backend_name, tmp_path)
        mem = Memory(backend=backend, **kwargs)  # type: ignore[arg-type]
        opened.append(mem)
        return mem

    yield factory
    for mem in opened:
        mem.close()


@pytest.fixture
def mem(make_memory: Callable[..., Memory]) -> Memory:
    """A Memory over the backend under test."""
    return make_memory()
