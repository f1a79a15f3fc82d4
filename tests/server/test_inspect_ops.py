"""The web inspector's operations (memory.server.ops_inspect) over real HTTP: scope, clearance, read-only keys."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

from server_helpers import Live

NS = "/v1/namespaces/a"


def test_whoami_tells_what_the_key_may_do(live: Live) -> None:
    with live.client("a_ro") as c:
        who = c.get("/v1/whoami").json()
    assert who["namespaces"] == ["a"] and who["read_only"] is True and who["clearance"] == "private"
    with live.client("all") as c:
        assert c.get("/v1/whoami").json()["namespaces"] is None
    with live.client("a_secret") as c:
        assert c.get("/v1/whoami").json()["clearance"] == "secret"
    with live.client(None) as c:
        assert c.get("/v1/whoami").status_code == 401


def test_memory_detail_shows_facts_entities_links_and_sources(live: Live) -> None:
    mem = live.mem
    fact = mem.remember("Alice moved to Berlin in 2021.", namespace="a", extract=True)
    other = mem.remember("Alice likes trams.", namespace="a")
    hidden = mem.remember("Alice's door code is 4711.", namespace="a", sensitivity="secret")
    mem.link(fact, other, "relates_to", namespace="a")
    mem.link(fact, hidden, "relates_to", namespace="a", clearance="secret")  # the store owner links a secret
    message = mem.messages.append("t1", "I moved to Lisbon last year.", user="alice", namespace="a", extract=True)
    derived = [i for i in mem.list(namespace="a", limit=100).items if message.id in i.source_ids]
    assert derived, "extraction from a message should cite it"
    with live.client("a") as c:
        detail = c.get(f"{NS}/memories/{fact}/detail").json()
        assert [e["name"] for e in detail["entities"]] and any("Berlin" in r["object"] for r in detail["facts"])
        assert all(fact in r["source_ids"] for r in detail["facts"])
        linked = {lk["target_id"] for lk in detail["links"]}
        assert linked == {other}, "a link to a secret memory must not show without clearance"
        sourced = c.get(f"{NS}/memories/{derived[0].id}/detail").json()
        assert sourced["sources"][0]["message"]["content"] == "I moved to Lisbon last year."
        assert c.get(f"{NS}/memories/{hidden}/detail").status_code == 404
        assert c.get(f"{NS}/memories/{hidden}/detail", params={"clearance": "secret"}).status_code == 403
    with live.client("a_secret") as c:
        detail = c.get(f"{NS}/memories/{fact}/detail", params={"clearance": "secret"}).json()
        assert {lk["target_id"] for lk in detail["links"]} == {other, hidden}
        assert c.get(f"{NS}/memories/{hidden}/detail", params={"clearance": "secret"}).status_code == 200


def test_timeline_pages_and_live_window_hide_secrets(live: Live) -> None:
    mem = live.mem
    for i in range(1, 8):
        mem.messages.append("t", f"message {i}", namespace="a", sensitivity="secret" if i == 4 else "normal")
    with live.client("a") as c:
        latest = c.get(f"{NS}/threads/t/timeline", params={"limit": 3}).json()
        assert [m["turn"] for m in latest["messages"]] == [5, 6, 7] and latest["has_older"] is True
        older = c.get(f"{NS}/threads/t/timeline", params={"limit": 3, "before_turn": 5}).json()
        assert [m["turn"] for m in older["messages"]] == [1, 2, 3], "the secret turn 4 is left out"
        mem.messages.append("t", "message 8", namespace="a")
        new = c.get(f"{NS}/threads/t/timeline", params={"after_turn": latest["last_turn"]}).json()
        assert [m["content"] for m in new["messages"]] == ["message 8"] and new["last_turn"] == 8
        assert "message 4" not in c.get(f"{NS}/threads/t/timeline").text
    with live.client("a_secret") as c:
        page = c.get(f"{NS}/threads/t/timeline", params={"clearance": "secret"}).json()
        assert "message 4" in [m["content"] for m in page["messages"]]


def test_archive_needs_a_writable_key(live: Live) -> None:
    for i in range(5):
        live.mem.messages.append("t", f"m{i}", namespace="a")
    with live.client("a_ro") as c:
        refused = c.post(f"{NS}/threads/t/archive", json={"keep_last": 1})
        assert refused.status_code == 403
    assert len(live.mem.messages.recent("t", 10, namespace="a")) == 5
    with live.client("a") as c:
        assert c.post(f"{NS}/threads/t/archive", json={"keep_last": 2}).json() == {"archived": 3}
        bad = c.post(f"{NS}/threads/t/archive", json={"keep_last": -1})
        assert bad.status_code == 422
    assert [m.content for m in live.mem.messages.recent("t", 10, namespace="a")] == ["m3", "m4"]


def test_media_inline_and_hidden_when_secret(live: Live) -> None:
    data = b"\x89PNG\r\n\x1a\n" + bytes(range(200))
    shown = live.mem.messages.append("t", "a photo", namespace="a", content_type="image", media=data, mime="image/png")
    secret = live.mem.messages.append(
        "t", "a secret photo", namespace="a", content_type="image", media=data, mime="image/png", sensitivity="secret"
    )
    plain = live.mem.messages.append("t", "no photo", namespace="a")
    with live.client("a") as c:
        out = c.get(f"{NS}/messages/{shown.id}/media").json()
        assert out["mime"] == "image/png" and base64.b64decode(out["data_base64"]) == data
        assert c.get(f"{NS}/messages/{secret.id}/media").status_code == 404
        assert c.get(f"{NS}/messages/{plain.id}/media").status_code == 404
    with live.client("b") as c:
        assert c.get(f"/v1/namespaces/b/messages/{shown.id}/media").status_code == 404


def test_graph_view_as_of_shows_what_held_then(live: Live) -> None:
    mem = live.mem
    mem.remember("Alice works at Acme Corp.", namespace="a", extract=True, valid_from=datetime(2019, 1, 1, tzinfo=UTC))
    mem.remember("Alice moved to Berlin.", namespace="a", extract=True, valid_from=datetime(2021, 1, 1, tzinfo=UTC))
    store = mem.graph.store
    acme = [r.id for r in store.relations("a", None) if r.object == "Acme Corp"]
    assert acme
    store.invalidate_relations("a", acme, datetime(2023, 6, 30, tzinfo=UTC))
    with live.client("a") as c:

        def objects(**body: object) -> set[str]:
            found = c.post(f"{NS}/graph/view", json={"start": "Alice", **body})
            assert found.status_code == 200, found.text
            return {r["object"] for r in found.json()["relations"]}

        assert objects() == {"Berlin"}
        assert objects(include_invalid=True) == {"Berlin", "Acme Corp"}
        assert objects(as_of="2020-01-01T00:00:00Z") == {"Acme Corp"}
        assert objects(as_of="2022-01-01T00:00:00Z") == {"Acme Corp", "Berlin"}
        assert objects(as_of="2024-01-01T00:00:00Z") == {"Berlin"}
        closed = c.post(f"{NS}/graph/view", json={"start": "Alice", "include_invalid": True}).json()
        assert [r["invalid_at"][:10] for r in closed["relations"] if r["object"] == "Acme Corp"] == ["2023-06-30"]
        names = {e["name"] for e in c.get(f"{NS}/graph/entities").json()["entities"]}
        assert {"Alice", "Berlin", "Acme Corp"} <= names


def test_graph_view_hides_relations_only_secrets_support(live: Live) -> None:
    zurich = live.mem.remember("Alice visited Zurich.", namespace="a", extract=True)
    live.mem.update(zurich, namespace="a", sensitivity="secret")  # its entities and relations stay in the graph
    live.mem.remember("Bob visited Geneva.", namespace="a", extract=True)
    assert live.mem.graph.entity("Zurich", namespace="a")
    with live.client("a") as c:
        found = c.post(f"{NS}/graph/view", json={"as_of": "2100-01-01T00:00:00Z"}).text
        assert "Zurich" not in found and "Geneva" in found
        entities = c.get(f"{NS}/graph/entities").text
        assert "Zurich" not in entities and "Geneva" in entities, "an entity only a secret mentions stays unknown"
    with live.client("a_secret") as c:
        assert "Zurich" in c.get(f"{NS}/graph/entities", params={"clearance": "secret"}).text


def test_block_history_and_tiers_snapshot(live: Live) -> None:
    mem = live.mem
    mem.blocks.replace("user_info", "Alice lives in Berlin.", user="alice", namespace="a", reason="first")
    mem.blocks.append("user_info", "Likes tea.", user="alice", namespace="a", reason="second")
    mem.tiers.add_page("Where is a dentist?", "Near Kreuzberg.", agent="g", user="alice", namespace="a", record=False)
    mem.tiers.add_page("My PIN?", "It is 9999.", agent="g", user="alice", namespace="a", record=False,
                       sensitivity="secret")  # fmt: skip
    with live.client("a") as c:
        history = c.get(f"{NS}/blocks/user_info/history", params={"user": "alice"}).json()["changes"]
        assert [h["reason"] for h in history] == ["first", "second"]
        assert history[1]["before"] == "Alice lives in Berlin." and "Likes tea." in history[1]["after"]
        assert c.get(f"{NS}/tiers/owners").json()["owners"] == [["g", "alice"]]
        snap = c.get(f"{NS}/tiers/snapshot", params={"agent": "g", "user": "alice"})
        assert snap.status_code == 200 and "9999" not in snap.text and '"vector"' not in snap.text
        assert [p["query"] for p in snap.json()["stm"]] == ["Where is a dentist?"]
    with live.client("a_secret") as c:
        snap = c.get(f"{NS}/tiers/snapshot", params={"agent": "g", "user": "alice", "clearance": "secret"})
        assert "9999" in snap.text


def test_prompt_versions_carry_their_rewards(live: Live) -> None:
    mem = live.mem
    mem.prompts.create("support", "Be helpful.", namespace="a")
    mem.prompts.add_version("support", "Be brief.", namespace="a")
    mem.messages.append("t1", "hi", namespace="a")
    mem.feedback.record("t1", rating=5, prompt="support", prompt_version=1, namespace="a")
    with live.client("a_ro") as c:
        rows = c.get(f"{NS}/prompts").json()["prompts"]
    assert [(r["version"]["version"], r["version"]["status"]) for r in rows] == [(1, "active"), (2, "candidate")]
    assert rows[0]["stats"]["count"] == 1 and rows[0]["stats"]["mean"] == 1.0
    assert rows[1]["stats"]["count"] == 0


def test_inspector_operations_are_not_mcp_tools() -> None:
    from memory.server.ops import OPERATIONS

    inspector = [op for op in OPERATIONS.values() if "inspector" in op.tags]
    assert len(inspector) == 11 and not any(op.mcp for op in inspector)
    assert [op.name for op in inspector if op.write] == ["archive_thread"]
