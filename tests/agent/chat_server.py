"""A loopback HTTP server speaking OpenAI's /v1/chat/completions with scripted replies (stdlib, in a thread)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def tool_call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    """A scripted assistant turn that calls one tool."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        ],
    }


def answer(text: str) -> dict[str, Any]:
    """A scripted final assistant answer."""
    return {"role": "assistant", "content": text}


class ChatServer:
    """Serves the scripted messages in order; records every request body and header."""

    def __init__(self, script: list[dict[str, Any] | tuple[int, str]]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                server.requests.append(body)
                server.headers.append(dict(self.headers))
                if self.path != "/v1/chat/completions":
                    self._send(404, json.dumps({"error": {"message": "not found"}}))
                    return
                if not server.script:
                    self._send(500, json.dumps({"error": {"message": "script exhausted"}}))
                    return
                step = server.script.pop(0)
                if isinstance(step, tuple):
                    self._send(step[0], step[1])
                    return
                finish = "tool_calls" if step.get("tool_calls") else "stop"
                payload = {
                    "id": f"chatcmpl-{len(server.requests)}",
                    "object": "chat.completion",
                    "model": body.get("model"),
                    "choices": [{"index": 0, "message": step, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }
                self._send(200, json.dumps(payload))

            def _send(self, status: int, text: str) -> None:
                data = text.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @contextmanager
    def running(self) -> Iterator[ChatServer]:
        thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.httpd.shutdown()
            self.httpd.server_close()
            thread.join()
