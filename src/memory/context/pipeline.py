"""The context pipeline the facade calls: hydrate, then compile, with timings in the trace."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from memory.context.analysis import embed_ir
from memory.context.cache import DEFAULT_CACHE, PromptCache, ir_key
from memory.context.compile import CompiledPrompt, compile_prompt
from memory.context.hydrate import ContextSource, hydrate
from memory.context.summarise import Summariser
from memory.context.tokens import counter_for
from memory.context.types import ContextRequest, ContextStrategy, TokenBudget
from memory.errors import InvalidInputError

__all__ = ["build_context", "memory_context_text", "as_request"]


def as_request(request: ContextRequest | str | None, fields: dict[str, Any]) -> ContextRequest:
    """A ContextRequest from a request, or from an observation string plus request fields.

    Raises InvalidInputError for unknown or invalid fields.
    """
    if isinstance(request, ContextRequest):
        if fields:
            raise InvalidInputError("give a ContextRequest or keyword fields, not both")
        return request
    data = dict(fields)
    if isinstance(request, str):
        data["observation"] = request
    elif request is not None:
        raise InvalidInputError(f"request must be a ContextRequest or a string, got {type(request).__name__}")
    try:
        return ContextRequest.model_validate(data)
    except ValueError as exc:
        raise InvalidInputError(f"invalid context request: {exc}") from exc


def build_context(
    memory: Any,
    request: ContextRequest,
    *,
    sources: Sequence[ContextSource] | None = None,
    summariser: Summariser | None = None,
    include_observation: bool = True,
    cache: PromptCache | None = DEFAULT_CACHE,
) -> CompiledPrompt:
    """Hydrate ``request`` from ``memory`` and compile it (from ``cache`` when the IR was compiled before).

    ``request.strategy.embed_sections`` fills section and tool embeddings with
    ``memory.embedder`` first. The trace says whether the cache served it (``cache_hit``).

    The trace's ``timings_ms`` holds wall-clock ms of hydrate, compile, the whole
    call (``total``) and each source, the recall call alone (``recall``), and
    this thread's CPU ms of the whole call and of recall (``total_cpu``,
    ``recall_cpu``: unlike wall time, not inflated by other processes).
    """
    counter = counter_for(request.model)
    started, cpu = time.perf_counter(), time.thread_time()
    ir = hydrate(memory, request, sources=sources, counter=counter)
    if request.strategy.embed_sections:
        ir = embed_ir(ir, memory.embedder)
    hydrated = time.perf_counter()
    key = ir_key(ir, tokenizer=counter.name, include_observation=include_observation, summariser=summariser)
    cached = cache.get(key) if cache is not None else None
    if cached is not None:
        compiled = cached
    else:
        compiled = compile_prompt(ir, counter=counter, summariser=summariser, include_observation=include_observation)
        if cache is not None:
            cache.put(key, compiled)
    done = time.perf_counter()
    timings = {
        "hydrate": round((hydrated - started) * 1000.0, 3),
        "compile": round((done - hydrated) * 1000.0, 3),
        "total": round((done - started) * 1000.0, 3),
        "total_cpu": round((time.thread_time() - cpu) * 1000.0, 3),
        **{f"source.{note.source}": note.ms for note in ir.sources},
        **ir.timings_ms,
    }
    trace_update: dict[str, Any] = {"timings_ms": timings, "cache_hit": cached is not None, "sources": ir.sources}
    note = getattr(summariser, "note", None)
    summariser_note = note() if callable(note) and cached is None else None
    if summariser_note is not None:
        trace_update["sources"] = (*compiled.trace.sources, summariser_note)
    return compiled.model_copy(update={"trace": compiled.trace.model_copy(update=trace_update)})


def memory_context_text(
    memory: Any,
    query: str,
    max_tokens: int = 1000,
    *,
    model: str | None = None,
    limit: int = 10,
    **scope: Any,
) -> str:
    """The memories relevant to ``query`` as one text block of at most ``max_tokens`` tokens (seed 001).

    Scope keywords: namespace, user, agent, thread, clearance. No clock or
    system sections; the budget covers the returned text exactly.
    """
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise InvalidInputError(f"max_tokens must be a positive integer, got {max_tokens!r}")
    request = as_request(
        query,
        {
            **scope,
            "model": model,
            "budget": TokenBudget(total=max_tokens),
            "strategy": ContextStrategy(semantic_limit=limit, include_time=False),
        },
    )
    return build_context(memory, request, include_observation=False).system
