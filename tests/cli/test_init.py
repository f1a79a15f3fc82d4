"""`memory init`: writes the config, creates the database, refuses to overwrite without --force."""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Callable
from pathlib import Path

from cli_helpers import Runner

from memory.config import config_path, default_data_dir


def test_init_creates_config_and_database(run: Runner, one_line_error: Callable[..., str]) -> None:
    result = run("init", "--embedder", "hashing", "--json", raw=True)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    config = config_path()
    assert Path(report["config"]) == config and config.exists()
    db_file = default_data_dir() / "memory.db"
    assert report["database"] == f"sqlite:///{db_file}" and report["database_existed"] is False
    assert db_file.exists()
    assert tomllib.loads(config.read_text()) == {
        "database": f"sqlite:///{db_file}",
        "embedder": {"provider": "hashing"},
    }

    again = run("init", "--embedder", "hashing", raw=True)
    one_line_error(again, 1, "already exists", "--force")
    assert tomllib.loads(config.read_text())["database"] == f"sqlite:///{db_file}"

    # The config is used from now on: no --db, no --embedder.
    memory_id = run("remember", "configured note", raw=True).stdout.strip()
    assert json.loads(run("get", memory_id, "--json", raw=True).stdout)["content"] == "configured note"

    forced = run("init", "--embedder", "hashing", "--force", "--yes", raw=True)
    assert forced.exit_code == 0, forced.stderr
    assert "existing, 1 memories" in forced.stdout


def test_init_with_relative_db_path_writes_an_absolute_url(run: Runner, tmp_path: Path) -> None:
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = run("init", "--db", "sub/dir/store.db", "--embedder", "hashing", "--json", raw=True)
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.stderr
    expected = f"sqlite:///{(tmp_path / 'sub/dir/store.db').resolve()}"
    assert json.loads(result.stdout)["database"] == expected
    assert (tmp_path / "sub/dir/store.db").exists()


def test_init_honours_the_config_option(run: Runner, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.toml"
    result = run("--config", str(target), "init", "--db", str(tmp_path / "x.db"), "--embedder", "hashing", raw=True)
    assert result.exit_code == 0, result.stderr
    assert target.exists() and not config_path().exists()
    assert "wrote config" in result.stdout
    stats = json.loads(run("--config", str(target), "stats", "--json", raw=True).stdout)
    assert stats["total"] == 0 and stats["embedding_model"].startswith("hashing")


def test_init_refuses_memory_url_and_writes_nothing(run: Runner, one_line_error: Callable[..., str]) -> None:
    one_line_error(run("init", "--db", "memory://", "--embedder", "hashing", raw=True), 1, "memory://")
    assert not config_path().exists()


def test_init_with_unknown_embedder_writes_nothing(
    run: Runner, tmp_path: Path, one_line_error: Callable[..., str]
) -> None:
    one_line_error(run("init", "--db", str(tmp_path / "y.db"), "--embedder", "nope", raw=True), 1, "nope")
    assert not config_path().exists()
