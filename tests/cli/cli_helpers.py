"""Helpers for the CLI tests: an in-process runner that parses output, and an error assertion."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from click.testing import CliRunner, Result

from memory.cli.main import cli


@dataclass
class Runner:
    """Runs ``memory --db <db_url> --embedder hashing …`` in process."""

    db: str

    def __call__(self, *args: str, input: str | None = None, db: str | None = None, raw: bool = False) -> Result:
        """Invoke the CLI; ``raw`` skips the --db/--embedder prefix."""
        prefix: list[str] = [] if raw else ["--db", db or self.db, "--embedder", "hashing"]
        return CliRunner().invoke(cli, [*prefix, *args], input=input, prog_name="memory")

    def ok(self, *args: str, input: str | None = None, db: str | None = None) -> Result:
        """Invoke and assert exit code 0."""
        result = self(*args, input=input, db=db)
        assert result.exit_code == 0, (result.exit_code, result.stdout, result.stderr, result.exception)
        return result

    def json(self, *args: str, input: str | None = None, db: str | None = None) -> Any:
        """Invoke with --json and parse stdout as one JSON document."""
        return json.loads(self.ok(*args, "--json", input=input, db=db).stdout)


def assert_one_line_error(result: Result, code: int, *needles: str) -> str:
    """The run failed with ``code`` and a single ``error: …`` line on stderr containing ``needles``."""
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]
