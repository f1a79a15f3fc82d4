"""A loopback HTTP server speaking OpenAI ``/v1/chat/completions``, Ollama ``/api/chat`` and Anthropic ``/v1/messages``.

Answers are scripted: each request pops the next action from ``script``
(``default`` when empty). Actions:

* ``json:<text>`` — answer with ``<text>`` as the message content (any text, valid or not);
* ``extract`` / ``decide`` — a valid answer computed by the heuristic rules from the prompt;
* ``429:<seconds>`` — HTTP 429 with ``Retry-After``;
* ``500`` / ``401`` — that HTTP status with an error body;
* ``garbage`` — HTTP 200 with a body that is not JSON;
* ``hang`` — sleep past the client's timeout, then answer.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memory.extraction.heuristic import extract_heuristic


class FakeLLMServer:
    """Scripted chat server on 127.0.0.1 (port chosen by the OS)."""

    def __init__(self) -> None:
        self.script: list[str] = []
        self.default = "extract"
        self.requests: list[dict[str, Any]] = []
        self.hang_seconds = 1.0
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.fake = self  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def next_action(self, path: str, body: Any) -> str:
        with self._lock:
            self.requests.append({"path": path, "body": body})
            return self.script.pop(0) if self.script else self.default

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def _answer_for(action: str, body: dict[str, Any]) -> str:
    if action.startswith("json:"):
        return action[len("json:") :]
    user = next((_text(m["content"]) for m in reversed(body["messages"]) if m["role"] == "user"), "")
    if action == "extract" and user.startswith("SPEAKER:"):  # the extract_facts task
        return _facts_answer(user)
    if action == "extract":
        text = user.split("Text:\n", 1)[-1]
        return extract_heuristic(text).model_dump_json()
    if action == "decide":
        return json.dumps({"action": "ADD", "target": None, "merged": None, "reason": "scripted"})
    raise AssertionError(f"unknown action {action!r}")


def _text(content: Any) -> str:
    """A message's text: a string (OpenAI, Ollama, Anthropic) or Anthropic's list of text blocks."""
    if isinstance(content, list):
        return "".join(block.get("text", "") for block in content if isinstance(block, dict))
    return str(content)


def _facts_answer(user: str) -> str:
    """A valid extract_facts answer: the offline extractor's facts, as a model would send them."""
    from memory.extraction.message_facts import offline_facts

    head, text = user.split("Text:\n", 1)
    fields = dict(line.split(": ", 1) for line in head.splitlines() if ": " in line)
    found = offline_facts(text, speaker=fields["SPEAKER"], listener=fields.get("LISTENER"))
    facts = []
    for fact in found.facts:
        rel = fact.relations[0] if fact.relations else None
        facts.append({
            "statement": fact.statement, "subject": fact.subject, "predicate": rel.predicate if rel else "",
            "object": rel.object if rel and rel.object != "-" else "", "negated": fact.negated, "when": fact.when,
        })  # fmt: skip
    entities = [e.model_dump() for e in found.entities]
    return json.dumps({"facts": facts, "entities": entities, "correction": found.correction})


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None, raw: bytes | None = None) -> None:
        data = raw if raw is not None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        fake: FakeLLMServer = self.server.fake  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        action = fake.next_action(self.path, body)
        if action.startswith("429:"):
            self._send(429, {"error": {"message": "rate limited"}}, {"Retry-After": action[4:]})
            return
        if action in ("500", "401"):
            self._send(int(action), {"error": {"message": f"scripted {action}"}})
            return
        if action == "garbage":
            self._send(200, None, raw=b"<html>not json</html>")
            return
        if action == "hang":
            time.sleep(fake.hang_seconds)
            action = fake.default
        content = _answer_for(action, body)
        if self.path == "/v1/chat/completions":
            self._send(200, {
                "id": "chatcmpl-1", "object": "chat.completion", "model": body.get("model"),
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
            })  # fmt: skip
        elif self.path == "/v1/messages":  # Anthropic Messages API
            self._send(200, {
                "id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model"),
                "content": [{"type": "text", "text": content}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 12, "output_tokens": 6},
            })  # fmt: skip
        elif self.path == "/api/chat":
            self._send(200, {
                "model": body.get("model"), "message": {"role": "assistant", "content": content}, "done": True,
                "prompt_eval_count": 13, "eval_count": 5,
            })  # fmt: skip
        else:
            self._send(404, {"error": f"no route {self.path}"})
