"""`memory import --from mem0|letta`: files written by real mem0 (offline) and Letta agent files in Letta's schema."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from frameworks import framework

from memory import InvalidInputError, Memory
from memory.importers import import_letta, import_mem0

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def mem0_file(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The get_all JSON (with each record's history) of a mem0 store, written by mem0 itself in a subprocess."""
    framework("mem0")
    work = tmp_path_factory.mktemp("mem0")
    out = work / "get_all.json"
    done = subprocess.run(
        [sys.executable, str(HERE / "mem0_writer.py"), str(work), str(out)],
        capture_output=True, text=True, timeout=300, cwd=work,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text())  # type: ignore[no-any-return]


def test_mem0_get_all_imports_with_scope_metadata_times_and_history(
    make_memory: Callable[..., Memory], mem0_file: dict[str, object]
) -> None:
    mem = make_memory()
    results = list(mem0_file["results"])  # type: ignore[call-overload]
    deleted_history = mem0_file["deleted_history"]
    assert isinstance(deleted_history, list) and deleted_history[-1]["event"] == "DELETE"
    bicycle = {"id": deleted_history[-1]["memory_id"], "memory": deleted_history[0]["new_memory"],
               "user_id": "alice", "history": deleted_history}  # fmt: skip
    extra = [bicycle, {"id": "blank", "memory": "  ", "user_id": "alice"}, dict(results[0], id="copy-of-first")]
    doc = {"results": results + extra}
    report = import_mem0(mem, io.StringIO(json.dumps(doc)))
    assert report.imported["memories"] == 3
    reasons = report.skipped_by_reason()
    assert reasons.pop("deleted in mem0 (last history event is DELETE)") == 1
    assert reasons.pop("no memory text") == 1
    assert len(reasons) == 1 and next(iter(reasons)).startswith("duplicate of ")
    by_text = {i.content: i for i in mem.list(limit=10).items}
    dark = by_text["Alice prefers dark mode in every app"]
    source = next(r for r in results if r["memory"] == dark.content)
    assert dark.user == "alice" and dark.metadata["topic"] == "ui"
    assert (
        dark.metadata["mem0_id"] == source["id"] == dark.metadata["mem0"]["id"]
        and dark.metadata["mem0"]["updated_at"] == source["updated_at"]
    )
    assert [h["event"] for h in dark.metadata["mem0"]["history"]] == ["ADD", "UPDATE"]
    assert dark.created_at.isoformat() == source["created_at"]
    peanuts = by_text["Alice is allergic to peanuts"]
    assert (peanuts.user, peanuts.agent, peanuts.thread) == ("alice", "helper", "run-1")
    lisbon = by_text["Bob moved to Lisbon"]
    assert lisbon.user == "bob" and lisbon.expires_at is not None and lisbon.expires_at.year == 2999
    assert mem.recall("peanut allergy", user="alice")[0].id == peanuts.id
    again = import_mem0(mem, io.StringIO(json.dumps(doc)))  # a second import duplicates nothing
    assert again.imported["memories"] == 0 and mem.stats().total == 3
    assert again.skipped_by_reason()["already imported (a memory with this mem0 id exists)"] == 3


def test_mem0_bad_files_write_nothing(mem: Memory) -> None:
    for text in ("not json", '{"something": 1}', "42"):
        with pytest.raises(InvalidInputError):
            import_mem0(mem, io.StringIO(text))
    assert mem.stats().total == 0


