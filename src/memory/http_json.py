"""JSON over HTTP POST with retries: the one retry loop the HTTP embedders and LLM providers share.

429, 5xx, timeouts and connection errors are retried with exponential backoff
(jittered, capped at ``MAX_BACKOFF``); a server's Retry-After is honoured up to
``MAX_RETRY_AFTER`` seconds, beyond which the call fails at once. Other 4xx and
undecodable bodies fail at once. Failures are raised as the caller's error type
(the ``fail`` callback), so each provider keeps its own place in ``memory.errors``.
"""

from __future__ import annotations

import email.utils
import random
import threading
import time
import weakref
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx

__all__ = [
    "LazyClient",
    "MAX_RETRY_AFTER",
    "MAX_BACKOFF",
    "EXCERPT",
    "post_json",
    "excerpt",
    "retry_after",
    "checked_base_url",
]

#: A Retry-After longer than this is not waited for: the call fails instead.
MAX_RETRY_AFTER = 30.0
#: Upper bound of one backoff pause, in seconds.
MAX_BACKOFF = 20.0
#: How much of a server's error body goes into an error message.
EXCERPT = 300


class LazyClient:
    """An ``httpx.Client`` opened on first use (thread-safe) and closed by :meth:`close` or garbage collection."""

    def __init__(self, timeout: float, headers: dict[str, str]) -> None:
        """Remember the settings; no connection is made."""
        self._timeout = timeout
        self._headers = headers
        self._client: httpx.Client | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._lock = threading.Lock()

    def get(self) -> httpx.Client:
        """The open client, creating it on the first call."""
        with self._lock:
            if self._client is None:
                client = httpx.Client(timeout=httpx.Timeout(self._timeout), headers=self._headers)
                self._finalizer = weakref.finalize(self, client.close)
                self._client = client
            return self._client

    def close(self) -> None:
        """Close the connection pool. Idempotent; a later :meth:`get` opens a new one."""
        with self._lock:
            if self._finalizer is not None:
                self._finalizer()
            self._client = None
            self._finalizer = None


def _no_hint(status: int) -> str:
    return ""


def post_json(
    client: httpx.Client,
    url: str,
    payload: dict[str, Any],
    *,
    max_retries: int,
    timeout: float,
    retry_backoff: float,
    fail: Callable[[str], Exception],
    hint: Callable[[int], str] = _no_hint,
) -> Any:
    """POST ``payload`` as JSON with retries; returns the decoded JSON body.

    Raises ``fail(message)`` for a non-retryable status (with ``hint(status)``
    appended), a body that is not JSON, a Retry-After beyond ``MAX_RETRY_AFTER``,
    or when every attempt failed.
    """
    attempts = max_retries + 1
    problem = "no attempt made"
    for attempt in range(attempts):
        asked: float | None = None
        try:
            response = client.post(url, json=payload)
        except httpx.TimeoutException:
            problem = f"timed out after {timeout:g}s"
        except httpx.TransportError as exc:
            problem = f"cannot connect: {exc or type(exc).__name__}"
        except (httpx.HTTPError, httpx.InvalidURL, RuntimeError) as exc:  # RuntimeError: client closed meanwhile
            raise fail(f"request failed: {exc}") from exc
        else:
            status = response.status_code
            if response.is_success:
                try:
                    return response.json()
                except ValueError:
                    raise fail(f"HTTP {status} with a body that is not JSON: {response.text[:EXCERPT]!r}") from None
            if status != 429 and status < 500:
                raise fail(f"HTTP {status}: {excerpt(response)}{hint(status)}")
            problem = f"HTTP {status}: {excerpt(response)}"
            asked = retry_after(response)
            if asked is not None and asked > MAX_RETRY_AFTER:
                raise fail(f"{problem} (server asks to retry after {asked:.0f}s; not waiting)")
        if attempt + 1 < attempts:
            time.sleep(asked if asked is not None else _backoff(retry_backoff, attempt))
    raise fail(f"gave up after {attempts} attempt(s): {problem}")


def _backoff(first: float, attempt: int) -> float:
    """The jittered exponential pause before retry ``attempt + 1``."""
    pause: float = min(MAX_BACKOFF, first * (2**attempt))
    return pause * random.uniform(0.8, 1.2)


def excerpt(response: httpx.Response) -> str:
    """The server's error message, or the start of its body."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        error = body.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        if isinstance(message, str):
            return message[:EXCERPT]
        if isinstance(error, str):
            return error[:EXCERPT]
    text = response.text.strip().replace("\n", " ")
    return (text[:EXCERPT] + "…") if len(text) > EXCERPT else (text or "(empty body)")


def retry_after(response: httpx.Response) -> float | None:
    """Seconds the server asks us to wait (``retry-after-ms`` or ``Retry-After``), if it says."""
    millis = response.headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def checked_base_url(value: str) -> str:
    """``value`` as a provider's base URL (trimmed, no trailing slash); ValueError unless http(s) with a host."""
    value = value.strip().rstrip("/")
    if not value.startswith(("http://", "https://")):
        raise ValueError(f"base_url must start with http:// or https://, got {value!r}")
    try:
        host = httpx.URL(value).host
    except httpx.InvalidURL as exc:
        raise ValueError(f"base_url {value!r} is not a valid URL: {exc}") from exc
    if not host:
        raise ValueError(f"base_url {value!r} has no host")
    return value
