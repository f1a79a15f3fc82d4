"""A loopback server speaking the ``POST /rerank`` API in its two shapes (Cohere/Jina/Infinity and TEI).

Scores are a deterministic stand-in for a cross-encoder: the share of the
query's words found in the document, so a test knows which document a real
reranker would put first. Results come back sorted by score, best first, as
Cohere and TEI return them, so a client must map them back by ``index``.
It can be scripted to fail: ``500``, ``401``, ``no_index``, ``duplicate``,
``missing``, ``nan``, ``malformed``.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def overlap(query: str, document: str) -> float:
    """Share of the query's words (3+ letters) that occur in ``document``."""
    words = {w for w in re.findall(r"\w+", query.lower()) if len(w) > 2}
    found = set(re.findall(r"\w+", document.lower()))
    return len(words & found) / len(words) if words else 0.0


class RerankServer:
    """A threaded HTTP server on 127.0.0.1 speaking ``/rerank``; records every request."""

    def __init__(self) -> None:
        self.script: list[str] = []
        self.default = "ok"
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.fake = self  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def next_action(self, path: str, body: Any, headers: dict[str, str]) -> str:
        with self._lock:
            self.requests.append({"path": path, "body": body, "headers": headers})
            return self.script.pop(0) if self.script else self.default

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 5

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def _send(self, status: int, payload: Any) -> None:
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        fake: RerankServer = self.server.fake  # type: ignore[attr-defined]
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        action = fake.next_action(self.path, body, {k.lower(): v for k, v in self.headers.items()})
        if not self.path.endswith("/rerank"):
            self._send(404, {"message": f"no route {self.path}"})
            return
        if action in ("500", "401"):
            self._send(int(action), {"message": "internal error" if action == "500" else "invalid api token"})
            return
        if action == "malformed":
            self._send(200, b'{"results": [ {"index": 0, ')
            return
        tei = "texts" in body
        documents = body["texts"] if tei else body["documents"]
        if not isinstance(body.get("query"), str) or not isinstance(documents, list):
            self._send(422, {"message": "query and documents/texts are required"})
            return
        scored = sorted(
            ((i, overlap(body["query"], doc)) for i, doc in enumerate(documents)), key=lambda p: (-p[1], p[0])
        )
        key = "score" if tei else "relevance_score"
        rows: list[dict[str, Any]] = [{"index": i, key: s} for i, s in scored]
        if action == "no_index":
            del rows[0]["index"]
        elif action == "duplicate" and len(rows) > 1:
            rows[1]["index"] = rows[0]["index"]
        elif action == "missing":
            rows = rows[:-1]
        elif action == "nan":
            rows[0][key] = "NaN"
        if tei:
            self._send(200, rows)
        else:
            top_n = body.get("top_n") or len(rows)
            self._send(200, {"id": "r1", "results": rows[:top_n], "meta": {"billed_units": {"search_units": 1}}})
