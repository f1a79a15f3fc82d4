"""OpenAI-compatible and Ollama embedders against a real HTTP server on loopback.

The server speaks the real wire formats (``POST /v1/embeddings`` and
``POST /api/embed``) and returns deterministic bag-of-words vectors, so texts
sharing words are close. It can be scripted to fail: 429 with Retry-After,
500, 401, malformed JSON, wrong counts or dimensions, or hanging past the
client's timeout.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from memory import Memory, registry
from memory.embedders import create_embedder
from memory.embedders.base import Embedder, embed_texts
from memory.embedders.http import OllamaEmbedder, OpenAIEmbedder
from memory.errors import ConfigError, EmbedderError, ProviderError

DIM = 16


def fake_vector(text: str, dim: int = DIM) -> list[float]:
    """Signed hashing of lower-cased words: deterministic, and similar for texts sharing words."""
    vector = np.zeros(dim)
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        vector[int.from_bytes(digest[:4], "little") % dim] += 1.0 if digest[4] & 1 else -1.0
    if not vector.any():
        vector[int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little") % dim] = 1.0
    return [float(x) for x in vector / np.linalg.norm(vector)]


class FakeServer:
    """A threaded HTTP server speaking the OpenAI and Ollama embedding APIs.

    ``script`` holds actions for the next requests, consumed in order; when it
    is empty ``default`` is used. Actions: ``ok``, ``429:<retry-after>``,
    ``500``, ``401``, ``malformed``, ``wrong_count``, ``ragged``, ``wrong_dim``,
    ``non_numeric``, ``no_data``, ``hang``.
    """

    def __init__(self) -> None:
        self.script: list[str] = []
        self.default = "ok"
        self.reverse_order = False
        self.requests: list[dict[str, Any]] = []
        self.release = threading.Event()
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.fake = self  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def next_action(self, path: str, body: Any, headers: dict[str, str]) -> str:
        with self._lock:
            self.requests.append({"path": path, "body": body, "headers": headers})
            return self.script.pop(0) if self.script else self.default

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 5  # idle keep-alive connections end by themselves

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        fake: FakeServer = self.server.fake  # type: ignore[attr-defined]
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = json.loads(raw)
        action = fake.next_action(self.path, body, {k.lower(): v for k, v in self.headers.items()})
        ollama = self.path == "/api/embed"
        if self.path not in ("/v1/embeddings", "/api/embed"):
            self._send(404, {"error": f"no route {self.path}"})
            return
        if action == "hang":
            fake.release.wait(10)
            self.close_connection = True
            return
        if action.startswith("429"):
            retry_after = action.partition(":")[2]
            self._send(
                429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": retry_after} if retry_after else None
            )
            return
        if action in ("500", "401", "404"):
            message = {"500": "internal error", "401": "Incorrect API key provided", "404": "model not found"}[action]
            self._send(int(action), {"error": message} if ollama else {"error": {"message": message}})
            return
        if action == "malformed":
            self._send(200, b'{"data": [ {"embedding": [0.1, ')
            return
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        dim = int(body.get("dimensions") or DIM)
        vectors = [fake_vector(text, dim) for text in texts]
        if action == "wrong_count":
            vectors = vectors[:-1] if len(vectors) > 1 else vectors * 2
        elif action == "ragged":
            vectors[-1] = vectors[-1] + [0.5]
        elif action == "wrong_dim":
            vectors = [v + v for v in vectors]
        elif action == "non_numeric":
            vectors[0] = ["a"] * dim
        if action == "no_data":
            self._send(200, {"object": "list", "result": []})
        elif ollama:
            self._send(200, {"model": body["model"], "embeddings": vectors, "total_duration": 1000})
        else:
            data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
            if fake.reverse_order:
                data.reverse()
            usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
            self._send(200, {"object": "list", "data": data, "model": body["model"], "usage": usage})


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    yield fake
    fake.close()


@pytest.fixture
def make(server: FakeServer) -> Iterator[Callable[..., Any]]:
    """Build embedders against the fake server (fast retries); all are closed afterwards."""
    made: list[OpenAIEmbedder | OllamaEmbedder] = []

    def build(kind: str = "openai", **options: Any) -> Any:
        options.setdefault("model", "x")
        options.setdefault("retry_backoff", 0.01)
        options.setdefault("timeout", 5.0)
        if kind == "openai":
            embedder: OpenAIEmbedder | OllamaEmbedder = OpenAIEmbedder(base_url=server.url + "/v1", **options)
        else:
            embedder = OllamaEmbedder(base_url=server.url, **options)
        made.append(embedder)
        return embedder

    yield build
    for embedder in made:
        embedder.close()


TEXTS = ["Alice prefers dark mode", "Bob lives in Paris", "the cat sat on the mat"]


# -- happy paths ---------------------------------------------------------------
@pytest.mark.parametrize("kind", ["openai", "ollama"])
def test_embeds_in_input_order(make: Callable[..., Any], server: FakeServer, kind: str) -> None:
    embedder = make(kind)
    vectors = embedder.embed_batch(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (3, DIM)
    np.testing.assert_allclose(vectors, np.array([fake_vector(t) for t in TEXTS]), rtol=1e-6)
    assert isinstance(embedder, Embedder)
    assert embedder.model_name == f"{kind}:x"
    request = server.requests[-1]
    assert request["path"] == ("/v1/embeddings" if kind == "openai" else "/api/embed")
    assert request["body"]["model"] == "x" and request["body"]["input"] == TEXTS


def test_openai_sends_api_key_and_dimensions(make: Callable[..., Any], server: FakeServer) -> None:
    embedder = make(api_key="sk-test", dimensions=8)
    assert embedder.dimension == 8
    assert server.requests == []  # a configured dimension needs no probe
    vectors = embedder.embed_batch(["hello"])
    assert vectors.shape == (1, 8)
    assert server.requests[0]["headers"]["authorization"] == "Bearer sk-test"
    assert server.requests[0]["body"]["dimensions"] == 8
    assert "sk-test" not in repr(embedder)


def test_openai_api_key_from_environment(
    make: Callable[..., Any], server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    make().embed_batch(["a"])
    monkeypatch.delenv("OPENAI_API_KEY")
    make().embed_batch(["b"])
    assert server.requests[0]["headers"]["authorization"] == "Bearer sk-env"
    assert "authorization" not in server.requests[1]["headers"]


def test_ollama_sends_keep_alive(make: Callable[..., Any], server: FakeServer) -> None:
    make("ollama", keep_alive="10m").embed_batch(["a"])
    make("ollama").embed_batch(["b"])
    assert server.requests[0]["body"]["keep_alive"] == "10m"
    assert "keep_alive" not in server.requests[1]["body"]


@pytest.mark.parametrize("kind", ["openai", "ollama"])
def test_batches_requests(make: Callable[..., Any], server: FakeServer, kind: str) -> None:
    texts = [f"text number {i}" for i in range(5)]
    vectors = make(kind, batch_size=2).embed_batch(texts)
    assert [len(r["body"]["input"]) for r in server.requests] == [2, 2, 1]
    np.testing.assert_allclose(vectors, np.array([fake_vector(t) for t in texts]), rtol=1e-6)


def test_openai_orders_by_index(make: Callable[..., Any], server: FakeServer) -> None:
    server.reverse_order = True
    vectors = make().embed_batch(TEXTS)
    np.testing.assert_allclose(vectors, np.array([fake_vector(t) for t in TEXTS]), rtol=1e-6)


@pytest.mark.parametrize("kind", ["openai", "ollama"])
def test_detects_dimension_once(make: Callable[..., Any], server: FakeServer, kind: str) -> None:
    embedder = make(kind)
    assert embedder.dimension == DIM
    assert embedder.dimension == DIM
    assert len(server.requests) == 1
    assert embedder.embed_batch([]).shape == (0, DIM)
    assert len(server.requests) == 1


def test_dimension_learned_from_first_batch(make: Callable[..., Any], server: FakeServer) -> None:
    embedder = make()
    embedder.embed_batch(["a", "b"])
    assert embedder.dimension == DIM
    assert len(server.requests) == 1


def test_embed_texts_normalises(make: Callable[..., Any]) -> None:
    vectors = embed_texts(make(), TEXTS, batch_size=2)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_created_by_name_through_the_registry(server: FakeServer) -> None:
    embedder = create_embedder("openai", {"base_url": server.url + "/v1", "model": "m", "dimensions": 4})
    try:
        assert isinstance(embedder, OpenAIEmbedder) and embedder.dimension == 4
        assert embedder.embed_batch(["x"]).shape == (1, 4)
    finally:
        embedder.close()
    ollama = registry.create("embedder", "ollama", {"model": "nomic-embed-text"})
    assert ollama.model_name == "ollama:nomic-embed-text"


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("openai", {}),  # model is required
        ("openai", {"model": "m", "temperature": 1}),
        ("openai", {"model": "m", "timeout": 0}),
        ("openai", {"model": "m", "base_url": "ftp://host"}),
        ("openai", {"model": "m", "base_url": "http://"}),
        ("ollama", {"model": "m", "base_url": "http://[::1"}),
        ("ollama", {"model": "m", "dimensions": 3}),
        ("ollama", {"model": ""}),
    ],
)
def test_bad_options_are_config_errors(name: str, options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        registry.create("embedder", name, options)


def test_direct_construction_validates_options() -> None:
    with pytest.raises(ConfigError, match="max_retries"):
        OpenAIEmbedder(model="m", max_retries=-1)


# -- retries and failures --------------------------------------------------------
@pytest.mark.parametrize("kind", ["openai", "ollama"])
def test_retries_transient_errors(make: Callable[..., Any], server: FakeServer, kind: str) -> None:
    server.script = ["429:0", "500"]
    vectors = make(kind, max_retries=2).embed_batch(TEXTS)
    assert vectors.shape == (3, DIM)
    assert len(server.requests) == 3


def test_honours_short_retry_after(make: Callable[..., Any], server: FakeServer) -> None:
    server.script = ["429:1"]
    started = time.monotonic()
    make(max_retries=1, retry_backoff=0).embed_batch(["a"])
    assert time.monotonic() - started >= 0.9
    assert len(server.requests) == 2


def test_long_retry_after_fails_at_once(make: Callable[..., Any], server: FakeServer) -> None:
    server.script = ["429:3600"]
    started = time.monotonic()
    with pytest.raises(EmbedderError, match="429.*3600"):
        make(max_retries=3).embed_batch(["a"])
    assert time.monotonic() - started < 2
    assert len(server.requests) == 1


@pytest.mark.parametrize("kind", ["openai", "ollama"])
def test_gives_up_after_max_retries(make: Callable[..., Any], server: FakeServer, kind: str) -> None:
    server.default = "500"
    with pytest.raises(EmbedderError, match=r"3 attempt.*HTTP 500: internal error") as info:
        make(kind, max_retries=2).embed_batch(["a"])
    assert isinstance(info.value, ProviderError)
    assert len(server.requests) == 3


def test_timeout(make: Callable[..., Any], server: FakeServer) -> None:
    server.default = "hang"
    started = time.monotonic()
    with pytest.raises(EmbedderError, match="timed out after 0.3s"):
        make(timeout=0.3, max_retries=1).embed_batch(["a"])
    assert time.monotonic() - started < 3
    assert len(server.requests) == 2


def test_connection_refused(server: FakeServer) -> None:
    port = server.httpd.server_address[1]
    server.close()
    with OpenAIEmbedder(
        base_url=f"http://127.0.0.1:{port}/v1", model="x", max_retries=1, retry_backoff=0.01
    ) as embedder:
        with pytest.raises(EmbedderError, match="2 attempt.*cannot connect"):
            embedder.embed_batch(["a"])


@pytest.mark.parametrize("kind", ["openai", "ollama"])
def test_client_error_is_not_retried(make: Callable[..., Any], server: FakeServer, kind: str) -> None:
    server.default = "401"
    with pytest.raises(EmbedderError, match="HTTP 401: Incorrect API key provided.*api_key"):
        make(kind, max_retries=3).embed_batch(["a"])
    assert len(server.requests) == 1


def test_ollama_missing_model_hint(make: Callable[..., Any], server: FakeServer) -> None:
    server.default = "404"
    with pytest.raises(EmbedderError, match="ollama pull x"):
        make("ollama").embed_batch(["a"])


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("malformed", "not JSON"),
        ("wrong_count", "expected 3 embeddings"),
        ("ragged", "different lengths"),
        ("non_numeric", "non-numeric"),
        ("no_data", "no '(data|embeddings)' list"),
    ],
)
@pytest.mark.parametrize("kind", ["openai", "ollama"])
def test_bad_responses(make: Callable[..., Any], server: FakeServer, kind: str, action: str, message: str) -> None:
    server.default = action
    with pytest.raises(EmbedderError, match=message):
        make(kind, max_retries=3).embed_batch(TEXTS)
    assert len(server.requests) == 1  # a bad answer is not retried


def test_dimension_change_is_an_error(make: Callable[..., Any], server: FakeServer) -> None:
    embedder = make()
    assert embedder.dimension == DIM
    server.default = "wrong_dim"
    with pytest.raises(EmbedderError, match=f"{2 * DIM}-d vectors, expected {DIM}"):
        embedder.embed_batch(["a"])


def test_configured_dimension_mismatch_is_an_error(make: Callable[..., Any], server: FakeServer) -> None:
    server.default = "wrong_dim"
    with pytest.raises(EmbedderError, match="16-d vectors, expected 8 \\(configured\\)"):
        make(dimensions=8).embed_batch(["a"])


def test_dimension_probe_failure_is_a_provider_error(make: Callable[..., Any], server: FakeServer) -> None:
    server.default = "500"
    embedder = make(max_retries=0)
    with pytest.raises(ProviderError):
        _ = embedder.dimension
    server.default = "ok"
    assert embedder.dimension == DIM


def test_close_is_idempotent_and_reopens(make: Callable[..., Any]) -> None:
    embedder = make()
    embedder.embed_batch(["a"])
    embedder.close()
    embedder.close()
    assert embedder.embed_batch(["b"]).shape == (1, DIM)


# -- through the Memory facade ---------------------------------------------------
def test_memory_remember_and_recall(make: Callable[..., Any]) -> None:
    with Memory("memory://", embedder=make()) as mem:
        first = mem.remember("Alice prefers dark mode in every editor", user="alice")
        mem.remember("Bob drinks his coffee black", user="alice")
        hits = mem.recall("which mode does Alice prefer?", user="alice", limit=2)
        assert hits[0].id == first
        assert "vector" in hits[0].channels
        assert mem.get(first).embedding_status == "done"
        assert mem.get(first).embedding_model == "openai:x"


@pytest.mark.parametrize("down_at_open", [False, True])
def test_memory_survives_an_embedder_outage(make: Callable[..., Any], server: FakeServer, down_at_open: bool) -> None:
    if down_at_open:
        server.default = "500"
    with Memory("memory://", embedder=make(max_retries=1)) as mem:
        server.default = "500"
        memory_id = mem.remember("the wifi password is on the fridge")
        item = mem.get(memory_id)
        assert item.embedding_status == "pending"
        assert item.embedding_error is not None and "HTTP 500" in item.embedding_error
        hits = mem.recall("wifi password")
        assert [h.id for h in hits] == [memory_id]
        assert "lexical" in hits[0].channels and "vector" not in hits[0].channels
        assert mem.embed_pending() == 0  # still down: stays pending

        server.default = "ok"
        assert mem.embed_pending() == 1
        assert mem.get(memory_id).embedding_status == "done"
        hits = mem.recall("where is the wifi password")
        assert hits[0].id == memory_id and "vector" in hits[0].channels
