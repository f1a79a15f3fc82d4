"""A real `memory serve` under concurrent HTTP clients shares its embedder calls, and loses nothing.

The server's embedder is the ``openai`` provider pointed at a real
OpenAI-compatible embedding server on loopback (tests/episodic/embed_server.py)
that takes 40 ms per request and records the texts of each: what it sees is
exactly how the server process batched its embeddings.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "episodic"))

from embed_server import EmbedServer  # noqa: E402

from memory.bench.serve import run_load  # noqa: E402


@pytest.fixture
def embed_server() -> Iterator[EmbedServer]:
    server = EmbedServer()
    server.default = "delay:0.04"
    yield server
    server.close()


@pytest.mark.slow
def test_memory_serve_batches_embeddings_of_concurrent_requests(embed_server: EmbedServer) -> None:
    report = run_load(clients=16, duration=4.0, embedder="openai", embedder_options=embed_server.options())
    assert report["errors"] == 0, report["error_samples"]
    assert report["writes_acknowledged"] > 0 and report["missing"] == 0
    embedded = report["operations"]["remember"]["requests"] + report["operations"].get("recall", {}).get("requests", 0)
    sizes = [len(texts) for texts in embed_server.requests]
    assert sum(sizes) >= embedded  # every remember and recall embedded its text (plus the read-back's none)
    assert len(sizes) < 0.6 * embedded, sizes  # ... in far fewer embedder calls
    assert max(sizes) >= 3, sizes


@pytest.mark.slow
def test_memory_mcp_http_batches_embeddings_of_concurrent_clients(embed_server: EmbedServer, tmp_path: Path) -> None:
    import json
    import os
    import re
    import subprocess
    import time

    import anyio
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    env = {
        **os.environ,
        "MEMORY_DATABASE": f"sqlite:///{tmp_path / 'mcp.db'}",
        "MEMORY_EMBEDDER": "openai",
        "MEMORY_EMBEDDER_OPTIONS": json.dumps(embed_server.options()),
        "MEMORY_CONFIG": str(tmp_path / "none.toml"),
        "MEMORY_NAMESPACE": "default",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "memory", "mcp", "--http", "--port", "0", "--no-auth"],
        env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        match = None
        while match is None and time.monotonic() < deadline:
            match = re.search(r"http://127\.0\.0\.1:(\d+)", proc.stderr.readline())
        assert match is not None, "memory mcp --http did not start"
        url = f"http://127.0.0.1:{match.group(1)}/mcp"
        before = len(embed_server.requests)
        found: list[bool] = []
        opened: list[int] = []
        everyone = anyio.Event()

        async def client(i: int) -> None:
            async with Client(streamable_http_client(url), read_timeout_seconds=60) as session:
                # Sessions open one after another (the handshake is slow on 2 busy cores): the clients start
                # remembering together once all are open, as concurrent clients of a running server do.
                opened.append(i)
                if len(opened) == 12:
                    everyone.set()
                await everyone.wait()
                for n in range(3):
                    text = f"client {i} fact {n}: parrot{i} eats seed{n}"
                    stored = await session.call_tool("remember", {"content": text})
                    assert not stored.is_error, stored.content
                    hits = await session.call_tool("recall", {"query": f"parrot{i} seed{n}", "limit": 5})
                    assert not hits.is_error, hits.content
                    found.append(stored.structured_content["id"] in json.dumps(hits.structured_content))

        async def scenario() -> None:
            async with anyio.create_task_group() as group:
                for i in range(12):
                    group.start_soon(client, i)

        anyio.run(scenario)
        assert len(found) == 36 and all(found)
        sizes = [len(texts) for texts in embed_server.requests[before:]]
        assert sum(sizes) == 72  # 36 memories and 36 queries, each embedded once
        assert len(sizes) < 0.6 * 72 and max(sizes) >= 3, sizes
    finally:
        proc.terminate()
        proc.wait(15)
        if proc.stderr is not None:
            proc.stderr.close()
