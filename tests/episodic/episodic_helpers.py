"""Helpers for the multi-process episodic tests: run the `memory` console script against a server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
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


#: Only a guard against a test that hangs for good: waits below end on the event they need
#: (or on the process dying), however slow a loaded machine makes the process start.
HANG_GUARD = 900.0


def wait_for(done: Callable[[], bool], proc: subprocess.Popen[Any] | list[subprocess.Popen[Any]], what: str) -> None:
    """Wait until ``done()``; fail at once (with its stderr) if a process of ``proc`` exits first."""
    procs = proc if isinstance(proc, list) else [proc]
    deadline = time.monotonic() + HANG_GUARD
    while not done():
        for p in procs:
            if p.poll() is not None:
                err = p.stderr.read() if p.stderr is not None else ""
                pytest.fail(f"a process exited ({p.returncode}) before {what}: {err}")
        if time.monotonic() > deadline:
            pytest.fail(f"still waiting after {HANG_GUARD:.0f} s for {what}")
        time.sleep(0.05)
