"""`memory -I` (the JSON REPL) and `memory -V` (echo on stderr), run as real subprocesses."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from memory.server.ops import OPERATIONS

MEMORY_BIN = str(Path(sys.executable).with_name("memory"))


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "MEMORY_DATABASE": f"sqlite:///{tmp_path / 'repl.db'}",
        "MEMORY_EMBEDDER": "hashing",
        "MEMORY_CONFIG": str(tmp_path / "none.toml"),
        "MEMORY_NAMESPACE": "default",
    }


def _session(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [MEMORY_BIN, *args], env=_env(tmp_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _ask(proc: subprocess.Popen[str], request: Any) -> dict[str, Any]:
    """Send one line and read its answer before sending the next: the REPL must answer (and flush) per line."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((request if isinstance(request, str) else json.dumps(request)) + "\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    assert line, f"no answer; stderr: {proc.stderr.read() if proc.stderr else ''}"
    answer: dict[str, Any] = json.loads(line)
    return answer


def _close(proc: subprocess.Popen[str]) -> tuple[int, str]:
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.close()
    code = proc.wait(60)
    err = proc.stderr.read()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    return code, err


def test_repl_serves_the_mcp_operations_line_by_line(tmp_path: Path) -> None:
    proc = _session(tmp_path, "-I")
    try:
        listed = _ask(proc, {"id": "ops", "op": "operations"})
        assert listed["id"] == "ops" and listed["ok"] is True
        names = {op["name"] for op in listed["result"]}
        assert names == {name for name, op in OPERATIONS.items() if op.mcp}
        remember = next(op for op in listed["result"] if op["name"] == "remember")
        assert remember["write"] is True and "namespace" in remember["input_schema"]["properties"]

        stored = _ask(proc, {"id": 1, "op": "remember", "args": {"content": "Alice likes green tea", "user": "alice"}})
        assert stored["ok"] is True and stored["id"] == 1
        mid = stored["result"]["id"]
        hits = _ask(proc, {"id": 2, "op": "recall", "args": {"query": "what tea?", "user": "alice"}})
        assert hits["result"]["hits"][0]["item"]["id"] == mid
        other = _ask(proc, {"op": "remember", "args": {"content": "work note", "namespace": "work"}})
        assert other["ok"] and "id" not in other
        assert _ask(proc, {"op": "list", "args": {"namespace": "work"}})["result"]["items"][0]["content"] == "work note"
        assert _ask(proc, {"op": "list", "args": {}})["result"]["items"][0]["id"] == mid  # default namespace kept

        secret = _ask(proc, {"op": "remember", "args": {"content": "PIN 4417", "sensitivity": "secret"}})
        assert secret["ok"]
        refused = _ask(proc, {"op": "recall", "args": {"query": "PIN", "clearance": "secret"}})
        assert refused["error"]["type"] == "PermissionDeniedError"
        assert "4417" not in json.dumps(_ask(proc, {"op": "recall", "args": {"query": "PIN 4417"}}))

        for bad, kind, words in [
            ("not json", "InvalidInputError", "not JSON"),
            ("[1, 2]", "InvalidInputError", "JSON object"),
            ({"op": "nope"}, "InvalidInputError", "unknown op"),
            ({"op": "recall", "args": []}, "InvalidInputError", "args must be"),
            ({"op": "recall", "args": {}, "extra": 1}, "InvalidInputError", "unknown request fields"),
            ({"id": 9, "op": "remember", "args": {"content": ""}}, "InvalidInputError", "content"),
            ({"op": "get", "args": {"id": "missing"}}, "NotFoundError", "missing"),
            ({"op": "recall", "args": {"query": "x", "namespace": 5}}, "InvalidInputError", "namespace"),
        ]:
            answer = _ask(proc, bad)
            assert answer["ok"] is False and answer["error"]["type"] == kind, answer
            assert words in answer["error"]["message"]
        assert (
            _ask(proc, {"op": "stats", "args": {}})["result"]["total"] == 1
        )  # bad lines changed nothing (the secret is not counted)
    finally:
        code, err = _close(proc)
    assert code == 0, err


