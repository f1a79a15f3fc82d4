"""The REST API over real HTTP on loopback: CRUD, pagination, problem+json errors, limits, CORS, secrets."""

from __future__ import annotations

from pathlib import Path

import httpx
from server_helpers import Live, ThreadServer, start_rest

PROBLEM = "application/problem+json"


def _problem(response: httpx.Response, status: int) -> dict[str, object]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    body = response.json()
    assert body["status"] == status and body["title"]
    return body


def test_memory_lifecycle_over_http(live: Live) -> None:
    with live.client("a") as c:
        r = c.post(
            "/v1/namespaces/a/memories",
            json={
                "content": "Alice prefers dark mode",
                "user": "alice",
                "tags": ["ui"],
                "metadata": {"source": "chat"},
            },
        )
        assert r.status_code == 201
        mid = r.json()["id"]
        assert (
            c.post("/v1/namespaces/a/memories", json={"content": "Alice prefers dark mode", "user": "alice"}).json()[
                "id"
            ]
            == mid
        )  # dedup
        got = c.get(f"/v1/namespaces/a/memories/{mid}").json()
        assert got["content"] == "Alice prefers dark mode" and got["namespace"] == "a" and got["tags"] == ["ui"]
        hits = c.post("/v1/namespaces/a/search", json={"query": "what does alice like", "user": "alice"}).json()
        assert hits["hits"][0]["item"]["id"] == mid and hits["hits"][0]["channels"]
        upd = c.patch(
            f"/v1/namespaces/a/memories/{mid}",
            json={"content": "Alice prefers light mode", "reason": "changed her mind"},
        )
        assert upd.status_code == 200 and upd.json()["content"] == "Alice prefers light mode"
        assert upd.json()["tags"] == ["ui"]  # fields not given are kept
        history = c.get(f"/v1/namespaces/a/memories/{mid}/history").json()["entries"]
        assert [e["op"] for e in history] == ["add", "update"] and history[1]["reason"] == "changed her mind"
        c.post("/v1/namespaces/a/memories", json={"content": "Bob likes tea", "user": "bob", "kind": "trait"})
        tagged = c.get("/v1/namespaces/a/memories", params={"tags": ["ui", "nope"], "kinds": ["fact"]}).json()
        assert [i["id"] for i in tagged["items"]] == [mid]
        assert len(c.get("/v1/namespaces/a/memories", params={"user": "bob"}).json()["items"]) == 1
        c.delete("/v1/namespaces/a/memories", params={"user": "bob", "confirm": True})
        stats = c.get("/v1/namespaces/a/stats").json()
        assert stats["total"] == 1 and stats["namespace"] == "a"
        assert c.delete(f"/v1/namespaces/a/memories/{mid}").json() == {"deleted": 1}
        _problem(c.get(f"/v1/namespaces/a/memories/{mid}"), 404)
        assert [e["op"] for e in c.get(f"/v1/namespaces/a/memories/{mid}/history").json()["entries"]][-1] == "delete"
    assert live.mem.stats(namespace="a").total == 0


def test_batch_is_all_or_nothing(live: Live) -> None:
    with live.client("a") as c:
        r = c.post(
            "/v1/namespaces/a/memories/batch", json={"items": [{"content": "one"}, {"content": "two", "user": "u"}]}
        )
        assert r.status_code == 201
        ids = r.json()["ids"]
        assert [live.mem.get(i, namespace="a").content for i in ids] == ["one", "two"]
        bad = _problem(
            c.post("/v1/namespaces/a/memories/batch", json={"items": [{"content": "three"}, {"content": " "}]}), 422
        )
        assert "entry 1" in str(bad["detail"]) or "items/1" in str(bad["detail"])  # the library's or the schema's
    assert live.mem.stats(namespace="a").total == 2


