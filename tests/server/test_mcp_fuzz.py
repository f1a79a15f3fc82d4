"""A protocol-level fuzz of the MCP tools (issue 15, item 4): Hypothesis-generated arguments, the SDK's client.

Every tool is called over streamable HTTP with arguments drawn from its own input
schema (and, a third of the time, from anything JSON): the answer is a result
that matches the tool's output schema, or an error that names a ``memory.errors``
class — never an internal error. Arguments the input schema accepts are refused
only for a rule JSON Schema cannot say (``server_helpers.SEMANTIC_RULES``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import jsonschema
import jsonschema_rs
import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from server_helpers import SEMANTIC_RULES, ThreadServer, start_rest

from memory import errors
from memory.ids import utcnow
from memory.keys import new_key
from memory.server.mcp import http_app

EXAMPLES = int(os.environ.get("MEMORY_MCP_FUZZ_EXAMPLES", "4"))
ERROR_NAMES = {name for name in dir(errors) if name.endswith("Error")}
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


def _value(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values for one property, mostly of the schema's shape (patterns, bounds), sometimes anything."""
    if "$ref" in schema:
        schema = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
    if "anyOf" in schema:
        return st.one_of([_value(option, defs) for option in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    kind = schema.get("type")
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"]).filter(lambda s: len(s) <= schema.get("maxLength", 10**9))
        if schema.get("format") == "date-time":
            return st.datetimes().map(lambda d: d.isoformat() + "Z")
        return st.text(min_size=schema.get("minLength", 0), max_size=min(schema.get("maxLength", 200), 200))
    if kind == "integer":
        return st.integers(schema.get("minimum", -(10**6)), schema.get("maximum", 10**6))
    if kind == "number":
        low = schema.get("minimum", schema.get("exclusiveMinimum", -1e6))
        return st.floats(low, schema.get("maximum", 1e6), allow_nan=False, exclude_min="exclusiveMinimum" in schema)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        items = _value(schema.get("items", {}), defs) if schema.get("items") else JSON
        return st.lists(items, max_size=min(schema.get("maxItems", 5), 5))
    if kind == "object":
        return st.dictionaries(st.from_regex(r"^[a-z][a-z0-9_]{0,8}$"), JSON, max_size=3)
    return JSON


def _arguments(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    defs = schema.get("$defs", {})
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    shaped = st.fixed_dictionaries(
        {name: _value(properties[name], defs) for name in sorted(required)},
        optional={name: _value(spec, defs) for name, spec in properties.items() if name not in required},
    )
    hostile = st.dictionaries(st.sampled_from(sorted(properties) or ["x"]) | st.text(max_size=8), JSON, max_size=5)
    return st.one_of(shaped, shaped, hostile)


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    mem, auth, _ = start_rest(tmp_path_factory.mktemp("mcp-fuzz"))
    for i in range(3):
        mem.remember(f"Alice met Bob in Paris {i}", namespace="default", extract="inline")
    record, token = new_key("fuzz", ["*"], now=utcnow(), allow_secrets=True)
    assert auth.store is not None
    auth.store.add(record)
    with ThreadServer(http_app(mem, auth)) as server:
        yield f"{server.url}/mcp", token
    mem.close()


@asynccontextmanager
async def _session(url: str, token: str) -> AsyncIterator[Client]:
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60) as client:
            yield client


def test_every_tool_answers_with_a_result_or_a_named_error(mcp_url: tuple[str, str]) -> None:
    url, token = mcp_url
    outcomes: dict[str, int] = {"ok": 0, "refused": 0}
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(_session(url, token)) as client:
        listed = portal.call(client.list_tools).tools
        assert len(listed) >= 20
        for tool in listed:
            if tool.annotations is not None and tool.annotations.destructive_hint:
                continue  # forget/forget_all would empty the seeded store; covered by the REST fuzz

            @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None,
                      derandomize=not os.environ.get("MEMORY_FUZZ_RANDOM"))  # fmt: skip
            @given(arguments=_arguments(tool.input_schema), tool=st.just(tool))
            def fuzz(arguments: dict[str, Any], tool: Any) -> None:
                result = portal.call(client.call_tool, tool.name, json.loads(json.dumps(arguments)))
                text = result.content[0].text if result.content else ""
                if not result.is_error:
                    outcomes["ok"] += 1
                    if tool.output_schema:
                        jsonschema.validate(result.structured_content, tool.output_schema)
                    return
                outcomes["refused"] += 1
                assert "internal error" not in text, (tool.name, arguments, text)
                name = text.split(":", 1)[0]
                assert name in ERROR_NAMES, (tool.name, arguments, text)
                # jsonschema_rs reads patterns as JSON Schema does (ECMA: "$" is the end, not before a last
                # newline), like the clients' validators; Python's jsonschema would call "a\n" a valid name
                valid = jsonschema_rs.validator_for(tool.input_schema).is_valid(arguments)
                if valid and name == "InvalidInputError":
                    assert any(re.search(rule, text) for rule in SEMANTIC_RULES), (tool.name, arguments, text)

            fuzz()
    assert outcomes["ok"] > 20 and outcomes["refused"] > 20, outcomes
