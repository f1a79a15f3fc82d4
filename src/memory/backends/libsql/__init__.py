"""The libSQL backend: the SQLite engine's stores over the Turso client library (PyPI ``libsql``).

``libsql:///path/to/memory.db`` opens a local libSQL file. With
``sync_url`` (a ``libsql://`` or ``https://`` address of a libSQL server or
Turso database) and ``auth_token`` the local file is an *embedded replica*:
reads are local, ``sync()`` pulls the primary's changes.
"""

from __future__ import annotations

from memory.backends.libsql.backend import LibSQLBackend

__all__ = ["LibSQLBackend"]
