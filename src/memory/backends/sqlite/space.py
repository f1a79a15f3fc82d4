"""Where the bytes of a SQLite store go: pages per table and index (SQLite's ``dbstat``), for ``bench disk``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memory.errors import ConfigError

__all__ = ["table_bytes", "vector_tables"]


def table_bytes(path: Path) -> dict[str, int]:
    """Bytes of the pages each table and index of the SQLite file ``path`` occupies (``dbstat``).

    Read-only; the WAL should be checkpointed first for the figures to cover
    everything. Raises ConfigError when the file cannot be read or this
    SQLite has no ``dbstat`` table.
    """
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ConfigError(f"cannot open {path}: {exc}") from exc
    try:
        rows = conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
    except sqlite3.Error as exc:
        raise ConfigError(f"cannot read the page statistics of {path} (SQLite without dbstat?): {exc}") from exc
    finally:
        conn.close()
    return {str(name): int(size) for name, size in rows}


def vector_tables(path: Path) -> dict[str, str]:
    """Vector table name -> the model of its space, for the item spaces of ``path`` (read-only)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT table_name, model FROM vector_spaces").fetchall()
    except sqlite3.Error:
        rows = []
    finally:
        conn.close()
    return {str(table): str(model) for table, model in rows}
