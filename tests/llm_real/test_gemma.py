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
from memory.extraction.heuristic import normalise_name
from memory.extraction.service import extract
from memory.llms.http import OpenAILLM

pytestmark = pytest.mark.llm

URL = os.environ.get("MEMORY_TEST_LLM_URL")
# Few and short: on a loaded 2-core machine the server generated ~1 token/s under the JSON grammar.
SAMPLES = [
    ("Alice moved to Berlin in 2021.", {"alice", "berlin"}),
    ("Bob works at Acme Corp as an engineer.", {"bob", "acme corp"}),
]


@pytest.fixture(scope="module")
def llm() -> OpenAILLM:
    if not URL:
        pytest.skip("no real LLM server: run `make test-llm` (sets MEMORY_TEST_LLM_URL)")
    return OpenAILLM(model="gemma-3-270m", base_url=URL, timeout=600, max_tokens=160, output_retries=1, max_retries=0)


def test_extraction_with_json_schema_output(llm: OpenAILLM) -> None:
    found_total = expected_total = 0
    for text, expected in SAMPLES:
        started = time.monotonic()
        result = extract(text, llm=llm)
        elapsed = time.monotonic() - started
        assert result.model == "openai:gemma-3-270m" and not result.usage.estimated
        assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0
        names = {normalise_name(e.name) for e in result.entities}
        found = len(expected & names)
        found_total += found
        expected_total += len(expected)
        print(f"\n[{elapsed:.1f}s, {result.usage.total_tokens} tokens] {text}\n  -> {result.to_json()}")
    print(f"\nentity recall on {len(SAMPLES)} samples: {found_total}/{expected_total}")


def test_pipeline_writes_what_the_model_said_and_loses_nothing(llm: OpenAILLM) -> None:
    with Memory("memory://", embedder=HashingEmbedder(), llm=llm) as mem:
        first = mem.remember("Alice lives in Paris", user="alice", extract="inline")
        queued = mem.remember("Alice lives in Berlin", user="alice", extract=True)  # a model LLM queues by default
        assert mem.get(queued).metadata["_extraction"] == "pending"
        reports = mem.extract_pending()  # extraction, then a decision against "Alice lives in Paris"
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
