"""The Porter stemmer (M. F. Porter, 1980, the original algorithm), pure Python.

The lexical channel of flat recall searches an FTS5 (``porter``) or
PostgreSQL (snowball English) index, so "painting" finds "paint" and
"adopted" finds "adoption"'s stem. Tier retrieval ranks pages in Python
(:mod:`memory.tiers.search`) and stems its words the same way with
:func:`stem`: the algorithm as FTS5's ``porter`` tokenizer applies it.
Without stemming, tier retrieval on LoCoMo dev lost 0.05–0.07 of R@10.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["stem"]

_VOWELS = frozenset("aeiou")


def _consonant(word: str, i: int) -> bool:
    char = word[i]
    if char in _VOWELS:
        return False
    if char == "y":
        return i == 0 or not _consonant(word, i - 1)
    return True


def _measure(stem_: str) -> int:
    """m in [C](VC)^m[V]: the number of vowel-consonant sequences."""
    m = 0
    previous_vowel = False
    for i in range(len(stem_)):
        vowel = not _consonant(stem_, i)
        if previous_vowel and not vowel:
            m += 1
        previous_vowel = vowel
    return m


def _has_vowel(stem_: str) -> bool:
    return any(not _consonant(stem_, i) for i in range(len(stem_)))


def _double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _consonant(word, len(word) - 1)


def _cvc(word: str) -> bool:
    """Ends consonant-vowel-consonant, the last not w, x or y."""
    if len(word) < 3:
        return False
    return (
        _consonant(word, len(word) - 3)
        and not _consonant(word, len(word) - 2)
        and _consonant(word, len(word) - 1)
        and word[-1] not in "wxy"
    )


def _replace(word: str, suffix: str, replacement: str, min_m: int) -> str | None:
    """``word`` with ``suffix`` replaced when it ends so and the stem's m > ``min_m``; None when no suffix match."""
    if not word.endswith(suffix):
        return None
    stem_ = word[: len(word) - len(suffix)]
    return stem_ + replacement if _measure(stem_) > min_m else word


_STEP2 = (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"), ("abli", "able"),
    ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"), ("ization", "ize"), ("ation", "ate"),
    ("ator", "ate"), ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous"), ("aliti", "al"),
    ("iviti", "ive"), ("biliti", "ble"),
)  # fmt: skip
_STEP3 = (("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""), ("ness", ""))
_STEP4 = (
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou", "ism", "ate",
    "iti", "ous", "ive", "ize",
)  # fmt: skip


def _step1(word: str) -> str:
    if word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("ies"):
        word = word[:-2]
    elif word.endswith("ss"):
        pass
    elif word.endswith("s"):
        word = word[:-1]
    if word.endswith("eed"):
        if _measure(word[:-3]) > 0:
            word = word[:-1]
    else:
        for suffix in ("ed", "ing"):
            if word.endswith(suffix) and _has_vowel(word[: -len(suffix)]):
                word = word[: -len(suffix)]
                if word.endswith(("at", "bl", "iz")):
                    word += "e"
                elif _double_consonant(word) and word[-1] not in "lsz":
                    word = word[:-1]
                elif _measure(word) == 1 and _cvc(word):
                    word += "e"
                break
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    return word


def _step2to4(word: str) -> str:
    for table in (_STEP2, _STEP3):
        for suffix, replacement in table:
            result = _replace(word, suffix, replacement, 0)
            if result is not None:
                word = result
                break
    for suffix in _STEP4:
        if word.endswith(suffix):
            stem_ = word[: -len(suffix)]
            if _measure(stem_) > 1 and (suffix != "ion" or stem_.endswith(("s", "t"))):
                word = stem_
            break
    return word


def _step5(word: str) -> str:
    if word.endswith("e"):
        stem_ = word[:-1]
        m = _measure(stem_)
        if m > 1 or (m == 1 and not _cvc(stem_)):
            word = stem_
    if _measure(word) > 1 and _double_consonant(word) and word.endswith("l"):
        word = word[:-1]
    return word


@lru_cache(maxsize=50_000)
def stem(word: str) -> str:
    """The Porter stem of a lowercase word (words of one or two letters and non-alphabetic ones are kept)."""
    if len(word) <= 2 or not word.isalpha() or not word.isascii():
        return word
    return _step5(_step2to4(_step1(word)))
