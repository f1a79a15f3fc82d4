"""A cache of compiled prompts keyed by the IR's content hash (seed 000 ``meta.cache_hit``).

Compiling is a pure function of the IR (sections, tools, observation, budget,
strategy), the tokenizer, whether the observation is included and the
summariser, so two requests that hydrate to the same IR compile to the same
prompt. The key hashes all of those; the IR's timestamp enters truncated to
the minute (recency values move by < 0.01 % within a minute at the default
decay). The cache is bounded (LRU, ``maxsize`` entries) and thread-safe; it
counts hits and misses (``memory bench context`` reports the hit rate). A key
is a hash of the content itself, so an entry can only ever serve an identical
IR — nothing crosses a namespace or a clearance. Scores and relevances enter rounded
to 4 decimals (a recall score drifts with its recency factor between two calls).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from memory.context.types import PromptIR

if TYPE_CHECKING:
    from memory.context.compile import CompiledPrompt

__all__ = ["PromptCache", "ir_key", "DEFAULT_CACHE"]


def ir_key(ir: PromptIR, *, tokenizer: str, include_observation: bool, summariser: Any) -> str:
    """The content hash a compiled prompt is cached under (sha256 hex)."""
    digest = hashlib.sha256()
    minute = ir.meta.timestamp.replace(second=0, microsecond=0).isoformat()
    head = [tokenizer, str(include_observation), type(summariser).__qualname__, minute]
    head += [ir.meta.budget.model_dump_json(), ir.meta.strategy.model_dump_json(), ir.observation]
    for part in head:
        digest.update(part.encode("utf-8") + b"\x00")
    for s in ir.sections:  # every field but the embedding, without a model_dump per section (it is hot)
        source = s.source
        fields = (
            s.id, s.label, source.kind, source.name, source.ref, _round(source.score), s.content, s.tokens,
            s.min_tokens, s.priority, _round(s.relevance), s.recency.isoformat() if s.recency else None,
            s.composition, s.shrink, s.content_hash,
        )  # fmt: skip
        digest.update("\x1f".join(map(str, fields)).encode("utf-8") + b"\x00")
    for tool in ir.tools:
        data = _rounded(tool.model_dump(mode="json", exclude={"embedding"}))
        digest.update(json.dumps(data, sort_keys=True).encode("utf-8") + b"\x00")
    return digest.hexdigest()


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _rounded(value: Any) -> Any:
    """``value`` with floats rounded to 4 decimals: a recall score that moved with the clock is the same IR."""
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


class PromptCache:
    """A bounded, thread-safe LRU of compiled prompts with hit/miss counters."""

    def __init__(self, maxsize: int = 256) -> None:
        """``maxsize``: entries kept (0 disables the cache)."""
        self.maxsize = maxsize
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[str, CompiledPrompt] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> CompiledPrompt | None:
        """The prompt cached under ``key``, counting a hit or a miss."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return found

    def put(self, key: str, compiled: CompiledPrompt) -> None:
        """Cache ``compiled`` under ``key``, evicting the least recently used beyond ``maxsize``."""
        if self.maxsize <= 0:
            return
        with self._lock:
            self._entries[key] = compiled
            self._entries.move_to_end(key)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)

    def stats(self) -> dict[str, Any]:
        """Hits, misses, hit rate (None before any lookup) and size."""
        with self._lock:
            looked = self.hits + self.misses
            return {
                "hits": self.hits,
                "misses": self.misses,
                "hit_rate": round(self.hits / looked, 4) if looked else None,
                "size": len(self._entries),
            }

    def clear(self) -> None:
        """Forget every entry and reset the counters."""
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0


#: The process-wide cache :func:`memory.context.pipeline.build_context` uses by default.
DEFAULT_CACHE = PromptCache()
