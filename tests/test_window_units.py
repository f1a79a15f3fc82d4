"""Pure parts of the index key: time words, window membership and blending, field weights, presets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest
from pydantic import ValidationError

from memory.bench.locomo import session_time
from memory.errors import InvalidInputError
from memory.records import build_item
from memory.retrieval.config import PRESETS, RetrievalConfig, preset
from memory.retrieval.window import field_weights, time_words, window_neighbours, window_text, window_vector


def test_time_words_are_utc_day_month_year() -> None:
    assert time_words(datetime(2023, 5, 8, 13, 56, tzinfo=UTC)) == "8 May 2023"
    # 23:30 on 31 Dec at UTC-2 is already 1 January in UTC
    assert time_words(datetime(2023, 12, 31, 23, 30, tzinfo=timezone(timedelta(hours=-2)))) == "1 January 2024"


def test_session_stamps_parse() -> None:
    assert session_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert session_time("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)
    assert session_time("sometime") is None and session_time(None) is None
    assert session_time("1:56 pm on 31 February, 2023") is None


def _items(*levels: str) -> list:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return [build_item(content=f"turn {i}", namespace="n", now=now, sensitivity=s) for i, s in enumerate(levels)]


def test_window_neighbours_respect_size_edges_and_sensitivity() -> None:
    seq = _items("normal", "normal", "secret", "normal", "private", "normal")
    assert [i.content for i in window_neighbours(seq, 0)] == ["turn 1"]  # turn 2 is secret
    assert [i.content for i in window_neighbours(seq, 3)] == ["turn 1", "turn 5"]
    assert [i.content for i in window_neighbours(seq, 4)] == ["turn 3", "turn 5"]  # private sees normal
    assert [i.content for i in window_neighbours(seq, 2)] == ["turn 0", "turn 1", "turn 3", "turn 4"]
    assert [i.content for i in window_neighbours(seq, 5, size=1)] == []  # private neighbour left out
    assert window_text(seq[0].model_copy(update={"context": "about cats"}), seq[1:3]) == "about cats\nturn 1\nturn 2"


def test_window_vector_blends_and_stays_unit() -> None:
    own = np.array([1.0, 0.0], dtype=np.float32)
    np.testing.assert_allclose(window_vector(own, []), own)
    other = np.array([0.0, 1.0], dtype=np.float32)
    blended = window_vector(own, [other])
    assert np.linalg.norm(blended) == pytest.approx(1.0, abs=1e-6)
    expected = own + (own + other) / np.sqrt(2)
    np.testing.assert_allclose(blended, expected / np.linalg.norm(expected), atol=1e-6)
    assert blended[0] > blended[1] > 0  # its own vector weighs more than the window


def test_field_weights() -> None:
    assert field_weights(None) == (1.0, 0.0, 0.0)
    assert field_weights({"window": 0.3, "content": 1}) == (1.0, 0.3, 0.0)
    for bad in ({"title": 1.0}, {"content": float("nan")}, {"content": -1.0}):
        with pytest.raises(InvalidInputError):
            field_weights(bad)


def test_presets_and_config_validation() -> None:
    assert {"fast", "balanced", "best", "plain", "lexical", "vector", "rrf60"} <= set(PRESETS)
    assert preset("balanced") == RetrievalConfig()
    assert RetrievalConfig().fields == {"content": 1.0, "window": 0.3, "time": 1.0}
    for bad in ({"title": 1.0}, {"content": 0.0}, {"content": float("inf")}, {"content": -0.5}):
        with pytest.raises(ValidationError):
            RetrievalConfig(fields=bad)


def test_feedback_terms_prefer_top_texts_and_skip_the_query() -> None:
    from memory.retrieval.text import feedback_terms

    texts = ["Ann: the kiln fired my vase", "Bob: a kiln and a wheel", "Cid: the wheel of pottery"]
    assert feedback_terms(texts, ["pottery"], 3) == ["kiln", "ann", "fired"]
    assert feedback_terms(texts, ["pottery"], 0) == []
    assert feedback_terms([], ["x"], 5) == []
    with pytest.raises(ValidationError):
        RetrievalConfig(channels=("vector", "feedback"))
