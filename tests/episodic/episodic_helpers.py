"""Helpers for the multi-process episodic tests: run the `memory` console script against a server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from embed_server import EmbedServer

SCRIPT = Path(sys.executable).parent / "memory"


def cli_env(server: EmbedServer | None, **options: Any) -> dict[str, str]:
    """Environment for a `memory` subprocess using ``server`` as its embedder (or hashing)."""
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    if server is None:
        env["MEMORY_EMBEDDER"] = "hashing"
        env.pop("MEMORY_EMBEDDER_OPTIONS", None)
    else:
        env["MEMORY_EMBEDDER"] = "openai"
        env["MEMORY_EMBEDDER_OPTIONS"] = json.dumps(server.options(**options))
    return env


def run_cli(db: Path, *args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``memory --db <db> ARGS`` to completion."""
    return subprocess.run(
        [str(SCRIPT), "--db", str(db), *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
