"""`memory context`: the compiled prompt and the section table; --json gives the trace."""

from __future__ import annotations

from cli_helpers import Runner, assert_one_line_error

from memory.context import counter_for


def test_context_prints_prompt_and_table(run: Runner) -> None:
    run.ok("remember", "Alice moved to Berlin in 2024", "--user", "alice")
    run.ok("remember", "Alice's PIN is 4711", "--user", "alice", "--sensitivity", "secret")
    run.ok("remember", "Bob lives in Paris", "--user", "bob")
    result = run.ok("context", "where does alice live?", "--user", "alice", "--budget", "2000", "-s", "Be brief.")
    out = result.stdout
    assert out.startswith("--- system ---\nBe brief.\n\n## What you know\n- [")
    assert "Alice moved to Berlin in 2024" in out and "Paris" not in out and "4711" not in out
    assert "--- user ---\nwhere does alice live?" in out
    for column in ("section", "status", "tokens", "why"):
        assert column in out
    assert "tokens:" in result.stderr and "o200k_base (exact)" in result.stderr


def test_context_json_trace_and_tight_budget(run: Runner) -> None:
    for i in range(30):
        run.ok("remember", f"Alice fact number {i}: she likes item {i} a lot", "--user", "alice")
    doc = run.json("context", "what does alice like?", "--user", "alice", "--budget", "120", "--limit", "30")
    trace = doc["trace"]
    assert trace["tokens"]["total"] <= 120 == trace["budget_usable"]
    statuses = {s["status"] for s in trace["sections"]}
    assert "dropped" in statuses and "kept" in statuses
    dropped = [s for s in trace["sections"] if s["status"] == "dropped"]
    assert all(s["reason"] for s in dropped)
    assert trace["compression_ratio"] < 1
    system = doc["openai"]["messages"][0]["content"]
    assert doc["anthropic"]["system"] == system
    assert counter_for(None).count(system) == trace["tokens"]["system"]


def test_context_bad_budget_is_a_usage_error(run: Runner) -> None:
    result = run("context", "q", "--budget", "5")
    assert_one_line_error(result, 2, "--budget")
    result = run("context", "q", "--budget", "16", "--reserve", "0.9")
    assert_one_line_error(result, 1, "raise the budget")
