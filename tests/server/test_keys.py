"""API keys: token format, hashing, stores (in-memory and SQLite), the `memory keys` commands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memory import Memory
from memory.backends.keys import KeyStore, open_key_store
from memory.backends.sqlite.migrations import MIGRATIONS
from memory.errors import AuthenticationError, InvalidInputError, PermissionDeniedError
from memory.ids import utcnow
from memory.keys import Caller, new_key, parse_token, verify

MEMORY_BIN = str(Path(sys.executable).with_name("memory"))


def test_token_roundtrip_and_caller() -> None:
    record, token = new_key("laptop", ["a", "b", "a"], now=utcnow(), read_only=True)
    assert record.namespaces == ("a", "b") and token not in record.model_dump_json()
    assert parse_token(token) == record.id
    assert verify(record, token) is record
    with pytest.raises(AuthenticationError):
        verify(record, token[:-1] + ("A" if token[-1] != "A" else "B"))
    with pytest.raises(AuthenticationError, match="malformed"):
        parse_token("mem_short")
    caller = Caller.from_key(record, "default")
    assert caller.default_namespace == "a" and caller.clearance == "private"
    assert caller.namespace("b") == "b"
    with pytest.raises(PermissionDeniedError):
        caller.namespace("c")
    with pytest.raises(PermissionDeniedError):
        caller.check_write("remember")
    with pytest.raises(PermissionDeniedError):
        caller.check_clearance("secret")
    everywhere = Caller.from_key(new_key("all", ["*"], now=utcnow(), allow_secrets=True)[0], "default")
    assert everywhere.namespaces is None and everywhere.check_clearance("secret") == "secret"
    for bad in ([], ["bad\nname"]):
        with pytest.raises(InvalidInputError):
            new_key("x", bad, now=utcnow())


@pytest.mark.parametrize("kind", ["inmemory", "sqlite"])
def test_key_stores(kind: str, tmp_path: Path) -> None:
    mem = Memory("memory://" if kind == "inmemory" else f"sqlite:///{tmp_path / 'k.db'}", embedder="hashing")
    store = open_key_store(mem.backend)
    assert isinstance(store, KeyStore)
    record, token = new_key("k", ["a"], now=utcnow())
    store.add(record)
    assert open_key_store(mem.backend).get(record.id) == record  # another store object sees it
    assert store.get(record.id) == record and [k.id for k in store.list()] == [record.id]
    assert store.revoke(record.id, utcnow()) and not store.revoke(record.id, utcnow())
    with pytest.raises(AuthenticationError, match="revoked"):
        verify(store.get(record.id), token)
    assert store.get("nope") is None
    mem.close()
    if kind == "sqlite":
        assert token.encode() not in (tmp_path / "k.db").read_bytes()  # only the hash is stored
        assert any(m.name.endswith("_api_keys") for m in MIGRATIONS)


def test_keys_cli(tmp_path: Path) -> None:
    env = {
        "MEMORY_DATABASE": f"sqlite:///{tmp_path / 'cli.db'}",
        "MEMORY_CONFIG": str(tmp_path / "none.toml"),
        "PATH": str(Path(sys.executable).parent),
        "COLUMNS": "200",
    }

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([MEMORY_BIN, "keys", *args], env=env, capture_output=True, text=True, check=False)

    created = run("create", "laptop", "--namespace", "a", "--namespace", "b", "--read-only")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    assert token.startswith("mem_") and "not shown again" in created.stderr
    listed = json.loads(run("list", "--json").stdout)
    assert listed[0]["namespaces"] == ["a", "b"] and listed[0]["read_only"] is True
    assert token not in json.dumps(listed) and "token_hash" not in listed[0]
    assert "laptop" in run("list").stdout
    key_id = parse_token(token)
    assert run("revoke", key_id).returncode == 0
    again = run("revoke", key_id)
    assert again.returncode == 1 and again.stderr.startswith("error: no active key")
    assert json.loads(run("list", "--json").stdout)[0]["revoked_at"] is not None
    missing = run("create", "x")
    assert missing.returncode == 2 and "--namespace" in missing.stderr


def test_no_auth_is_refused_off_loopback(tmp_path: Path) -> None:
    env = {
        "MEMORY_DATABASE": f"sqlite:///{tmp_path / 'x.db'}",
        "MEMORY_CONFIG": str(tmp_path / "none.toml"),
        "MEMORY_EMBEDDER": "hashing",
    }
    done = subprocess.run(
        [MEMORY_BIN, "serve", "--host", "0.0.0.0", "--no-auth"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1 and "loopback" in done.stderr


def test_server_settings_come_from_the_config_file(tmp_path: Path) -> None:
    from memory.config import load_settings

    path = tmp_path / "config.toml"
    path.write_text('[server]\nport = 9001\ncors_origins = ["http://app.example"]\nrequire_keys = false\n')
    server = load_settings(path=path).server
    assert (server.port, server.cors_origins, server.require_keys) == (9001, ("http://app.example",), False)
    assert server.host == "127.0.0.1" and server.max_body_bytes == 8_388_608
