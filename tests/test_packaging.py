"""The distribution's name and what ``import memory`` loads."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_distribution_name_is_not_the_taken_pypi_name() -> None:
    """`memory` on PyPI is another project; ours installs as llm-agent-memory and imports as memory."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "llm-agent-memory"
    assert project["scripts"]["memory"] == "memory.cli.main:main"
    readme = (ROOT / "README.md").read_text()
    assert "pip install 'llm-agent-memory[local]'" in readme
    assert "pip install 'memory[" not in readme


def test_import_memory_stays_light() -> None:
    """The library import loads no benchmark, no CLI and no engine-specific module."""
    code = "import sys, memory; print('\\n'.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    heavy = [
        m for m in loaded
        if m.startswith(("memory.bench", "memory.cli", "memory.server", "memory.backends.postgres", "psycopg"))
    ]  # fmt: skip
    assert heavy == []
