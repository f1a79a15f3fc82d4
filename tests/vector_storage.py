"""What a backend keeps of a vector it stores, for tests that compare stored vectors with given ones.

The SQLite engine (SQLite, libSQL, ``memory://``) stores the vectors of a new
space as float16 (``backends/sqlite/vectors.py``): a vector reads back as its
float16 rounding, exactly. PostgreSQL keeps float32.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from memory.backends.sqlite import SQLiteBackend


def as_stored(backend: Any, vector: Any) -> np.ndarray:
    """``vector`` as ``backend`` reads it back from a space it made (float32 values)."""
    array = np.asarray(vector, dtype=np.float32)
    if isinstance(backend, SQLiteBackend):
        return array.astype(np.float16).astype(np.float32)
    return array
