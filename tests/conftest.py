"""Shared fixtures: isolated user dirs, deterministic embedders, a clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point the config file and platform dirs at a temp dir; clear MEMORY_* variables."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("MEMORY_CONFIG", str(home / "config" / "memory" / "config.toml"))
    for name in (
        "MEMORY_DATABASE",
        "MEMORY_DSN",
        "MEMORY_NAMESPACE",
        "MEMORY_EMBEDDER",
        "MEMORY_EMBEDDER_OPTIONS",
        "MEMORY_RETRIEVAL",
        "MEMORY_LLM",
        "MEMORY_LLM_OPTIONS",
        "MEMORY_CHAT_URL",
        "MEMORY_CHAT_MODEL",
        "MEMORY_CHAT_API_KEY",
        "MEMORY_MEDIA_DIR",
    ):
        monkeypatch.delenv(name, raising=False)


class Clock:
    """A settable clock for deterministic time-dependent tests."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now = self.now + timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    """A clock starting at 2026-01-01 12:00 UTC."""
    return Clock()


@pytest.fixture
def tmp_db(tmp_path: Path) -> Iterator[str]:
    """A SQLite database URL in the test's temp dir."""
    yield f"sqlite:///{tmp_path / 'memory.db'}"
