"""Weighted RRF and final scoring against hand-computed values."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from memory.backends.base import ChannelHit, RankFields
from memory.records import build_item
from memory.retrieval.config import RetrievalConfig
from memory.retrieval.fusion import decisive_depth, fuse, rank, recency_factor, score_item

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_rrf_hand_computed() -> None:
    results = {
        "vector": [ChannelHit("a", 0.9), ChannelHit("b", 0.8)],
        "lexical": [ChannelHit("b", 12.0), ChannelHit("c", 3.0)],
    }
    fused = fuse(results, {"vector": 1.0, "lexical": 2.0}, rrf_k=60)
    best = 1 / 61 + 2 / 61
    expected = {"a": (1 / 61) / best, "b": (1 / 62 + 2 / 61) / best, "c": (2 / 62) / best}
    assert [c.id for c in fused] == ["b", "c", "a"]
    for candidate in fused:
        assert candidate.fusion == pytest.approx(expected[candidate.id])
    b = fused[0]
    assert b.channels["vector"].rank == 2 and b.channels["lexical"].rank == 1
    assert b.channels["lexical"].raw == 12.0
    assert sum(ch.contribution for ch in b.channels.values()) == pytest.approx(b.fusion)


def test_first_everywhere_scores_one_and_ties_break_by_id() -> None:
    fused = fuse({"vector": [ChannelHit("z", 1.0)], "lexical": [ChannelHit("z", 5.0)]}, {}, 60)
    assert fused[0].fusion == pytest.approx(1.0)
    tied = fuse({"vector": [ChannelHit("y", 1.0)], "lexical": [ChannelHit("x", 1.0)]}, {}, 60)
    assert [c.id for c in tied] == ["x", "y"]


def test_rank_ties_break_by_channel_strength() -> None:
    # b is 1st lexically and 2nd by vector, a the reverse: equal RRF; a's vector match is much stronger.
    results = {
        "vector": [ChannelHit("a", 0.62), ChannelHit("b", 0.29)],
        "lexical": [ChannelHit("b", 1.0), ChannelHit("a", 0.99)],
    }
    fused = fuse(results, {}, 60)
    assert fused[0].fusion == pytest.approx(fused[1].fusion)
    assert [c.id for c in fused] == ["a", "b"]


def test_equal_channel_scores_share_a_rank() -> None:
    fused = fuse({"lexical": [ChannelHit("a", 2.0), ChannelHit("b", 2.0), ChannelHit("c", 1.0)]}, {}, 5)
    ranks = {c.id: c.channels["lexical"].rank for c in fused}
    assert ranks == {"a": 1, "b": 1, "c": 3}
    assert fused[0].fusion == fused[1].fusion == pytest.approx(1.0)


def test_duplicate_ids_within_a_channel_count_once() -> None:
    fused = fuse({"vector": [ChannelHit("a", 1.0), ChannelHit("a", 0.5), ChannelHit("b", 0.4)]}, {}, 60)
    assert fused[1].channels["vector"].rank == 2


def test_recency_half_life() -> None:
    assert recency_factor(NOW - timedelta(days=30), NOW, 30) == pytest.approx(0.5)
    assert recency_factor(NOW - timedelta(days=60), NOW, 30) == pytest.approx(0.25)
    assert recency_factor(NOW + timedelta(days=1), NOW, 30) == 1.0


def test_final_score_blend() -> None:
    config = RetrievalConfig(recency_weight=0.2, importance_weight=0.1, recency_half_life_days=10)
    item = build_item(content="x", namespace="n", now=NOW - timedelta(days=10), importance=0.8)
    parts = score_item(0.5, item, NOW, config)
    assert parts.recency == pytest.approx(0.5)
    assert parts.final == pytest.approx(0.7 * 0.5 + 0.2 * 0.5 + 0.1 * 0.8)


def test_rank_skips_unknown_items_and_applies_min_score() -> None:
    config = RetrievalConfig(min_score=0.5, recency_weight=0, importance_weight=0)
    item = build_item(content="x", namespace="n", now=NOW)
    fused = fuse({"vector": [ChannelHit(item.id, 1.0), ChannelHit("gone", 0.5)]}, {}, 60)
    ranked = rank(fused, {item.id: item}, NOW, config)
    assert [entry[1].id for entry in ranked] == [item.id]


def test_rank_with_a_limit_returns_the_head_of_the_whole_ranking() -> None:
    config = RetrievalConfig(recency_weight=0.3, importance_weight=0.1, recency_half_life_days=5)
    items = {
        f"i{n}": build_item(content=f"x{n}", namespace="n", now=NOW - timedelta(days=n % 7), importance=(n % 5) / 5)
        for n in range(30)
    }
    hits = [ChannelHit(item_id, 1.0 - n / 40) for n, item_id in enumerate(items)]
    fused = fuse({"vector": hits, "lexical": list(reversed(hits[:12]))}, {}, 60)
    whole = rank(fused, items, NOW, config, speakers={"i3": 0.5}, quantities={"i4": 0.9})
    head = rank(fused, items, NOW, config, speakers={"i3": 0.5}, quantities={"i4": 0.9}, limit=7)
    assert [(c.id, parts) for c, _, parts in head] == [(c.id, parts) for c, _, parts in whole[:7]]
    for candidate, item, parts in whole:  # every part is the one score_item gives
        speaker = 0.5 if candidate.id == "i3" else None
        quantity = 0.9 if candidate.id == "i4" else None
        assert parts == score_item(candidate.fusion, item, NOW, config, speaker, quantity)
    assert rank(fused, items, NOW, config, limit=0) == []


def test_decisive_depth_of_one_channel() -> None:
    assert decisive_depth(RetrievalConfig(channels=("vector",)), 10) == 15
    assert decisive_depth(RetrievalConfig(channels=("lexical",)), 1) == 1
    # Several channels, a second graph hop, a channel of weight 0, or no bound below `candidates`: none.
    assert decisive_depth(RetrievalConfig(), 10) is None
    assert decisive_depth(RetrievalConfig(channels=("graph",), graph_hop=3), 10) is None
    assert decisive_depth(RetrievalConfig(channels=("vector",), weights={"vector": 0.0}), 10) is None
    assert decisive_depth(RetrievalConfig(channels=("vector",), candidates=15), 10) is None
    assert decisive_depth(RetrievalConfig(channels=("vector",), recency_weight=0.5, importance_weight=0.5), 1) is None


@pytest.mark.parametrize(
    "rrf_k,recency_weight,importance_weight,limit", [(5, 0.05, 0.05, 10), (60, 0.02, 0.01, 5), (1, 0.2, 0.1, 3)]
)
def test_hits_past_the_decisive_depth_never_reach_the_head(
    rrf_k: float, recency_weight: float, importance_weight: float, limit: int
) -> None:
    config = RetrievalConfig(
        channels=("vector",), rrf_k=rrf_k, recency_weight=recency_weight, importance_weight=importance_weight,
        recency_half_life_days=3, candidates=1000,
    )  # fmt: skip
    depth = decisive_depth(config, limit)
    assert depth is not None
    rng = random.Random(7)
    for _ in range(200):
        fields = {
            f"i{n}": RankFields(
                NOW - timedelta(days=rng.choice([0, 0, 1, 5, 40])), rng.choice([0.0, 1.0, rng.random()])
            )
            for n in range(depth + 40)
        }
        hits = [ChannelHit(item_id, 1.0 - n / 1000) for n, item_id in enumerate(fields)]
        whole = rank(fuse({"vector": hits}, {}, rrf_k), fields, NOW, config, limit=limit)
        head = rank(fuse({"vector": hits[:depth]}, {}, rrf_k), fields, NOW, config, limit=limit)
        assert [(c.id, parts) for c, _, parts in head] == [(c.id, parts) for c, _, parts in whole]
    # The bound is tight: the depth-th hit (new, important) reaches old, unimportant ones before it.
    worst = {f"i{n}": RankFields(NOW - timedelta(days=4000), 0.0) for n in range(depth - 1)}
    worst[f"i{depth - 1}"] = RankFields(NOW, 1.0)
    hits = [ChannelHit(item_id, 1.0 - n / 1000) for n, item_id in enumerate(worst)]
    finals = {c.id: parts.final for c, _, parts in rank(fuse({"vector": hits}, {}, rrf_k), worst, NOW, config)}
    assert finals[f"i{depth - 1}"] >= finals[f"i{limit - 1}"] - 1e-9


def test_bounded_ask_sees_a_tie_run_as_long_as_the_depth_and_never_asks_past_the_candidates() -> None:
    from memory.retrieval.fusion import bounded_ask

    assert bounded_ask(15, 50) == 31
    assert bounded_ask(30, 50) == 50


def test_decided_hits_keep_a_tie_across_the_depth_when_its_end_was_fetched() -> None:
    from memory.retrieval.fusion import decided_hits

    assert decided_hits([0.9, 0.8, 0.7, 0.6, 0.5], 3, 5) == 3  # no tie at the cut
    assert decided_hits([0.9, 0.8, 0.7, 0.7, 0.7, 0.5], 3, 6) == 5  # the run ends inside: the tied hits join
    assert decided_hits([0.9, 0.7, 0.7, 0.7, 0.7], 3, 5) is None  # the run reaches the last fetched: it may go on
    assert decided_hits([0.9, 0.7, 0.7, 0.7], 3, 5) == 4  # fewer than asked: the channel has no more
    assert decided_hits([0.9, 0.8], 3, 5) == 2
