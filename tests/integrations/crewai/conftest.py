"""CrewAI's tests run in their own environment (.venv-crewai; `make test` runs them there)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Two warnings CrewAI raises about itself are ignored, nothing else.

    Its lazy imports warn on import (an ImportWarning of its own package layout), and every
    ``Agent`` reads its own deprecated fields (``function_calling_llm``, ``allow_code_execution``,
    ...) while it initialises: DeprecationWarnings raised from CrewAI's own modules.
    """
    config.addinivalue_line("filterwarnings", "ignore:Cannot set an attribute on 'crewai:ImportWarning")
    config.addinivalue_line("filterwarnings", r"ignore::DeprecationWarning:crewai(\..*)?")
