"""The SQLite backend: one file, WAL, FTS5 (BM25), vectors scored in numpy; the embedded default.

``sqlite:///path/to/memory.db`` (or a plain path) opens it through the
backend registry.
"""

from __future__ import annotations

from memory.backends.sqlite.backend import SQLiteBackend

__all__ = ["SQLiteBackend"]
