"""Web inspector test fixtures (the helpers live in ui_helpers.py)."""

from __future__ import annotations

from ui_helpers import browser, served  # noqa: F401  (the fixtures)
