"""Graph, extraction, conversation-end and tier operations over real HTTP (REST) and the MCP SDK client (stdio)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from server_helpers import Live
from test_mcp import MEMORY_BIN, _data, _env, _http_client, http_server  # noqa: F401  (fixture)

from memory import Memory


def _problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    return dict(response.json())


def test_link_graph_and_facts_over_http(live: Live) -> None:
    moved = live.mem.remember("Alice moved to Berlin in 2021.", namespace="a", user="al", extract=True)
    works = live.mem.remember("Alice works at Acme.", namespace="a", user="al", extract=True)
    hidden = live.mem.remember("Dave lives in Paris.", namespace="a", extract=True)
    live.mem.update(hidden, namespace="a", sensitivity="secret")  # its relation is now supported by a secret only
    with live.client("a") as c:
        r = c.post(f"/v1/namespaces/a/memories/{moved}/links", json={"target": works, "type": "relates_to"})
        assert r.status_code == 201, r.text
        assert (r.json()["source_id"], r.json()["target_id"], r.json()["type"]) == (moved, works, "relates_to")
        again = c.post(f"/v1/namespaces/a/memories/{moved}/links", json={"target": works})
        assert again.status_code == 201 and again.json() == r.json()  # idempotent
        assert len(live.mem.graph.links(moved, namespace="a")) == 1
        _problem(c.post(f"/v1/namespaces/a/memories/{moved}/links", json={"target": hidden}), 404)  # secret: invisible
        _problem(c.post(f"/v1/namespaces/a/memories/{moved}/links", json={"target": moved}), 422)
        for bad in (" ", "\x85", "a\nb"):  # refused by the schema, as by the library (found by the schema fuzzer)
            detail = str(
                _problem(c.post(f"/v1/namespaces/a/memories/{moved}/links", json={"target": works, "type": bad}), 422)[
                    "detail"
                ]
            )
            assert "link type" not in detail and "type" in detail

        facts = c.get("/v1/namespaces/a/graph/entities/Alice/facts").json()
        assert "Alice moved to Berlin" in facts["facts"] and facts["entity"] == "Alice"
        assert all(moved in r["source_ids"] or works in r["source_ids"] for r in facts["relations"])
        assert c.get("/v1/namespaces/a/graph/entities/Nobody/facts").json()["facts"] == []
        assert c.get("/v1/namespaces/a/graph/entities/Dave/facts").json()["facts"] == []  # secret-only support
        _problem(c.get("/v1/namespaces/a/graph/entities/Dave/facts", params={"clearance": "secret"}), 403)

        graph = c.post("/v1/namespaces/a/graph/query", json={"start": "Alice", "depth": 2}).json()
        names = [e["name"] for e in graph["entities"]]
        assert names[0] == "Alice" and "Berlin" in names
        assert set(graph["memory_ids"]) <= {moved, works} and moved in graph["memory_ids"]
        whole = c.post("/v1/namespaces/a/graph/query", json={}).json()
        assert "Paris" not in json.dumps(whole) and hidden not in whole["memory_ids"]
        only = c.post("/v1/namespaces/a/graph/query", json={"start": "Alice", "predicates": ["moved to"]}).json()
        assert {r["predicate"] for r in only["relations"]} == {"moved to"}
        _problem(c.post("/v1/namespaces/a/graph/query", json={"start": "Alice", "depth": 9}), 422)
        _problem(c.post("/v1/namespaces/a/graph/query", json={"start": "Nobody"}), 404)
    with live.client("a_secret") as c:
        secret = c.get("/v1/namespaces/a/graph/entities/Dave/facts", params={"clearance": "secret"}).json()
        assert any("Paris" in f for f in secret["facts"])


def test_extract_preview_stores_nothing(live: Live) -> None:
    with live.client("a") as c:
        text = "Bob moved to Lisbon. He loves surfing."
        r = c.post("/v1/namespaces/a/extract", json={"text": text, "speaker": "bob"})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["facts"] and any(e["name"] == "Lisbon" for e in body["entities"])
        assert body["model"] == "heuristic:v1" and body["usage"]["estimated"] is True
        _problem(c.post("/v1/namespaces/a/extract", json={"text": ""}), 422)
    assert live.mem.stats(namespace="a").total == 0
    assert live.mem.graph.counts(namespace="a")["entities"] == 0


def test_end_conversation_and_tiers_over_http(live: Live) -> None:
    live.mem.messages.append("t1", "I am a nurse. I want to run a marathon.", namespace="a", user="al")
    live.mem.messages.append("t1", "Great goal!", role="assistant", namespace="a", user="al")
    live.mem.messages.append("t1", "My pin is swordfish.", namespace="a", user="al", sensitivity="secret")
    live.mem.tiers.add_page("I like green tea.", "Noted.", agent="g", user="al", namespace="a")
    with live.client("a_ro") as c:
        _problem(c.post("/v1/namespaces/a/threads/t1/end", json={}), 403)  # it writes blocks
    with live.client("a") as c:
        r = c.post("/v1/namespaces/a/threads/t1/end", json={})
        assert r.status_code == 200, r.text
        ended = r.json()
        assert ended["messages"] == 2 and ended["user"] == "al" and ended["summarizer"] == "extractive"
        assert ended["fallback_reason"] is None
        updated = {b["label"]: b["value"] for b in ended["updated"]}
        assert "nurse" in updated["user_info"] and "marathon" in updated["goals_and_status"]
        assert "swordfish" not in r.text  # a word, not digits: a hex id may hold those
        tiers = c.post("/v1/namespaces/a/tiers/retrieve", json={"query": "tea", "agent": "g", "user": "al"}).json()
        assert "green tea" in json.dumps(tiers)
        _problem(c.post("/v1/namespaces/a/tiers/retrieve", json={"query": "tea", "agent": "g"}), 422)
    assert "nurse" in live.mem.blocks.get("user_info", user="al", namespace="a").value


def test_new_tools_and_entity_resource_over_stdio(tmp_path: Path) -> None:
    env = _env(tmp_path)
    with Memory(env["MEMORY_DATABASE"], embedder="hashing") as mem:
        first = mem.remember("Alice moved to Berlin in 2021.", extract=True)
        second = mem.remember("Alice works at Acme.", extract=True)
        mem.messages.append("t1", "I am a pilot.", user="al")
    params = StdioServerParameters(command=MEMORY_BIN, args=["mcp"], env=env)

    async def scenario() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert {"link", "query_graph", "facts_about", "extract", "end_conversation", "tiers_retrieve"} <= set(tools)
            assert tools["link"].input_schema["required"] == ["id", "target"]
            assert tools["query_graph"].annotations.read_only_hint is True
            assert tools["end_conversation"].annotations.read_only_hint is False
            assert tools["facts_about"].description and "entity" in tools["facts_about"].description
            link = _data(await client.call_tool("link", {"id": first, "target": second, "type": "same_topic"}))
            assert link["type"] == "same_topic"
            graph = _data(await client.call_tool("query_graph", {"start": "Alice"}))
            assert graph["entities"][0]["name"] == "Alice" and graph["relations"]
            facts = _data(await client.call_tool("facts_about", {"entity": "alice"}))
            assert "Alice moved to Berlin" in facts["facts"]
            preview = _data(await client.call_tool("extract", {"text": "Carol lives in Rome."}))
            assert any(e["name"] == "Rome" for e in preview["entities"])
            ended = _data(await client.call_tool("end_conversation", {"thread": "t1"}))
            assert ended["messages"] == 1 and ended["user"] == "al"
            tiers = _data(await client.call_tool("tiers_retrieve", {"query": "x", "agent": "g", "user": "al"}))
            assert tiers["query"] == "x"
            bad = await client.call_tool("query_graph", {"start": "Alice", "depth": 0})
            assert bad.is_error and "depth" in bad.content[0].text
            templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
            assert "memory://{namespace}/entities/{entity}" in templates
            resource = json.loads((await client.read_resource("memory://default/entities/Alice")).contents[0].text)
            assert "Alice moved to Berlin" in resource["facts"]

    anyio.run(scenario)


def test_graph_tools_over_mcp_http_stay_in_the_keys_namespace(http_server: tuple[str, dict[str, str]]) -> None:  # noqa: F811
    url, tokens = http_server

    async def scenario() -> None:
        async with _http_client(url, tokens["b"]) as client:
            first = _data(await client.call_tool("remember", {"content": "Hugo moved to Nantes.", "namespace": "b"}))
            second = _data(await client.call_tool("remember", {"content": "Hugo likes sailing.", "namespace": "b"}))
            _data(await client.call_tool("link", {"id": first["id"], "target": second["id"]}))
        async with _http_client(url, tokens["a"]) as client:
            for name, args in [
                ("facts_about", {"entity": "Hugo"}),
                ("query_graph", {}),
                ("extract", {"text": "Hugo moved to Nantes."}),
                ("link", {"id": first["id"], "target": second["id"]}),
                ("end_conversation", {"thread": "t1"}),
                ("tiers_retrieve", {"query": "x", "agent": "g", "user": "u"}),
            ]:
                refused = await client.call_tool(name, {**args, "namespace": "b"})
                assert refused.is_error and "PermissionDeniedError" in refused.content[0].text, name
            with pytest.raises(Exception, match="PermissionDenied"):
                await client.read_resource("memory://b/entities/Hugo")
            missing = await client.call_tool("link", {"id": first["id"], "target": second["id"]})  # in a
            assert missing.is_error and "NotFoundError" in missing.content[0].text

    anyio.run(scenario)
