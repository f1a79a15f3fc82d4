"""The rerank stage and the ``http`` reranker against a loopback server speaking ``/rerank``.

Real parts everywhere: a real HTTP server on 127.0.0.1 (Cohere and TEI wire
shapes), a real SQLite file for recall.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from rerank_server import RerankServer, overlap

from memory import Memory, registry
from memory.config import RerankSettings, Settings, load_settings
from memory.errors import ConfigError, RerankerError
from memory.rerankers import Reranker, create_reranker
from memory.rerankers.http import HTTPReranker

DOCS = ["the cat sat on the mat", "Paris is the capital of France", "Maya moved to Lisbon in May"]


@pytest.fixture
def server() -> Iterator[RerankServer]:
    fake = RerankServer()
    yield fake
    fake.close()


@pytest.fixture
def make(server: RerankServer) -> Iterator[Callable[..., HTTPReranker]]:
    made: list[HTTPReranker] = []

    def build(**options: Any) -> HTTPReranker:
        options.setdefault("base_url", server.url + "/v1")
        options.setdefault("retry_backoff", 0.01)
        options.setdefault("timeout", 5.0)
        reranker = HTTPReranker(**options)
        made.append(reranker)
        return reranker

    yield build
    for reranker in made:
        reranker.close()


# -- the provider ------------------------------------------------------------------
def test_cohere_shape_maps_sorted_results_back_to_input_order(
    make: Callable[..., HTTPReranker], server: RerankServer
) -> None:
    reranker = make(model="rerank-v3.5", api_key="k-123")
    query = "where did Maya move"
    scores = reranker.rerank(query, DOCS)
    assert scores == [overlap(query, d) for d in DOCS]
    assert scores.index(max(scores)) == 2  # the server sent it first; the client put it back at 2
    request = server.requests[-1]
    assert request["path"] == "/v1/rerank"
    assert request["body"] == {"model": "rerank-v3.5", "query": query, "documents": DOCS, "top_n": 3}
    assert request["headers"]["authorization"] == "Bearer k-123"
    assert isinstance(reranker, Reranker) and reranker.model_name == "rerank:rerank-v3.5"
    assert "k-123" not in repr(reranker)


def test_tei_shape(make: Callable[..., HTTPReranker], server: RerankServer) -> None:
    reranker = make(base_url=server.url, flavor="tei")
    scores = reranker.rerank("capital of France", DOCS)
    assert scores == [overlap("capital of France", d) for d in DOCS]
    body = server.requests[-1]["body"]
    assert body["texts"] == DOCS and "documents" not in body and "model" not in body


def test_documents_cut_to_max_chars_and_empty_input_sends_nothing(
    make: Callable[..., HTTPReranker], server: RerankServer
) -> None:
    reranker = make(max_chars=10)
    assert reranker.rerank("q", []) == []
    assert server.requests == []
    reranker.rerank("cat", ["x" * 50, "cat"])
    assert server.requests[-1]["body"]["documents"] == ["x" * 10, "cat"]


def test_retries_server_errors(make: Callable[..., HTTPReranker], server: RerankServer) -> None:
    server.script = ["500"]
    assert make(max_retries=1).rerank("cat mat", DOCS)[0] == 1.0
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("401", "check api_key"),
        ("malformed", "not JSON"),
        ("no_index", "has no index"),
        ("duplicate", "scored twice"),
        ("missing", "were not scored"),
        ("nan", "no finite"),
    ],
)
def test_bad_answers_are_reranker_errors(
    make: Callable[..., HTTPReranker], server: RerankServer, action: str, message: str
) -> None:
    server.default = action
    with pytest.raises(RerankerError, match=message):
        make(max_retries=0).rerank("cat mat", DOCS)


def test_unreachable_server_is_a_reranker_error() -> None:
    reranker = HTTPReranker(base_url="http://127.0.0.1:9", max_retries=0, timeout=2)
    with pytest.raises(RerankerError, match="cannot connect"):
        reranker.rerank("q", ["a"])


@pytest.mark.parametrize(
    "options",
    [{}, {"base_url": "ftp://x"}, {"base_url": "http://x", "flavor": "other"}, {"base_url": "http://x", "top": 1}],
)
def test_bad_options_are_config_errors(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="reranker 'http'"):
        create_reranker("http", options)


def test_registry_knows_rerankers() -> None:
    assert "http" in registry.available("reranker")
    with pytest.raises(ConfigError, match="unknown reranker 'nope'"):
        create_reranker("nope")


# -- the stage in recall ---------------------------------------------------------
class Reverse:
    """A reranker that prefers what fusion ranked last (so a reordering is visible); records its calls."""

    model_name = "reverse"

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        self.calls.append((query, list(documents)))
        return [float(i) for i in range(len(documents))]


def _fill(mem: Memory) -> None:
    mem.remember("Maya lives in Lisbon now", user="u")
    mem.remember("Maya used to live in Porto", user="u")
    mem.remember("Maya likes green tea and lives with a cat", user="u")
    mem.remember("Tom lives in Berlin", user="u")
    mem.remember("Maya's password is hunter2, she lives by it", user="u", sensitivity="secret")


def test_recall_reorders_the_fused_top_n(tmp_path: Path) -> None:
    plain = Memory(str(tmp_path / "a.db"), embedder="hashing")
    _fill(plain)
    before = [h.id for h in plain.recall("where does Maya live", user="u", limit=10)]
    plain.close()
    reverse = Reverse()
    settings = Settings(database=str(tmp_path / "a.db"), embedder={"provider": "hashing"}, reranker=None)
    with Memory(settings=settings, reranker=reverse) as mem:
        hits = mem.recall("where does Maya live", user="u", limit=10)
    assert len(reverse.calls) == 1 and reverse.calls[0][0] == "where does Maya live"
    assert len(reverse.calls[0][1]) == len(before) >= 3
    assert [h.id for h in hits] == list(reversed(before))  # top_n 20 covers them all
    assert all(h.parts.rerank is not None and h.score == h.parts.rerank for h in hits)
    assert not any("hunter2" in doc for doc in reverse.calls[0][1])  # the reranker never sees a secret


def test_top_n_bounds_what_the_reranker_sees(tmp_path: Path) -> None:
    reverse = Reverse()
    settings = Settings(database=str(tmp_path / "b.db"), embedder={"provider": "hashing"})
    with Memory(settings=settings) as plain:
        _fill(plain)
        before = [h.id for h in plain.recall("Maya lives", user="u", limit=10)]
    settings = settings.model_copy(update={"reranker": RerankSettings(provider="x", top_n=2)})
    with Memory(settings=settings, reranker=reverse) as mem:
        hits = mem.recall("Maya lives", user="u", limit=10)
    assert len(reverse.calls[0][1]) == 2
    assert [h.id for h in hits] == [before[1], before[0], *before[2:]]
    assert [h.parts.rerank is not None for h in hits[:3]] == [True, True, False]


def test_configured_http_reranker_reorders_recall(tmp_path: Path, server: RerankServer) -> None:
    settings = Settings(
        database=str(tmp_path / "c.db"),
        embedder={"provider": "hashing"},
        reranker=RerankSettings(provider="http", options={"base_url": server.url, "model": "m"}, top_n=5),
    )
    with Memory(settings=settings) as mem:
        _fill(mem)
        hits = mem.recall("green tea cat", user="u", limit=3)
    assert hits[0].content == "Maya likes green tea and lives with a cat"
    assert hits[0].parts.rerank == 1.0
    sent = server.requests[-1]["body"]
    assert sent["query"] == "green tea cat" and len(sent["documents"]) <= 5


def test_failing_reranker_keeps_the_fused_order(
    tmp_path: Path, server: RerankServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.default = "500"
    base = Settings(database=str(tmp_path / "d.db"), embedder={"provider": "hashing"})
    with Memory(settings=base) as plain:
        _fill(plain)
        before = [(h.id, h.score) for h in plain.recall("Maya lives", user="u")]
    options = {"base_url": server.url, "max_retries": 0}
    settings = base.model_copy(update={"reranker": RerankSettings(provider="http", options=options)})
    with Memory(settings=settings) as mem, caplog.at_level(logging.WARNING, logger="memory.retrieval.rerank"):
        hits = mem.recall("Maya lives", user="u")
    assert [h.id for h in hits] == [i for i, _ in before]
    assert [h.score for h in hits] == pytest.approx([s for _, s in before], abs=1e-6)  # recency moved a hair
    assert all(h.parts.rerank is None for h in hits)
    assert "rerank skipped" in caplog.text and "HTTP 500" in caplog.text


def test_weight_blends_reranker_and_fused_scores(tmp_path: Path) -> None:
    reverse = Reverse()
    base = Settings(database=str(tmp_path / "e.db"), embedder={"provider": "hashing"})
    with Memory(settings=base) as plain:
        _fill(plain)
        before = {h.id: h.score for h in plain.recall("Maya lives", user="u")}
    settings = base.model_copy(update={"reranker": RerankSettings(provider="x", weight=0.25)})
    with Memory(settings=settings, reranker=reverse) as mem:
        hits = mem.recall("Maya lives", user="u")
    for hit in hits:
        assert hit.parts.rerank is not None
        assert hit.score == pytest.approx(0.25 * hit.parts.rerank + 0.75 * before[hit.id])
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_reranker_from_the_environment(monkeypatch: pytest.MonkeyPatch, server: RerankServer, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMORY_RERANKER", "http")
    monkeypatch.setenv("MEMORY_RERANKER_OPTIONS", f'{{"base_url": "{server.url}", "flavor": "tei"}}')
    settings = load_settings({"database": str(tmp_path / "f.db"), "embedder": {"provider": "hashing"}})
    assert settings.reranker is not None and settings.reranker.provider == "http" and settings.reranker.top_n == 20
    with Memory(settings=settings) as mem:
        _fill(mem)
        assert mem.recall("Berlin Tom", user="u")[0].content == "Tom lives in Berlin"
    assert "texts" in server.requests[-1]["body"]
    monkeypatch.setenv("MEMORY_RERANKER_OPTIONS", "{bad")
    with pytest.raises(ConfigError, match="MEMORY_RERANKER_OPTIONS"):
        load_settings()
    monkeypatch.setenv("MEMORY_RERANKER", "nope")
    monkeypatch.delenv("MEMORY_RERANKER_OPTIONS")
    with pytest.raises(ConfigError, match="unknown reranker"):
        Memory(str(tmp_path / "g.db"), embedder="hashing")


# -- the stage in message search (the same stage as recall's) ----------------------
def _chat(mem: Memory) -> None:
    mem.messages.append("t1", "Maya lives in Lisbon now", role="user", user="u")
    mem.messages.append("t1", "Maya used to live in Porto", role="user", user="u")
    mem.messages.append("t1", "Maya likes green tea and lives with a cat", role="user", user="u")
    secret = "Maya's password is hunter2, she lives by it"
    mem.messages.append("t1", secret, role="user", user="u", sensitivity="secret")
    mem.embed_pending()


def test_message_search_reranks_its_top_n_like_recall(tmp_path: Path) -> None:
    base = Settings(database=str(tmp_path / "m.db"), embedder={"provider": "hashing"})
    with Memory(settings=base) as plain:
        _chat(plain)
        before = [(h.message.id, h.score) for h in plain.messages.search("where does Maya live", user="u")]
    assert len(before) >= 3
    reverse = Reverse()
    settings = base.model_copy(update={"reranker": RerankSettings(provider="x", weight=0.5)})
    with Memory(settings=settings, reranker=reverse) as mem:
        hits = mem.messages.search("where does Maya live", user="u")
    assert len(reverse.calls) == 1 and len(reverse.calls[0][1]) == len(before)
    assert not any("hunter2" in doc for doc in reverse.calls[0][1])  # a secret never reaches the reranker
    expected = sorted(
        ((0.5 * position + 0.5 * score, -position, i) for position, (i, score) in enumerate(before)), reverse=True
    )
    assert [h.message.id for h in hits] == [i for _, _, i in expected]
    assert [h.score for h in hits] == pytest.approx([s for s, _, _ in expected])


def test_message_search_keeps_its_order_when_the_reranker_fails(
    tmp_path: Path, server: RerankServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.default = "500"
    base = Settings(database=str(tmp_path / "n.db"), embedder={"provider": "hashing"})
    with Memory(settings=base) as plain:
        _chat(plain)
        before = [h.message.id for h in plain.messages.search("Maya lives", user="u")]
    options = {"base_url": server.url, "max_retries": 0}
    settings = base.model_copy(update={"reranker": RerankSettings(provider="http", options=options)})
    with Memory(settings=settings) as mem, caplog.at_level(logging.WARNING, logger="memory.retrieval.rerank"):
        assert [h.message.id for h in mem.messages.search("Maya lives", user="u")] == before
    assert "rerank skipped" in caplog.text
