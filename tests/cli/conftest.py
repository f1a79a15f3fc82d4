"""CLI test fixtures: isolated user dirs, a SQLite file per test, and a runner that parses output."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import Runner, assert_one_line_error


@pytest.fixture(autouse=True)
def _cli_user_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Config file and platform dirs live in tmp_path: tests never touch the real user dirs."""
    monkeypatch.setenv("MEMORY_CONFIG", str(tmp_path / "config" / "memory.toml"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("COLUMNS", "200")
    for name in (
        "MEMORY_DATABASE", "MEMORY_NAMESPACE", "MEMORY_EMBEDDER", "MEMORY_EMBEDDER_OPTIONS", "MEMORY_DEBUG",
        "MEMORY_LLM", "MEMORY_LLM_OPTIONS",
    ):  # fmt: skip
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """A SQLite database file in the test's temp dir (absolute URL)."""
    return f"sqlite:///{tmp_path / 'm.db'}"


@pytest.fixture
def run(db_url: str) -> Runner:
    """The CLI runner bound to this test's database."""
    return Runner(db_url)


@pytest.fixture
def one_line_error() -> Callable[..., str]:
    """The assertion helper :func:`assert_one_line_error`."""
    return assert_one_line_error
