"""From an HTTP request's headers to a :class:`~memory.keys.Caller` (shared by REST and MCP over HTTP).

A request presents its key as ``Authorization: Bearer mem_…`` or
``X-API-Key: mem_…``. With keys required (the default) a request without a
valid key is refused (401). ``require_keys=False`` (``--no-auth``, local
development on loopback only) serves key-less requests as the local caller:
every namespace, read-write, ``private`` clearance unless secrets were
allowed; a key, when given, still applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memory.backends.keys import KeyStore
from memory.errors import AuthenticationError
from memory.keys import Caller, parse_token, verify

__all__ = ["Authenticator", "token_from_headers"]


def token_from_headers(headers: Mapping[str, str]) -> str | None:
    """The API key a request carries, or None. Raises AuthenticationError for a malformed Authorization header."""
    value = headers.get("authorization")
    if value:
        scheme, _, token = value.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthenticationError("the Authorization header must be 'Bearer <API key>'")
        return token.strip()
    value = headers.get("x-api-key")
    return value.strip() if value else None


@dataclass(frozen=True, slots=True)
class Authenticator:
    """Turns request headers into a Caller using the store's keys."""

    store: KeyStore | None
    require_keys: bool
    local: Caller

    def caller(self, headers: Mapping[str, str]) -> Caller:
        """The caller of a request. Raises AuthenticationError."""
        token = token_from_headers(headers)
        if token is None:
            if self.require_keys:
                raise AuthenticationError(
                    "this server needs an API key: send 'Authorization: Bearer <key>' (create one with "
                    "`memory keys create`)"
                )
            return self.local
        if self.store is None:
            raise AuthenticationError("this server has no key store; API keys cannot be checked")
        key = verify(self.store.get(parse_token(token)), token)
        return Caller.from_key(key, self.local.default_namespace)