def test_repl_read_only_and_secrets(tmp_path: Path) -> None:
    proc = _session(tmp_path, "repl", "--allow-secrets")
    try:
        _ask(proc, {"op": "remember", "args": {"content": "PIN 4417", "sensitivity": "secret"}})
        hits = _ask(proc, {"op": "recall", "args": {"query": "PIN", "clearance": "secret"}})
        assert hits["result"]["hits"][0]["item"]["content"] == "PIN 4417"
    finally:
        _close(proc)
    proc = _session(tmp_path, "repl", "--read-only")
    try:
        answer = _ask(proc, {"op": "remember", "args": {"content": "x"}})
        assert answer["error"]["type"] == "PermissionDeniedError"
        assert (
            _ask(proc, {"op": "stats", "args": {}})["result"]["total"] == 0
        )  # the secret is not counted, x not written
    finally:
        _close(proc)


def test_interactive_takes_no_command_and_blank_lines_are_skipped(tmp_path: Path) -> None:
    done = subprocess.run(
        [MEMORY_BIN, "-I", "stats"], env=_env(tmp_path), capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2 and "takes no command" in done.stderr
    done = subprocess.run(
        [MEMORY_BIN, "-I"], env=_env(tmp_path), input='\n  \n{"op": "stats"}\n', capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 1


def test_verbose_echoes_a_command_and_its_output(tmp_path: Path) -> None:
    done = subprocess.run(
        [MEMORY_BIN, "-V", "remember", "Bob lives in Paris", "--json"], env=_env(tmp_path), capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    mid = json.loads(done.stdout)["id"]
    lines = done.stderr.splitlines()
    assert lines[0] == '> cli memory ["-V", "remember", "Bob lives in Paris", "--json"]'
    assert any(line.startswith("< cli out ") and mid in line for line in lines)
    assert lines[-1] == "< cli exit 0"
    quiet = subprocess.run(
        [MEMORY_BIN, "get", mid], env=_env(tmp_path), capture_output=True, text=True, timeout=60, check=False
    )
    assert quiet.returncode == 0 and quiet.stderr == ""  # nothing echoed without -V
    version = subprocess.run([MEMORY_BIN, "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert re.fullmatch(r"memory \S+\n", version.stdout)


def test_verbose_repl_echoes_each_request_and_answer(tmp_path: Path) -> None:
    done = subprocess.run(
        [MEMORY_BIN, "-V", "-I"], env=_env(tmp_path), input='{"id": 1, "op": "stats"}\n', capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0
    assert '> repl line {"id": 1, "op": "stats"}' in done.stderr
    assert f"< repl line {done.stdout.strip()}" in done.stderr


def test_verbose_rest_server_echoes_requests(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [MEMORY_BIN, "-V", "serve", "--port", "0", "--no-auth"], env=_env(tmp_path),
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        seen: list[str] = []
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            seen.append(line)
            if match := re.search(r"http://127\.0\.0\.1:(\d+)", line):
                break
        else:
            raise AssertionError(f"server did not start: {seen}")
        url = f"http://127.0.0.1:{match.group(1)}/v1/namespaces/default/memories"
        created = httpx.post(url, json={"content": "Dana plays cello"}, timeout=30)
        assert created.status_code == 201
        bad = httpx.post(url, json={"content": ""}, timeout=30)
        assert bad.status_code == 422
        echoed = []
        while not any(line.startswith("< rest POST remember 201") for line in echoed):
            echoed.append(proc.stderr.readline())
        assert any(line.startswith("> rest POST remember") and "Dana plays cello" in line for line in echoed)
    finally:
        proc.terminate()
        proc.wait(20)
        if proc.stderr is not None:
            proc.stderr.close()


def test_verbose_mcp_stdio_echoes_tool_calls(tmp_path: Path) -> None:
    errlog = (tmp_path / "mcp.err").open("w+")
    env = {k: v for k, v in _env(tmp_path).items() if k.startswith("MEMORY_") or k in ("PATH", "PYTHONPATH", "HOME")}
    params = StdioServerParameters(command=MEMORY_BIN, args=["-V", "mcp"], env=env)

    async def scenario() -> None:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=60) as client:
            result = await client.call_tool("remember", {"content": "Eve sails on Sundays"})
            assert not result.is_error
            await client.read_resource("memory://default/jobs/sync")

    anyio.run(scenario)
    errlog.seek(0)
    text = errlog.read()
    errlog.close()
    assert '> mcp tools/call remember {"content": "Eve sails on Sundays"}' in text
    assert re.search(r'< mcp tools/call remember \{"id": "[^"]+"\}', text)
    assert "> mcp resources/read memory://default/jobs/sync" in text and "< mcp resources/read {" in text
