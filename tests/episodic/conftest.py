"""Fixtures for the multi-process episodic tests: the counting embedding server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from embed_server import EmbedServer


@pytest.fixture
def server() -> Iterator[EmbedServer]:
    """A counting OpenAI-compatible embedding server on 127.0.0.1."""
    instance = EmbedServer()
    yield instance
    instance.close()
