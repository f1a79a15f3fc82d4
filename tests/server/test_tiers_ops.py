"""Tiers over real HTTP: pages flow in from appended messages; system memory is listed and withdrawn."""

from __future__ import annotations

import pytest
from server_helpers import Live

from memory import limits
from memory.errors import InvalidInputError


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


def test_tiers_retrieve_takes_the_query_every_search_takes(live: Live) -> None:
    """Blank, invisible or over-long queries are refused by the schema and by the library, as recall's
    (an invisible one passed the schema and was refused by the library; found by the schema fuzzer)."""
    mem = live.mem
    mem.tiers.add_page("I moved to Berlin", "Welcome!", agent="guide", user="al", namespace="a")
    bad = ["", " ", "\x85", "\x1f", "q" * (limits.MAX_QUERY_CHARS + 1)]
    with live.client("a") as c:
        for query in bad:
            got = c.post("/v1/namespaces/a/tiers/retrieve", json={"query": query, "agent": "guide", "user": "al"})
            assert got.status_code == 422, (query[:5], got.text)
        ok = c.post("/v1/namespaces/a/tiers/retrieve", json={"query": " Berlin ", "agent": "guide", "user": "al"})
        assert ok.status_code == 200 and ok.json()["stm"], ok.text
    for query in [*bad, "\ufeff", 7]:
        with pytest.raises(InvalidInputError, match="query"):
            mem.tiers.retrieve(query, agent="guide", user="al", namespace="a")  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="query"):
            mem.messages.search(query, namespace="a")  # type: ignore[arg-type]
