"""`memory chat` against a loopback chat-completions server."""

from __future__ import annotations

from pathlib import Path

import pytest
from chat_server import ChatServer, answer, tool_call
from click.testing import CliRunner

from memory import Memory
from memory.cli.main import cli
from memory.embedders.hashing import HashingEmbedder


def test_chat_runs_the_agent_interactively(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = f"sqlite:///{tmp_path / 'm.db'}"
    monkeypatch.setenv("MEMORY_CHAT_API_KEY", "sk-local")
    script = [
        tool_call("remember", {"content": "Dana's favourite colour is teal"}),
        answer("Noted: teal."),
        answer("Teal."),
    ]
    with ChatServer(script).running() as server:
        monkeypatch.setenv("MEMORY_CHAT_URL", server.url)
        result = CliRunner().invoke(
            cli,
            ["--db", db, "--embedder", "hashing", "chat", "--user", "dana", "-m", "gpt-4o-mini", "--show-context"],
            input="My favourite colour is teal.\n\nWhat is my favourite colour?\n/exit\nnever sent\n",
        )
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert result.stdout.count("assistant> ") == 2
    assert "assistant> Noted: teal." in result.stdout and "assistant> Teal." in result.stdout
    assert "[tool] remember" in result.stderr and "chatting with gpt-4o-mini" in result.stderr
    assert "status" in result.stdout  # --show-context table
    assert len(server.requests) == 3 and server.headers[0]["Authorization"] == "Bearer sk-local"
    assert "teal" in server.requests[2]["messages"][0]["content"]
    with Memory(db, embedder=HashingEmbedder()) as mem:
        assert mem.recall("colour", user="dana")[0].content == "Dana's favourite colour is teal"


def test_chat_needs_a_model(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--db", f"sqlite:///{tmp_path / 'm.db'}", "chat"], input="")
    assert result.exit_code == 2 and "no chat model" in result.stderr


def test_chat_reports_endpoint_errors_and_goes_on(tmp_path: Path) -> None:
    with ChatServer([(503, "overloaded"), answer("ok now")]).running() as server:
        result = CliRunner().invoke(
            cli, ["--db", f"sqlite:///{tmp_path / 'm.db'}", "--embedder", "hashing", "chat", "--url", server.url,
                  "--model", "m"], input="one\ntwo\n",
        )  # fmt: skip
    assert result.exit_code == 0
    assert "answered 503" in result.stderr and "assistant> ok now" in result.stdout
