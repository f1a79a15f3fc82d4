"""Ask, validate, repair: the loop every model-backed provider runs around its own call.

A provider supplies ``ask(messages, schema) -> (text, usage)``; :func:`answer_with_repair`
parses each answer into the request's schema and, while attempts remain, sends the
answer back with what was wrong (:func:`memory.llms.prompts.repair_message`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memory.errors import LLMOutputError
from memory.llms.base import ChatMessage, ChatRequest, ChatResult, OutputT, Usage
from memory.llms.parsing import OutputProblem, parse_output
from memory.llms.prompts import repair_message
from memory.llms.schemas import json_schema

__all__ = ["answer_with_repair"]

#: What a provider does once: send ``messages`` asking for JSON matching ``schema``; the text and tokens.
Ask = Callable[[list[ChatMessage], dict[str, Any]], tuple[str, Usage]]


def answer_with_repair(
    request: ChatRequest[OutputT], ask: Ask, *, attempts: int, model: str, where: str
) -> ChatResult[OutputT]:
    """Run ``ask`` up to ``attempts`` times until its answer validates into ``request.schema``.

    ``model`` names the model in the result, ``where`` (model and address) in the error.
    Raises LLMOutputError when no attempt validates; errors of ``ask`` itself propagate.
    """
    schema = json_schema(request.schema)
    messages = list(request.messages)
    usage = Usage()
    errors: list[str] = []
    for attempt in range(attempts):
        text, used = ask(messages, schema)
        usage = usage + used
        try:
            output = parse_output(text, request.schema)
        except OutputProblem as problem:
            errors.append(str(problem))
            if attempt + 1 < attempts:
                messages = [
                    *messages,
                    ChatMessage(role="assistant", content=text),
                    repair_message(str(problem), schema),
                ]
            continue
        return ChatResult(
            output=output, usage=usage, model=model, attempts=attempt + 1, raw=text,
            prompt_version=request.prompt_version, errors=tuple(errors),
        )  # fmt: skip
    raise LLMOutputError(
        f"LLM {where} gave no valid answer for task {request.task!r} in "
        f"{attempts} attempt(s) (tokens used: {usage.total_tokens}); last problem: {errors[-1]}"
    )
