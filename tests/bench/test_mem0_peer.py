"""mem0 as a benchmark peer: the real mem0 library, offline (no connection leaves loopback), on tiny data."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integrations"))

from frameworks import framework  # noqa: E402

framework("mem0", "the bench-peers or integrations-test extra; scripts/setup.sh installs it")

from test_locomo_small import TINY  # noqa: E402

from memory.bench.locomo import load_conversations  # noqa: E402
from memory.bench.peer_mem0 import Mem0Peer, locomo_results  # noqa: E402
from memory.cli.bench import bench  # noqa: E402
from memory.embedders.base import embed_query, embed_texts  # noqa: E402
from memory.embedders.hashing import HashingEmbedder  # noqa: E402


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Any connection to a non-loopback address fails the test (mem0 must stay offline)."""
    attempts: list[Any] = []
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and host not in ("127.0.0.1", "::1", "localhost") and self.family != socket.AF_UNIX:
            attempts.append(address)
            raise OSError(f"network access in a test: {address}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    monkeypatch.setattr(socket, "getaddrinfo", _no_dns(socket.getaddrinfo, attempts))
    yield attempts
    assert attempts == [], f"mem0 tried the network: {attempts}"


def _no_dns(real: Any, attempts: list[Any]) -> Any:
    def lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in ("127.0.0.1", "::1", "localhost", None):
            attempts.append(host)
            raise OSError(f"DNS lookup in a test: {host}")
        return real(host, *args, **kwargs)

    return lookup


def test_mem0_peer_stores_searches_and_maps_ids(tmp_path: Path) -> None:
    model = HashingEmbedder()
    peer = Mem0Peer(tmp_path / "mem0", model)
    try:
        assert peer.name.startswith("mem0 ") and any("BM25 off" in note for note in peer.notes)
        texts = ["Ann adopted a grey kitten called Pixel", "Bob trains for a marathon in Oslo", "Cid bakes bread"]
        peer.add(["a", "b", "c"], texts, embed_texts(model, texts))
        assert peer.embed_seconds == 0.0  # bulk adds use the given vectors
        peer.add_texts(["d"], ["Dee plays the cello every evening"])
        assert peer.embed_seconds > 0.0  # a live add: mem0 called our embedder
        query = "who trains for a marathon?"
        assert peer.search(query, embed_query(model, query), 2)[0] == "b"
        assert peer.search("cello evening", None, 1) == ["d"]
        assert peer.query(embed_query(model, texts[0]), 1) == ["a"]
        assert (tmp_path / "mem0" / "qdrant").is_dir() and (tmp_path / "mem0" / "history.db").is_file()
    finally:
        peer.close()


def test_mem0_on_locomo_scores_every_question(tmp_path: Path) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(TINY), encoding="utf-8")
    conversations = load_conversations(data)
    result = locomo_results(conversations, HashingEmbedder())
    report = result.to_json()
    asked = [q for c in conversations for q in c.questions if q.category in (1, 2, 3, 4) and q.evidence]
    assert report["n"] == len(asked) > 0
    assert result.turns == sum(len(c.turns) for c in conversations)
    assert 0.0 < report["overall"]["recall@10"] <= 1.0
    assert all(set(row["ranked"]) <= {t.dia_id for c in conversations for t in c.turns} for row in result.rows)


def test_bench_speed_and_locomo_with_the_mem0_peer(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "speed.json"
    args = ["speed", "--sizes", "60,120", "--sample", "20", "--queries", "5", "--batch", "20", "--peer", "mem0"]
    result = runner.invoke(bench, [*args, "--embedder", "hashing", "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    for row in report["sizes"]:
        peer = row["peer"]
        assert peer["name"].startswith("mem0 ") and peer["add_live"]["items_per_s"] > 0
        assert peer["add_live"]["embed_seconds"] > 0  # mem0 embedded its live adds itself
        assert peer["add_bulk"]["items"] > 0 and peer["query"]["p95_ms"] > 0 and peer["disk_mb"] > 0
    assert "mem0" in result.output

    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(TINY), encoding="utf-8")
    result = runner.invoke(
        bench, ["locomo", "--data", str(data), "--embedder", "hashing", "--peer", "mem0", "--no-cache", "-q"]
    )
    assert result.exit_code == 0, result.output
    assert "memory R@5" in result.output and "mem0 2.2.1 R@5" in result.output
