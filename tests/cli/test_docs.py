"""Every command has help text and a mention in README.md; --help works everywhere."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from memory.cli.main import cli

README = Path(__file__).resolve().parents[2] / "README.md"


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    for name, command in sorted(group.commands.items()):
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


COMMANDS = list(_commands(cli))


def test_the_walk_finds_the_commands() -> None:
    names = {path[0] for path, _ in COMMANDS}
    assert {
        "init",
        "remember",
        "recall",
        "get",
        "forget",
        "history",
        "list",
        "stats",
        "export",
        "import",
        "bench",
        "context",
        "chat",
    } <= names


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_has_help(path: tuple[str, ...], command: click.Command) -> None:
    assert (command.help or "").strip(), f"memory {' '.join(path)} has no help text"
    for param in command.params:
        if isinstance(param, click.Option):
            assert (param.help or "").strip(), f"memory {' '.join(path)} {param.opts[0]} has no help text"
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output


def test_root_options_have_help() -> None:
    for param in cli.params:
        assert isinstance(param, click.Option) and (param.help or "").strip(), param.name
    assert CliRunner().invoke(cli, ["--help"]).exit_code == 0


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_is_in_the_readme(path: tuple[str, ...], command: click.Command) -> None:
    text = README.read_text(encoding="utf-8")
    mention = f"memory {path[0]}" if len(path) == 1 else path[-1]
    assert mention in text, f"README.md does not mention `memory {' '.join(path)}`"
