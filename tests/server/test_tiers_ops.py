"""Tiers over real HTTP: pages flow in from appended messages; system memory is listed and withdrawn."""

from __future__ import annotations

from server_helpers import Live


def test_pages_from_messages_and_system_memory_over_rest(live: Live) -> None:
    mem = live.mem
    mem.tiers.configure(agent="guide", auto_pages=True, namespace="a")
    with live.client("a") as c:
        base = "/v1/namespaces/a/threads/t1/messages"
        assert c.post(base, json={"content": "I moved to Berlin", "user": "al"}).status_code in (200, 201)
        reply = c.post(base, json={"content": "Welcome!", "role": "assistant", "user": "al", "agent": "guide"})
        assert reply.status_code in (200, 201), reply.text
        got = c.post("/v1/namespaces/a/tiers/retrieve", json={"query": "Berlin", "agent": "guide", "user": "al"})
        assert got.status_code == 200 and got.json()["stm"][0]["query"] == "I moved to Berlin"
    # a promoted entry, as consolidation would write it
    mem.tiers.configure(agent="helper", stm_capacity=1, heat_threshold=1.0, system_importance_threshold=0.3,
                        namespace="a")  # fmt: skip
    for _ in range(3):
        mem.tiers.add_page("Kubernetes stores cluster state in etcd.", "ok", agent="helper", user="al", namespace="a")
    mem.tiers.consolidate(namespace="a")
    with live.client("a") as c:
        listed = c.get("/v1/namespaces/a/tiers/system")
        assert listed.status_code == 200, listed.text
        entries = listed.json()["entries"]
        assert entries and all("vector" not in e for e in entries) and entries[0]["source_agent"] == "helper"
        with live.client("a_ro") as ro:
            assert ro.delete(f"/v1/namespaces/a/tiers/system/{entries[0]['id']}").status_code == 403
        gone = c.delete(f"/v1/namespaces/a/tiers/system/{entries[0]['id']}")
        assert gone.status_code == 200 and gone.json() == {"deleted": 1}
        assert len(c.get("/v1/namespaces/a/tiers/system").json()["entries"]) == len(entries) - 1
    with live.client("b") as c:  # another namespace's key sees nothing of a
        assert c.get("/v1/namespaces/a/tiers/system").status_code in (403, 404)
