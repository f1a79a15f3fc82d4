"""MemoryOS formulas against values computed by hand."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from memory.tiers.formulas import cosine, fscore, heat, jaccard, mean_vector, recency

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_cosine_hand_values() -> None:
    assert cosine([1.0, 0.0], [1.0, 1.0]) == pytest.approx(1 / math.sqrt(2))  # 0.70710678
    assert cosine([3.0, 4.0], [4.0, 3.0]) == pytest.approx(24 / 25)  # (12 + 12) / (5 * 5)
    assert cosine([1.0, 0.0], [-1.0, 0.0]) == pytest.approx(-1.0)
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0
    assert cosine([], []) == 0.0
    with pytest.raises(ValueError):
        cosine([1.0], [1.0, 2.0])


def test_jaccard_hand_values() -> None:
    assert jaccard({"a", "b", "c"}, {"b", "c", "d"}) == pytest.approx(2 / 4)
    assert jaccard(["hiking", "alps"], ["alps"]) == pytest.approx(1 / 2)
    assert jaccard([], []) == 0.0
    assert jaccard(["x"], ["y"]) == 0.0
    assert jaccard(["x", "x"], ["x"]) == 1.0  # sets, not lists


def test_fscore_is_cosine_plus_jaccard() -> None:
    # cos([3,4],[4,3]) = 0.96; Jaccard({a,b},{b,c}) = 1/3 -> 1.29333...
    assert fscore([3.0, 4.0], ["a", "b"], [4.0, 3.0], ["b", "c"]) == pytest.approx(0.96 + 1 / 3)
    assert fscore([1.0, 0.0], ["k"], [1.0, 0.0], ["k"]) == pytest.approx(2.0)


def test_recency_hand_values() -> None:
    assert recency(T0, T0, 1e7) == 1.0
    assert recency(T0, T0 + timedelta(seconds=1e7), 1e7) == pytest.approx(math.exp(-1))  # 0.3678794
    assert recency(T0, T0 + timedelta(hours=1), 7200) == pytest.approx(math.exp(-0.5))  # 0.6065307
    assert recency(T0 + timedelta(days=1), T0, 10) == 1.0  # a future access counts as now
    with pytest.raises(ValueError):
        recency(T0, T0, 0)


def test_heat_hand_values() -> None:
    assert heat(3, 4, 0.5, alpha=1.0, beta=2.0, gamma=4.0) == pytest.approx(3 + 8 + 2)
    # MemoryOS defaults α = β = γ = 1: a new one-page segment has heat 0 + 1 + 1 = 2.
    assert heat(0, 1, 1.0, alpha=1.0, beta=1.0, gamma=1.0) == pytest.approx(2.0)
    assert heat(2, 3, math.exp(-1), alpha=0.5, beta=1.0, gamma=2.0) == pytest.approx(1 + 3 + 2 * 0.36787944117)


def test_mean_vector_is_unit_mean() -> None:
    assert mean_vector([[1.0, 0.0], [0.0, 1.0]]) == pytest.approx([1 / math.sqrt(2), 1 / math.sqrt(2)])
    assert mean_vector([[2.0, 0.0]]) == pytest.approx([1.0, 0.0])
    assert mean_vector([]) == []
    assert mean_vector([[0.0, 0.0]]) == [0.0, 0.0]


def test_vectors_are_stored_as_base64_float32() -> None:
    from pydantic import ValidationError

    from memory.tiers.types import DialoguePage

    page = DialoguePage(id="p", namespace="n", agent="a", user="u", query="q", response="", created_at=T0,
                        vector=(0.5, -0.25, 1.0))  # fmt: skip
    stored = page.model_dump_json()
    assert '"vector":"AAAAPwAAgL4AAIA/"' in stored  # 0.5, -0.25, 1.0 as little-endian float32
    assert DialoguePage.model_validate_json(stored) == page
    assert page.model_dump()["vector"] == (0.5, -0.25, 1.0)
    for bad in (("x",), "not base64!", "AAAAAAA=", (float("nan"),), [[1.0]], 3):
        with pytest.raises(ValidationError, match="vector"):
            DialoguePage(id="p", namespace="n", agent="a", user="u", query="q", response="", created_at=T0, vector=bad)
