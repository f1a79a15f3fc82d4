"""Units of the generalising retrieval: event dates, length-weighted windows, baselines, LongMemEval scoring."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory import Memory
from memory.bench.baselines import BM25, bm25_ranking, cosine_ranking, rrf_ranking
from memory.bench.longmemeval import LmeQuestion, LmeSession, LmeTurn, parse_date, question_scores, round_robin
from memory.bench.vector_cache import DiskCachedEmbedder
from memory.embedders import create_embedder
from memory.episodic.messages import unsupported_parts
from memory.errors import InvalidInputError
from memory.retrieval.config import PRESETS, RetrievalConfig
from memory.retrieval.window import CONTEXT_WORDS, context_share, event_time_words, share_of, window_text, window_vector
from memory.types import MemoryItem

SAID = datetime(2022, 3, 17, 15, 0, tzinfo=UTC)  # a Thursday


def test_event_time_words_resolve_against_when_it_was_said() -> None:
    assert event_time_words("Yesterday I ran my first marathon!", SAID) == "16 March 2022"
    assert event_time_words("We moved two years ago", SAID) == "2020"
    assert event_time_words("I started last month", SAID) == "February 2022"
    # a week across a month boundary names both months
    assert event_time_words("the week before last", datetime(2022, 3, 3, tzinfo=UTC)) == "February 2022"
    assert event_time_words("no time here", SAID) == ""
    assert event_time_words("yesterday and again yesterday", SAID) == "16 March 2022"


def test_context_share_by_length() -> None:
    assert context_share("Yes, two weekends ago!") == 1.0
    long_text = " ".join(f"topic{i}" for i in range(CONTEXT_WORDS * 4))
    assert math.isclose(context_share(long_text), 0.25)
    # stopwords do not count as content
    padded = "the of and " * 100 + "hiking"
    assert context_share(padded) == 1.0


def test_context_share_by_the_turns_around() -> None:
    short = "Yes, two weekends ago!"
    chat = ["Did you go hiking with the kids?", "We went camping in the hills"]
    assert context_share(short, chat) == 1.0  # a dialogue of short turns: the whole window
    essay = " ".join(f"topic{i}" for i in range(CONTEXT_WORDS * 4))
    # a short turn between long ones (a question between an assistant's essays) gets a quarter of it
    assert math.isclose(context_share(short, [essay, essay]), 0.25)
    assert math.isclose(context_share(short, [essay, "ok"]), CONTEXT_WORDS / ((CONTEXT_WORDS * 4 + 1) / 2))
    # the larger of its own length and its neighbours' mean decides
    assert math.isclose(context_share(essay, chat), 0.25)
    assert share_of(10, [20, 30]) == 1.0 and math.isclose(share_of(10, [120, 120]), 0.25)


def test_window_text_drops_long_neighbours() -> None:
    at = datetime(2023, 5, 8, tzinfo=UTC)

    def turn(item_id: str, content: str) -> MemoryItem:
        return MemoryItem(
            id=item_id, namespace="default", content=content, created_at=at, updated_at=at, thread="t",
            content_hash=item_id,
        )  # fmt: skip

    item, essay = turn("b", "user: any ideas?"), turn("a", " ".join(f"idea{i}" for i in range(200)))
    reply = turn("c", "Sure, try hiking")
    assert "idea1" not in window_text(item, [essay])  # share 30/200 < 0.5: the essay stays out
    assert "hiking" in window_text(item, [reply])


def test_window_vector_context_weight() -> None:
    own = np.array([1.0, 0.0], dtype=np.float32)
    near = [np.array([0.0, 1.0], dtype=np.float32)]
    full = window_vector(own, near)
    assert np.allclose(full, window_vector(own, near, 1.0))
    assert np.allclose(window_vector(own, near, 0.0), own)
    half = window_vector(own, near, 0.5)
    # less context: closer to the memory's own vector
    assert float(half @ own) > float(full @ own)
    assert math.isclose(float(np.linalg.norm(half)), 1.0, rel_tol=1e-5)


def test_window_vector_is_the_stacked_sum_to_the_bit() -> None:
    """Stored window vectors must not change with the code that sums them: the reference is np.sum over a stack."""

    def reference(own: np.ndarray, near: list[np.ndarray], context: float) -> np.ndarray:
        mean = own + np.sum(np.stack([np.asarray(n, dtype=np.float32) for n in near]), axis=0)
        combined = own + context * (mean / float(np.linalg.norm(mean)))
        return (combined / float(np.linalg.norm(combined))).astype(np.float32)

    rng = np.random.default_rng(4)
    for case in range(2000):
        own = rng.standard_normal(384).astype(np.float32)
        own /= np.linalg.norm(own)
        near = [rng.standard_normal(384).astype(np.float32 if case % 3 else np.float64) for _ in range(1 + case % 4)]
        context = (1.0, 0.5, float(rng.random()))[case % 3]
        assert np.array_equal(window_vector(own, near, context), reference(own, near, context)), case


def test_event_dates_are_found_by_the_date_of_the_event(tmp_path: Path) -> None:
    with Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing") as mem:
        said = mem.remember("Yesterday I adopted a kitten named Miso", thread="chat", created_at=SAID)
        mem.remember("I bought groceries", thread="chat", created_at=SAID + timedelta(minutes=1))
        mem.remember("Went to the dentist", thread="other", created_at=datetime(2021, 6, 1, tzinfo=UTC))
        lexical = RetrievalConfig(channels=("lexical",), fields={"content": 1.0, "window": 1.0})
        hits = mem.recall("16 March 2022", retrieval=lexical)
        assert hits and hits[0].id == said
        # thread-less memories get their event dates too
        alone = mem.remember("I graduated in 2015", created_at=SAID)
        assert [h.id for h in mem.recall("2015", retrieval=lexical)][:1] == [alone]


def test_context_channel_is_searched_apart(tmp_path: Path) -> None:
    config = RetrievalConfig(
        channels=("vector", "lexical", "context"), weights={"vector": 1.0, "lexical": 1.0, "context": 0.5}
    )
    with Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing") as mem:
        for i, text in enumerate(["Do you like hiking?", "Yes, two weekends ago!", "Nice, where?"]):
            mem.remember(text, thread="t", created_at=SAID + timedelta(seconds=i))
        hits = mem.recall("hiking two weekends ago", retrieval=config)
        assert any("context" in h.channels for h in hits)
        assert any("vector" in h.channels for h in hits)


def test_messages_search_says_what_it_cannot_do() -> None:
    parts = unsupported_parts(PRESETS["balanced"])
    assert "window field" in parts and "time field" in parts and "window vectors" in parts
    assert "graph channel" in parts
    assert unsupported_parts(RetrievalConfig(channels=("vector", "lexical"), fields={"content": 1.0},
                                             window_vectors=False)) == []  # fmt: skip


def test_bm25_by_hand() -> None:
    docs = ["apple banana", "apple apple cherry", "durian"]
    index = BM25(docs)
    # idf(apple) = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln(1.6); doc 0: tf 1, length 2, average (2 + 3 + 1) / 3
    norm0 = 1.2 * (1 - 0.75 + 0.75 * 2 / 2)
    expected0 = math.log(1.6) * 1 * 2.2 / (1 + norm0)  # = ln(1.6)
    assert math.isclose(index.scores("apple")[0], expected0, rel_tol=1e-9)
    assert bm25_ranking(index, "apple") == [1, 0]
    assert bm25_ranking(index, "durian") == [2]


def test_rrf_and_cosine() -> None:
    assert rrf_ranking([[0, 1, 2], [2, 1, 0]], k=60) == [0, 2, 1]  # 1/61 + 1/63 > 2/62; ties by index
    assert rrf_ranking([[3, 1], [1]]) == [1, 3]
    vectors = np.array([[1, 0], [0, 1], [0.6, 0.8]], dtype=np.float32)
    assert cosine_ranking(vectors, np.array([0, 1], dtype=np.float32)) == [1, 2, 0]


def _question(kind: str = "multi-session") -> LmeQuestion:
    day = parse_date("2023/05/20 (Sat) 02:21")
    sessions = (
        LmeSession("a", day, (LmeTurn("a#0", "user", "x", False), LmeTurn("a#1", "assistant", "y", True))),
        LmeSession("b", day, (LmeTurn("b#0", "user", "z", True),)),
        LmeSession("c", day, (LmeTurn("c#0", "user", "w", False),)),
    )
    return LmeQuestion("q", kind, "?", day, ("a", "b"), sessions)


def test_longmemeval_scores_by_hand() -> None:
    q = _question()
    scores = question_scores(["c#0", "a#1", "a#0", "b#0"], q)
    # sessions ranked c, a, b: R@1 0, R@3 1; turns: a#1 at 2, b#0 at 4
    assert scores["session R@1"] == 0.0 and scores["session R@3"] == 1.0
    assert scores["turn R@3"] == 0.5 and scores["turn R@5"] == 1.0
    ideal = 1 + 1 / math.log2(3)
    assert math.isclose(scores["turn NDCG@10"], (1 / math.log2(3) + 1 / math.log2(5)) / ideal)


def test_round_robin_and_dates() -> None:
    qs = [_question("a"), _question("a"), _question("b")]
    assert [q.type for q in round_robin(qs)] == ["a", "b", "a"]
    assert parse_date("2023/05/20 (Sat) 02:21") == datetime(2023, 5, 20, 2, 21, tzinfo=UTC)
    with pytest.raises(InvalidInputError):
        parse_date("May 20")


def test_disk_cache_reuses_vectors_and_is_never_needed(tmp_path: Path) -> None:
    inner = create_embedder("hashing")
    first = DiskCachedEmbedder(inner, tmp_path / "c")
    texts = ["alpha beta", "gamma delta", "alpha beta"]
    rows = first.embed_batch(texts)
    first.flush()
    assert first.misses == 2
    second = DiskCachedEmbedder(inner, tmp_path / "c")
    again = second.embed_batch(texts)
    assert second.misses == 0 and np.allclose(rows, again)
    (tmp_path / "c" / "000000.npy").write_bytes(b"corrupt")
    third = DiskCachedEmbedder(inner, tmp_path / "c")  # a corrupt shard is ignored
    assert np.allclose(third.embed_batch(texts), rows) and third.misses == 2


class _Counting:
    """The hashing embedder, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        self.inner = create_embedder("hashing")
        self.model_name, self.dimension = self.inner.model_name, self.inner.dimension
        self.embedded = 0

    def embed_batch(self, texts: Any) -> Any:
        self.embedded += len(texts)
        return self.inner.embed_batch(texts)


def test_disk_cache_always_embeds_a_lone_query(tmp_path: Path) -> None:
    counting = _Counting()
    cache = DiskCachedEmbedder(counting, tmp_path / "c")
    cache.embed_batch(["what did Ann adopt", "gamma delta"])  # a baseline embeds the questions in a batch
    assert counting.embedded == 2
    row = cache.embed_batch(["what did Ann adopt"])  # a recall's query: embedded again, so it is timed
    assert counting.embedded == 3 and np.allclose(row, cache.embed_batch(["what did Ann adopt", "gamma delta"])[:1])
