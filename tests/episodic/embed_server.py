"""A real OpenAI-compatible embedding server on loopback that counts what it serves.

``POST /v1/embeddings`` answers with deterministic bag-of-words vectors. It
records every request and, separately, every text it actually answered
(``delivered``). Behaviour per request comes from ``script`` (consumed in
order) or ``default``: ``ok``, ``500``, ``hang`` (never answers; the
connection is closed on release), ``delay:<seconds>``. ``block_at=n`` makes
the n-th request hang and sets ``reached`` — tests kill a client then.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

DIM = 16
PROBE = "dimension probe"


def vector(text: str) -> list[float]:
    out = np.zeros(DIM)
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        out[int.from_bytes(digest[:4], "little") % DIM] += 1.0 if digest[4] & 1 else -1.0
    if not out.any():
        out[0] = 1.0
    return [float(x) for x in out / np.linalg.norm(out)]


class EmbedServer:
    """See the module docstring."""

    def __init__(self) -> None:
        self.script: list[str] = []
        self.default = "ok"
        self.block_at: int | None = None
        self.reached = threading.Event()
        self.release = threading.Event()
        self.requests: list[list[str]] = []
        self.delivered: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.embed = self  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def options(self, **extra: Any) -> dict[str, Any]:
        """Embedder options for ``openai`` pointing here (known dimension: no probe request)."""
        return {"model": "fake", "base_url": self.base_url, "dimensions": DIM, "max_retries": 0, **extra}

    def next_action(self, texts: list[str]) -> str:
        with self.lock:
            self.requests.append(texts)
            if self.block_at is not None and len(self.requests) == self.block_at:
                self.reached.set()
                return "hang"
            return self.script.pop(0) if self.script else self.default

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 5

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def _send(self, status: int, payload: Any) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self) -> None:  # noqa: N802
        server: EmbedServer = self.server.embed  # type: ignore[attr-defined]
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        action = server.next_action(texts)
        if action == "hang":
            server.release.wait(30)
            self.close_connection = True
            return
        if action.startswith("delay:"):
            time.sleep(float(action.partition(":")[2]))
        if action == "500":
            self._send(500, {"error": {"message": "internal error (test)"}})
            return
        data = [{"object": "embedding", "index": i, "embedding": vector(t)} for i, t in enumerate(texts)]
        self._send(200, {"object": "list", "data": data, "model": body["model"]})
        with server.lock:
            server.delivered.update(texts)
