"""The MCP server through the SDK's real client: `memory mcp` over stdio, `memory mcp --http` over HTTP."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from memory import Memory
from memory.backends.keys import open_key_store
from memory.ids import utcnow
from memory.keys import new_key

MEMORY_BIN = str(Path(sys.executable).with_name("memory"))


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "MEMORY_DATABASE": f"sqlite:///{tmp_path / 'mcp.db'}",
        "MEMORY_EMBEDDER": "hashing",
        "MEMORY_CONFIG": str(tmp_path / "none.toml"),
        "MEMORY_NAMESPACE": "default",
    }


def _data(result: Any) -> Any:
    assert not result.is_error, result.content[0].text
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def test_stdio_tools_resources_and_errors(tmp_path: Path) -> None:
    params = StdioServerParameters(command=MEMORY_BIN, args=["mcp"], env=_env(tmp_path))

    async def scenario() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert {"remember", "recall", "get", "update", "forget", "history", "list", "stats"} <= set(tools)
            remember = tools["remember"]
            assert remember.description and "Store a memory" in remember.description
            assert remember.input_schema["required"] == ["content"]
            assert "namespace" in remember.input_schema["properties"]
            assert remember.output_schema and "id" in remember.output_schema["properties"]
            assert tools["recall"].annotations.read_only_hint is True
            assert tools["forget"].annotations.destructive_hint is True

            mid = _data(
                await client.call_tool("remember", {"content": "Bob plays the cello", "user": "bob", "tags": ["music"]})
            )["id"]
            hits = _data(await client.call_tool("recall", {"query": "what instrument does bob play?"}))["hits"]
            assert hits[0]["item"]["id"] == mid
            other = _data(await client.call_tool("remember", {"content": "in work", "namespace": "work"}))["id"]
            updated = _data(await client.call_tool("update", {"id": mid, "content": "Bob plays the viola"}))
            assert updated["content"] == "Bob plays the viola" and updated["tags"] == ["music"]
            ops = [e["op"] for e in _data(await client.call_tool("history", {"id": mid}))["entries"]]
            assert ops == ["add", "update"]
            listed = _data(await client.call_tool("list", {"limit": 10}))
            assert [i["id"] for i in listed["items"]] == [mid]

            missing = await client.call_tool("get", {"id": "no-such-id"})
            assert missing.is_error and "NotFoundError" in missing.content[0].text
            bad = await client.call_tool("remember", {"content": "x", "importance": 9})
            assert bad.is_error and "importance" in bad.content[0].text
            unknown = await client.call_tool("remember", {"content": "x", "colour": "red"})
            assert unknown.is_error and "colour" in unknown.content[0].text

            resources = [str(r.uri) for r in (await client.list_resources()).resources]
            assert resources == [
                "memory://namespaces",
                "memory://schemas/kom.memory.v1/episodic.json",
                "memory://schemas/kom.memory.v1/semantic.json",
                "memory://schemas/kom.memory.v1/jobs/semantic_sync.json",
            ]
            templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
            assert {
                "memory://{namespace}/memories/{id}",
                "memory://{namespace}/threads/{thread}",
                "memory://{namespace}/jobs/sync",
            } <= templates
            namespaces = json.loads((await client.read_resource("memory://namespaces")).contents[0].text)
            assert namespaces == {"namespaces": ["default", "work"]}
            item = json.loads((await client.read_resource(f"memory://work/memories/{other}")).contents[0].text)
            assert item["content"] == "in work"
            with pytest.raises(Exception, match="NotFoundError"):
                await client.read_resource(f"memory://default/memories/{other}")

            secret = _data(await client.call_tool("remember", {"content": "pin is swordfish", "sensitivity": "secret"}))
            hits = _data(await client.call_tool("recall", {"query": "pin"}))["hits"]
            assert all("swordfish" not in h["item"]["content"] for h in hits)
            denied = await client.call_tool("get", {"id": secret["id"], "clearance": "secret"})
            assert denied.is_error and "PermissionDeniedError" in denied.content[0].text
            history = await client.call_tool("history", {"id": secret["id"]})  # a secret's history is unknown
            assert history.is_error and "NotFoundError" in history.content[0].text
            assert "swordfish" not in history.content[0].text  # a word: a hex id may hold digits
            listed = _data(await client.call_tool("list", {"limit": 100}))
            assert all("swordfish" not in i["content"] for i in listed["items"])
            assert _data(await client.call_tool("forget", {"id": mid})) == {"deleted": 1}

            said = _data(await client.call_tool("append_message", {"thread": "t9", "content": "I moved to Lyon"}))
            assert said["turn"] == 1
            await client.call_tool("append_message", {"thread": "t9", "content": "noted", "role": "assistant"})
            timeline = json.loads((await client.read_resource("memory://default/threads/t9")).contents[0].text)
            assert [m["content"] for m in timeline["messages"]] == ["I moved to Lyon", "noted"]
            status = json.loads((await client.read_resource("memory://default/jobs/sync")).contents[0].text)
            assert status["status"]["pending"] >= 2
            synced = _data(await client.call_tool("sync_semantic", {}))
            assert synced["result"]["messages_done"] == 2
            found = _data(await client.call_tool("search_conversation", {"query": "where did they move?"}))
            assert found["hits"][0]["message"]["content"] == "I moved to Lyon"
            context = _data(
                await client.call_tool(
                    "get_context", {"observation": "where do I live now?", "thread": "t9", "budget_tokens": 400}
                )
            )
            assert "Lyon" in json.dumps(context["messages"]) and context["trace"]["sections"]

    anyio.run(scenario)


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """`memory mcp --http --port 0` in a subprocess, with keys for namespaces a and b."""
    env = _env(tmp_path)
    mem = Memory(env["MEMORY_DATABASE"], embedder="hashing")
    store = open_key_store(mem.backend)
    tokens = {}
    for name in ("a", "b"):
        record, tokens[name] = new_key(name, [name], now=utcnow())
        store.add(record)
    mem.close()
    proc = subprocess.Popen(
        [MEMORY_BIN, "mcp", "--http", "--port", "0"], env={**os.environ, **env},
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        line = ""
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
            if match:
                break
        else:
            raise AssertionError(f"server did not start: {line}")
        yield f"http://127.0.0.1:{match.group(1)}/mcp", tokens
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()


@asynccontextmanager
async def _http_client(url: str, token: str) -> AsyncIterator[Client]:
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60) as client:
            yield client


def test_streamable_http_with_keys(http_server: tuple[str, dict[str, str]]) -> None:
    url, tokens = http_server

    async def scenario() -> None:
        async with _http_client(url, tokens["a"]) as client:
            assert "recall" in {t.name for t in (await client.list_tools()).tools}
            mid = _data(await client.call_tool("remember", {"content": "Carol runs marathons"}))["id"]
            item = _data(await client.call_tool("get", {"id": mid}))
            assert item["namespace"] == "a"  # the key's namespace is the default
            hits = _data(await client.call_tool("recall", {"query": "marathon", "namespace": "a"}))["hits"]
            assert hits[0]["item"]["id"] == mid
            refused = await client.call_tool("recall", {"query": "marathon", "namespace": "b"})
            assert refused.is_error and "PermissionDeniedError" in refused.content[0].text
            wrote = await client.call_tool("remember", {"content": "intrusion", "namespace": "b"})
            assert wrote.is_error
            with pytest.raises(Exception, match="PermissionDenied"):
                await client.read_resource(f"memory://b/memories/{mid}")
            assert json.loads((await client.read_resource("memory://namespaces")).contents[0].text) == {
                "namespaces": ["a"]
            }
        async with _http_client(url, tokens["b"]) as client:
            assert _data(await client.call_tool("list", {}))["items"] == []  # nothing got into b
            missing = await client.call_tool("get", {"id": mid})
            assert missing.is_error and "NotFoundError" in missing.content[0].text

    anyio.run(scenario)


def test_streamable_http_refuses_requests_without_a_key(http_server: tuple[str, dict[str, str]]) -> None:
    import httpx

    url, _ = http_server
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    r = httpx.post(url, json=body, headers=headers, timeout=30)
    assert r.status_code == 401 and r.headers["content-type"] == "application/problem+json"
    r = httpx.post(url, json=body, headers={**headers, "Authorization": "Bearer mem_nope"}, timeout=30)
    assert r.status_code == 401 and "malformed" in r.json()["detail"]
