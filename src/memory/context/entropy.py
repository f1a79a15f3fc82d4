"""How much information a text carries, estimated by its zlib-compressed size (pure).

Used by compile (``trace.estimated_entropy``) and by :mod:`memory.context.analysis`
(``estimate_impact``), so neither imports the other.
"""

from __future__ import annotations

import zlib

__all__ = ["information_bits", "estimated_entropy"]


def information_bits(text: str) -> float:
    """Information content of ``text`` in bits, estimated by its zlib-compressed size (0 for empty text)."""
    if not text:
        return 0.0
    return 8.0 * len(zlib.compress(text.encode("utf-8"), 9))


def estimated_entropy(*texts: str) -> float | None:
    """Bits per character of ``texts`` joined, by zlib-compressed size; None for no text."""
    text = "\n".join(t for t in texts if t)
    if not text:
        return None
    return round(information_bits(text) / len(text), 6)
