"""A loopback OpenAI Chat Completions server for CrewAI: structured replies by schema name, text otherwise.

CrewAI asks for structured output (memory analysis, extraction) with a JSON schema
(``response_format``) or a tool named after the schema; this server answers those from
``structured`` (schema name -> JSON object) and every other request with ``answer(body)``.
Every request body is kept in ``requests``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _schema_name(body: dict[str, Any]) -> str | None:
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and isinstance(fmt.get("json_schema"), dict):
        return str(fmt["json_schema"].get("name"))
    return None


def _tool_name(body: dict[str, Any], structured: dict[str, Any]) -> str | None:
    for tool in body.get("tools") or []:
        name = tool.get("function", {}).get("name")
        if name in structured:
            return str(name)
    return None


class CrewLLMServer:
    """Serves CrewAI's chat completions on 127.0.0.1 (stdlib, one thread)."""

    def __init__(self, structured: dict[str, Any], answer: Callable[[dict[str, Any]], str]) -> None:
        self.structured = structured
        self.answer = answer
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                with server.lock:
                    server.requests.append(body)
                if not self.path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                self._send(200, server.reply(body))

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        """A chat.completion for ``body``: the schema's JSON, a tool call to the schema's tool, or text."""
        message: dict[str, Any]
        finish = "stop"
        schema = _schema_name(body)
        tool = _tool_name(body, self.structured)
        if schema is not None and schema in self.structured:
            message = {"role": "assistant", "content": json.dumps(self.structured[schema])}
        elif tool is not None:
            arguments = json.dumps(self.structured[tool])
            call = {"id": "call_1", "type": "function", "function": {"name": tool, "arguments": arguments}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": self.answer(body)}
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 1700000000,
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
        }

    def prompts(self) -> list[str]:
        """The text of every request's messages, one string per request."""
        with self.lock:
            return [json.dumps(r.get("messages", [])) for r in self.requests]

    @contextmanager
    def running(self) -> Iterator[CrewLLMServer]:
        """Serve in a background thread for the duration of the block."""
        thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._httpd.shutdown()
            self._httpd.server_close()
            thread.join()
