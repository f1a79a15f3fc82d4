"""The conversation commands in process: messages, threads, namespaces, blocks, sync, prune, worker."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cli_helpers import Runner


def test_messages_append_show_search_archive(run: Runner, tmp_path: Path) -> None:
    first = run.json("messages", "append", "t1", "I adopted a puppy named Rex", "--user", "alice")
    assert first["turn"] == 1 and first["embedding_status"] == "pending"
    second = run.json("messages", "append", "t1", "Rex is a great name", "--role", "assistant", "--embed")
    assert second["turn"] == 2 and second["embedding_status"] == "done"
    picture = tmp_path / "rex.jpg"
    picture.write_bytes(b"jpeg bytes")
    media = run.json("messages", "append", "t1", "Rex at the beach", "--type", "image", "--media", str(picture))
    assert media["media"]["name"] == "rex.jpg" and media["media"]["mime"] == "image/jpeg"
    shown = run.json("messages", "show", "t1", "--last", "2")
    assert [m["turn"] for m in shown["messages"]] == [2, 3]
    assert "Rex" in run.ok("messages", "show", "t1").stdout
    run.ok("sync")
    hits = run.json("messages", "search", "adopted puppy")["hits"]
    assert hits[0]["message"]["turn"] == 1
    assert run.json("messages", "archive", "t1", "--keep-last", "1") == {"thread": "t1", "archived": 2}
    assert [m["turn"] for m in run.json("messages", "show", "t1", "--archived")["messages"]] == [1, 2]
    assert run.json("messages", "archive", "t1", "--keep-last", "0", "--delete") == {"thread": "t1", "deleted": 3}


def test_threads_namespaces_and_tail_once(run: Runner) -> None:
    run.ok("messages", "append", "t1", "hello")
    run.ok("messages", "append", "t2", "hi", "--user", "bob")
    run.ok("remember", "a fact")
    threads = run.json("threads")["threads"]
    assert [t["thread"] for t in threads] == ["t2", "t1"]
    assert [t["thread"] for t in run.json("threads", "--user", "bob")["threads"]] == ["t2"]
    out = run.ok("tail", "t1", "--once").stdout
    assert "[1]" in out and "hello" in out
    assert run.json("namespaces") == {"namespaces": ["default"]}


def test_namespaces_lists_namespaces_holding_only_messages(db_url: str) -> None:
    runner = Runner(db_url)
    from click.testing import CliRunner

    from memory.cli.main import cli

    result = CliRunner().invoke(
        cli, ["--db", db_url, "--embedder", "hashing", "--namespace", "chat", "messages", "append", "t1", "hey"]
    )
    assert result.exit_code == 0, result.output
    runner.ok("remember", "fact in default")
    assert runner.json("namespaces") == {"namespaces": ["chat", "default"]}


def test_blocks_commands(run: Runner, one_line_error: Callable[..., str]) -> None:
    assert run.json("blocks", "set", "user_info", "Name: Alice", "--user", "alice")["version"] == 1
    block = run.json("blocks", "append", "user_info", "Lives in Berlin", "--user", "alice")
    assert block["value"] == "Name: Alice\nLives in Berlin"
    shown = run.json("blocks", "show", "user_info", "--user", "alice")["blocks"]
    assert shown[0]["value"] == block["value"]
    every = {b["label"] for b in run.json("blocks", "show", "--user", "alice")["blocks"]}
    assert {"user_info", "goals_and_status", "agent_info"} <= every
    run.ok("blocks", "set", "mood", "calm", "--limit", "5")
    one_line_error(run("blocks", "append", "mood", "and happy"), 1, "over its limit of 5")
    assert [c["op"] for c in run.json("blocks", "history", "user_info", "--user", "alice")["changes"]] == [
        "replace", "append",
    ]  # fmt: skip
    assert "Lives in Berlin" in run.ok("blocks", "show", "--user", "alice").stdout


def test_end_conversation_command(run: Runner) -> None:
    run.ok("messages", "append", "t1", "My name is Ada and I work as a pilot.", "--user", "ada")
    result = run.json("end-conversation", "t1")
    assert result["user"] == "ada" and "user_info" in result["updated"]
    assert "pilot" in run.json("blocks", "show", "user_info", "--user", "ada")["blocks"][0]["value"]


def test_sync_dry_run_status_and_run(run: Runner) -> None:
    for i in range(3):
        run.ok("messages", "append", "t1", f"note {i}")
    run.ok("messages", "append", "t1", "classified", "--sensitivity", "secret")
    estimate = run.json("sync", "--dry-run")
    assert (estimate["messages"], estimate["batches"]) == (3, 1)
    assert run.json("sync", "--status")["messages"] == {"pending": 4}
    assert "would embed 3 message(s)" in run.ok("sync", "--dry-run").stdout
    report = run.json("sync")
    assert (report["messages_done"], report["messages_skipped"], report["error"]) == (3, 1, None)
    status = run.json("sync", "--status")
    assert status["messages"] == {"done": 3, "skipped": 1} and status["pending"] == 0
    assert status["state"]["processed"] == 3 and status["state"]["cursor"]
    text = run.ok("sync", "--status").stdout
    assert "messages" in text and "cursor:" in text


def test_prune_and_worker_once(run: Runner) -> None:
    run.ok("messages", "append", "t1", "stays")
    assert run.json("prune") == {"messages": 0, "memories": 0, "media_files": 0}
    result = run.ok("worker", "--max-passes", "1", "--interval", "0")
    assert '"pass": 1' in result.stdout
    assert run.json("sync", "--status")["messages"] == {"done": 1}


def test_bad_input_is_one_line(run: Runner, one_line_error: Callable[..., str]) -> None:
    one_line_error(run("messages", "append", "t1", "   "), 1, "empty")
    one_line_error(run("messages", "append", "t1", "pic", "--type", "image"), 1, "needs media")
    one_line_error(run("messages", "archive", "t1"), 1, "keep_last")
    one_line_error(run("blocks", "show", "Bad Label"), 1, "label")
    one_line_error(run("worker", "--jobs", "nope", "--max-passes", "1"), 1, "unknown job")
    one_line_error(run("sync", "--batch-size", "0"), 1, "batch_size")
