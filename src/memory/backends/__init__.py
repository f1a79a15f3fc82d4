"""Storage backends and how a database URL picks one.

``memory://`` (or ``:memory:``) opens a throwaway SQLite store, deleted on
close; ``sqlite:///path`` or a plain file path opens SQLite; ``libsql:///path`` opens libSQL
(Turso's SQLite fork), ``?sync_url=libsql://host`` making it an embedded replica. Backend-specific code lives in this
package only.
"""

from __future__ import annotations

import re
from pathlib import Path

from memory import registry
from memory.backends.base import Backend
from memory.errors import ConfigError

__all__ = ["Backend", "open_backend", "backend_name_for", "redact"]


def backend_name_for(url: str) -> tuple[str, dict[str, object]]:
    """Map a database URL to a backend name and its constructor options."""
    if not isinstance(url, str) or not url.strip():
        raise ConfigError("database URL is empty; use e.g. sqlite:///memory.db or memory://")
    url = url.strip()
    if url in ("memory://", ":memory:", "inmemory://"):
        return "inmemory", {}
    if url.startswith("sqlite://"):
        path = url[len("sqlite://") :]
        if path.startswith("/"):
            path = path[1:]  # sqlite:///rel.db -> rel.db ; sqlite:////abs.db -> /abs.db
        if not path:
            raise ConfigError(f"{url!r} names no file; use sqlite:///relative.db or sqlite:////absolute/path.db")
        return "sqlite", {"path": path}
    if url.startswith("libsql://"):
        return "libsql", _libsql_options(url)
    if url.startswith(("postgresql://", "postgres://")):
        return "postgres", {"dsn": url}
    if "://" in url:
        scheme = url.split("://", 1)[0]
        return scheme, {"url": url}
    return "sqlite", {"path": str(Path(url).expanduser())}


def _libsql_options(url: str) -> dict[str, object]:
    """``libsql:///file.db``: a local file; ``?sync_url=libsql://host``: an embedded replica; ``?vector_index=on``."""
    from urllib.parse import parse_qs, urlsplit

    parts = urlsplit(url)
    if parts.netloc:
        raise ConfigError(
            f"{redact(url)!r} names a server, not a file: open a local file that replicates it, "
            "libsql:///replica.db?sync_url=libsql://HOST (the token from MEMORY_LIBSQL_AUTH_TOKEN)"
        )
    path = parts.path[1:] if parts.path.startswith("/") else parts.path
    if not path:
        raise ConfigError(f"{url!r} names no file; use libsql:///relative.db or libsql:////absolute/path.db")
    query = parse_qs(parts.query)
    unknown = sorted(set(query) - {"sync_url", "vector_index"})
    if unknown:
        raise ConfigError(f"unknown libsql URL option(s) {unknown}; the URL takes sync_url and vector_index")
    options: dict[str, object] = {"path": path}
    if "sync_url" in query:
        options["sync_url"] = query["sync_url"][-1]
    if "vector_index" in query:
        flag = query["vector_index"][-1].lower()
        if flag not in ("on", "off", "true", "false", "1", "0"):
            raise ConfigError(f"vector_index must be on or off, got {flag!r}")
        options["vector_index"] = flag in ("on", "true", "1")
    return options


def open_backend(url: str) -> Backend:
    """Open the backend a database URL names. Raises ConfigError for unknown schemes."""
    name, options = backend_name_for(url)
    backend: Backend = registry.create("backend", name, options, protocol=Backend)
    return backend


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***`` (for messages and reports)."""
    url = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)
    return re.sub(r"(password\s*=\s*)\S+", r"\1***", url)
