"""The web inspector's operations (memory.server.ops_inspect) over real HTTP: scope, clearance, read-only keys."""

from __future__ import annotations

import base64
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from server_helpers import Live, ThreadServer, start_rest

from memory.errors import InvalidInputError
from memory.keys import Caller

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


def test_a_turn_number_past_64_bits_is_refused_not_a_server_error(live: Live) -> None:
    live.mem.messages.append("t", "message 1", namespace="a")
    with live.client("a") as c:
        for name in ("after_turn", "before_turn"):
            refused = c.get(f"{NS}/threads/t/timeline", params={name: 2**64})  # found by the schema fuzzer
            assert refused.status_code == 422, refused.text
        assert c.get(f"{NS}/threads/t/timeline", params={"after_turn": 2**63 - 1}).json()["messages"] == []
    with pytest.raises(InvalidInputError, match="after_turn"):
        live.mem.messages.get_thread("t", namespace="a", after_turn=2**63)


def test_a_block_value_or_reason_with_nul_is_refused_by_the_schema(live: Live) -> None:
    with live.client("a") as c:
        for body in ({"value": "\x00"}, {"value": "ok", "reason": "why\x00"}, {"value": "ok", "reason": "x" * 2001}):
            refused = c.put(f"{NS}/blocks/user_info", json=body)  # found by the schema fuzzer
            assert refused.status_code == 422 and "NUL characters" not in refused.text, refused.text
        assert c.put(f"{NS}/blocks/user_info", json={"value": "ok", "reason": "why"}).status_code == 200


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
    mem.tiers.add_page("My PIN?", "It is swordfish.", agent="g", user="alice", namespace="a", record=False,
                       sensitivity="secret")  # fmt: skip
    with live.client("a") as c:
        history = c.get(f"{NS}/blocks/user_info/history", params={"user": "alice"}).json()["changes"]
        assert [h["reason"] for h in history] == ["first", "second"]
        assert history[1]["before"] == "Alice lives in Berlin." and "Likes tea." in history[1]["after"]
        assert c.get(f"{NS}/tiers/owners").json()["owners"] == [["g", "alice"]]
        snap = c.get(f"{NS}/tiers/snapshot", params={"agent": "g", "user": "alice"})
        assert snap.status_code == 200 and "swordfish" not in snap.text and '"vector"' not in snap.text
        assert [p["query"] for p in snap.json()["stm"]] == ["Where is a dentist?"]
    with live.client("a_secret") as c:
        snap = c.get(f"{NS}/tiers/snapshot", params={"agent": "g", "user": "alice", "clearance": "secret"})
        assert "swordfish" in snap.text


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


def test_search_includes_closed_facts_only_when_asked(live: Live) -> None:
    mem = live.mem
    closed = mem.remember("Erin works at Acme.", namespace="a", valid_to=datetime(2023, 6, 30, tzinfo=UTC))
    current = mem.remember("Erin works at Globex.", namespace="a")
    secret = mem.remember("Erin worked at Initech.", namespace="a", sensitivity="secret",
                          valid_to=datetime(2022, 1, 1, tzinfo=UTC))  # fmt: skip
    query = {"query": "where does Erin work", "limit": 10}
    with live.client("a") as c:
        default = {h["item"]["id"] for h in c.post(f"{NS}/search", json=query).json()["hits"]}
        assert current in default and closed not in default
        hits = c.post(f"{NS}/search", json=query | {"include_invalid": True}).json()["hits"]
        assert {current, closed} <= {h["item"]["id"] for h in hits}
        assert secret not in {h["item"]["id"] for h in hits}, "closed facts follow clearance like the others"
        assert c.post(f"{NS}/search", json=query | {"include_invalid": "maybe"}).status_code == 422
    from memory.server.mcp import tool_schema
    from memory.server.ops import OPERATIONS, invoke

    assert tool_schema(OPERATIONS["recall"])["properties"]["include_invalid"]["default"] is False
    caller = live_caller("a")
    out = invoke(mem, OPERATIONS["recall"], caller, query | {"include_invalid": True}, "a")
    assert closed in {h.id for h in out.hits}


