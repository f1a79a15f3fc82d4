"""Helpers for the web inspector tests: a real `memory serve` over a seeded SQLite file, API keys
by role, and headless Chromium (Debian's, driven by Playwright).

The browser tests need the system ``chromium`` (scripts/browser.sh, run by scripts/setup.sh) and
the ``playwright`` package (the ``browser`` extra). Without chromium they fail when
MEMORY_REQUIRE_BROWSER is set (`make test`, CI) and skip elsewhere.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from ui_seed import seed

from memory import Memory
from memory.backends.keys import open_key_store
from memory.ids import utcnow
from memory.keys import new_key

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "ui"


@dataclass
class Served:
    """A running `memory serve` subprocess: its URL, database and keys by role."""

    url: str
    db: str
    process: subprocess.Popen[str]
    keys: dict[str, str] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)

    def memory(self) -> Memory:
        """A second connection to the served store (SQLite WAL: safe next to the server)."""
        return Memory(self.db, embedder="hashing", namespace="a")


def start_serve(
    db: str, *extra: str, env: dict[str, str] | None = None, command_name: str = "serve"
) -> tuple[subprocess.Popen[str], str]:
    """Start `memory serve --port 0` (or ``command_name``) on ``db``; returns the process and the URL it printed."""
    memory_cli = Path(sys.executable).with_name("memory")
    command = [str(memory_cli), "--db", db, "--embedder", "hashing", "--namespace", "a", command_name, "--port", "0"]
    command += extra
    process = subprocess.Popen(
        command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env={**os.environ, **(env or {})}
    )
    assert process.stderr is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line and process.poll() is not None:
            raise RuntimeError(f"memory serve exited with {process.returncode}")
        found = re.search(r"(?:listening on|inspector at) (http://\S+)", line)
        if found:
            # Keep reading the server's stderr so it never blocks on a full pipe.
            threading.Thread(target=lambda: [None for _ in process.stderr or ()], daemon=True).start()
            return process, found.group(1)
    process.kill()
    raise RuntimeError("memory serve did not start within 60 s")


def stop(process: subprocess.Popen[str]) -> None:
    """Stop a server started by :func:`start_serve`."""
    process.terminate()
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)
    if process.stderr is not None:
        process.stderr.close()


def make_keys(mem: Memory) -> dict[str, str]:
    """Keys: a (namespace a), a_ro (read-only), a_secret (secret clearance), b (namespace b only)."""
    store = open_key_store(mem.backend)
    keys = {}
    for role, namespaces, flags in (
        ("a", ["a"], {}), ("a_ro", ["a"], {"read_only": True}), ("a_secret", ["a"], {"allow_secrets": True}),
        ("b", ["b"], {}),
    ):  # fmt: skip
        record, token = new_key(role.replace("_", "-"), namespaces, now=utcnow(), **flags)
        store.add(record)
        keys[role] = token
    return keys


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`memory serve` over a seeded store (namespace a seeded, b holds one memory of its own)."""
    db = f"sqlite:///{tmp_path_factory.mktemp('ui') / 'ui.db'}"
    with Memory(db, embedder="hashing", namespace="a") as mem:
        ids = seed(mem, "a")
        mem.remember("Namespace b's private plan: expand to Lisbon.", user="carol", namespace="b")
        keys = make_keys(mem)
    process, url = start_serve(db)
    try:
        yield Served(url=url, db=db, process=process, keys=keys, ids=ids)
    finally:
        stop(process)


def _need_browser() -> None:
    if os.path.exists(CHROMIUM):
        return
    message = f"no chromium at {CHROMIUM}: run scripts/browser.sh"
    if os.environ.get("MEMORY_REQUIRE_BROWSER"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Debian Chromium driven by Playwright (never Playwright's own browser download)."""
    _need_browser()
    if os.environ.get("MEMORY_REQUIRE_BROWSER"):
        from playwright.sync_api import sync_playwright
    else:
        sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield instance
        finally:
            instance.close()


class Page:
    """A browser tab on the inspector that records console errors and failed requests."""

    def __init__(self, browser: Any, served: Served) -> None:
        self.context = browser.new_context(viewport={"width": 1366, "height": 860}, base_url=served.url)
        self.page = self.context.new_page()
        self.page.set_default_timeout(15_000)
        self.errors: list[str] = []
        self.page.on("console", lambda msg: msg.type == "error" and self.errors.append(msg.text))
        self.page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))
        self.served = served

    def sign_in(self, role: str) -> None:
        """Open the inspector and enter the key of ``role`` once."""
        self.page.goto("/ui/")
        self.page.fill("#login-key", self.served.keys[role])
        self.page.click("#login-form button[type=submit]")
        self.page.wait_for_selector("main[data-ready]")

    def go(self, hash_route: str) -> Any:
        """Navigate inside the app and wait until the page has rendered; returns the page."""
        self.page.evaluate("document.getElementById('main').removeAttribute('data-ready')")
        self.page.evaluate(f"location.hash = {hash_route!r}")
        self.page.wait_for_selector("main[data-ready]")
        return self.page

    def shot(self, name: str) -> None:
        """Save a screenshot of the page under docs/ui/."""
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.evaluate("document.getElementById('toasts').replaceChildren()")
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)

    def close(self) -> None:
        """Close the tab and its context."""
        self.context.close()
