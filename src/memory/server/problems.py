"""Errors as RFC 9457 problem details (``application/problem+json``), mapped from :mod:`memory.errors`."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from memory.errors import (
    AuthenticationError,
    ConfigError,
    EmbeddingMismatchError,
    Error,
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
    ProviderError,
    StorageError,
)

__all__ = ["Problem", "PROBLEM_TYPE", "status_for", "problem_body", "problem_for"]

PROBLEM_TYPE = "application/problem+json"

#: Most specific first.
_STATUS: tuple[tuple[type[Error], int, str], ...] = (
    (AuthenticationError, 401, "unauthorized"),
    (PermissionDeniedError, 403, "forbidden"),
    (NotFoundError, 404, "not-found"),
    (InvalidInputError, 422, "invalid-input"),
    (EmbeddingMismatchError, 409, "embedding-mismatch"),
    (ConfigError, 500, "config"),
    (StorageError, 503, "storage"),
    (ProviderError, 502, "provider"),
)


class Problem(BaseModel):
    """An error response (RFC 9457)."""

    model_config = ConfigDict(extra="allow")

    type: str = "about:blank"
    title: str
    status: int
    detail: str | None = None
    instance: str | None = None


def status_for(error: Error) -> tuple[int, str]:
    """HTTP status and problem slug of a memory error."""
    for cls, status, slug in _STATUS:
        if isinstance(error, cls):
            return status, slug
    return 500, "error"


def problem_body(status: int, title: str, detail: str | None, *, slug: str | None = None, **extra: Any) -> bytes:
    """The JSON bytes of a problem document."""
    doc: dict[str, Any] = {
        "type": f"https://memory.invalid/problems/{slug}" if slug else "about:blank",
        "title": title,
        "status": status,
    }
    if detail:
        doc["detail"] = detail
    doc.update(extra)
    return json.dumps(doc).encode()


def problem_for(error: Error) -> tuple[int, bytes]:
    """Status and body for a memory error; the detail is the error's message."""
    status, slug = status_for(error)
    title = type(error).__name__
    return status, problem_body(status, title, str(error) or title, slug=slug)