def live_caller(namespace: str) -> Caller:
    """An MCP-style caller (no key) limited to ``namespace``."""
    return Caller(namespaces=frozenset({namespace}), clearance="private", read_only=True, default_namespace=namespace)


def test_counts_reused_only_when_the_client_accepts_their_age(live: Live) -> None:
    mem = live.mem
    mem.remember("one", namespace="a")
    with live.client("a") as c:
        first = c.get(f"{NS}/stats")
        assert first.json()["total"] == 1 and "Age" not in first.headers
        assert first.headers["Server-Timing"].startswith("op;dur=") and 'desc="stats"' in first.headers["Server-Timing"]
        primed = c.get(f"{NS}/stats", headers={"Cache-Control": "max-age=30"})
        assert 0 <= int(primed.headers["Age"]) <= 30 and primed.json()["total"] == 1
        mem.remember("two", namespace="a")
        reused = c.get(f"{NS}/stats", headers={"Cache-Control": "max-age=30"})
        assert reused.json()["total"] == 1, "a count up to 30 s old was accepted"
        assert reused.headers["X-Computed-At"] == primed.headers["X-Computed-At"]
        assert c.get(f"{NS}/stats").json()["total"] == 2, "without max-age every call counts afresh"
        fresh = c.get(f"{NS}/stats", headers={"Cache-Control": "max-age=0"})
        assert fresh.json()["total"] == 2 and "Age" not in fresh.headers
        # Another question (a user's counts) is never answered from the namespace's.
        assert (
            c.get(f"{NS}/stats", params={"user": "nobody"}, headers={"Cache-Control": "max-age=30"}).json()["total"]
            == 0
        )
        sync = c.get(f"{NS}/jobs/sync", headers={"Cache-Control": "no-cache, max-age=20"})
        assert sync.status_code == 200 and int(sync.headers["Age"]) <= 20
        # Policy is applied before any reuse: a cached answer never reaches a caller the call is refused to.
        accept_old = {"Cache-Control": "max-age=30"}
        assert c.get(f"{NS}/stats", params={"clearance": "secret"}, headers=accept_old).status_code == 403
    with live.client("b") as c:
        assert c.get(f"{NS}/stats", headers={"Cache-Control": "max-age=30"}).status_code == 403
    with live.client("all") as c:
        other = c.get("/v1/namespaces/b/stats", headers={"Cache-Control": "max-age=30"}).json()
        assert other["total"] == 0, "answers are kept per namespace"


def test_warm_up_loads_vector_copies_in_the_background_and_writes_nothing(tmp_path: Path) -> None:
    from memory.server.warm import warm_up

    mem, _, app = start_rest(tmp_path)
    # More items than the exact-scan limit, so search keeps an in-process copy that warm-up loads.
    mem.remember_batch([{"content": f"note {i} about trams and tea", "user": f"u{i % 7}"} for i in range(2_100)])
    before = [(i.id, i.accessed_at, i.access_count) for i in mem.list(limit=5).items]
    ledger = mem.stats(clearance="secret").ledger_entries
    with ThreadServer(app):
        warm = app.state.warm_up
        assert warm.done.wait(120), "warm-up runs in the background and ends"
        assert {"imports", "token counter"} <= set(warm.times)
        assert any(step.startswith(f"vectors {mem.namespace}/") for step in warm.times), warm.times
    assert [(i.id, i.accessed_at, i.access_count) for i in mem.list(limit=5).items] == before
    assert mem.stats(clearance="secret").ledger_entries == ledger
    # The copy is held in the backend's code cache; a second run finds it loaded and keeps it
    # (the same object, not a rebuild). Checked by identity: timings of a few ms are noise.
    copies = mem.backend._codes._indexes  # type: ignore[attr-defined]
    loaded = {key: index for key, index in copies.items() if key[2] == mem.namespace}
    assert loaded and all(index.size == 2_100 for index in loaded.values()), loaded
    again = warm_up(mem)
    assert any(name.startswith("vectors") for name in again)
    assert all(copies[key] is index for key, index in loaded.items())
    mem.close()