def letta_agent_file() -> dict[str, object]:
    """An agent file in Letta's AgentFileSchema (letta/schemas/agent_file.py), as `letta export` writes it."""
    text = lambda t: [{"type": "text", "text": t}]  # noqa: E731
    return {
        "agents": [{
            "id": "agent-0", "name": "companion", "system": "You are a helpful companion.",
            "agent_type": "memgpt_agent",
            "block_ids": ["block-0", "block-1", "block-2", "block-missing"], "tool_ids": ["tool-0"], "source_ids": [],
            "tags": [], "metadata": {}, "in_context_message_ids": ["message-0", "message-1", "message-2", "message-3"],
            "messages": [
                {"id": "message-0", "role": "system", "content": text("You are a helpful companion..."),
                 "created_at": "2025-06-01T10:00:00Z", "agent_id": "agent-0"},
                {"id": "message-1", "role": "user", "content": text("Hi! I just started learning the cello."),
                 "created_at": "2025-06-01T10:01:00Z", "agent_id": "agent-0"},
                {"id": "message-2", "role": "assistant", "content": text("The user is a beginner cellist."),
                 "created_at": "2025-06-01T10:01:05Z", "agent_id": "agent-0",
                 "tool_calls": [{"id": "call-1", "type": "function", "function": {
                     "name": "send_message",
                     "arguments": json.dumps({"message": "How exciting! Which piece first?"})}}]},
                {"id": "message-3", "role": "tool", "content": text('{"status": "OK"}'), "tool_call_id": "call-1",
                 "created_at": "2025-06-01T10:01:06Z", "agent_id": "agent-0"},
                {"id": "message-4", "role": "user", "content": [], "created_at": "2025-06-01T10:02:00Z"},
            ],
            "files_agents": [], "group_ids": [],
        }],
        "groups": [],
        "blocks": [
            {"id": "block-0", "label": "human", "value": "Name: Sam. Learning the cello.", "limit": 5000,
             "description": "About the user", "metadata": {}, "is_template": False, "read_only": False},
            {"id": "block-1", "label": "persona", "value": "I am a warm, curious companion.", "limit": 5000,
             "metadata": {}, "is_template": False, "read_only": False},
            {"id": "block-2", "label": "practice_log", "value": "", "limit": 5000, "metadata": {}},
        ],
        "files": [{"id": "file-0", "source_id": "source-0", "file_name": "bach.txt",
                   "content": "Bach's first cello suite opens with a prelude in G major."}],
        "sources": [{"id": "source-0", "name": "music", "embedding_config": {}}],
        "tools": [], "mcp_servers": [], "metadata": {"revision_id": "abc123"},
        "created_at": "2025-06-01T10:05:00Z",
    }  # fmt: skip


def test_letta_agent_file_blocks_thread_and_files(mem: Memory) -> None:
    report = import_letta(mem, io.StringIO(json.dumps(letta_agent_file())))
    assert dict(report.imported) == {"blocks": 2, "messages": 3, "memories": 1}
    reasons = sorted((s.kind, s.ref, s.reason) for s in report.skipped)
    assert reasons == [
        ("block", "block-2", "empty block"),
        ("block", "block-missing", "block id not in the file's blocks"),
        ("message", "message-0", "system prompt (not a conversation turn)"),
        ("message", "message-4", "no text"),
    ]
    blocks = {b.label: b.value for b in mem.blocks.all(agent="companion")}
    assert blocks["user_info"] == "Name: Sam. Learning the cello."
    assert blocks["agent_info"] == "I am a warm, curious companion."
    thread = mem.messages.get_thread("letta-agent-0")
    assert [(m.role, m.agent) for m in thread] == [
        ("user", "companion"),
        ("assistant", "companion"),
        ("tool", "companion"),
    ]
    assert "How exciting! Which piece first?" in thread[1].content
    assert thread[0].created_at.isoformat() == "2025-06-01T10:01:00+00:00"
    doc = mem.recall("cello suite prelude", kinds=["document"])[0]
    assert "G major" in doc.content and doc.item.context == "Letta file bach.txt"


def test_letta_bad_file_writes_nothing(mem: Memory) -> None:
    with pytest.raises(InvalidInputError):
        import_letta(mem, io.StringIO('{"agent": {}}'))
    assert mem.stats().total == 0 and mem.namespaces() == []


def test_cli_import_from(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from memory.cli.main import cli

    path = tmp_path / "agent.af"
    path.write_text(json.dumps(letta_agent_file()))
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    result = CliRunner().invoke(cli, ["--db", db, "import", "--from", "letta", str(path), "--json"], prog_name="memory")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["imported"] == {"blocks": 2, "messages": 3, "memories": 1} and out["skipped"] == 4
    result = CliRunner().invoke(cli, ["--db", db, "import", "--from", "letta", str(path)], prog_name="memory")
    assert result.exit_code == 0, result.output
    assert "imported from letta: 2 blocks;" in result.output  # blocks are rewritten, nothing else twice
    assert "skipped 3: already imported (in the thread with this Letta id)" in result.output
    assert "skipped 1: already imported (a memory with this Letta id exists)" in result.output
