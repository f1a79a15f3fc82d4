"""memory extract / link / graph show|query|entities, end to end on a SQLite file."""

from __future__ import annotations

from collections.abc import Callable

from cli_helpers import Runner


def test_extract_previews_without_writing(run: Runner) -> None:
    data = run.json("extract", "Alice moved to Berlin in 2021.")
    assert data["relations"] == [{"subject": "Alice", "predicate": "moved to", "object": "Berlin"}]
    assert {"name": "Berlin", "type": "place"} in data["entities"] and data["model"] == "heuristic:v1"
    table = run.ok("extract", "Alice moved to Berlin in 2021.").stdout
    assert "moved to" in table and "keywords:" in table
    assert run.json("stats")["total"] == 0


def test_remember_extract_then_graph_show_query_entities(run: Runner) -> None:
    paris = run.json("remember", "Alice lives in Paris", "--extract")["id"]
    berlin = run.json("remember", "Alice lives in Berlin", "--extract")["id"]
    shown = run.json("graph", "show", "alice", "--invalid")
    assert shown["entity"]["name"] == "Alice"
    assert {r["text"]: r["invalid_at"] is None for r in shown["relations"]} == {
        "Alice lives in Berlin": True, "Alice lives in Paris": False,
    }  # fmt: skip
    assert set(shown["memory_ids"]) == {paris, berlin}
    assert "Alice lives in Berlin" in run.ok("graph", "show", "Alice").stdout
    queried = run.json("graph", "query", "Alice", "--predicate", "lives in")
    assert [r["text"] for r in queried["relations"]] == ["Alice lives in Berlin"]
    assert queried["memory_ids"] == [berlin]
    names = {e["name"] for e in run.json("graph", "entities")["entities"]}
    assert names == {"Alice", "Berlin", "Paris"}
    history = run.json("history", paris)
    assert history["entries"][-1]["op"] == "supersede"
    assert history["entries"][-1]["changed"] == ["valid_to"]


def test_link_and_errors(run: Runner, one_line_error: Callable[..., str]) -> None:
    a = run.ok("remember", "first").stdout.strip()
    b = run.ok("remember", "second").stdout.strip()
    made = run.json("link", a, b, "--type", "follows")
    assert (made["source_id"], made["target_id"], made["type"]) == (a, b, "follows")
    assert "-[follows]->" in run.ok("link", a, b, "--type", "follows").stdout
    one_line_error(run("link", a, "nope"), 1, "no memory 'nope'")
    one_line_error(run("graph", "show", "Nobody"), 1, "no entity 'Nobody'")
    one_line_error(run("extract"), 2, "give TEXT")


def test_extract_pending_processes_the_queue(run: Runner, db_url: str) -> None:
    from memory import Memory
    from memory.embedders.hashing import HashingEmbedder

    with Memory(db_url, embedder=HashingEmbedder()) as mem:
        queued = mem.remember("Frank works at Globex.", extract="background")
    data = run.json("extract", "--pending")
    assert [(p["memory_id"], p["status"]) for p in data["processed"]] == [(queued, "done")]
    assert "nothing pending" in run.ok("extract", "--pending").stdout
