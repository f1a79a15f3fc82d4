"""Issue 16's update scenarios, as data, on every backend: new values supersede, negations and corrections close.

Each scenario (tests/extraction/data/update_scenarios.json) is a conversation
appended with ``extract=True`` (the offline extractor), then checked: every
``current`` string appears in a live fact, every ``closed`` string appears in a
closed fact (``valid_to`` set, still in history) and in no live fact, and the
``user_info`` profile built by ``end_conversation`` holds ``profile_has`` and
none of ``profile_lacks``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memory import Memory

_DATA = json.loads((Path(__file__).parent.parent / "extraction" / "data" / "update_scenarios.json").read_text())
SCENARIOS: list[dict[str, Any]] = _DATA["scenarios"]


def test_there_are_enough_scenarios_of_every_kind() -> None:
    kinds = {s["category"] for s in SCENARIOS}
    assert len(SCENARIOS) >= 60 and len({s["name"] for s in SCENARIOS}) == len(SCENARIOS)
    assert kinds == {"moves", "jobs", "relationships", "preferences", "negations", "corrections", "multi-speaker"}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_update_scenario(make_memory: Callable[..., Memory], clock: Any, scenario: dict[str, Any]) -> None:
    mem = make_memory()
    for speaker, text in scenario["turns"]:
        fields = {"role": "assistant"} if speaker == "assistant" else {"role": "user", "speaker": speaker}
        mem.messages.append("chat", text, user="maya", agent="bot", extract=True, **fields)
        clock.advance(minutes=5)
    items = mem.list(user="maya", kinds=["fact"], include_invalid=True, limit=200).items
    live = [i.content for i in items if i.valid_to is None]
    closed = [i.content for i in items if i.valid_to is not None]
    for expected in scenario["current"]:
        assert any(expected.lower() in fact.lower() for fact in live), (expected, live, closed)
    for expected in scenario["closed"]:
        assert any(expected.lower() in fact.lower() for fact in closed), (expected, live, closed)
        assert not any(expected.lower() in fact.lower() for fact in live), (expected, live, closed)
    recalled = [h.item.content for h in mem.recall(" ".join(t for _, t in scenario["turns"]), user="maya")]
    for expected in scenario["closed"]:
        assert not any(expected.lower() in r.lower() for r in recalled), (expected, recalled)
    if scenario.get("profile_has") or scenario.get("profile_lacks"):
        clock.advance(minutes=1)
        mem.end_conversation("chat", user="maya", agent="bot")
        profile = mem.blocks.get("user_info", user="maya", agent="bot").value
        for expected in scenario.get("profile_has", []):
            assert expected.lower() in profile.lower(), (expected, profile)
        for unexpected in scenario.get("profile_lacks", []):
            assert unexpected.lower() not in profile.lower(), (unexpected, profile)
