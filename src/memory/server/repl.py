"""The JSON REPL (``memory -I``): one request per line in, one JSON response per line out.

It serves the same operations as the MCP tools (:data:`memory.server.ops.OPERATIONS`
with ``mcp=True``), through the same :func:`~memory.server.ops.invoke`, so
validation, namespace scope, read-only and clearance rules are the MCP
server's. A request is a JSON object::

    {"id": 1, "op": "remember", "args": {"content": "Alice prefers dark mode", "user": "alice"}}
    {"id": 2, "op": "recall", "args": {"query": "what does alice like?", "namespace": "work"}}
    {"op": "operations"}            # the operations with their argument schemas

and each gets one line back: ``{"id": 1, "ok": true, "result": …}`` or
``{"id": 1, "ok": false, "error": {"type": "InvalidInputError", "message": …}}``
(``id`` is echoed when given). Blank lines are skipped; a line that is not a
JSON object, or is longer than :data:`MAX_LINE_CHARS`, gets an error line and
the session goes on. End of input ends the session.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any, TextIO

from pydantic import BaseModel

from memory import verbose
from memory.errors import Error
from memory.keys import Caller
from memory.memory import Memory
from memory.server.ops import OPERATIONS, invoke, tool_schema

__all__ = ["handle", "run", "operations", "MAX_LINE_CHARS"]

log = logging.getLogger(__name__)

#: Longest request line read (bytes of memory content are bounded by the store's own limits too).
MAX_LINE_CHARS = 8_388_608


def operations() -> list[dict[str, Any]]:
    """The operations the REPL serves: name, description, whether it writes, argument schema."""
    return [
        {"name": op.name, "description": op.description, "write": op.write, "input_schema": tool_schema(op)}
        for op in OPERATIONS.values()
        if op.mcp
    ]


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"type": kind, "message": message}}


def handle(mem: Memory, caller: Caller, line: str) -> dict[str, Any]:
    """Answer one request line (see the module doc); never raises for bad input."""
    if len(line) > MAX_LINE_CHARS:
        return _error("InvalidInputError", f"request line is longer than {MAX_LINE_CHARS} characters")
    try:
        request = json.loads(line)
    except json.JSONDecodeError as exc:
        return _error("InvalidInputError", f"request is not JSON: {exc}")
    if not isinstance(request, dict):
        return _error("InvalidInputError", 'a request is a JSON object: {"op": NAME, "args": {...}}')
    answer = _answer(mem, caller, request)
    if "id" in request:
        answer = {"id": request["id"], **answer}
    return answer


def _answer(mem: Memory, caller: Caller, request: dict[str, Any]) -> dict[str, Any]:
    name = request.get("op")
    args = request.get("args", {})
    unknown = set(request) - {"id", "op", "args"}
    if unknown:
        return _error("InvalidInputError", f"unknown request fields {sorted(unknown)}; expected id, op, args")
    if name == "operations":
        return {"ok": True, "result": operations()}
    op = OPERATIONS.get(name) if isinstance(name, str) else None
    if op is None or not op.mcp:
        return _error("InvalidInputError", f'unknown op {name!r}; send {{"op": "operations"}} for the list')
    if not isinstance(args, dict):
        return _error("InvalidInputError", "args must be a JSON object")
    args = dict(args)
    namespace = args.pop("namespace", None) if op.scoped else None
    if namespace is not None and not isinstance(namespace, str):
        return _error("InvalidInputError", "namespace must be a string")
    try:
        result = invoke(mem, op, caller, args, namespace)
    except Error as exc:
        return _error(type(exc).__name__, str(exc))
    except Exception:  # noqa: BLE001 - one bad request must not end the session
        log.exception("op %s failed unexpectedly", op.name)
        return _error("InternalError", f"internal error in {op.name}; see the log on stderr")
    return {"ok": True, "result": result.model_dump(mode="json") if isinstance(result, BaseModel) else result}


def run(mem: Memory, caller: Caller, lines: Iterable[str], out: TextIO) -> int:
    """Answer every line of ``lines`` on ``out`` (flushed per line); returns the number of requests answered."""
    count = 0
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        verbose.request("repl", "line", line)
        answer = handle(mem, caller, line)
        text = json.dumps(answer, ensure_ascii=False)
        verbose.response("repl", "line", text)
        out.write(text + "\n")
        out.flush()
        count += 1
    return count
