"""The real console script and `python -m memory`, run as separate processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(sys.executable).parent / "memory"


def _run(args: list[str], *, input: str | None = None, module: bool = False) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "memory", *args] if module else [str(SCRIPT), *args]
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    return subprocess.run(command, input=input, capture_output=True, text=True, env=env, timeout=120, check=False)


def test_console_script_round_trip_across_processes(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'p.db'}"
    base = ["--db", db, "--embedder", "hashing"]
    added = _run([*base, "remember", "Frank flies kites", "--user", "frank", "--tag", "hobby", "--json"])
    assert added.returncode == 0, added.stderr
    memory_id = json.loads(added.stdout)["id"]
    recalled = _run([*base, "recall", "kites", "--json"])
    assert recalled.returncode == 0, recalled.stderr
    assert [h["item"]["id"] for h in json.loads(recalled.stdout)["hits"]] == [memory_id]
    exported = _run([*base, "export"])
    assert exported.returncode == 0, exported.stderr
    copy = ["--db", f"sqlite:///{tmp_path / 'q.db'}", "--embedder", "hashing"]
    imported = _run([*copy, "import", "-", "--json"], input=exported.stdout, module=True)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["imported"] == 1
    got = _run([*copy, "get", memory_id, "--json"], module=True)
    assert json.loads(got.stdout)["content"] == "Frank flies kites"


def test_errors_are_one_line_without_traceback(tmp_path: Path) -> None:
    base = ["--db", f"sqlite:///{tmp_path / 'e.db'}", "--embedder", "hashing"]
    missing = _run([*base, "get", "0193a0c2-5f1e-7c3a-9b2d-4e5f6a7b8c9d"])
    assert missing.returncode == 1
    assert missing.stderr.count("\n") == 1 and missing.stderr.startswith("error: no memory")
    assert missing.stdout == ""
    usage = _run([*base, "recall"], module=True)
    assert usage.returncode == 2
    assert usage.stderr.count("\n") == 1 and usage.stderr.startswith("error: ")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("garbage\n")
    broken = _run([*base, "import", str(bad)])
    assert broken.returncode == 1 and "Traceback" not in broken.stderr
    assert broken.stderr.strip().splitlines() == [broken.stderr.strip()] and "line 1" in broken.stderr


def test_version(tmp_path: Path) -> None:
    result = _run(["--version"], module=True)
    assert result.returncode == 0 and result.stdout.startswith("memory ")
