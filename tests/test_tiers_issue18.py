"""Issue 18: pages flow in, segments form by topic, system memory carries no one's personal facts."""

from __future__ import annotations

from typing import Any

import pytest

from memory import Memory
from memory.embedders.hashing import HashingEmbedder
from memory.errors import InvalidInputError
from memory.tiers.formulas import heat
from memory.tiers.privacy import personal_reason

# fmt: off
PERSONAL = [
    "Sam is allergic to cats.",                                # the case (the user's partner)
    "Sam was diagnosed with diabetes last spring.",             # health
    "Maria takes insulin twice a day.",
    "Tom has a migraine every Monday.",
    "Priya is pregnant with her second child.",                 # family
    "Jonas and his wife are getting divorced.",
    "Lena's daughter starts school in September.",
    "Omar's brother lives with him.",
    "Sam earns 85k a year at the bank.",                        # finances
    "Maria owes her landlord two months of rent.",
    "Tom has a mortgage of 300k.",
    "Priya's credit card number ends in 4421.",
    "Jonas lives in Hamburg.",                                   # location
    "Lena moved to 14 Baker Street last week.",
    "Omar is staying at the Hilton until Friday.",
    "Sam's phone number is 555-0133.",                           # identity / contact
    "Maria's birthday is on 3 May.",
    "Tom was arrested in 2019.",
    "I am allergic to peanuts.",                                 # first person
    "My salary went up this year.",
    "We are moving to Lisbon in June.",
    "Alice hates her commute.",                                  # the user herself
    "Sam likes jazz on Sunday evenings.",                        # a named person's preference
]
GENERAL = [
    "Kubernetes stores cluster state in etcd.",
    "The office VPN requires multi-factor authentication.",
    "PostgreSQL supports JSONB columns.",
    "Python 3.12 removed the distutils module.",
]
# fmt: on


@pytest.mark.parametrize("fact", PERSONAL)
def test_personal_facts_are_recognised(fact: str) -> None:
    assert personal_reason(fact, user="Alice", people={"Sam"}) is not None


@pytest.mark.parametrize("fact", GENERAL)
def test_general_knowledge_is_not_personal(fact: str) -> None:
    assert personal_reason(fact, user="Alice", people={"Sam"}) is None


def _hot(mem: Memory, agent: str) -> None:
    mem.tiers.configure(agent=agent, stm_capacity=1, heat_threshold=1.0, system_importance_threshold=0.3,
                        fscore_threshold=-1.0)  # fmt: skip


def _promoted_personal(mem: Memory) -> list[str]:
    texts = "\n".join(e.content for e in mem.tiers.system())
    return [fact for fact in PERSONAL if fact.rstrip(".") in texts]


def test_the_open_policy_would_share_them_so_the_filter_is_what_stops_them(tmp_db: str, clock: Any) -> None:
    with Memory(tmp_db, embedder=HashingEmbedder(), clock=clock) as mem:
        _hot(mem, "helper")
        mem.tiers.configure(namespace_wide=True, system_promotion="any")
        for fact in PERSONAL:
            for _ in range(3):
                mem.tiers.add_page(fact, "Noted.", agent="helper", user="alice")
                clock.advance(minutes=1)
        mem.tiers.consolidate()
        assert len(_promoted_personal(mem)) >= 10


def test_nothing_personal_reaches_another_agent(tmp_db: str, clock: Any) -> None:
    with Memory(tmp_db, embedder=HashingEmbedder(), clock=clock) as mem:
        _hot(mem, "helper")
        # every fact said three times (the heuristic's importance = pages mentioning the entity / 3)
        for fact in PERSONAL + GENERAL:
            for _ in range(3):
                mem.tiers.add_page(fact, "Noted.", agent="helper", user="alice")
                clock.advance(minutes=1)
        mem.tiers.consolidate()
        shared = mem.tiers.system()
        texts = "\n".join(e.content for e in shared)
        assert texts  # general knowledge still flows (the rule is not "share nothing")
        for fact in PERSONAL:
            assert fact.rstrip(".") not in texts, fact
        for word in ("Sam", "Maria", "Tom", "Priya", "Jonas", "Lena", "Omar", "alice", "Alice"):
            assert word not in texts
        # another agent of the namespace sees system memory: nothing personal there either
        other = mem.tiers.retrieve("What do you know about Sam or allergies or rent?", agent="desk", user="bob")
        seen = other.to_text()
        assert all(fact.rstrip(".") not in seen for fact in PERSONAL) and "allergic" not in seen


