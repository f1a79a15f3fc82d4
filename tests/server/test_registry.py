"""The registry is the single source of both servers: a new operation shows up as a REST route and an MCP tool."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import httpx
import pytest
from mcp import Client
from pydantic import BaseModel, ConfigDict, Field
from server_helpers import ThreadServer

from memory import Memory
from memory.backends.keys import open_key_store
from memory.server.auth import Authenticator
from memory.server.mcp import build_server, local_caller, tool_schema
from memory.server.ops import OPERATIONS, Operation, Rest, register
from memory.server.rest import create_app


class CountIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user: str = Field(..., description="Whose memories to count.")
    kind: str | None = None


class CountOut(BaseModel):
    total: int


@pytest.fixture
def count_op() -> Iterator[Operation]:
    op = register(
        Operation(
            name="count_for",
            description="Count a user's memories.",
            params=CountIn,
            result=CountOut,
            run=lambda mem, a, call: CountOut(total=mem.stats(namespace=call.namespace, user=a.user).total),
            rest=Rest("GET", "/users/{user}/count"),
        )
    )
    yield op
    del OPERATIONS[op.name]


def test_new_operation_appears_in_both_servers(count_op: Operation) -> None:
    with pytest.raises(ValueError, match="already registered"):
        register(count_op)
    mem = Memory("memory://", embedder="hashing")
    mem.remember("one", namespace="ns", user="zoe")
    mem.remember("two", namespace="ns", user="zoe")
    auth = Authenticator(open_key_store(mem.backend), False, local_caller("ns"))
    with ThreadServer(create_app(mem, auth)) as server, httpx.Client(base_url=server.url) as c:
        spec = c.get("/openapi.json").json()
        route = spec["paths"]["/v1/namespaces/{namespace}/users/{user}/count"]["get"]
        assert route["operationId"] == "count_for"
        assert {p["name"] for p in route["parameters"]} >= {"namespace", "user", "kind"}
        assert c.get("/v1/namespaces/ns/users/zoe/count").json() == {"total": 2}
        assert c.get("/v1/namespaces/ns/users/zoe/count", params={"bogus": 1}).status_code == 422

    schema = tool_schema(count_op)
    assert schema["required"] == ["user"] and "namespace" in schema["properties"]

    async def scenario() -> None:
        async with Client(build_server(mem, lambda ctx: local_caller("ns"))) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["count_for"].description == "Count a user's memories."
            result = await client.call_tool("count_for", {"user": "zoe"})
            assert result.structured_content == {"total": 2}

    anyio.run(scenario)
    mem.close()
