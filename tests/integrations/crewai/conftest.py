"""CrewAI's tests run in their own environment (.venv-crewai; `make test` runs them there)."""

from __future__ import annotations

import os
import tempfile

import pytest

# Before CrewAI is imported: no telemetry or tracing (offline), and the folders it creates on
# import and first use (appdirs data dir, ~/.local/share/crewai/credentials) go to a temporary
# directory, not the real $HOME. Only CrewAI's tests run in this process (see the Makefile).
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
_HOME = tempfile.mkdtemp(prefix="memory-crewai-home-")
os.environ["HOME"] = _HOME
os.environ["XDG_DATA_HOME"] = os.path.join(_HOME, ".local", "share")


def pytest_configure(config: pytest.Config) -> None:
    """Two warnings CrewAI raises about itself are ignored, nothing else.

    Its lazy imports warn on import (an ImportWarning of its own package layout), and every
    ``Agent`` reads its own deprecated fields (``function_calling_llm``, ``allow_code_execution``,
    ...) while it initialises: DeprecationWarnings raised from CrewAI's own modules.
    """
    config.addinivalue_line("filterwarnings", "ignore:Cannot set an attribute on 'crewai:ImportWarning")
    config.addinivalue_line("filterwarnings", r"ignore::DeprecationWarning:crewai(\..*)?")
