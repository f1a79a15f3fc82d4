"""The contract suite's backend fixture: every test runs against every backend."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memory import Memory
from memory.backends.base import Backend
from memory.embedders.hashing import HashingEmbedder
from memory.registry import create

BACKENDS = ["inmemory", "sqlite"]


def make_backend(name: str, tmp_path: Path) -> Backend:
    """Open a fresh backend of kind ``name`` (real files, real servers)."""
    if name == "inmemory":
        backend: Backend = create("backend", "inmemory")
    elif name == "sqlite":
        backend = create("backend", "sqlite", {"path": str(tmp_path / "contract.db")})
    else:  # pragma: no cover - new backends add a branch here
        raise AssertionError(name)
    return backend


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
def make_memory(
    backend_name: str, tmp_path: Path, clock: Callable[[], object]
) -> Iterator[Callable[..., Memory]]:
    """Factory for Memory objects over the backend under test (hashing embedder, test clock)."""
    opened: list[Memory] = []

    def factory(**kwargs: object) -> Memory:
        kwargs.setdefault("embedder", HashingEmbedder())
        kwargs.setdefault("clock", clock)
        backend = make_backend(backend_name, tmp_path) if not opened or backend_name == "inmemory" else None
        if backend is None:
            backend = create("backend", "sqlite", {"path": str(tmp_path / "contract.db")})
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
