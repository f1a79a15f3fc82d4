"""Pure benchmark metrics and evidence-id parsing, checked against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memory.bench.metrics import (
    METRIC_KEYS,
    mean_metrics,
    ndcg_at_k,
    parse_evidence,
    percentile,
    question_metrics,
    recall_at_k,
    reciprocal_rank,
)

RANKED = ["a", "b", "c", "d", "e"]


def test_recall_at_k_counts_evidence_in_the_top_k() -> None:
    relevant = {"b", "d", "z"}
    assert recall_at_k(RANKED, relevant, 1) == 0.0
    assert recall_at_k(RANKED, relevant, 2) == pytest.approx(1 / 3)
    assert recall_at_k(RANKED, relevant, 4) == pytest.approx(2 / 3)
    assert recall_at_k(RANKED, relevant, 20) == pytest.approx(2 / 3)  # k beyond the list


def test_ndcg_binary_relevance_hand_computed() -> None:
    # hits at ranks 2 and 4: DCG = 1/log2(3) + 1/log2(5); ideal = 1 + 1/log2(3)
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    ideal = 1 + 1 / math.log2(3)
    assert ndcg_at_k(RANKED, {"b", "d"}, 10) == pytest.approx(dcg / ideal)
    assert ndcg_at_k(RANKED, {"b", "d"}, 10) == pytest.approx(0.650921, abs=1e-6)
    assert ndcg_at_k(RANKED, {"a"}, 10) == 1.0
    # rank 4 is outside k=3
    assert ndcg_at_k(RANKED, {"d"}, 3) == 0.0


def test_ndcg_ideal_uses_at_most_k_relevant_turns() -> None:
    ranked = [f"t{i}" for i in range(10)]
    relevant = {f"t{i}" for i in range(12)}  # 12 relevant, only 10 fit in the top 10
    assert ndcg_at_k(ranked, relevant, 10) == pytest.approx(1.0)


def test_reciprocal_rank_of_first_evidence_turn() -> None:
    assert reciprocal_rank(RANKED, {"c", "e"}) == pytest.approx(1 / 3)
    assert reciprocal_rank(RANKED, {"a"}) == 1.0
    assert reciprocal_rank(RANKED, {"z"}) == 0.0
    assert reciprocal_rank([], {"a"}) == 0.0


def test_repeated_turns_count_once_at_their_first_rank() -> None:
    ranked = ["a", "a", "b"]
    assert reciprocal_rank(ranked, {"b"}) == 0.5
    assert recall_at_k(ranked, {"b"}, 2) == 1.0
    assert ndcg_at_k(ranked, {"b"}, 10) == pytest.approx(1 / math.log2(3))


def test_no_evidence_scores_zero_and_bad_k_is_rejected() -> None:
    assert recall_at_k(RANKED, set(), 5) == 0.0
    assert ndcg_at_k(RANKED, set(), 10) == 0.0
    with pytest.raises(ValueError):
        recall_at_k(RANKED, {"a"}, 0)
    with pytest.raises(ValueError):
        ndcg_at_k(RANKED, {"a"}, 0)


def test_question_metrics_and_mean() -> None:
    first = question_metrics(RANKED, {"a"})
    second = question_metrics(RANKED, {"e", "z"})
    assert set(first) == set(METRIC_KEYS)
    assert first == {"recall@1": 1.0, "recall@5": 1.0, "recall@10": 1.0, "recall@20": 1.0, "ndcg@10": 1.0, "mrr": 1.0}
    assert second["recall@1"] == 0.0
    assert second["recall@5"] == 0.5
    assert second["mrr"] == pytest.approx(0.2)
    # ideal DCG for 2 relevant = 1 + 1/log2(3); one hit at rank 5 = 1/log2(6)
    assert second["ndcg@10"] == pytest.approx((1 / math.log2(6)) / (1 + 1 / math.log2(3)))
    mean = mean_metrics([first, second])
    assert mean["recall@5"] == pytest.approx(0.75)
    assert mean["mrr"] == pytest.approx(0.6)
    assert mean_metrics([]) == {key: 0.0 for key in METRIC_KEYS}


@pytest.mark.parametrize("q", [0, 5, 50, 95, 100])
def test_percentile_matches_numpy_linear(q: float) -> None:
    values = [12.0, 3.0, 7.5, 1.0, 4.0, 9.0, 30.0]
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_percentile_hand_computed_and_edges() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    assert percentile([1.0, 2.0, 3.0, 4.0], 95) == pytest.approx(3.85)
    assert percentile([5.0], 95) == 5.0
    assert percentile([], 50) == 0.0
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_parse_evidence_keeps_valid_ids_in_order() -> None:
    parsed = parse_evidence(["D1:3", "D2:10", "D1:3"])
    assert parsed.turns == ("D1:3", "D2:10")
    assert parsed.dropped == ()


def test_parse_evidence_splits_joined_ids() -> None:
    parsed = parse_evidence(["D8:6; D9:17", "D1:1,D1:2"])
    assert parsed.turns == ("D8:6", "D9:17", "D1:1", "D1:2")
    assert parsed.dropped == ()


def test_parse_evidence_drops_malformed_and_unknown_ids() -> None:
    known = {"D1:18", "D1:20", "D11:26", "D2:14"}
    parsed = parse_evidence(["D1:18", "D", "D1:20", "D:11:26", "D10:19", "", 7, "D2:14"], known)
    assert parsed.turns == ("D1:18", "D1:20", "D2:14")
    assert parsed.dropped == ("D", "D:11:26", "D10:19", "", "7")


def test_parse_evidence_normalises_leading_zeros() -> None:
    assert parse_evidence(["D01:03"], {"D1:3"}).turns == ("D1:3",)
