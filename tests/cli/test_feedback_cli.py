"""memory feedback|prompts|reflect end to end on a SQLite file (and the reflect worker job)."""

from __future__ import annotations

import json
from collections.abc import Callable

from cli_helpers import Runner


def _conversation(run: Runner, thread: str) -> None:
    run.ok("messages", "append", thread, "How do I export my data?", "--user", "alice")
    run.ok("messages", "append", thread, "Use the menu.", "--role", "assistant")
    run.ok("messages", "append", thread, "No, I meant the API export", "--user", "alice")


def test_feedback_prompts_reflect_loop(run: Runner) -> None:
    assert run.json("prompts", "add", "support", "You are a support agent.")["status"] == "active"
    _conversation(run, "t1")
    end = run.json("end-conversation", "t1")
    # one correction and nothing else: the reward is low, never "good" (issue 18)
    assert end["reward"] == 0.0 and end["record"]["corrections"] == 1 and end["record"]["summary"]
    rec = run.json("feedback", "t1", "--rating", "2", "--feedback", "too vague", "--example", "Give the exact command",
                   "--failed", "--prompt", "support")  # fmt: skip
    assert rec["prompt_name"] == "support" and rec["prompt_version"] == 1 and rec["task_completed"] is False
    assert 0 < rec["reward"] < 0.5 and rec["reward_components"]["method"] == "rating+implicit"
    assert "reward 0." in run.ok("feedback", "t1", "--completed").stdout
    listed = run.json("feedback", "list", "--below", "0.5")
    assert [r["thread"] for r in listed] == ["t1"]
    assert run.json("feedback", "show", "t1")["feedback"] == "too vague"
    assert run.json("feedback", "summary")["records"] == 1

    suggestion = run.json("prompts", "suggest", "support")
    assert suggestion["path"] == "rules" and suggestion["version"]["status"] == "candidate"
    assert "- Avoid: too vague" in suggestion["version"]["text"]
    stats = run.json("prompts", "stats", "support")
    assert [(s["version"], s["count"], s["status"]) for s in stats] == [(1, 1, "active"), (2, 0, "candidate")]
    assert "Learned rules" in run.ok("prompts", "show", "support", "--version", "2").stdout
    assert run.json("prompts", "promote", "support", "--auto")["promoted"] is False
    assert run.json("prompts", "promote", "support", "2")["status"] == "active"
    assert [p["version"] for p in run.json("prompts", "list")] == [2]
    assert [v["status"] for v in run.json("prompts", "show", "support", "--all")] == ["retired", "active"]

    # one bad conversation is not enough support for a lesson; three consistent ones are
    assert run.json("reflect", "--dry-run")["lessons"] == []
    for thread in ("t3", "t4"):
        run.ok("feedback", thread, "--rating", "1", "--feedback", "too vague", "--prompt", "support")
    dry = run.json("reflect", "--dry-run")
    assert dry["examined"] == 3 and dry["written"] == 0 and "avoid: too vague" in dry["lessons"][0]
    assert "(from 3 conversations: t1, t3, t4)" in dry["lessons"][0]
    done = run.json("reflect")
    assert done["written"] == 1 and run.json("reflect")["examined"] == 0
    lessons = run.json("list", "--kind", "procedural")
    items = lessons["items"] if isinstance(lessons, dict) else lessons
    assert len(items) == 1 and items[0]["kind"] == "procedural"
    assert "wrote 0 lesson(s)" in run.ok("reflect").stdout
    used = run.json("prompts", "use", "t2", "support", "--user", "bob")
    assert used["version"] == 2 and used["text"].startswith("You are a support agent.")
    assert run.json("feedback", "forget", "t2") == {"thread": "t2", "deleted": 1}
    assert sorted(r["thread"] for r in run.json("feedback", "list")) == ["t1", "t3", "t4"]


def test_errors_are_one_line(run: Runner, one_line_error: Callable[..., str]) -> None:
    one_line_error(run("feedback", "t1", "--rating", "9"), 1, "star rating")
    one_line_error(run("feedback", "t1", "--reward", "nan"), 1, "reward")
    one_line_error(run("prompts", "show", "missing"), 1, "missing")
    one_line_error(run("prompts", "promote", "x"), 2, "VERSION or --auto")
    run.ok("prompts", "add", "p", "text")
    one_line_error(run("prompts", "promote", "p", "7"), 1, "no version 7")
    one_line_error(run("prompts", "suggest", "p"), 1, "nothing to learn")
    assert run.json("feedback", "list") == []


def test_worker_runs_reflect(run: Runner) -> None:
    for thread in ("t1", "t2", "t3"):
        run.ok("feedback", thread, "--rating", "1", "--feedback", "too slow")
    out = run.ok("worker", "--jobs", "reflect", "--max-passes", "1", "--interval", "0").stdout
    first = json.loads(out.strip().splitlines()[0])
    assert first["reflect"]["written"] == 1