def test_warm_up_on_an_empty_and_a_memory_store(tmp_path: Path) -> None:
    from memory import Memory
    from memory.server.warm import WarmUp

    for dsn in (f"sqlite:///{tmp_path / 'empty.db'}", "memory://"):
        with Memory(dsn, embedder="hashing") as mem:
            warm = WarmUp(mem)
            warm.start()
            assert warm.done.wait(60) and "imports" in warm.times
            warm.stop()
            assert mem.recall("anything") == []


def test_warm_up_stops_when_asked() -> None:
    import threading

    from memory import Memory
    from memory.server.warm import warm_up

    stop = threading.Event()
    stop.set()
    with Memory("memory://", embedder="hashing") as mem:
        assert warm_up(mem, stop) == {}


def test_a_search_during_warm_up_waits_for_it_instead_of_repeating_it(tmp_path: Path) -> None:
    from memory import Memory
    from memory.server.warm import WarmUp

    with Memory(f"sqlite:///{tmp_path / 'w.db'}", embedder="hashing") as mem:
        mem.remember_batch([f"note {i} about trams" for i in range(2_100)])
        mem.remember("elsewhere", namespace="other")
        warm = WarmUp(mem)
        warm.start()
        warm.wait_for("recall", mem.namespace)
        assert warm.is_ready(f"ns:{mem.namespace}") and warm.is_ready("plan")
        warm.wait_for("get_context", mem.namespace)
        assert warm.is_ready("tokens")
        started = time.monotonic()
        warm.wait_for("recall", "never-planned")  # not in the plan: no wait beyond the plan
        warm.wait_for("list", mem.namespace)  # no vector search: never waits
        assert time.monotonic() - started < 5
        assert warm.done.wait(60) and warm.is_ready("ns:other")
        warm.stop()


def test_the_server_accepts_requests_once_its_namespace_is_warm_so_the_first_search_loads_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counts, not time: the in-process vector copies a cold first search would build are built
    while the server starts, and the first search and context build none."""
    import httpx

    from memory.backends.sqlite import vectors

    copies = [0]
    real_index = vectors.CodeIndex.__init__

    def counting_index(self: Any, *args: Any, **kwargs: Any) -> None:
        copies[0] += 1
        real_index(self, *args, **kwargs)

    monkeypatch.setattr(vectors.CodeIndex, "__init__", counting_index)
    mem, _, app = start_rest(tmp_path, require_keys=False)
    # More items than the exact-scan limit, so search keeps in-process copies that a cold start loads.
    mem.remember_batch([{"content": f"note {i} about trams and tea", "thread": f"t{i % 9}"} for i in range(2_100)])
    mem.close()
    mem, _, app = start_rest(tmp_path, require_keys=False)  # a fresh process's view: nothing loaded yet
    copies[0] = 0
    with ThreadServer(app) as server:  # uvicorn says it started only after the app's startup (the warm-up)
        warm = app.state.warm_up
        assert warm.is_ready(f"ns:{mem.namespace}") and warm.is_ready("tokens"), warm.times
        assert f"recall {mem.namespace}" in warm.times
        assert copies[0] >= 1, "the warm-up built the namespace's vector copies"
        copies[0] = 0
        base = f"{server.url}/v1/namespaces/{mem.namespace}"
        hits = httpx.post(f"{base}/search", json={"query": "trams"}, timeout=30)
        assert hits.status_code == 200 and hits.json()["hits"]
        context = httpx.post(f"{base}/context", json={"observation": "tea?", "thread": "t1"}, timeout=30)
        assert context.status_code == 200, context.text
        assert copies[0] == 0, "the first search or context built what the warm-up should have"
    mem.close()


def test_warm_wait_zero_starts_at_once_and_warms_in_the_background(tmp_path: Path) -> None:
    mem, _, app = start_rest(tmp_path, require_keys=False, warm_wait=0)
    mem.remember_batch([f"note {i} about trams" for i in range(50)])
    with ThreadServer(app):
        assert app.state.warm_up.done.wait(60) and "imports" in app.state.warm_up.times
    mem.close()
