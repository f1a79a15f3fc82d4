"""feedback_record and prompt_get over real HTTP (REST) and the MCP SDK client (stdio)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from server_helpers import Live
from test_mcp import MEMORY_BIN, _data, _env

from memory import Memory


def _problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    return dict(response.json())


def test_feedback_and_prompts_over_http(live: Live) -> None:
    live.mem.prompts.create("support", "You are a support agent.", namespace="a")
    live.mem.prompts.add_version("support", "You are a brief support agent.", namespace="a")
    live.mem.messages.append("t1", "Show me my invoice", namespace="a", user="al")
    live.mem.messages.append("t1", "Here is invoice 12.", namespace="a", role="assistant")
    live.mem.messages.append("t1", "No, I meant the other invoice", namespace="a", user="al")
    with live.client("a") as c:
        active = c.get("/v1/namespaces/a/prompts/support").json()
        assert (active["version"], active["status"], active["text"]) == (1, "active", "You are a support agent.")
        assert c.get("/v1/namespaces/a/prompts/support", params={"version": 2}).json()["status"] == "candidate"
        _problem(c.get("/v1/namespaces/a/prompts/nope"), 404)
        body = {"rating": 2, "feedback": "too vague", "prompt": "support", "task_completed": False}
        r = c.post("/v1/namespaces/a/threads/t1/feedback", json=body)
        assert r.status_code == 200, r.text
        rec = r.json()
        assert rec["prompt_version"] == 1 and rec["corrections"] == 1 and rec["user"] == "al"
        assert 0 < rec["reward"] < 0.5 and rec["reward_components"]["method"] == "rating+implicit"
        for bad in ({"rating": 9}, {"reward": 2}, {"rating_scale": "emoji"}, {"prompt": "nope"}, {"feedback": " "}):
            status = 404 if bad.get("prompt") else 422
            _problem(c.post("/v1/namespaces/a/threads/t1/feedback", json=bad), status)
    assert live.mem.feedback.get("t1", namespace="a").reward == rec["reward"]  # the bad calls changed nothing
    with live.client("a_ro") as c:
        _problem(c.post("/v1/namespaces/a/threads/t1/feedback", json={"rating": 5}), 403)
        assert c.get("/v1/namespaces/a/prompts/support").status_code == 200
    with live.client("a") as c:
        ended = c.post("/v1/namespaces/a/threads/t1/end", json={}).json()
        assert ended["reward"] == rec["reward"] and ended["messages"] == 3


def test_feedback_tools_over_stdio(tmp_path: Path) -> None:
    env = _env(tmp_path)
    with Memory(env["MEMORY_DATABASE"], embedder="hashing") as mem:
        mem.prompts.create("support", "Be kind.")
    params = StdioServerParameters(command=MEMORY_BIN, args=["mcp"], env=env)

    async def scenario() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["prompt_get"].annotations.read_only_hint is True
            assert tools["feedback_record"].annotations.read_only_hint is False
            prompt = _data(await client.call_tool("prompt_get", {"name": "support"}))
            assert prompt["text"] == "Be kind." and prompt["version"] == 1
            rec = _data(await client.call_tool("feedback_record", {"thread": "t9", "rating": 5, "prompt": "support"}))
            assert rec["reward"] == 1.0 and rec["prompt_version"] == 1
            ended = _data(await client.call_tool("end_conversation", {"thread": "t9"}))
            assert ended["reward"] is None and ended["messages"] == 0  # no messages: no record written
            bad = await client.call_tool("feedback_record", {"thread": "t9", "rating": 0})
            assert bad.is_error and "InvalidInputError" in bad.content[0].text

    anyio.run(scenario)
    with Memory(env["MEMORY_DATABASE"], embedder="hashing") as mem:
        assert mem.prompts.stats("support")[0].count == 1
