"""Issue 15 over real HTTP: hostile input gets a 4xx problem, never a 500; a 405 names every method."""

from __future__ import annotations

import httpx
import pytest
from server_helpers import Live


def _problem(response: httpx.Response, status: int) -> dict[str, object]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, object] = response.json()
    return body


def _nested(depth: int) -> str:
    return '{"k":' * depth + "{}" + "}" * depth  # as text: json.dumps itself recurses


def test_405_allow_names_every_method_of_the_path(live: Live) -> None:
    with live.client("a") as c:
        assert set(c.put("/v1/namespaces/a/memories").headers["allow"].split(", ")) == {"GET", "POST", "DELETE"}
        assert set(c.post("/v1/namespaces/a/memories/x").headers["allow"].split(", ")) == {"GET", "PATCH", "DELETE"}
        _problem(c.put("/v1/namespaces/a/stats"), 405)


@pytest.mark.parametrize("when", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00"])
def test_dates_at_the_calendars_ends_are_422(live: Live, when: str) -> None:
    with live.client("a") as c:
        assert "calendar" in str(
            _problem(c.post("/v1/namespaces/a/memories", json={"content": "x", "expires_at": when}), 422)
        )
        _problem(c.get("/v1/namespaces/a/memories", params={"since": when}), 422)
        _problem(c.post("/v1/namespaces/a/search", json={"query": "x", "until": when}), 422)
        _problem(c.post("/v1/namespaces/a/messages/search", json={"query": "x", "since": when}), 422)
    assert live.mem.stats(namespace="a", clearance="secret").total == 0


@pytest.mark.parametrize("depth", [40, 300, 5_000])
def test_deep_metadata_is_422(live: Live, depth: int) -> None:
    body = '{"content": "deep", "metadata": ' + _nested(depth) + "}"
    with live.client("a") as c:
        response = c.post("/v1/namespaces/a/memories", content=body, headers={"content-type": "application/json"})
        assert response.status_code in (400, 422), response.text
    assert live.mem.stats(namespace="a", clearance="secret").total == 0


def test_huge_lists_are_refused_quickly(live: Live) -> None:
    with live.client("a") as c:
        _problem(c.post("/v1/namespaces/a/search", json={"query": "x", "tags": ["t"] * 10_000}), 422)
        _problem(c.post("/v1/namespaces/a/memories", json={"content": "x", "keywords": ["k"] * 5_000}), 422)


def test_dedup_over_rest_never_returns_a_secret(live: Live) -> None:
    secret = live.mem.remember("the PIN is 4711", namespace="a", sensitivity="secret")
    with live.client("a") as c:
        guess = c.post("/v1/namespaces/a/memories", json={"content": "the PIN is 4711"}).json()["id"]
        batch = c.post("/v1/namespaces/a/memories/batch", json={"items": [{"content": "the PIN is 4711"}]}).json()
        assert guess != secret and batch["ids"] == [guess]
        assert c.get(f"/v1/namespaces/a/memories/{guess}").status_code == 200
        unknown = c.get("/v1/namespaces/a/memories/unknown-id/history")
        hidden = c.get(f"/v1/namespaces/a/memories/{secret}/history")
        assert hidden.status_code == unknown.status_code == 404
        assert hidden.text.replace(secret, "ID") == unknown.text.replace("unknown-id", "ID")
        stats = c.get("/v1/namespaces/a/stats").json()
        assert stats["total"] == 1 and "secret" not in stats["by_sensitivity"] and stats["ledger_entries"] is None
        _problem(c.get("/v1/namespaces/a/stats", params={"clearance": "secret"}), 403)
    with live.client("a_secret") as c:
        assert c.get("/v1/namespaces/a/stats", params={"clearance": "secret"}).json()["total"] == 2
    with live.client("a") as c:  # forget_all without clearance leaves the secret it cannot see
        assert c.delete("/v1/namespaces/a/memories", params={"confirm": True}).json() == {"deleted": 1}
    assert live.mem.get(secret, namespace="a", clearance="secret").content == "the PIN is 4711"