def test_list_pages_with_cursor(live: Live) -> None:
    ids = [live.mem.remember(f"note number {i}", namespace="a") for i in range(7)]
    seen: list[str] = []
    cursor = None
    with live.client("a") as c:
        while True:
            params: dict[str, object] = {"limit": 3, **({"cursor": cursor} if cursor else {})}
            page = c.get("/v1/namespaces/a/memories", params=params).json()
            seen += [item["id"] for item in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == list(reversed(ids))
        _problem(c.get("/v1/namespaces/a/memories", params={"cursor": "garbage!"}), 422)
        _problem(c.get("/v1/namespaces/a/memories", params={"limit": 0}), 422)
        _problem(c.get("/v1/namespaces/a/memories", params={"nope": 1}), 422)


def test_problem_json_errors(live: Live) -> None:
    with live.client("a") as c:
        _problem(c.get("/v1/namespaces/a/memories/unknown"), 404)
        _problem(c.get("/v1/no/such/route"), 404)
        bad = _problem(
            c.post("/v1/namespaces/a/memories", content=b"{not json", headers={"content-type": "application/json"}), 400
        )
        assert "JSON" in str(bad["title"])
        _problem(c.post("/v1/namespaces/a/memories", json={"content": "x", "unknown": 1}), 422)
        detail = _problem(c.post("/v1/namespaces/a/memories", json={"content": "x", "importance": 7}), 422)["detail"]
        assert "importance" in str(detail)
        _problem(c.post("/v1/namespaces/a/search", json={"query": "x", "limit": 5000}), 422)
        _problem(c.patch("/v1/namespaces/a/memories/x", json={}), 404)
        _problem(c.delete("/v1/namespaces/a/memories"), 422)  # forget_all needs confirm=true
    assert live.mem.stats(namespace="a").total == 0  # nothing was written by a bad request


def test_path_parameters_are_percent_decoded_once(live: Live) -> None:
    """A thread named ``%10`` travels as ``%2510`` and is stored under that name; ``%10`` on the wire is the
    control character U+0010, refused as a name (nothing decoded twice, nothing stored)."""
    with live.client("a") as c:
        sent = c.post("/v1/namespaces/a/threads/%2510/messages", json={"content": "percent in a name"})
        assert sent.status_code == 201, sent.text
        assert c.get("/v1/namespaces/a/threads/%2510/messages").json()["messages"][0]["thread"] == "%10"
        assert c.post("/v1/namespaces/a/threads/%2510/end", json={}).json()["thread"] == "%10"
        _problem(c.post("/v1/namespaces/a/threads/%10/messages", json={"content": "x"}), 422)
    assert [t.thread for t in live.mem.messages.threads(namespace="a")] == ["%10"]


def test_update_refuses_null_for_fields_that_always_have_a_value(live: Live) -> None:
    mid = live.mem.remember("Bob rides a tram", context="work", namespace="a")
    with live.client("a") as c:
        for field in ("content", "kind", "importance", "sensitivity"):  # null refused by the schema (fuzzing)
            detail = str(_problem(c.patch(f"/v1/namespaces/a/memories/{mid}", json={field: None}), 422)["detail"])
            assert "must be" not in detail and field in detail  # the schema's refusal, not the library's
        for bad in (-0.1, 2.0):  # the schema's bounds, as remember's
            detail = str(_problem(c.patch(f"/v1/namespaces/a/memories/{mid}", json={"importance": bad}), 422)["detail"])
            assert "must be between" not in detail and "importance" in detail
        cleared = c.patch(f"/v1/namespaces/a/memories/{mid}", json={"context": None, "valid_to": None})
        assert cleared.status_code == 200 and cleared.json()["context"] is None  # optional fields clear
    assert live.mem.get(mid, namespace="a").content == "Bob rides a tram"


def test_booleans_are_json_booleans_in_a_body_and_true_or_false_in_a_query(live: Live) -> None:
    """A body's boolean is true or false, as the schema says (0.0 was read as false; found by the schema fuzzer);
    a query string's is its text."""
    live.mem.remember("Bob rides a tram", namespace="a")
    with live.client("a") as c:
        for bad in (0, 0.0, 1, "true", "0", "yes"):
            detail = str(
                _problem(c.post("/v1/namespaces/a/search", json={"query": "tram", "include_invalid": bad}), 422)[
                    "detail"
                ]
            )
            assert "include_invalid" in detail
            _problem(c.post("/v1/namespaces/a/threads/t/feedback", json={"task_completed": bad}), 422)
        assert c.post("/v1/namespaces/a/search", json={"query": "tram", "include_invalid": True}).status_code == 200
        for text in ("true", "false"):
            listed = c.get("/v1/namespaces/a/memories", params={"oldest_first": text, "include_expired": text})
            assert listed.status_code == 200 and len(listed.json()["items"]) == 1
        _problem(c.get("/v1/namespaces/a/memories", params={"oldest_first": "maybe"}), 422)
    assert live.mem.feedback.list(namespace="a") == []  # nothing was recorded by a refused feedback


def test_request_size_limit(live: Live) -> None:
    with live.client("a") as c:
        body = _problem(c.post("/v1/namespaces/a/memories", json={"content": "x" * 70_000}), 413)
        assert "limited" in str(body["detail"])

        def chunks():  # no Content-Length: the limit applies as the body streams in
            for _ in range(100):
                yield b"x" * 1024

        _problem(
            c.post("/v1/namespaces/a/memories", content=chunks(), headers={"content-type": "application/json"}), 413
        )
    assert live.mem.stats(namespace="a").total == 0


def test_missing_wrong_and_revoked_keys(live: Live) -> None:
    with live.client(None) as c:
        r = c.get("/v1/namespaces/a/memories")
        _problem(r, 401)
        assert r.headers["www-authenticate"] == "Bearer"
        _problem(
            c.get("/v1/namespaces/a/memories", headers={"Authorization": "Bearer mem_0011223344556677_" + "x" * 43}),
            401,
        )
        _problem(c.get("/v1/namespaces/a/memories", headers={"Authorization": "Basic abc"}), 401)
        ok = c.get("/v1/namespaces/a/memories", headers={"X-API-Key": live.keys["a"]})
        assert ok.status_code == 200
        assert c.get("/healthz").json() == {"status": "ok"}
        assert c.get("/openapi.json").json()["info"]["title"] == "memory"
    key_id = live.keys["a"].split("_")[1]
    assert live.store.revoke(key_id, live.mem.now())
    with live.client("a") as c:
        assert "revoked" in str(_problem(c.get("/v1/namespaces/a/memories"), 401)["detail"])


def test_openapi_declares_both_key_headers_on_every_api_operation(live: Live) -> None:
    # The key is read by the operation itself (no security dependency runs per request), so the
    # document must say on its own how every /v1 operation is authenticated.
    with live.client(None) as c:
        spec = c.get("/openapi.json").json()
    schemes = spec["components"]["securitySchemes"]
    assert schemes["HTTPBearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": schemes["HTTPBearer"]["description"],
    }
    assert {k: schemes["APIKeyHeader"][k] for k in ("type", "in", "name")} == {
        "type": "apiKey", "in": "header", "name": "X-API-Key",
    }  # fmt: skip
    operations = [(path, op) for path, methods in spec["paths"].items() for op in methods.values()]
    api = [op for path, op in operations if path.startswith("/v1/")]
    assert len(api) > 30
    assert all(op["security"] == [{"HTTPBearer": []}, {"APIKeyHeader": []}] for op in api)
    assert all("security" not in op for path, op in operations if path == "/healthz")


def test_read_only_key_cannot_write(live: Live) -> None:
    mid = live.mem.remember("kept", namespace="a")
    with live.client("a_ro") as c:
        assert c.get(f"/v1/namespaces/a/memories/{mid}").status_code == 200
        _problem(c.post("/v1/namespaces/a/memories", json={"content": "new"}), 403)
        _problem(c.patch(f"/v1/namespaces/a/memories/{mid}", json={"content": "changed"}), 403)
        _problem(c.delete(f"/v1/namespaces/a/memories/{mid}"), 403)
        _problem(c.delete("/v1/namespaces/a/memories", params={"confirm": True}), 403)
        _problem(c.post("/v1/namespaces/a/jobs/embed-pending", json={}), 403)
    assert [i.content for i in live.mem.list(namespace="a").items] == ["kept"]


def test_secrets_never_leave_without_clearance(live: Live) -> None:
    secret = live.mem.remember("the vault code is 4711", namespace="a", sensitivity="secret")
    live.mem.remember("the vault is in the cellar", namespace="a")
    with live.client("a") as c:
        hits = c.post("/v1/namespaces/a/search", json={"query": "vault code"}).json()["hits"]
        assert hits and all("4711" not in h["item"]["content"] for h in hits)
        _problem(c.get(f"/v1/namespaces/a/memories/{secret}"), 404)
        _problem(c.get(f"/v1/namespaces/a/memories/{secret}", params={"clearance": "secret"}), 403)
        _problem(c.post("/v1/namespaces/a/search", json={"query": "vault", "clearance": "secret"}), 403)
        assert all("4711" not in i["content"] for i in c.get("/v1/namespaces/a/memories").json()["items"])
        exported = c.get("/v1/namespaces/a/export").text
        assert "the vault is in the cellar" in exported
        assert "vault code" not in exported  # not "4711": random timestamp digits can hold it
        assert "vault code" not in c.get(f"/v1/namespaces/a/memories/{secret}/history").text
        _problem(c.get(f"/v1/namespaces/a/memories/{secret}/history", params={"clearance": "secret"}), 403)
        _problem(c.patch(f"/v1/namespaces/a/memories/{secret}", json={"tags": ["x"]}), 404)
        _problem(c.delete(f"/v1/namespaces/a/memories/{secret}"), 404)
    with live.client("a_secret") as c:
        assert "4711" in c.get(f"/v1/namespaces/a/memories/{secret}", params={"clearance": "secret"}).text
        hits = c.post("/v1/namespaces/a/search", json={"query": "vault code", "clearance": "secret"}).json()["hits"]
        assert any("4711" in h["item"]["content"] for h in hits)
        export = c.get("/v1/namespaces/a/export", params={"clearance": "secret"})
        assert export.headers["content-type"].startswith("application/x-ndjson") and "4711" in export.text
        exported = c.get("/v1/namespaces/a/export").text
        assert "the vault is in the cellar" in exported
        assert "vault code" not in exported  # clearance is asked for, not implied
        assert "vault code" not in c.get(f"/v1/namespaces/a/memories/{secret}/history").text
        assert "4711" in c.get(f"/v1/namespaces/a/memories/{secret}/history", params={"clearance": "secret"}).text


def test_namespaces_listing_is_filtered_by_key(live: Live) -> None:
    for ns in ("a", "b", "c"):
        live.mem.remember(f"in {ns}", namespace=ns)
    with live.client("a") as c:
        assert c.get("/v1/namespaces").json() == {"namespaces": ["a"]}
    with live.client("all") as c:
        assert c.get("/v1/namespaces").json() == {"namespaces": ["a", "b", "c"]}
        assert c.get("/v1/namespaces/c/stats").json()["total"] == 1


def test_cors_is_off_by_default_and_configurable(live: Live, tmp_path: Path) -> None:
    preflight = {"Origin": "http://evil.example", "Access-Control-Request-Method": "GET"}
    with live.client("a") as c:
        r = c.get("/v1/namespaces/a/memories", headers={"Origin": "http://evil.example"})
        assert "access-control-allow-origin" not in r.headers
        assert "access-control-allow-origin" not in c.options("/v1/namespaces/a/memories", headers=preflight).headers
    mem, _, app = start_rest(tmp_path / "cors", cors_origins=("http://app.example",))
    with ThreadServer(app) as server, httpx.Client(base_url=server.url) as c:
        r = c.options(
            "/v1/namespaces/a/memories",
            headers={"Origin": "http://app.example", "Access-Control-Request-Method": "GET"},
        )
        assert r.headers["access-control-allow-origin"] == "http://app.example"
        r = c.options("/v1/namespaces/a/memories", headers=preflight)
        assert "access-control-allow-origin" not in r.headers
    mem.close()


def test_no_auth_mode_serves_the_local_caller(tmp_path: Path) -> None:
    mem, _, app = start_rest(tmp_path, require_keys=False)
    with ThreadServer(app) as server, httpx.Client(base_url=server.url) as c:
        assert c.post("/v1/namespaces/x/memories", json={"content": "local"}).status_code == 201
        assert c.get("/v1/namespaces").json() == {"namespaces": ["x"]}
        mid = mem.remember("s", namespace="x", sensitivity="secret")
        _problem(c.get(f"/v1/namespaces/x/memories/{mid}", params={"clearance": "secret"}), 403)
    mem.close()


def test_conversations_and_sync_over_http(live: Live) -> None:
    with live.client("a") as c:
        first = c.post("/v1/namespaces/a/threads/t1/messages", json={"content": "I moved to Berlin", "user": "al"})
        assert first.status_code == 201 and first.json()["turn"] == 1
        c.post("/v1/namespaces/a/threads/t1/messages", json={"content": "Nice! When?", "role": "assistant"})
        c.post("/v1/namespaces/a/threads/t1/messages", json={"content": "my pin is 5150", "sensitivity": "secret"})
        recent = c.get("/v1/namespaces/a/threads/t1/messages", params={"n": 10}).json()["messages"]
        assert [(m["turn"], m["role"]) for m in recent] == [(1, "user"), (2, "assistant")]  # the secret stays out
        _problem(c.get("/v1/namespaces/a/threads/t1/messages", params={"clearance": "secret"}), 403)
        assert c.get("/v1/namespaces/a/jobs/sync").json()["status"]["pending"] >= 2
        estimate = c.post("/v1/namespaces/a/jobs/sync", json={"dry_run": True}).json()
        assert estimate["dry_run"] is True and estimate["result"]["messages"] == 2
        done = c.post("/v1/namespaces/a/jobs/sync", json={}).json()["result"]
        assert done["messages_done"] == 2 and done["error"] is None
        hits = c.post("/v1/namespaces/a/messages/search", json={"query": "where did they move", "thread": "t1"})
        assert hits.json()["hits"][0]["message"]["content"] == "I moved to Berlin"
        # The secret's text, not a digit run that an id or a score may hold by chance.
        found = c.post("/v1/namespaces/a/messages/search", json={"query": "pin"})
        assert "my pin is" not in found.text
        assert all("5150" not in hit["message"]["content"] for hit in found.json()["hits"])
        threads = c.get("/v1/namespaces/a/threads").json()["threads"]
        assert [(t["thread"], t["messages"]) for t in threads] == [("t1", 3)]  # a count, not content
        _problem(c.post("/v1/namespaces/a/threads/t1/messages", json={"content": "x", "role": "Not A Role"}), 422)
    with live.client("a_secret") as c:
        secret = c.get("/v1/namespaces/a/threads/t1/messages", params={"clearance": "secret"}).json()["messages"]
        assert "5150" in secret[-1]["content"]


def test_working_memory_blocks(live: Live) -> None:
    with live.client("a") as c:
        r = c.put("/v1/namespaces/a/blocks/user_info", json={"value": "Name: Alice.", "user": "al"})
        assert r.status_code == 200 and r.json()["version"] == 1
        c.put("/v1/namespaces/a/blocks/user_info", json={"value": "Lives in Berlin.", "mode": "append", "user": "al"})
        blocks = {b["label"]: b for b in c.get("/v1/namespaces/a/blocks", params={"user": "al"}).json()["blocks"]}
        assert blocks["user_info"]["value"] == "Name: Alice.\nLives in Berlin."
        assert "goals_and_status" in blocks  # standard labels, empty
        limit = blocks["user_info"]["limit"]
        _problem(c.put("/v1/namespaces/a/blocks/user_info", json={"value": "x" * (limit + 1), "user": "al"}), 422)
    assert live.mem.blocks.get("user_info", user="al", namespace="a").value.endswith("Berlin.")


def test_context_for_the_next_model_call(live: Live) -> None:
    live.mem.remember("Alice lives in Berlin", namespace="a", user="al")
    live.mem.remember("the vault code is 4711", namespace="a", user="al", sensitivity="secret")
    live.mem.messages.append("t1", "I need a restaurant for tonight", namespace="a", user="al")
    with live.client("a") as c:
        r = c.post(
            "/v1/namespaces/a/context",
            json={
                "observation": "where does alice live? what is the vault code?",
                "user": "al",
                "thread": "t1",
                "budget_tokens": 500,
            },
        )
        assert r.status_code == 200, r.text
        body = r.json()
        text = " ".join(str(m["content"]) for m in body["messages"])
        assert "Berlin" in text and "restaurant" in text and "vault code is" not in text
        assert body["trace"]["sections"]
        _problem(c.post("/v1/namespaces/a/context", json={"observation": "x", "clearance": "secret"}), 403)
        _problem(c.post("/v1/namespaces/a/context", json={"observation": "x", "budget_tokens": 1}), 422)
