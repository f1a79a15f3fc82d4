"""Benchmark tests keep their vector cache in a temporary directory, never in the user's home."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _private_vector_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path_factory.mktemp("vector-cache")
    monkeypatch.setenv("MEMORY_CACHE_DIR", str(directory))
    return directory
