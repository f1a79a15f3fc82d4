"""MemoryAgent with tiers on: every answered message becomes a page, and the next context reads the tiers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from chat_server import ChatServer, answer

from memory import Memory
from memory.agent import ChatClient, InProcessSink, MemoryAgent
from memory.embedders.hashing import HashingEmbedder
from memory.errors import InvalidInputError


@pytest.fixture
def mem(tmp_db: str) -> Iterator[Memory]:
    m = Memory(tmp_db, embedder=HashingEmbedder())
    yield m
    m.close()


def test_pages_flow_in_by_themselves(mem: Memory) -> None:
    script = [answer("Welcome to Berlin!"), answer("Try the Tiergarten."), answer("You moved to Berlin.")]
    with ChatServer(script).running() as server:
        agent = MemoryAgent(mem, ChatClient(server.url, "llama3.2"), user="alice", agent="guide", thread="t1",
                            tiers=True)  # fmt: skip
        agent.run("I just moved to Berlin")
        agent.run("Where can I go running?")
        agent.run("Where did I move?")
    snap = mem.tiers.show(agent="guide", user="alice")
    assert [(p.query, p.response) for p in snap.stm] == [
        ("I just moved to Berlin", "Welcome to Berlin!"),
        ("Where can I go running?", "Try the Tiergarten."),
        ("Where did I move?", "You moved to Berlin."),
    ]
    thread = mem.messages.get_thread("t1")
    assert snap.stm[0].message_ids == (thread[0].id, thread[1].id) and snap.stm[0].thread == "t1"
    # the third call's context held the tiers: the earlier pages with their time and meta-chain
    system = server.requests[2]["messages"][0]["content"]
    assert "User: I just moved to Berlin" in system and "Conversation chain overview:" in system


def test_tiers_need_a_scope_and_a_message_log(mem: Memory) -> None:
    client = ChatClient("http://127.0.0.1:9", "m")
    with pytest.raises(InvalidInputError, match="agent= and user="):
        MemoryAgent(mem, client, user="alice", tiers=True)
    with pytest.raises(InvalidInputError, match="message log"):
        MemoryAgent(mem, client, user="alice", agent="guide", tiers=True, sink=InProcessSink())
    MemoryAgent(mem, client, user="alice", agent="guide")  # tiers stay off unless asked
    assert mem.tiers.config("guide").auto_pages is False
