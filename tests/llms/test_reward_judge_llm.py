"""The LLM judge (task judge_conversation) through the real openai provider against the loopback fake server."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fake_llm_server import FakeLLMServer

from memory.bench.reward import load_labelled, run_reward_bench
from memory.llms import create_llm


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    fake = FakeLLMServer()
    yield fake
    fake.close()


def test_the_labelled_set_checks_an_llm_judge(server: FakeLLMServer) -> None:
    data = load_labelled()
    # the scripted "model" answers every label right except the first two, and fails once
    answers = [{"label": c.label, "reward": {"positive": 0.9, "negative": 0.1, "neutral": 0.5}[c.label], "reason": ""}
               for c in data]  # fmt: skip
    answers[0]["label"], answers[1]["label"] = "neutral", "neutral"
    server.script = [f"json:{json.dumps(a)}" for a in answers[:-1]] + ["500", "500", "500", "500"]
    llm = create_llm("openai", {"model": "judge", "base_url": f"{server.url}/v1", "retry_backoff": 0.01,
                                "max_retries": 1})  # fmt: skip
    report = run_reward_bench(llm=llm)
    assert report["llm"]["overall"]["n"] == len(data)
    wrong = {w["id"] for w in report["llm_wrong"]}
    assert {data[0].id, data[1].id} <= wrong and len(report["llm_errors"]) == 1
    assert report["llm"]["overall"]["correct"] == len(data) - len(wrong)
    body = server.requests[0]["body"]
    sent = json.dumps(body)
    assert "response_format" in body and data[0].item.messages[0][1][:20] in sent
