"""`memory export` / `memory import` through the CLI, between two SQLite files."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from cli_helpers import Runner

from memory.filters import Filter
from memory.memory import Memory
from memory.types import MemoryItem


def _everything(mem: Memory) -> tuple[list[MemoryItem], dict[str, bytes]]:
    flt = Filter(
        namespace="default", clearance="secret", include_expired=True, include_invalid=True,
        now=datetime.now(UTC) + timedelta(days=3650),
    )  # fmt: skip
    items = sorted(mem.backend.iter_items(flt), key=lambda i: i.id)
    vectors = mem.backend.get_vectors("default", mem.embedder.model_name, [i.id for i in items])
    assert all(v.dtype == np.float32 for v in vectors.values())
    return items, {k: v.tobytes() for k, v in vectors.items()}


def _fill(run: Runner) -> list[str]:
    ids = [
        run.ok("remember", "Alice prefers dark mode", "--user", "alice", "--tag", "ui", "--meta", 'x={"a": 1}',
               "--context", "chat", "--importance", "0.8").stdout.strip(),
        run.ok("remember", "Bob's PIN is 1234", "--user", "bob", "--sensitivity", "secret").stdout.strip(),
        run.ok("remember", "Carol: 100% sure", "--user", "carol", "--kind", "document",
               "--ttl", "86400").stdout.strip(),
    ]  # fmt: skip
    run.ok("recall", "dark mode")  # access statistics travel too
    return ids


def test_export_import_between_databases_is_lossless(run: Runner, tmp_path: Path) -> None:
    _fill(run)
    out = tmp_path / "backup.jsonl"
    assert run.json("export", "--out", str(out), "--include-secret") == {"exported": 3, "out": str(out)}
    copy = f"sqlite:///{tmp_path / 'copy.db'}"
    report = run.json("import", str(out), db=copy)
    assert report == {
        "imported": 3, "duplicates": 0, "skipped_existing": 0, "reembedded": 0, "pending": 0,
        "messages": 0, "blocks": 0, "tiers": 0, "feedback": 0,
    }  # fmt: skip
    with Memory(run.db, embedder="hashing") as a, Memory(copy, embedder="hashing") as b:
        before, after = _everything(a), _everything(b)
    assert after[0] == before[0]  # every field of every item
    assert after[1] == before[1] and len(after[1]) == 2  # vectors bit for bit; the secret has none
    assert "already present" in run.ok("import", str(out), db=copy).stdout


def test_export_to_stdout_and_import_from_stdin(run: Runner, tmp_path: Path) -> None:
    ids = _fill(run)
    result = run.ok("export")
    lines = result.stdout.splitlines()
    assert json.loads(lines[0])["type"] == "header"
    assert {json.loads(line)["item"]["id"] for line in lines[1:]} == {ids[0], ids[2]}  # no secret by default
    assert "exported 2 memories" in result.stderr
    copy = f"sqlite:///{tmp_path / 'copy.db'}"
    assert "imported 2 memories" in run.ok("import", "-", input=result.stdout, db=copy).stdout
    assert run.json("stats", db=copy)["total"] == 2


def test_export_filters_apply(run: Runner) -> None:
    ids = _fill(run)
    lines = run.ok("export", "--user", "alice", "--tag", "ui").stdout.splitlines()[1:]
    assert [json.loads(line)["item"]["id"] for line in lines] == [ids[0]]


def test_malformed_import_fails_cleanly_and_changes_nothing(
    run: Runner, tmp_path: Path, one_line_error: Callable[..., str]
) -> None:
    _fill(run)
    out = tmp_path / "backup.jsonl"
    run.ok("export", "--out", str(out))
    lines = out.read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:2], '{"type": "memory", "item": {"id": "x"', *lines[2:]]) + "\n")
    copy = f"sqlite:///{tmp_path / 'copy.db'}"
    one_line_error(run("import", str(bad), db=copy), 1, "line 3", "not valid JSON")
    stats = run.json("stats", db=copy)
    assert stats["total"] == 0 and stats["ledger_entries"] == 0


def test_import_of_a_missing_file_is_a_usage_error(run: Runner, one_line_error: Callable[..., str]) -> None:
    one_line_error(run("import", "/nonexistent/backup.jsonl"), 2, "cannot open")


def test_export_with_json_needs_a_file(run: Runner, one_line_error: Callable[..., str]) -> None:
    one_line_error(run("export", "--json"), 2, "--out")


def test_failed_export_leaves_no_file(run: Runner, tmp_path: Path, one_line_error: Callable[..., str]) -> None:
    out = tmp_path / "never.jsonl"
    one_line_error(run("export", "--out", str(out), "--kind", "Bad Kind"), 1, "kind")
    assert not out.exists() and not list(tmp_path.glob("*.partial"))
