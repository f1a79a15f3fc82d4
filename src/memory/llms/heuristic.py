"""The ``heuristic`` LLM provider: deterministic answers without a model (the default).

It answers the library's own tasks (``extract``, ``decide``) from the raw
``inputs`` with the pattern rules of :mod:`memory.extraction.heuristic` and
:mod:`memory.extraction.decide`, validates the answer into the requested
schema like any provider, and reports an estimated token usage. Any other
task is an LLMError: it is not a general chat model.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from memory.errors import LLMError, LLMOutputError
from memory.llms.base import ChatRequest, ChatResult, OutputT, Usage
from memory.llms.parsing import estimate_tokens

__all__ = ["HeuristicLLM"]


class HeuristicLLM:
    """Pattern-based extraction and update decisions; no network, no model, same answer every time."""

    provider = "heuristic"
    model_name = "heuristic:v1"

    class Options(BaseModel):
        """The heuristic provider has no options."""

        model_config = ConfigDict(extra="forbid", frozen=True)

    def __repr__(self) -> str:
        return "HeuristicLLM()"

    def _answer(self, task: str, inputs: dict[str, Any]) -> BaseModel:
        if task == "extract":
            from memory.extraction.heuristic import extract_heuristic

            return extract_heuristic(
                str(inputs["text"]), known_entities=inputs.get("known_entities") or (), speaker=inputs.get("speaker")
            )
        if task == "decide":
            from memory.extraction.decide import Neighbour, decide_heuristic

            neighbours = [
                Neighbour(id=str(n.get("id", i)), content=str(n["content"]), similarity=float(n.get("similarity", 0.0)))
                for i, n in enumerate(inputs.get("neighbours") or [])
            ]
            return decide_heuristic(str(inputs["fact"]), neighbours, speaker=inputs.get("speaker"))
        raise LLMError(f"the heuristic LLM provider cannot answer task {task!r}; configure an openai or ollama LLM")

    def chat(self, request: ChatRequest[OutputT]) -> ChatResult[OutputT]:
        """Answer a library task deterministically; raises LLMError for tasks it does not know."""
        answer = self._answer(request.task, request.inputs)
        raw = answer.model_dump_json()
        try:
            output = request.schema.model_validate(answer.model_dump())
        except ValidationError as exc:  # a schema that is not the task's own
            raise LLMOutputError(
                f"heuristic answer for {request.task!r} does not fit {request.schema.__name__}: {exc}"
            ) from exc
        prompt = sum(estimate_tokens(m.content) for m in request.messages)
        completion = estimate_tokens(raw)
        usage = Usage(
            prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion, estimated=True
        )
        return ChatResult(
            output=output, usage=usage, model=self.model_name, raw=raw, prompt_version=request.prompt_version
        )
