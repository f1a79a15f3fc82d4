"""Helpers for the server tests: a real uvicorn on 127.0.0.1 over a SQLite file, API keys, the `live` fixture."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("mcp")

import uvicorn  # noqa: E402

from memory import Memory  # noqa: E402
from memory.backends.keys import KeyStore, open_key_store  # noqa: E402
from memory.config import ServerSettings  # noqa: E402
from memory.ids import utcnow  # noqa: E402
from memory.keys import new_key  # noqa: E402
from memory.server.auth import Authenticator  # noqa: E402
from memory.server.mcp import local_caller  # noqa: E402
from memory.server.rest import create_app  # noqa: E402


class ThreadServer:
    """uvicorn serving an ASGI app on a free loopback port, in a thread."""

    def __init__(self, app: Any) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="error", access_log=False, lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ThreadServer:
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


@dataclass
class Live:
    """A running REST server, its store, and keys by role."""

    url: str
    mem: Memory
    store: KeyStore
    keys: dict[str, str] = field(default_factory=dict)

    def client(self, role: str | None = "a") -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[role]}"} if role else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def make_key(self, name: str, namespaces: list[str], **flags: Any) -> str:
        record, token = new_key(name, namespaces, now=utcnow(), **flags)
        self.store.add(record)
        return token


def start_rest(tmp_path: Path, *, require_keys: bool = True, **server: Any) -> tuple[Memory, Authenticator, Any]:
    """A Memory on a SQLite file with the hashing embedder, its authenticator and the app."""
    mem = Memory(f"sqlite:///{tmp_path / 'server.db'}", embedder="hashing")
    auth = Authenticator(open_key_store(mem.backend), require_keys, local_caller(mem.namespace))
    app = create_app(mem, auth, ServerSettings(**server))
    return mem, auth, app


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    """A REST server on loopback with keys: a, b, a_ro (read-only), a_secret (secret clearance), all ('*')."""
    mem, auth, app = start_rest(tmp_path, max_body_bytes=64 * 1024)
    assert auth.store is not None
    with ThreadServer(app) as server:
        live = Live(server.url, mem, auth.store)
        live.keys = {
            "a": live.make_key("a", ["a"]),
            "b": live.make_key("b", ["b"]),
            "a_ro": live.make_key("a-ro", ["a"], read_only=True),
            "a_secret": live.make_key("a-secret", ["a"], allow_secrets=True),
            "all": live.make_key("all", ["*"]),
        }
        yield live
    mem.close()


#: Refusals of schema-valid requests that are right: rules over two fields or over stored data, which JSON
#: Schema cannot say (the fuzz tests of REST and MCP accept a refusal only when it names one of these).
SEMANTIC_RULES = [
    r"valid_to must be later than valid_from",  # two fields
    r"give ttl or expires_at, not both",  # two fields
    r"outside the calendar once converted to UTC",  # a date-time with an offset past year 1 or 9999
    r"too large for the calendar",  # now + ttl past year 9999
    r"rating is from|thumbs rating|rating must be|rating_scale",  # a rating and its scale
    r"reward and rating",  # two fields
    r"metadata is larger than|metadata is nested deeper",  # JSON Schema has no size or depth of a free object
    r"limit of \d+ tokens|budget",  # a block's or a context's size against its configured limit
    r"no (active )?version|unknown prompt",  # stored data
    r"text to append is empty",  # a block's mode and value
    r"prompt_version needs prompt",  # two fields
    r"nothing to update",  # an update that names no field to change (its description says: at least one)
]
