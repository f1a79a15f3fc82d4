"""The web inspector's static assets (HTML, CSS, JavaScript modules), served by :mod:`memory.server.ui`."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["static_dir"]


def static_dir() -> Path:
    """The folder holding the inspector's files (inside the installed package)."""
    return Path(str(resources.files(__name__) / "static"))
