"""The memory commands end to end through the click app, on a SQLite file per test."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from cli_helpers import Runner

from memory.memory import Memory


def test_remember_recall_get_list_history_forget_stats(run: Runner) -> None:
    first = run.json(
        "remember", "Alice prefers dark mode", "--user", "alice", "--tag", "ui", "--tag", "prefs",
        "--meta", "source=chat", "--meta", "score=3", "--meta", 'nested={"a": [1, 2]}',
        "--context", "said in onboarding", "--importance", "0.9", "--kind", "fact",
    )["id"]  # fmt: skip
    second = run.ok("remember", "Bob drinks green tea", "--user", "bob").stdout.strip()
    assert len(first) == 36 and len(second) == 36 and first != second

    item = run.json("get", first)
    assert item["content"] == "Alice prefers dark mode"
    assert item["tags"] == ["ui", "prefs"]
    assert item["metadata"] == {"source": "chat", "score": 3, "nested": {"a": [1, 2]}}
    assert item["context"] == "said in onboarding"
    assert item["importance"] == 0.9
    assert item["user"] == "alice"

    hits = run.json("recall", "dark mode", "--user", "alice")["hits"]
    assert [h["item"]["id"] for h in hits] == [first]
    assert set(hits[0]) == {"item", "score", "channels", "parts"}
    assert "lexical" in hits[0]["channels"]
    table = run.ok("recall", "dark mode").stdout
    assert first[-12:] in table and "lexical #1" in table

    listed = run.json("list")
    assert [i["id"] for i in listed["items"]] == [second, first]
    assert listed["next_cursor"] is None
    assert [i["id"] for i in run.json("list", "--tag", "ui")["items"]] == [first]
    assert [i["id"] for i in run.json("list", "--meta", "score=3")["items"]] == [first]
    assert run.json("list", "--meta", "score=4")["items"] == []

    stats = run.json("stats")
    assert stats["total"] == 2 and stats["by_kind"] == {"fact": 2}
    assert "memories" in run.ok("stats").stdout

    assert run.json("forget", first) == {"forgotten": 1}
    entries = run.json("history", first)["entries"]
    assert [e["op"] for e in entries] == ["add", "delete"]
    assert "delete" in run.ok("history", first).stdout
    assert run.json("stats")["total"] == 1


def test_history_lists_changed_fields(run: Runner, db_url: str) -> None:
    memory_id = run.ok("remember", "Carol lives in Paris", "--user", "carol").stdout.strip()
    with Memory(db_url, embedder="hashing") as mem:
        mem.update(memory_id, content="Carol lives in Berlin", tags=["moved"], reason="she moved")
    entries = run.json("history", memory_id)["entries"]
    assert entries[1]["op"] == "update"
    assert set(entries[1]["changed"]) >= {"content", "content_hash", "tags"}
    assert "updated_at" not in entries[1]["changed"]
    table = run.ok("history", memory_id).stdout
    assert "she moved" in table and "content" in table


def test_list_pages_with_cursor(run: Runner) -> None:
    ids = [run.ok("remember", f"note number {n}").stdout.strip() for n in range(5)]
    first = run.json("list", "--limit", "2")
    assert len(first["items"]) == 2 and first["next_cursor"]
    seen = [i["id"] for i in first["items"]]
    cursor = first["next_cursor"]
    while cursor:
        page = run.json("list", "--limit", "2", "--cursor", cursor)
        seen += [i["id"] for i in page["items"]]
        cursor = page["next_cursor"]
    assert seen == list(reversed(ids))
    assert "next cursor: " in run.ok("list", "--limit", "2").stdout


def test_remember_reads_stdin(run: Runner) -> None:
    memory_id = run.ok("remember", "-", input="Dave keeps bees\n").stdout.strip()
    assert run.json("get", memory_id)["content"] == "Dave keeps bees"


def test_same_text_same_scope_gives_same_id(run: Runner) -> None:
    one = run.ok("remember", "Erin rows", "--user", "erin").stdout
    assert run.ok("remember", "Erin rows", "--user", "erin").stdout == one


def test_forget_all_needs_yes(run: Runner, one_line_error: Callable[..., str]) -> None:
    run.ok("remember", "x1", "--user", "u1")
    run.ok("remember", "x2", "--user", "u1")
    keep = run.ok("remember", "x3", "--user", "u2").stdout.strip()
    one_line_error(run("forget", "--all", "--user", "u1"), 2, "--yes")
    assert run.json("stats")["total"] == 3
    assert run.json("forget", "--all", "--user", "u1", "--yes") == {"forgotten": 2}
    assert [i["id"] for i in run.json("list")["items"]] == [keep]


def test_forget_several_ids(run: Runner) -> None:
    a = run.ok("remember", "alpha").stdout.strip()
    b = run.ok("remember", "beta").stdout.strip()
    assert run.json("forget", a, b) == {"forgotten": 2}
    assert run.json("stats")["total"] == 0


@pytest.mark.parametrize(
    "args",
    [
        ["get", "0193a0c2-5f1e-7c3a-9b2d-4e5f6a7b8c9d"],
        ["forget", "0193a0c2-5f1e-7c3a-9b2d-4e5f6a7b8c9d"],
        ["history", "0193a0c2-5f1e-7c3a-9b2d-4e5f6a7b8c9d"],
    ],
)
def test_unknown_id_is_one_line_exit_1(run: Runner, one_line_error: Callable[..., str], args: list[str]) -> None:
    one_line_error(run(*args), 1, "0193a0c2-5f1e-7c3a-9b2d-4e5f6a7b8c9d")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["remember"], "TEXT"),
        (["remember", "x", "--meta", "novalue"], "key=value"),
        (["recall", "x", "--limit", "0"], "--limit"),
        (["nosuchcommand"], "nosuchcommand"),
        (["forget"], "--all"),
        (["remember", "x", "--sensitivity", "top"], "sensitivity"),
    ],
)
def test_usage_errors_are_one_line_exit_2(
    run: Runner, one_line_error: Callable[..., str], args: list[str], needle: str
) -> None:
    one_line_error(run(*args), 2, needle)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["remember", "   "], "content is empty"),
        (["remember", "x", "--importance", "2"], "importance"),
        (["remember", "x", "--kind", "Not A Kind"], "kind"),
        (["list", "--cursor", "garbage"], "cursor"),
        (["list", "--since", "yesterday"], "since"),
    ],
)
def test_invalid_input_is_one_line_exit_1(
    run: Runner, one_line_error: Callable[..., str], args: list[str], needle: str
) -> None:
    one_line_error(run(*args), 1, needle)


def test_bad_database_url_is_one_line(run: Runner, one_line_error: Callable[..., str]) -> None:
    one_line_error(run("stats", db="nosuchscheme://x"), 1, "nosuchscheme")


def test_missing_explicit_config_is_one_line(run: Runner, one_line_error: Callable[..., str], tmp_path: Any) -> None:
    result = run("--config", str(tmp_path / "absent.toml"), "stats", raw=True)
    one_line_error(result, 1, "absent.toml", "memory --config")


def test_unexpected_exception_is_one_line(
    run: Runner, one_line_error: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(Memory, "stats", boom)
    one_line_error(run("stats"), 1, "RuntimeError", "boom", "MEMORY_DEBUG=1")
    monkeypatch.setenv("MEMORY_DEBUG", "1")
    assert isinstance(run("stats").exception, RuntimeError)


HOSTILE = ["'; DROP TABLE items; --", "100%", "a_b", 'say "hi"', "[bold]x[/bold]", "o'neil", "\\", "%_%"]


@pytest.mark.parametrize("word", HOSTILE)
def test_hostile_strings_work_literally(run: Runner, word: str) -> None:
    target = run.ok(
        "remember", f"note about {word}", "--tag", word, "--meta", f"k={word}", "--user", word
    ).stdout.strip()
    decoy = run.ok(
        "remember", "note about something else", "--tag", "plain", "--meta", "k=plain", "--user", "z"
    ).stdout.strip()
    assert run.json("get", target)["tags"] == [word]
    assert run.json("get", target)["metadata"] == {"k": word}
    assert [i["id"] for i in run.json("list", "--tag", word)["items"]] == [target]
    assert [i["id"] for i in run.json("list", "--meta", f"k={word}")["items"]] == [target]
    assert [i["id"] for i in run.json("list", "--user", word)["items"]] == [target]
    assert {h["item"]["id"] for h in run.json("recall", word, "--tag", word)["hits"]} <= {target}
    run.ok("recall", word)  # free-text query with quotes/operators must not break the lexical channel
    assert run.json("stats")["total"] == 2
    table = run.ok("list").stdout
    assert word in table  # shown literally, not read as rich markup
    assert decoy


def test_meta_values_parse_as_json_when_they_can(run: Runner) -> None:
    memory_id = run.ok(
        "remember", "typed metadata", "--meta", "n=7", "--meta", "f=1.5", "--meta", "b=true",
        "--meta", "nul=null", "--meta", "s=hello", "--meta", 'q="7"', "--meta", "lead=007", "--meta", "e=",
    ).stdout.strip()  # fmt: skip
    assert run.json("get", memory_id)["metadata"] == {
        "n": 7, "f": 1.5, "b": True, "nul": None, "s": "hello", "q": "7", "lead": "007", "e": "",
    }  # fmt: skip


def test_namespace_option_isolates(run: Runner) -> None:
    result = run("--db", run.db, "--embedder", "hashing", "--namespace", "team-a", "remember", "only in a", raw=True)
    assert result.exit_code == 0, result.stderr
    assert run.json("stats")["total"] == 0
    stats = json.loads(run("--db", run.db, "--embedder", "hashing", "-n", "team-a", "stats", "--json", raw=True).stdout)
    assert stats["total"] == 1 and stats["namespace"] == "team-a"


def test_environment_settings_apply(run: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_DATABASE", run.db)
    monkeypatch.setenv("MEMORY_EMBEDDER", "hashing")
    monkeypatch.setenv("MEMORY_NAMESPACE", "from-env")
    result = run("remember", "env note", raw=True)
    assert result.exit_code == 0, result.stderr
    assert json.loads(run("stats", "--json", raw=True).stdout)["namespace"] == "from-env"


def test_bare_command_shows_the_help(run: Runner) -> None:
    result = run(raw=True)
    assert result.exit_code in (0, 2)
    assert "Commands:" in result.output and "remember" in result.output
    assert len(result.output.splitlines()) > 5
