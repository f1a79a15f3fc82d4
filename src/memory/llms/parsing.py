"""Turn a model's text answer into a validated pydantic model (pure functions)."""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, ValidationError

from memory.llms.base import OutputT

__all__ = ["parse_output", "OutputProblem", "estimate_tokens"]

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


class OutputProblem(Exception):
    """Why an answer could not be used (internal; providers turn it into LLMOutputError)."""


def _json_text(text: str) -> str:
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        return fenced.group(1)
    if not stripped.startswith("{"):
        start, end = stripped.find("{"), stripped.rfind("}")
        if start != -1 and end > start:
            return stripped[start : end + 1]
    return stripped


def parse_output(text: str, schema: type[OutputT]) -> OutputT:
    """Parse ``text`` as one JSON object (code fences and surrounding prose tolerated) into ``schema``.

    Raises OutputProblem saying what was wrong: not JSON, not an object, or schema errors.
    """
    if not text or not text.strip():
        raise OutputProblem("the answer was empty")
    try:
        data = json.loads(_json_text(text))
    except json.JSONDecodeError as exc:
        raise OutputProblem(f"not valid JSON ({exc.msg} at position {exc.pos})") from None
    if not isinstance(data, dict):
        raise OutputProblem(f"expected a JSON object, got {type(data).__name__}")
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()[:5]
        )
        raise OutputProblem(f"JSON does not match the schema: {problems}") from None


def estimate_tokens(text: str) -> int:
    """A rough token count (about four characters per token) for providers that do not count."""
    return max(1, (len(text) + 3) // 4) if text else 0


def model_dump_text(model: BaseModel) -> str:
    """The JSON text of a model (what a heuristic 'answer' looks like on the wire)."""
    return model.model_dump_json()
