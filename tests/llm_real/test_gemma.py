"""A real LLM end to end: llama.cpp's server with Gemma 3 270M through the ``openai`` provider.

Run with ``make test-llm`` (builds and starts the server, sets
``MEMORY_TEST_LLM_URL``); skipped otherwise. Gemma 3 270M is a tiny model, so
these tests check the protocol and the plumbing — JSON-schema constrained
output, validation, usage, the pipeline writing what the model said, nothing
lost — and print the quality they observe instead of asserting it.
"""

from __future__ import annotations

import os
import time

import pytest

from memory import Memory
from memory.embedders.hashing import HashingEmbedder
from memory.errors import LLMOutputError
from memory.extraction.heuristic import normalise_name
from memory.extraction.service import extract
from memory.llms.http import OpenAILLM

pytestmark = pytest.mark.llm

URL = os.environ.get("MEMORY_TEST_LLM_URL")
# Few and short: on a loaded 2-core machine the server generated ~1 token/s under the JSON grammar.
SAMPLES = [
    ("Priya moved to Lisbon in 2019.", {"priya", "lisbon"}),  # not the prompt's own example
    ("Bob works at Acme Corp as an engineer.", {"bob", "acme corp"}),
]


@pytest.fixture(scope="module")
def llm() -> OpenAILLM:
    if not URL:
        pytest.skip("no real LLM server: run `make test-llm` (sets MEMORY_TEST_LLM_URL)")
    return OpenAILLM(model="gemma-3-270m", base_url=URL, timeout=900, max_tokens=400, output_retries=1, max_retries=0)


def test_extraction_with_json_schema_output(llm: OpenAILLM) -> None:
    """Each answer is either validated (with real token usage) or a clear LLMOutputError; nothing else.

    A 270M model sometimes runs on inside a JSON string until max_tokens (seen with 160 and
    with 400 tokens), so an invalid answer is an expected outcome here, reported, not a failure.
    """
    found_total = expected_total = valid = 0
    for text, expected in SAMPLES:
        started = time.monotonic()
        try:
            result = extract(text, llm=llm)
        except LLMOutputError as exc:
            assert "gave no valid answer for task 'extract'" in str(exc) and "tokens used" in str(exc)
            print(f"\n[{time.monotonic() - started:.1f}s] {text}\n  -> LLMOutputError: {exc}")
            continue
        valid += 1
        assert result.model == "openai:gemma-3-270m" and not result.usage.estimated
        assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0
        names = {normalise_name(e.name) for e in result.entities}
        found_total += len(expected & names)
        expected_total += len(expected)
        print(
            f"\n[{time.monotonic() - started:.1f}s, {result.usage.total_tokens} tokens] {text}\n  -> {result.to_json()}"
        )
    print(f"\nvalid answers: {valid}/{len(SAMPLES)}; entity recall on those: {found_total}/{expected_total}")


def test_pipeline_writes_what_the_model_said_and_loses_nothing(llm: OpenAILLM) -> None:
    with Memory("memory://", embedder=HashingEmbedder(), llm=llm) as mem:
        first = mem.remember("Dana lives in Paris", user="dana", extract="inline")
        queued = mem.remember("Dana lives in Rome", user="dana", extract=True)  # a model LLM queues by default
        assert mem.get(queued).metadata["_extraction"] == "pending"
        reports = mem.extract_pending()  # extraction, then a decision against "Dana lives in Paris"
        assert [r.memory_id for r in reports] == [queued]
        print("\nreport:", reports[0].to_json())
        for memory_id in {first, queued}:
            history = mem.history(memory_id)
            print(f"\n{memory_id}: " + " | ".join(f"{e.op}: {e.reason}" for e in history))
            assert history[0].op == "add"
        live = mem.list(include_invalid=True).items
        assert live, "the writes are kept whatever the model decided"
        assert all(i.metadata.get("_extraction") in ("done", "failed") for i in live)
        print("\ngraph:", mem.graph.counts(), [r.text for r in mem.graph.query_graph(depth=1).relations])
