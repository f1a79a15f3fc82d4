"""``-V/--verbose``: requests and responses echoed on stderr by the CLI, the JSON REPL and both servers.

Everything goes through the ``memory.verbose`` logger at INFO, which is silent
unless :func:`enable` (``memory -V``) gave it a stderr handler, so the servers
pay for nothing when it is off. Lines start with ``>`` (a request) or ``<``
(a response) and the channel (``cli``, ``repl``, ``mcp``, ``rest``). Only
what the caller sent and was answered is echoed — never API keys or headers.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any, TextIO

__all__ = ["enable", "enabled", "request", "response", "LOGGER"]

LOGGER = logging.getLogger("memory.verbose")
#: Longest echo line; the rest is cut with a note of how much was cut.
MAX_ECHO_CHARS = 4000


def enabled() -> bool:
    """True when echoes are shown."""
    return LOGGER.isEnabledFor(logging.INFO)


def enable(stream: TextIO | None = None) -> None:
    """Echo requests and responses on ``stream`` (stderr). Idempotent."""
    if any(getattr(h, "_memory_verbose", False) for h in LOGGER.handlers):
        return
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler._memory_verbose = True  # type: ignore[attr-defined]
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.INFO)
    LOGGER.propagate = False


def _text(payload: Any) -> str:
    if isinstance(payload, bytes):
        payload = payload.decode("utf-8", "replace")
    text = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False, default=str)
    if len(text) > MAX_ECHO_CHARS:
        return f"{text[:MAX_ECHO_CHARS]}… ({len(text) - MAX_ECHO_CHARS} more characters)"
    return text


def request(channel: str, name: str, payload: Any) -> None:
    """Echo a request: ``> channel name payload``."""
    if enabled():
        LOGGER.info("> %s %s %s", channel, name, _text(payload))


def response(channel: str, name: str, payload: Any) -> None:
    """Echo a response: ``< channel name payload``."""
    if enabled():
        LOGGER.info("< %s %s %s", channel, name, _text(payload))


class Tee:
    """A text stream that writes through to ``target`` and echoes each complete line as a response."""

    def __init__(self, target: TextIO, channel: str, name: str) -> None:
        """Wrap ``target`` (stdout); lines are echoed as ``< channel name line``."""
        self._target = target
        self._channel = channel
        self._name = name
        self._pending = ""

    def write(self, text: str) -> int:
        """Write ``text`` to the target; echo the lines it completes."""
        written = self._target.write(text)
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            response(self._channel, self._name, line)
        return written

    def flush(self) -> None:
        """Flush the target (a partial line stays pending until its newline or :meth:`close_echo`)."""
        self._target.flush()

    def close_echo(self) -> None:
        """Echo a last line that had no newline."""
        if self._pending:
            response(self._channel, self._name, self._pending)
            self._pending = ""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)
