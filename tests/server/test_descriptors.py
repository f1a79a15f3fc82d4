"""The kom.memory.v1 resource descriptors: shipped files, served over MCP, and true of real responses.

A real `memory mcp` process over stdio, the MCP SDK's client, and jsonschema
validating the resources the server actually returns against the descriptors
the same server serves.
"""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from memory.server import descriptors

MEMORY_BIN = str(Path(sys.executable).with_name("memory"))


@pytest.mark.parametrize("name", sorted(descriptors.DESCRIPTORS))
def test_shipped_descriptor_matches_the_models(name: str) -> None:
    shipped = descriptors.load(name)
    assert shipped == descriptors.render(name), (
        f"{name} is out of date with the models: run `python -m memory.server.descriptors`"
    )
    schema = json.loads(shipped)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"] == descriptors.uri(name) and schema["x-kom-resource"].startswith("memory://")


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "MEMORY_DATABASE": f"sqlite:///{tmp_path / 'kom.db'}",
        "MEMORY_EMBEDDER": "hashing",
        "MEMORY_CONFIG": str(tmp_path / "none.toml"),
        "MEMORY_NAMESPACE": "default",
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}),
    }


def _tool(result: Any) -> Any:
    assert not result.is_error, result.content[0].text
    return result.structured_content


def test_real_resources_validate_against_the_served_descriptors(tmp_path: Path) -> None:
    params = StdioServerParameters(command=MEMORY_BIN, args=["mcp"], env=_env(tmp_path))
    seen: dict[str, list[Any]] = {name: [] for name in descriptors.DESCRIPTORS}
    schemas: dict[str, dict[str, Any]] = {}

    async def scenario() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            listed = {str(r.uri): r for r in (await client.list_resources()).resources}
            for name in descriptors.DESCRIPTORS:
                resource = listed[descriptors.uri(name)]
                assert resource.mime_type == "application/schema+json"
                read = (await client.read_resource(descriptors.uri(name))).contents[0]
                schemas[name] = json.loads(read.text)

            async def read(uri: str) -> Any:
                return json.loads((await client.read_resource(uri)).contents[0].text)

            seen["jobs/semantic_sync.json"].append(await read("memory://default/jobs/sync"))  # never run: state null
            first = _tool(await client.call_tool("append_message", {"thread": "t1", "content": "I moved to Lyon"}))
            await client.call_tool(
                "append_message",
                {"thread": "t1", "content": "Noted, Lyon it is", "role": "assistant", "tags": ["move"]},
            )
            await client.call_tool("append_message", {"thread": "t1", "content": "PIN 4417", "sensitivity": "secret"})
            seen["episodic.json"].append(await read("memory://default/threads/t1"))
            _tool(await client.call_tool("sync_semantic", {}))
            seen["episodic.json"].append(await read("memory://default/threads/t1"))
            seen["jobs/semantic_sync.json"].append(await read("memory://default/jobs/sync"))
            stored = _tool(
                await client.call_tool(
                    "remember",
                    {"content": "Maya lives in Lyon", "user": "maya", "tags": ["home"], "metadata": {"k": [1, 2]},
                     "context": f"said in message {first['id']}", "entities": ["Maya"], "ttl_seconds": 3600,
                     "valid_from": "2026-01-01T00:00:00Z"},
                )
            )  # fmt: skip
            seen["semantic.json"].append(await read(f"memory://default/memories/{stored['id']}"))
            plain = _tool(await client.call_tool("remember", {"content": "a plain note", "sensitivity": "private"}))
            seen["semantic.json"].append(await read(f"memory://default/memories/{plain['id']}"))

    anyio.run(scenario)
    for name, responses in seen.items():
        validator = jsonschema.Draft202012Validator(schemas[name])
        assert responses
        for response in responses:
            errors = list(validator.iter_errors(response))
            assert not errors, f"{name}: {[e.message for e in errors[:3]]}"
    state = seen["jobs/semantic_sync.json"][1]["status"]["state"]
    assert state is not None and state["processed"] == 2  # the secret message was skipped
    assert seen["episodic.json"][1]["messages"][0]["embedding_status"] == "done"
    assert seen["semantic.json"][0]["embedding_model"] and seen["semantic.json"][0]["expires_at"]

    # The schemas are not vacuous: a response the server would not give fails.
    episodic = jsonschema.Draft202012Validator(schemas["episodic.json"])
    bad = copy.deepcopy(seen["episodic.json"][1])
    bad["messages"][0]["turn"] = "first"
    assert not episodic.is_valid(bad)
    extra = copy.deepcopy(seen["semantic.json"][0])
    extra["vector"] = [0.1]
    assert not jsonschema.Draft202012Validator(schemas["semantic.json"]).is_valid(extra)
    sync = copy.deepcopy(seen["jobs/semantic_sync.json"][0])
    del sync["status"]["pending"]
    assert not jsonschema.Draft202012Validator(schemas["jobs/semantic_sync.json"]).is_valid(sync)
