"""Servers stop promptly on SIGTERM while a request computes (issue 15, B4): `memory serve` and `memory mcp --http`.

The request is held in the embedder: a loopback fake of the OpenAI embeddings API (the real wire protocol)
answers only after a minute, so the request is still computing when the server is told to stop.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

MEMORY_BIN = str(Path(sys.executable).with_name("memory"))
HOLD_SECONDS = 60.0


class _SlowEmbeddings(BaseHTTPRequestHandler):
    """``POST /v1/embeddings``: a probe text answers at once, anything else after HOLD_SECONDS."""

    held = threading.Event()

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        if texts != ["dimension probe"]:
            type(self).held.set()
            time.sleep(HOLD_SECONDS)
        data = [{"object": "embedding", "index": i, "embedding": [1.0] + [0.0] * 7} for i in range(len(texts))]
        payload = json.dumps({"object": "list", "data": data, "model": body["model"]}).encode()
        try:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            pass

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def slow_embedder() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowEmbeddings)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _SlowEmbeddings.held.clear()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("args", "request_path"),
    [(["serve", "--no-auth"], "/v1/namespaces/default/memories"), (["mcp", "--http", "--no-auth"], "/mcp")],
)
def test_sigterm_while_a_request_computes(
    tmp_path: Path, slow_embedder: str, args: list[str], request_path: str
) -> None:
    env = {
        **os.environ,
        "MEMORY_DATABASE": f"sqlite:///{tmp_path / 'sig.db'}",
        "MEMORY_EMBEDDER": "openai",
        "MEMORY_EMBEDDER_OPTIONS": json.dumps(
            {"model": "fake", "base_url": slow_embedder, "timeout": 300, "max_retries": 0}
        ),
        "MEMORY_CONFIG": str(tmp_path / "none.toml"),
    }
    proc = subprocess.Popen(
        [MEMORY_BIN, *args, "--port", "0"], env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
    )
    try:
        assert proc.stderr is not None
        port = None
        deadline = time.monotonic() + 60
        while port is None and time.monotonic() < deadline:
            match = re.search(r"http://127\.0\.0\.1:(\d+)", proc.stderr.readline())
            port = match.group(1) if match else None
        assert port is not None, "server did not start"
        url = f"http://127.0.0.1:{port}{request_path}"
        if request_path == "/mcp":
            body = {
                "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "remember", "arguments": {"content": "held in the embedder"}},
            }  # fmt: skip
            headers = {"accept": "application/json, text/event-stream"}
            init = {
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}},
            }  # fmt: skip
            first = httpx.post(url, json=init, headers=headers, timeout=30)
            session = first.headers.get("mcp-session-id")
            if session:
                headers["mcp-session-id"] = session
            httpx.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers, timeout=30)
        else:
            body, headers = {"content": "held in the embedder"}, {}

        def held_request() -> None:
            try:
                httpx.post(url, json=body, headers=headers, timeout=HOLD_SECONDS + 30)
            except httpx.HTTPError:
                pass  # the server went away mid-request, as it should

        thread = threading.Thread(target=held_request, daemon=True)
        thread.start()
        assert _SlowEmbeddings.held.wait(30), "the request never reached the embedder"
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=HOLD_SECONDS - 10)  # before the held request could finish
        assert time.monotonic() - started < 15
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()
