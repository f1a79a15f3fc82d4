"""memory tiers add|show|retrieve|consolidate|configure, end to end on a SQLite file."""

from __future__ import annotations

from collections.abc import Callable

from cli_helpers import Runner

TURNS = [
    "My name is Alice and I live in Berlin.",
    "I love hiking in the Alps.",
    "Hiking in the Alps is best in early summer.",
    "I enjoy long hiking trips in the Alps.",
    "I need new hiking boots for the Alps.",
]


def test_configure_add_show_retrieve(run: Runner) -> None:
    config = run.json("tiers", "configure", "--type", "guides", "--set", "stm_capacity=2", "--set", "heat_threshold=3")
    assert config["stm_capacity"] == 2 and config["heat_threshold"] == 3.0
    assert run.json("tiers", "configure", "--agent", "g", "--type", "guides")["stm_capacity"] == 2
    for turn in TURNS:
        page = run.json("tiers", "add", turn, "ok", "--agent", "g", "--user", "alice")
        assert page["query"] == turn and page["meta_chain"].startswith("topic:")
        assert "vector" not in page and "turn_vectors" not in page
    shown = run.json("tiers", "show", "--agent", "g", "--user", "alice")
    assert shown["agent_type"] == "guides" and shown["config"]["stm_capacity"] == 2
    assert [p["query"] for p in shown["stm"]] == TURNS[-2:]
    assert shown["segments"] and all("heat" in s and "vector" not in s for s in shown["segments"])
    assert shown["user_persona"]["identifier"] == "alice" and shown["user_persona"]["knowledge"]
    table = run.ok("tiers", "show", "--agent", "g", "--user", "alice").stdout
    for title in ("STM (2/2)", "MTM (", "LPM object personas", "System memory"):
        assert title in table
    found = run.json("tiers", "retrieve", "hiking boots", "--agent", "g", "--user", "alice")
    assert len(found["stm"]) == 2 and found["segments"] and found["pages"]
    assert all("turn_vectors" not in p for p in found["stm"] + [h["page"] for h in found["pages"]])
    assert "Recent exchanges" in run.ok("tiers", "retrieve", "hiking", "--agent", "g", "--user", "alice").stdout


def test_consolidate_later_and_errors(run: Runner, one_line_error: Callable[..., str]) -> None:
    for turn in TURNS:
        run.ok("tiers", "add", turn, "--agent", "w", "--user", "u", "--no-consolidate")
    assert len(run.json("tiers", "show", "--agent", "w", "--user", "u")["stm"]) == 5
    assert run.json("tiers", "consolidate")["pages_moved"] == 0  # 5 pages fit the default queue of 7
    one_line_error(run("tiers", "configure", "--agent", "w", "--set", "stm_capacity=0"), 1, "stm_capacity")
    one_line_error(run("tiers", "configure", "--agent", "w", "--set", "nope=1"), 1, "unknown tier setting")
    one_line_error(run("tiers", "configure"), 2, "--agent")
    one_line_error(run("tiers", "add", " ", "--agent", "w", "--user", "u"), 1, "non-empty")
    assert run.json("tiers", "forget", "--user", "nobody")["deleted"] == 0
    assert run.json("tiers", "configure", "--agent", "w", "--set", "stm_capacity=3")["stm_capacity"] == 3
    report = run.json("tiers", "consolidate", "--agent", "w")
    assert report["pages_moved"] == 2 and report["segments_created"] + report["segments_joined"] == 2


def test_system_memory_list_withdraw_and_namespace_policy(run: Runner) -> None:
    policy = run.json("tiers", "configure", "--namespace-wide", "--set", "system_promotion=general")
    assert policy["system_promotion"] == "general"
    run.ok("tiers", "configure", "--agent", "h", "--set", "stm_capacity=1", "--set", "heat_threshold=1",
           "--set", "system_importance_threshold=0.3")  # fmt: skip
    for text in ["Kubernetes stores cluster state in etcd."] * 3 + ["Sam is allergic to cats."] * 3 + ["ok"]:
        run.ok("tiers", "add", text, "noted", "--agent", "h", "--user", "alice")
    listed = run.json("tiers", "system", "list")
    assert listed and all("vector" not in e for e in listed)
    assert not any("Sam" in e["content"] for e in listed)  # a person's fact is not shared
    assert "Kubernetes" in run.ok("tiers", "system", "list").stdout
    ids = [e["id"] for e in listed]
    assert run.json("tiers", "system", "withdraw", *ids) == {"deleted": len(ids)}
    assert run.json("tiers", "system", "list") == []
    assert "withdrew 0" in run.ok("tiers", "system", "withdraw", "nope").stdout
    bad = run("tiers", "configure", "--namespace-wide", "--agent", "h", "--set", "stm_capacity=2")
    assert bad.exit_code == 2
