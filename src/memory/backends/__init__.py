"""Storage backends and how a database URL picks one.

``memory://`` (or ``:memory:``) opens a throwaway SQLite store, deleted on
close; ``sqlite:///path`` or a plain file path opens SQLite. Backend-specific code lives in this
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
    if url.startswith(("postgresql://", "postgres://")):
        return "postgres", {"dsn": url}
    if "://" in url:
        scheme = url.split("://", 1)[0]
        return scheme, {"url": url}
    return "sqlite", {"path": str(Path(url).expanduser())}


def open_backend(url: str) -> Backend:
    """Open the backend a database URL names. Raises ConfigError for unknown schemes."""
    name, options = backend_name_for(url)
    backend: Backend = registry.create("backend", name, options, protocol=Backend)
    return backend


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***`` (for messages and reports)."""
    url = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)
    return re.sub(r"(password\s*=\s*)\S+", r"\1***", url)