def test_private_pages_never_feed_system_memory_even_with_the_open_policy(tmp_db: str, clock: Any) -> None:
    with Memory(tmp_db, embedder=HashingEmbedder(), clock=clock) as mem:
        _hot(mem, "helper")
        mem.tiers.configure(namespace_wide=True, system_promotion="any")
        for _ in range(3):
            mem.tiers.add_page("Sam is allergic to cats.", "Noted.", agent="helper", user="alice")
            mem.tiers.add_page("Kira works at the Oslo office.", "ok", agent="helper", user="alice",
                               sensitivity="private")  # fmt: skip
            clock.advance(minutes=1)
        mem.tiers.consolidate()
        texts = [e.content for e in mem.tiers.system()]
        assert any("Sam is allergic to cats" in t for t in texts)  # the explicit policy allows it
        assert not any("Kira" in t for t in texts)  # a private page, never


def test_promoted_entries_can_be_listed_and_withdrawn(tmp_db: str, clock: Any) -> None:
    with Memory(tmp_db, embedder=HashingEmbedder(), clock=clock) as mem:
        _hot(mem, "helper")
        for _ in range(3):
            mem.tiers.add_page("Kubernetes stores cluster state in etcd.", "Right.", agent="helper", user="alice")
            clock.advance(minutes=1)
        mem.tiers.consolidate()
        entries = mem.tiers.system()
        assert entries and entries[0].source_agent == "helper"
        assert mem.tiers.system(source_agent="nobody") == []
        assert mem.tiers.withdraw([e.id for e in entries]) == len(entries)
        assert mem.tiers.system() == [] and mem.tiers.withdraw("missing") == 0
        with pytest.raises(InvalidInputError):
            mem.tiers.withdraw([])


def test_pages_from_messages_when_auto_pages_is_on(tmp_db: str, clock: Any) -> None:
    with Memory(tmp_db, embedder=HashingEmbedder(), clock=clock) as mem:
        mem.tiers.configure(agent="guide", auto_pages=True)
        mem.messages.append("t1", "I moved to Berlin", role="user", user="alice")
        mem.messages.append("t1", "Welcome!", role="assistant", user="alice", agent="guide")
        mem.messages.append("t2", "My PIN is 1234", role="user", user="alice", sensitivity="secret")
        mem.messages.append("t2", "Stored.", role="assistant", user="alice", agent="guide")
        mem.messages.append("t3", "hello", role="user", user="bob")
        mem.messages.append("t3", "hi", role="assistant", user="bob", agent="other")  # tiers off for "other"
        mem.messages.append_many(
            [
                {"thread": "t4", "content": "one", "role": "user", "user": "carol"},
                {"thread": "t4", "content": "two", "role": "assistant", "agent": "guide"},
            ]
        )
        pages = mem.tiers.show(agent="guide", user="alice").stm
        assert [(p.query, p.response, p.thread) for p in pages] == [
            ("I moved to Berlin", "Welcome!", "t1"), ("My PIN is 1234", "Stored.", "t2")]  # fmt: skip
        assert pages[1].sensitivity == "secret" and len(pages[0].message_ids) == 2
        assert mem.tiers.show(agent="other", user="bob").stm == ()
        assert [p.query for p in mem.tiers.show(agent="guide", user="carol").stm] == ["one"]
        # a secret page stays out of a normal retrieval
        assert "1234" not in mem.tiers.retrieve("PIN", agent="guide", user="alice").to_text()


