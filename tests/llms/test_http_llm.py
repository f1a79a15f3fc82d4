"""The openai and ollama LLM providers against a real loopback HTTP server with scripted answers."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fake_llm_server import FakeLLMServer

from memory import Memory
from memory.embedders.hashing import HashingEmbedder
from memory.errors import ConfigError, LLMError, LLMOutputError, ProviderError
from memory.extraction.decide import Neighbour
from memory.extraction.service import decide, extract
from memory.llms import create_llm
from memory.llms.base import LLM
from memory.llms.http import OllamaLLM, OpenAILLM
from memory.llms.prompts import structured
from memory.llms.schemas import ExtractionOut

TEXT = "Alice moved to Berlin in 2021."
VALID = json.dumps({"facts": [TEXT], "keywords": ["alice"], "entities": [{"name": "Alice", "type": "person"}],
                    "relations": []})  # fmt: skip


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    fake = FakeLLMServer()
    yield fake
    fake.close()


def make(provider: str, server: FakeLLMServer, **options: Any) -> LLM:
    options.setdefault("retry_backoff", 0.01)
    base = f"{server.url}/v1" if provider == "openai" else server.url
    return create_llm(provider, {"model": "test-model", "base_url": base, **options})


PROVIDERS = ["openai", "ollama"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_valid_answer_is_validated_with_usage_and_schema_sent(provider: str, server: FakeLLMServer) -> None:
    server.script = [f"json:{VALID}"]
    llm = make(provider, server)
    result = structured(llm, "extract", {"text": TEXT}, ExtractionOut)
    assert result.output.entities[0].name == "Alice"
    assert result.attempts == 1 and result.model == f"{provider}:test-model"
    assert result.usage.total_tokens == (18 if provider == "openai" else 18) and not result.usage.estimated
    body = server.requests[0]["body"]
    if provider == "openai":
        assert server.requests[0]["path"] == "/v1/chat/completions"
        schema = body["response_format"]["json_schema"]["schema"]
        assert body["response_format"]["type"] == "json_schema"
    else:
        assert server.requests[0]["path"] == "/api/chat"
        schema = body["format"]
        assert body["stream"] is False
    assert "$ref" not in json.dumps(schema) and set(schema["properties"]) == {
        "facts",
        "keywords",
        "entities",
        "relations",
    }
    assert body["messages"][0]["role"] == "system" and TEXT in body["messages"][-1]["content"]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("bad", ["{not json", '{"facts": "not a list"}', '["a list"]', ""])
def test_invalid_output_is_repaired_by_a_retry(provider: str, bad: str, server: FakeLLMServer) -> None:
    server.script = [f"json:{bad}", f"json:{VALID}"]
    result = structured(make(provider, server), "extract", {"text": TEXT}, ExtractionOut)
    assert result.attempts == 2 and len(result.errors) == 1
    assert result.usage.total_tokens == 36  # usage of both attempts
    retry_messages = server.requests[1]["body"]["messages"]
    assert retry_messages[-2] == {"role": "assistant", "content": bad}
    assert "not valid" in retry_messages[-1]["content"]


def test_fenced_json_is_accepted(server: FakeLLMServer) -> None:
    server.script = [f"json:Sure! ```json\n{VALID}\n```"]
    assert structured(make("openai", server), "extract", {"text": TEXT}, ExtractionOut).attempts == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_always_invalid_output_is_a_clear_error(provider: str, server: FakeLLMServer) -> None:
    server.default = "json:{broken"
    with pytest.raises(LLMOutputError, match="no valid answer.*3 attempt.*not valid JSON"):
        structured(make(provider, server, output_retries=2), "extract", {"text": TEXT}, ExtractionOut)
    assert len(server.requests) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
def test_429_with_retry_after_and_500_are_retried(provider: str, server: FakeLLMServer) -> None:
    server.script = ["429:0.2", "500", f"json:{VALID}"]
    started = time.monotonic()
    result = structured(make(provider, server, max_retries=3), "extract", {"text": TEXT}, ExtractionOut)
    assert time.monotonic() - started >= 0.2  # waited as the server asked
    assert result.output.keywords == ["alice"] and len(server.requests) == 3


def test_retries_exhausted_name_the_last_problem(server: FakeLLMServer) -> None:
    server.default = "500"
    with pytest.raises(LLMError, match=r"gave up after 2 attempt\(s\): HTTP 500: scripted 500"):
        structured(make("openai", server, max_retries=1), "extract", {"text": TEXT}, ExtractionOut)


def test_long_retry_after_is_not_waited_for(server: FakeLLMServer) -> None:
    server.script = ["429:3600"]
    with pytest.raises(LLMError, match="retry after 3600s; not waiting"):
        structured(make("openai", server), "extract", {"text": TEXT}, ExtractionOut)


def test_client_errors_fail_at_once(server: FakeLLMServer) -> None:
    server.script = ["401"]
    with pytest.raises(LLMError, match="HTTP 401.*check api_key"):
        structured(make("openai", server, max_retries=3), "extract", {"text": TEXT}, ExtractionOut)
    assert len(server.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_timeout_is_retried_then_reported(provider: str, server: FakeLLMServer) -> None:
    server.default = "hang"
    server.hang_seconds = 0.6
    with pytest.raises(LLMError, match="timed out after 0.2s"):
        structured(make(provider, server, timeout=0.2, max_retries=1), "extract", {"text": TEXT}, ExtractionOut)
    assert len(server.requests) == 2


def test_non_json_body_is_an_error(server: FakeLLMServer) -> None:
    server.script = ["garbage"]
    with pytest.raises(LLMError, match="not JSON"):
        structured(make("openai", server), "extract", {"text": TEXT}, ExtractionOut)


def test_unreachable_server_is_an_llm_error() -> None:
    llm = OpenAILLM(model="m", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=1)
    with pytest.raises(LLMError, match="cannot connect"):
        structured(llm, "extract", {"text": TEXT}, ExtractionOut)
    assert issubclass(LLMError, ProviderError)


def test_bad_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="base_url"):
        OpenAILLM(model="m", base_url="ftp://x")
    with pytest.raises(ConfigError, match="temperature"):
        OllamaLLM(model="m", temperature=9)
    with pytest.raises(ConfigError, match="unknown llm"):
        create_llm("nope")


def test_decide_with_a_model_out_of_range_target_keeps_the_write(server: FakeLLMServer) -> None:
    server.script = ['json:{"action": "DELETE", "target": 7, "reason": "x"}']
    decision = decide("Alice lives in Rome", [Neighbour("a", "Alice lives in Paris")], llm=make("openai", server))
    assert decision.action == "ADD" and "kept as ADD" in decision.reason


def test_extract_service_with_a_model(server: FakeLLMServer) -> None:
    server.default = "extract"
    result = extract(TEXT, llm=make("ollama", server))
    assert {e.name for e in result.entities} >= {"Alice", "Berlin"}
    assert result.usage.total_tokens == 18 and result.model == "ollama:test-model"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_llm_failure_never_loses_the_write(provider: str, server: FakeLLMServer) -> None:
    server.default = "500"
    llm = make(provider, server, max_retries=0)
    with Memory("memory://", embedder=HashingEmbedder(), llm=llm) as mem:
        memory_id = mem.remember(TEXT, extract=True)  # a model LLM: queued, not inline
        assert mem.get(memory_id).metadata["_extraction"] == "pending"
        assert server.requests == []  # the add did not wait on the LLM
        (report,) = mem.extract_pending()
        assert report.status == "failed" and "HTTP 500" in (report.error or "")
        kept = mem.get(memory_id)
        assert kept.content == TEXT and kept.metadata["_extraction"] == "failed"
        assert mem.recall("Berlin")[0].id == memory_id
        assert mem.extract_pending() == []  # failed ones wait for retry_failed
        server.default = "extract"
        (retry,) = mem.extract_pending(retry_failed=True)
        assert retry.status == "done"
        done = mem.get(memory_id)
        assert done.metadata["_extraction"] == "done" and "_extraction_error" not in done.metadata
        assert "Berlin" in done.entities
        assert [r.text for r in mem.graph.facts_about("Alice")] == ["Alice moved to Berlin"]


def test_inline_extraction_failure_keeps_the_write(server: FakeLLMServer) -> None:
    server.default = "json:{broken"
    with Memory("memory://", embedder=HashingEmbedder(), llm=make("openai", server, output_retries=1)) as mem:
        memory_id = mem.remember(TEXT, extract="inline")
        item = mem.get(memory_id)
        assert item.metadata["_extraction"] == "failed" and "no valid answer" in item.metadata["_extraction_error"]
        assert [e.op for e in mem.history(memory_id)] == ["add", "update"]
