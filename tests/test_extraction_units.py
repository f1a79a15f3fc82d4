"""Heuristic extraction and update decisions (pure functions)."""

from __future__ import annotations

import pytest

from memory.errors import InvalidInputError, LLMError
from memory.extraction.decide import Neighbour, decide_heuristic
from memory.extraction.heuristic import entities, extract_heuristic, keywords, normalise_name, relations
from memory.extraction.service import clean_extraction, decide
from memory.llms.base import ChatRequest
from memory.llms.heuristic import HeuristicLLM
from memory.llms.prompts import PROMPT_VERSION, render
from memory.llms.schemas import DecisionOut, EntityOut, ExtractionOut, RelationOut


def test_entities_capitalised_spans_dates_and_known_names() -> None:
    found = {e.name: e.type for e in entities("Yesterday Alice met Dr Watson in London on 7 May 2023 at Acme Corp.",
                                              known=["the cheese shop"])}  # fmt: skip
    assert found["Alice"] == "person" and found["Watson"] == "person" and found["London"] == "place"
    assert found["7 May 2023"] == "date" and found["Acme Corp"] == "organisation"
    assert "Yesterday" not in found and "May" not in found
    assert "the cheese shop" not in found  # not in the text
    assert {e.name for e in entities("we went to the cheese shop", known=["Cheese Shop"])} == {"Cheese Shop"}


def test_relations_svo_and_my_pattern() -> None:
    rels = [(r.subject, r.predicate, r.object) for r in relations(
        "I moved to Lisbon last year. My favourite colour is blue. Melanie is married to John.", speaker="sam"
    )]  # fmt: skip
    assert rels == [("sam", "moved to", "Lisbon"), ("sam", "favourite colour", "blue"),
                    ("Melanie", "is married to", "John")]  # fmt: skip
    assert relations("what a day") == []


def test_keywords_and_facts() -> None:
    out = extract_heuristic("Paris is lovely. Paris! Spring in Paris, ok")
    assert out.keywords[0] == "paris" and out.facts == ["Paris is lovely.", "Spring in Paris, ok"]
    assert keywords("the and of") == []


def test_normalise_name() -> None:
    assert normalise_name("  The  Beatles. ") == "beatles" == normalise_name("beatles")


@pytest.mark.parametrize(
    ("fact", "old", "action"),
    [
        ("Alice lives in Berlin", "Alice lives in Paris", "SUPERSEDE"),
        ("My favourite colour is green", "My favourite colour is blue", "SUPERSEDE"),
        ("Alice no longer lives in Paris", "Alice lives in Paris", "DELETE"),
        ("Alice lives in Paris.", "alice lives in paris", "NOOP"),
        ("Alice lives in Paris with two cats", "Alice lives in Paris", "UPDATE"),
        ("Alice likes coffee", "Alice likes tea", "ADD"),  # 'likes' holds many values
        ("Bob lives in Rome", "Alice lives in Paris", "ADD"),
    ],
)
def test_heuristic_decisions(fact: str, old: str, action: str) -> None:
    out = decide_heuristic(fact, [Neighbour("n1", old)])
    assert out.action == action, out.reason
    assert (out.target == 0) == (action != "ADD")


def test_near_duplicate_by_cosine_is_noop() -> None:
    assert decide_heuristic("x y z", [Neighbour("n", "a b c", similarity=0.99)]).action == "NOOP"


def test_decide_service_maps_target_to_ids() -> None:
    decision = decide("Alice lives in Berlin", [Neighbour("id-9", "Alice lives in Paris")])
    assert (decision.action, decision.target_id) == ("SUPERSEDE", "id-9")
    assert decide("new thing here", []).action == "ADD"


def test_clean_extraction_dedups_and_drops_empty() -> None:
    out = clean_extraction(
        ExtractionOut(
            facts=[" a fact ", "a fact", ""],
            keywords=["Berlin", "berlin "],
            entities=[
                EntityOut(name="Alice", type="Person"),
                EntityOut(name=" alice", type="thing"),
                EntityOut(name="..."),
            ],
            relations=[
                RelationOut(subject="A", predicate="Likes  ", object="B"),
                RelationOut(subject="a", predicate="likes", object="b"),
                RelationOut(subject="!", predicate="x", object="y"),
            ],
        )
    )
    assert out.facts == ["a fact"] and out.keywords == ["berlin"]
    assert [(e.name, e.type) for e in out.entities] == [("Alice", "person")]
    assert [(r.subject, r.predicate, r.object) for r in out.relations] == [("A", "likes", "B")]


def test_heuristic_provider_contract() -> None:
    llm = HeuristicLLM()
    messages = tuple(render("extract", {"text": "Alice moved to Berlin."}))
    result = llm.chat(
        ChatRequest("extract", {"text": "Alice moved to Berlin."}, messages, ExtractionOut, PROMPT_VERSION)
    )
    assert result.output.relations[0].object == "Berlin" and result.usage.estimated and result.model == "heuristic:v1"
    with pytest.raises(LLMError, match="cannot answer task"):
        llm.chat(ChatRequest("summarise", {}, (), DecisionOut))
    with pytest.raises(InvalidInputError, match="unknown LLM task"):
        render("summarise", {})
    assert "NEW: x" in render("decide", {"fact": "x", "neighbours": [{"content": "y"}]})[1].content


def test_first_person_memories_supersede_through_the_slots() -> None:
    from memory import Memory
    from memory.embedders.hashing import HashingEmbedder

    with Memory("memory://", embedder=HashingEmbedder()) as mem:
        mem.remember("I live in Lisbon.", user="maya", extract=True)
        mem.remember("I live in Porto now.", user="maya", extract=True)
        items = mem.list(user="maya", include_invalid=True).items
        assert {i.content: i.valid_to is None for i in items} == {
            "I live in Porto now.": True,
            "I live in Lisbon.": False,
        }
