"""The Maya chat of issue 16 (tests/extraction/data/maya_chat.json) end to end, offline, on a SQLite file.

What a user should find after the 20 turns: facts about Maya's city, employer,
manager, flat, exam and cat, in the third person; Porto supersedes Lisbon;
"who is Maya's manager?" finds the manager turn first; the graph lists the
facts about Maya with sensible types and no fragment entities; user_info is a
current, deduplicated profile.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory import Memory
from memory.embedders.hashing import HashingEmbedder

CHAT = json.loads((Path(__file__).parent / "data" / "maya_chat.json").read_text(encoding="utf-8"))


@pytest.fixture
def maya(tmp_path: Path, clock: Any) -> Any:
    clock.now = datetime.fromisoformat(CHAT["start"])
    mem = Memory(f"sqlite:///{tmp_path / 'maya.db'}", embedder=HashingEmbedder(), clock=clock)
    said = []
    for turn in CHAT["turns"]:
        fields = {"speaker": CHAT["speaker"]} if turn["role"] == "user" else {}
        said.append(
            mem.messages.append(
                "chat", turn["content"], role=turn["role"], user=CHAT["user"], agent="assistant", extract=True, **fields
            )
        )
        clock.advance(minutes=1)
    yield mem, said
    mem.close()


def _live(mem: Memory) -> list[str]:
    return [i.content for i in mem.list(user="maya", kinds=["fact"], limit=100).items]


def test_facts_are_about_maya_in_the_third_person(maya: Any) -> None:
    mem, said = maya
    facts = _live(mem)
    for expected in ("Porto", "Feedzai", "Rui Costa", "Alcântara", "A2 exam", "cat named Miso", "penicillin"):
        assert any(expected in f for f in facts), (expected, facts)
    assert all(f.startswith("Maya") for f in facts), facts
    assert not any(word in f.split() for f in facts for word in ("I", "I'm", "my", "you")), facts
    joined = " ".join(facts)
    assert "Hi" not in joined and "team is nice" not in joined and "Thanks" not in joined  # no chit-chat facts
    items = mem.list(user="maya", kinds=["fact"], limit=100).items
    by_message = {m.id: m for m in said}
    assert all(len(i.source_ids) == 1 and i.source_ids[0] in by_message for i in items)
    porto = next(i for i in items if "Porto" in i.content)
    assert porto.content == "Maya moved to Porto."  # "last week" left the text...
    assert porto.metadata["fact_when"] == "last week"  # ...and is resolved against the message's time
    said_at = by_message[porto.source_ids[0]].created_at
    assert porto.valid_from is not None and timedelta(days=6) <= said_at - porto.valid_from <= timedelta(days=14)


def test_porto_supersedes_lisbon(maya: Any) -> None:
    mem, _ = maya
    everything = mem.list(user="maya", kinds=["fact"], include_invalid=True, limit=100).items
    lisbon = [i for i in everything if "Lisbon" in i.content]
    assert lisbon and all(i.valid_to is not None for i in lisbon)  # closed, kept in history
    assert not any("Lisbon" in f for f in _live(mem))
    assert [e.op for e in mem.history(lisbon[0].id)][-1] == "supersede"
    assert not any("Lisbon" in h.item.content for h in mem.recall("where does Maya live?", user="maya"))


def test_the_manager_question_finds_the_manager_turn_first(maya: Any) -> None:
    mem, said = maya
    manager_turn = next(m for m in said if "manager" in m.content)
    hits = mem.recall("who is Maya's manager?", user="maya", limit=3)
    assert hits and hits[0].item.source_ids == (manager_turn.id,), [h.item.content for h in hits]


def test_graph_facts_about_maya(maya: Any) -> None:
    mem, _ = maya
    relations = mem.graph.facts_about("Maya")
    predicates = {(r.predicate, mem.graph.store.get_entities(r.namespace, [r.object_id])[0].name) for r in relations}
    for expected in [("work at", "Feedzai"), ("have manager", "Rui Costa"), ("move to", "Porto"), ("have cat", "Miso")]:
        assert expected in predicates, (expected, predicates)
    assert ("move to", "Lisbon") not in predicates  # invalidated with its fact
    types = {e.name: e.type for e in mem.graph.entities()}
    assert types["Feedzai"] == "organisation" and types["Lisbon"] == "place" and types["Porto"] == "place"
    assert types["Rui Costa"] == "person" and types["Maya"] == "person"
    assert not {"Actually", "Hi", "Thanks", "1800", "I"} & set(types)
    assert "Maya Chen" in mem.graph.entity("Maya").aliases  # "Hi, I'm Maya Chen." names her, it is no fact
    assert mem.graph.entity("Maya Chen").name == "Maya"


def test_user_info_is_a_current_profile(maya: Any) -> None:
    mem, _ = maya
    mem.end_conversation("chat", user="maya", agent="assistant")
    info = mem.blocks.get("user_info", user="maya", agent="assistant").value
    assert "Lives in: Porto" in info and "Lisbon" not in info
    assert "Works at: Feedzai" in info and "Manager: Rui Costa" in info
    assert "I'm" not in info and "Hi," not in info  # facts, not verbatim sentences
    lines = [line for line in info.splitlines() if line.strip()]
    assert len(lines) == len(set(lines))
    goals = mem.blocks.get("goals_and_status", user="maya", agent="assistant").value
    assert "A2 exam" in goals
