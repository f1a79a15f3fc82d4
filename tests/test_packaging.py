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


def test_engine_modules_are_imported_only_inside_backends() -> None:
    """Backend-specific code stays in memory/backends: nothing else imports an engine's modules."""
    import ast

    offenders = []
    for path in sorted((ROOT / "src" / "memory").rglob("*.py")):
        if "backends" in path.relative_to(ROOT / "src" / "memory").parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                if name.startswith(("memory.backends.postgres", "memory.backends.sqlite", "psycopg", "sqlite3")):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {name}")
    assert offenders == []


#: Where ``Memory`` is used as a whole: the facade itself, its async twin and the interfaces above it.
_ABOVE_THE_FACADE = ("memory.py", "aio.py", "__init__.py", "importers.py", "vector_store.py", "client.py")
_INTERFACES = ("cli", "server", "bench", "integrations", "agent", "context")


def test_services_do_not_reach_into_the_facade() -> None:
    """Feature services take the typed Core: none imports memory.memory or touches a Memory private."""
    import ast
    import re

    src = ROOT / "src" / "memory"
    private = re.compile(r"\bmem(?:ory)?\._(?:ns|ensure_space|refresh_windows|windows_after_add|retrieval|backend)\b")
    offenders = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src)
        if rel.parts[0] in _INTERFACES or (len(rel.parts) == 1 and rel.name in _ABOVE_THE_FACADE):
            continue
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            offenders += [f"{rel}:{node.lineno} imports {n}" for n in names if n == "memory.memory"]
        offenders += [f"{rel}: {m.group(0)}" for m in private.finditer(text)]
    assert offenders == []
