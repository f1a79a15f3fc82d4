"""The mirascope LLM provider against a loopback server speaking Anthropic Messages and OpenAI chat completions.

The provider SDKs (anthropic, openai) really send their requests over HTTP to
the fake server; answers go through the same validation and repair as the HTTP
providers, and the services (extraction, update decisions) work through it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fake_llm_server import FakeLLMServer

from memory import Memory
from memory.embedders.hashing import HashingEmbedder
from memory.errors import ConfigError, LLMError, LLMOutputError
from memory.extraction.service import extract
from memory.llms import create_llm
from memory.llms.base import LLM
from memory.llms.prompts import structured
from memory.llms.schemas import ExtractionOut

pytest.importorskip("mirascope")
pytest.importorskip("anthropic")

TEXT = "Alice moved to Berlin in 2021."
VALID = json.dumps({"facts": [TEXT], "keywords": ["alice"], "entities": [{"name": "Alice", "type": "person"}],
                    "relations": []})  # fmt: skip
#: mirascope model id and the base_url its SDK gets, per wire format
WIRES = {
    "anthropic": ("anthropic/claude-haiku-4-5", ""),
    "openai": ("openai/gpt-4o-mini", "/v1"),
}


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    fake = FakeLLMServer()
    yield fake
    fake.close()


def make(wire: str, server: FakeLLMServer, **options: Any) -> LLM:
    model, suffix = WIRES[wire]
    options.setdefault("api_key", "k-test")
    extra = {"provider": "openai:completions"} if wire == "openai" else {}
    return create_llm("mirascope", {"model": model, "base_url": server.url + suffix, **extra, **options})


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_answer_is_validated_with_usage_over_the_real_wire(wire: str, server: FakeLLMServer) -> None:
    server.script = [f"json:{VALID}"]
    llm = make(wire, server)
    result = structured(llm, "extract", {"text": TEXT}, ExtractionOut)
    assert result.output.entities[0].name == "Alice" and result.attempts == 1
    assert result.model == f"mirascope:{WIRES[wire][0]}"
    request = server.requests[0]
    body = request["body"]
    if wire == "anthropic":
        assert request["path"] == "/v1/messages" and body["model"] == "claude-haiku-4-5"
        system = json.dumps(body["system"])
        assert result.usage.prompt_tokens == 12 and result.usage.completion_tokens == 6
    else:
        assert request["path"] == "/v1/chat/completions" and body["model"] == "gpt-4o-mini"
        assert body["response_format"] == {"type": "json_object"}
        system = body["messages"][0]["content"]
        assert result.usage.total_tokens == 18
    assert "facts" in system and "ExtractionOut" in system  # the schema went along with the prompt
    assert TEXT in json.dumps(body["messages"][-1])
    assert body["temperature"] == 0.0 and body["max_tokens"] == 1024


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_invalid_answers_are_repaired_then_refused(wire: str, server: FakeLLMServer) -> None:
    server.script = ["json:not json at all", f"json:{VALID}"]
    result = structured(make(wire, server), "extract", {"text": TEXT}, ExtractionOut)
    assert result.attempts == 2 and "not valid JSON" in result.errors[0]
    repair = server.requests[1]["body"]["messages"]
    assert "not json at all" in json.dumps(repair) and "not valid JSON" in json.dumps(repair[-1])
    server.default = 'json:{"facts": "one"}'
    with pytest.raises(LLMOutputError, match="does not match the schema"):
        structured(make(wire, server, output_retries=1), "extract", {"text": TEXT}, ExtractionOut)


def test_server_errors_are_llm_errors_and_never_lose_a_write(server: FakeLLMServer) -> None:
    server.default = "401"
    with pytest.raises(LLMError, match="HTTP 401"):
        structured(make("anthropic", server), "extract", {"text": TEXT}, ExtractionOut)
    with Memory("memory://", embedder=HashingEmbedder(), llm=make("anthropic", server)) as mem:
        memory_id = mem.remember(TEXT, extract=True)
        (report,) = mem.extract_pending()
        assert report.status == "failed" and "401" in (report.error or "")
        assert mem.get(memory_id).content == TEXT
        server.default = "extract"
        (retry,) = mem.extract_pending(retry_failed=True)
        assert retry.status == "done" and "Berlin" in mem.get(memory_id).entities


def test_extraction_service_through_mirascope(server: FakeLLMServer) -> None:
    server.default = "extract"
    result = extract(TEXT, llm=make("anthropic", server))
    assert {e.name for e in result.entities} >= {"Alice", "Berlin"} and result.model.startswith("mirascope:")


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({}, "model"),
        ({"model": "no-slash"}, "model"),
        ({"model": "anthropic/x", "base_url": "ftp://x"}, "base_url"),
        ({"model": "anthropic/x", "temperature": 9}, "temperature"),
        ({"model": "nosuchprovider/x"}, "nosuchprovider"),
    ],
)
def test_bad_options_are_config_errors(options: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        create_llm("mirascope", options)
