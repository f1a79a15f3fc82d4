"""A key for namespace A can neither read nor write namespace B — on every route of the API."""

from __future__ import annotations

from typing import Any

import pytest
from server_helpers import Live

from memory.server.ops import OPERATIONS

#: A valid request for each scoped operation (body for POST/PATCH, query for GET/DELETE).
EXAMPLES: dict[str, dict[str, Any]] = {
    "remember": {"content": "written by a stranger"},
    "remember_batch": {"items": [{"content": "one"}, {"content": "two", "tags": ["x"]}]},
    "recall": {"query": "secret plans"},
    "get": {},
    "update": {"content": "changed by a stranger"},
    "forget": {},
    "forget_all": {"confirm": True},
    "list": {},
    "history": {},
    "stats": {},
    "embed_pending": {},
    "export": {},
    "append_message": {"content": "a stranger says hi"},
    "recent_messages": {},
    "search_conversation": {"query": "plans"},
    "threads": {},
    "sync_semantic": {},
    "sync_status": {},
    "get_blocks": {},
    "write_block": {"value": "likes tea", "mode": "append"},
    "get_context": {"observation": "what are the plans?"},
    "link": {"target": "$other", "type": "relates_to"},
    "query_graph": {"depth": 2},
    "facts_about": {},
    "extract": {"text": "Alice moved to Berlin in 2021."},
    "end_conversation": {},
    "tiers_retrieve": {"query": "plans", "agent": "g", "user": "alice"},
    "tiers_system": {},
    "tiers_withdraw": {},
    "feedback_record": {"rating": 2, "feedback": "too vague", "prompt": "support"},
    "prompt_get": {},
    # the web inspector's operations (memory.server.ops_inspect)
    "memory_detail": {},
    "thread_timeline": {"limit": 10},
    "archive_thread": {"keep_last": 0},
    "message_media": {},
    "graph_view": {"depth": 2, "as_of": "2030-01-01T00:00:00Z"},
    "graph_entities": {},
    "block_history": {},
    "tier_owners": {},
    "tiers_show": {"agent": "g", "user": "alice"},
    "prompt_versions": {},
}
SCOPED = [op for op in OPERATIONS.values() if op.rest is not None and op.scoped]


def test_every_scoped_route_has_an_example() -> None:
    missing = [op.name for op in SCOPED if op.name not in EXAMPLES]
    assert not missing, f"add a valid request for {missing} to EXAMPLES so the scope test covers it"


def _request(
    live: Live, role: str, namespace: str, op_name: str, item_id: str, other_id: str = "", message_id: str = ""
) -> Any:
    op = OPERATIONS[op_name]
    assert op.rest is not None
    path = "/v1/namespaces/{namespace}" + op.rest.path
    if op.rest.path.startswith("/messages/{id}"):
        item_id = message_id
    url = (
        path.replace("{namespace}", namespace)
        .replace("{id}", item_id)
        .replace("{thread}", "t1")
        .replace("{label}", "user_info")
        .replace("{entity}", "Berlin")
        .replace("{name}", "support")
    )
    payload = {k: other_id if v == "$other" else v for k, v in EXAMPLES[op_name].items()}
    with live.client(role) as c:
        if op.rest.method in ("GET", "DELETE"):
            return c.request(op.rest.method, url, params=payload)
        return c.request(op.rest.method, url, json=payload)


def _snapshot(live: Live, namespace: str) -> tuple[Any, ...]:
    items = live.mem.list(namespace=namespace, clearance="secret", include_expired=True, include_invalid=True)
    messages = live.mem.messages.recent("t1", 100, namespace=namespace, clearance="secret")
    return (
        tuple(i.model_dump_json() for i in items.items),
        live.mem.stats(namespace=namespace, clearance="secret").ledger_entries,
        tuple(m.model_dump_json() for m in messages),
        live.mem.sync_status(namespace=namespace).to_dict()["messages"],
        tuple(b.model_dump_json() for b in live.mem.blocks.all(namespace=namespace)),
        tuple(link.model_dump_json() for link in live.mem.graph.store.links(namespace, [i.id for i in items.items])),
        live.mem.graph.counts(namespace=namespace),
        tuple(r.model_dump_json() for r in live.mem.feedback.list(namespace=namespace)),
        tuple(v.model_dump_json() for v in live.mem.prompts.list(namespace=namespace)),
        tuple(e.id for e in live.mem.tiers.system(namespace=namespace)),
    )


@pytest.mark.parametrize("op_name", [op.name for op in SCOPED])
def test_key_for_a_cannot_touch_b(live: Live, op_name: str) -> None:
    b_item = live.mem.remember("secret plans of b", namespace="b", tags=["b"])
    a_item = live.mem.remember("plans of a", namespace="a")
    picture = {"content_type": "image", "media": b"\x89PNG not really", "mime": "image/png"}
    b_message = live.mem.messages.append("t1", "secret plans discussed in b", namespace="b", **picture).id
    a_message = live.mem.messages.append("t1", "plans discussed in a", namespace="a", **picture).id
    b_other = live.mem.remember("Bob moved to Berlin", namespace="b", extract=True)
    a_other = live.mem.remember("Ann moved to Berlin", namespace="a", extract=True)
    for ns in ("a", "b"):
        live.mem.prompts.create("support", f"You support namespace {ns}.", namespace=ns)
    before = _snapshot(live, "b")
    refused = _request(live, "a", "b", op_name, b_item, b_other, b_message)
    assert refused.status_code == 403, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert "secret plans" not in refused.text
    assert _snapshot(live, "b") == before
    # The same request in the key's own namespace is served: the refusal above is about scope.
    allowed = _request(live, "a", "a", op_name, a_item, a_other, a_message)
    assert allowed.status_code < 300, allowed.text
    assert "Bob" not in allowed.text
    # …and the owner of b is served too.
    assert _request(live, "b", "b", op_name, b_item, b_other, b_message).status_code < 300


def test_unscoped_routes_only_show_the_keys_namespaces(live: Live) -> None:
    live.mem.remember("x", namespace="b")
    with live.client("a") as c:
        assert c.get("/v1/namespaces").json()["namespaces"] == []