def test_segments_form_by_topic_and_summaries_stay_current(tmp_db: str, clock: Any) -> None:
    with Memory(tmp_db, embedder=HashingEmbedder(), clock=clock) as mem:
        mem.tiers.configure(agent="g", stm_capacity=1)
        topics = [("My sourdough starter smells sour; how often should I feed the sourdough starter?", "Daily."),
                  ("Should the sourdough starter live in the fridge between bakes?", "Yes, feed it weekly."),
                  ("My sourdough loaf came out flat; is my sourdough starter too weak?", "Feed it twice first."),
                  ("Which running shoes suit a marathon on asphalt?", "Cushioned road shoes."),
                  ("How many marathon training runs per week with running shoes?", "Four runs."),
                  ("Is a long marathon training run on Sunday good for running?", "Yes.")]  # fmt: skip
        for query, response in topics + [("bye", "bye")]:
            mem.tiers.add_page(query, response, agent="g", user="u")
            clock.advance(minutes=1)
        segments = [s for s, _ in mem.tiers.show(agent="g", user="u").segments]
        assert len(segments) == 2 and [len(s.pages) for s in segments] == [3, 3]
        bread, running = segments
        assert "sourdough" in bread.keywords and "marathon" in running.keywords
        assert "flat" in bread.summary or "loaf" in bread.summary  # the latest page is in the summary


def fscore_keywords_only(segment_vector: Any, segment_keywords: Any, page_vector: Any, page_keywords: Any) -> float:
    """A replacement Fscore: keyword overlap only."""
    return float(len(set(segment_keywords) & set(page_keywords)))


def heat_visits_only(visits: int, interactions: int, recency: float, *, alpha: float, beta: float,
                     gamma: float) -> float:  # fmt: skip
    """A replacement heat: visits only."""
    return float(visits) * 100.0


def test_scoring_functions_are_replaceable(tmp_db: str, clock: Any) -> None:
    with Memory(tmp_db, embedder=HashingEmbedder(), clock=clock) as mem:
        config = mem.tiers.configure(agent="g", stm_capacity=1, fscore_function=fscore_keywords_only,
                                     heat_function=f"{__name__}:heat_visits_only")  # fmt: skip
        assert config.fscore_function == f"{__name__}:fscore_keywords_only"
        for query in ("apples and pears", "oranges and lemons", "apples again"):
            mem.tiers.add_page(query, "", agent="g", user="u")
        snap = mem.tiers.show(agent="g", user="u")
        assert len(snap.segments) == 2  # "oranges" shares no keyword, so it started its own segment
        assert all(h == 0.0 for _, h in snap.segments)  # heat by the replacement: no visits yet
        mem.tiers.retrieve("apples", agent="g", user="u")
        assert max(h for _, h in mem.tiers.show(agent="g", user="u").segments) == 100.0
        # the seed's formulas stay the defaults
        assert mem.tiers.config("other").fscore_function is None and heat(1, 2, 0.5, alpha=1, beta=1, gamma=1) == 3.5
        for bad in ("no_colon", "memory.tiers:nothing_here", "os:sep", lambda *a: 0.0):
            with pytest.raises(InvalidInputError):
                mem.tiers.configure(agent="g", fscore_function=bad)
        assert mem.tiers.config("g").fscore_function == f"{__name__}:fscore_keywords_only"  # nothing changed


def test_persona_entries_are_ranked_by_relevance(tmp_db: str, clock: Any) -> None:
    with Memory(tmp_db, embedder=HashingEmbedder(), clock=clock) as mem:
        mem.tiers.configure(agent="g", stm_capacity=1, heat_threshold=1.0, lpm_top_k=2)
        said = ["I love hiking in the Alps.", "I play the cello in an orchestra.", "I like green tea.",
                "I enjoy chess puzzles.", "I prefer trains to planes."]  # fmt: skip
        for text in said + ["ok"]:
            mem.tiers.add_page(text, "nice", agent="g", user="alice")
            clock.advance(minutes=1)
        mem.tiers.consolidate()
        full = mem.tiers.show(agent="g", user="alice").user_persona
        assert full is not None and len(full.traits) + len(full.knowledge) > 2
        got = mem.tiers.retrieve("Which instrument does she play, the cello?", agent="g", user="alice")
        assert got.user_persona is not None
        entries = got.user_persona.traits + got.user_persona.knowledge
        assert len(entries) == 2 and any("cello" in e for e in entries)
        assert "(Recorded: up to" in got.to_text()
