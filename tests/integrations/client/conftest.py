"""A real `memory serve` process on loopback (SQLite file, hashing embedder) and a Client for it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from memory import Memory  # noqa: E402
from memory.backends.keys import open_key_store  # noqa: E402
from memory.client import Client  # noqa: E402
from memory.ids import utcnow  # noqa: E402
from memory.keys import new_key  # noqa: E402

MEMORY_BIN = str(Path(sys.executable).with_name("memory"))


class Served:
    """A running `memory serve`: its URL, keys by name, and the process."""

    def __init__(self, url: str, keys: dict[str, str], proc: subprocess.Popen[str]) -> None:
        self.url = url
        self.keys = keys
        self.proc = proc

    def client(self, key: str = "all", namespace: str = "default") -> Client:
        return Client(self.url, api_key=self.keys[key], namespace=namespace)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`memory serve --port 0` in a subprocess over a fresh SQLite file; keys all ('*'), a, a_ro, secret."""
    where = tmp_path_factory.mktemp("served")
    env = {
        **os.environ,
        "MEMORY_DATABASE": f"sqlite:///{where / 'server.db'}",
        "MEMORY_EMBEDDER": "hashing",
        "MEMORY_CONFIG": str(where / "config.toml"),
    }
    mem = Memory(env["MEMORY_DATABASE"], embedder="hashing")
    store = open_key_store(mem.backend)
    keys: dict[str, str] = {}
    for name, namespaces, flags in (
        ("all", ["*"], {"allow_secrets": True}),
        ("a", ["a"], {}),
        ("a_ro", ["a"], {"read_only": True}),
    ):
        record, keys[name] = new_key(name, namespaces, now=utcnow(), **flags)
        store.add(record)
    mem.close()
    proc = subprocess.Popen(
        [MEMORY_BIN, "serve", "--port", "0"], env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        match = None
        while time.monotonic() < deadline and match is None:
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                break
            match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if match is None:
            raise AssertionError("memory serve did not start")
        yield Served(f"http://127.0.0.1:{match.group(1)}", keys, proc)
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()


_counter = iter(range(1_000_000))


@pytest.fixture
def mem(served: Served) -> Iterator[Client]:
    """A Client on a namespace of its own (so each test starts empty), with the all-namespaces key."""
    client = served.client(namespace=f"t{next(_counter)}")
    yield client
    client.close()
