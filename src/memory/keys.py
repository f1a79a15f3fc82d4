"""API keys for the servers: the key record, token format, hashing, and the caller they grant.

A key is shown once, at creation: ``mem_<id>_<secret>``. Only its SHA-256
hash is stored (keys are 256-bit random, so a fast hash is enough; lookup is
by the public ``id`` part, comparison in constant time). A key names the
namespaces it may use (``*`` = all), whether it is read-only, and whether it
has clearance for ``secret`` memories. Pure logic: storage is behind
:class:`memory.backends.keys.KeyStore`.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from memory.errors import AuthenticationError, InvalidInputError, PermissionDeniedError
from memory.records import check_name
from memory.types import SENSITIVITY_LEVELS

__all__ = ["ApiKey", "Caller", "new_key", "hash_token", "parse_token", "verify", "ALL_NAMESPACES", "TOKEN_PREFIX"]

TOKEN_PREFIX = "mem"
ALL_NAMESPACES = "*"
_TOKEN = re.compile(r"^mem_([0-9a-f]{16})_([A-Za-z0-9_\-]{43})$")


class ApiKey(BaseModel):
    """A stored API key (never the token itself: only its hash)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    token_hash: str
    namespaces: tuple[str, ...]
    read_only: bool = False
    secrets: bool = False
    created_at: datetime
    revoked_at: datetime | None = None

    @property
    def active(self) -> bool:
        """True until the key is revoked."""
        return self.revoked_at is None


def hash_token(token: str) -> str:
    """The stored form of a token: hex SHA-256."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def parse_token(token: str) -> str:
    """The key id inside a token. Raises AuthenticationError for a malformed token."""
    match = _TOKEN.match(token.strip()) if isinstance(token, str) else None
    if match is None:
        raise AuthenticationError("malformed API key: expected mem_<id>_<secret> as made by `memory keys create`")
    return match.group(1)


def new_key(
    name: str, namespaces: Iterable[str], *, now: datetime, read_only: bool = False, allow_secrets: bool = False
) -> tuple[ApiKey, str]:
    """Make a key record and its token (returned once; store only the record).

    Raises InvalidInputError for a bad name or namespace list.
    """
    label = check_name(name, "key name", optional=False)
    scopes: list[str] = []
    for namespace in namespaces:
        if namespace != ALL_NAMESPACES:
            check_name(namespace, "namespace", optional=False)
        if namespace not in scopes:
            scopes.append(namespace)
    if not scopes:
        raise InvalidInputError("a key needs at least one namespace (or '*' for all)")
    key_id = secrets.token_hex(8)
    token = f"{TOKEN_PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"
    record = ApiKey(
        id=key_id,
        name=str(label),
        token_hash=hash_token(token),
        namespaces=tuple(scopes),
        read_only=read_only,
        secrets=allow_secrets,
        created_at=now,
    )
    return record, token


def verify(record: ApiKey | None, token: str) -> ApiKey:
    """Check ``token`` against its stored record. Raises AuthenticationError (unknown, wrong or revoked)."""
    if record is None or not hmac.compare_digest(record.token_hash, hash_token(token.strip())):
        raise AuthenticationError("unknown API key")
    if not record.active:
        raise AuthenticationError(f"API key {record.id} was revoked")
    return record


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling a server and what they may do.

    ``namespaces`` None means every namespace. ``clearance`` is the highest
    sensitivity the caller may read (``secret`` only with a key flag or the
    MCP ``--allow-secrets`` option). ``default_namespace`` is used when a
    request names none (MCP tools).
    """

    namespaces: frozenset[str] | None
    clearance: str = "private"
    read_only: bool = False
    default_namespace: str = "default"
    key_id: str | None = None

    @classmethod
    def from_key(cls, key: ApiKey, default_namespace: str) -> Caller:
        """The caller a verified key grants."""
        scopes = None if ALL_NAMESPACES in key.namespaces else frozenset(key.namespaces)
        if scopes is not None and default_namespace not in scopes:
            default_namespace = key.namespaces[0]
        return cls(
            namespaces=scopes,
            clearance="secret" if key.secrets else "private",
            read_only=key.read_only,
            default_namespace=default_namespace,
            key_id=key.id,
        )

    def allows(self, namespace: str) -> bool:
        """True when this caller may use ``namespace``."""
        return self.namespaces is None or namespace in self.namespaces

    def namespace(self, requested: str | None) -> str:
        """The namespace a request works in. Raises PermissionDeniedError outside the caller's scope."""
        namespace = self.default_namespace if requested is None else requested
        if not self.allows(namespace):
            raise PermissionDeniedError(f"this API key may not use namespace {namespace!r}")
        return namespace

    def check_write(self, operation: str) -> None:
        """Raise PermissionDeniedError when a read-only caller tries ``operation`` (a write)."""
        if self.read_only:
            raise PermissionDeniedError(f"this API key is read-only; {operation} changes memories")

    def check_clearance(self, requested: str) -> str:
        """The clearance to use. Raises PermissionDeniedError when above the caller's own."""
        if SENSITIVITY_LEVELS[requested] > SENSITIVITY_LEVELS[self.clearance]:
            raise PermissionDeniedError(
                f"clearance {requested!r} is not granted to this caller (create the key with --allow-secrets)"
            )
        return requested
