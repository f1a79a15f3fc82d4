"""Importing a framework for its integration test: a skip for a developer without it, a failure under `make test`/CI."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def framework(module: str, where: str = "the integrations-test extra; scripts/setup.sh installs it") -> ModuleType:
    """Import ``module``; when it is missing, fail under `make test` or CI (they install it), else skip."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        reason = f"{module} is not installed ({where}): {exc}"
        if os.environ.get("CI") or os.environ.get("MEMORY_REQUIRE_POSTGRES"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason, allow_module_level=True)
