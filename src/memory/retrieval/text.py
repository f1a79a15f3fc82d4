"""Pure text helpers for the lexical channel: word splitting and query terms."""

from __future__ import annotations

import re

__all__ = ["words", "query_terms", "feedback_terms", "feedback_applies", "content_words", "STOPWORDS"]

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
#: :data:`_WORD` on lowercased ASCII text: the same words, found faster (a fifth less time on LongMemEval's turns).
_ASCII_WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)?")

#: English stopwords (function words and question words) dropped from lexical queries.
STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each few for from further had hadn't has hasn't have haven't
    having he he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll
    i'm i've if in into is isn't it it's its itself let's me more most mustn't my myself no nor
    not of off on once only or other ought our ours ourselves out over own same shan't she she'd
    she'll she's should shouldn't so some such than that that's the their theirs them themselves
    then there there's these they they'd they'll they're they've this those through to too under
    until up very was wasn't we we'd we'll we're we've were weren't what what's when when's where
    where's which while who who's whom why why's will with won't would wouldn't you you'd you'll
    you're you've your yours yourself yourselves just get got did does
    """.split()
)

MAX_QUERY_TERMS = 32


def words(text: str) -> list[str]:
    """Lowercased words of ``text`` (letters and digits; apostrophes inside words kept, as ``'``)."""
    lowered = text.lower()
    if lowered.isascii():
        ascii_words: list[str] = _ASCII_WORD.findall(lowered)
        return ascii_words
    if "’" in lowered:  # the same words either way: neither apostrophe is a word character
        lowered = lowered.replace("’", "'")
    found: list[str] = _WORD.findall(lowered)
    return found


def content_words(text: str) -> int:
    """The number of content words (stopwords left out) of ``text``."""
    found = words(text)
    return len(found) - sum(map(STOPWORDS.__contains__, found))


def query_terms(text: str) -> list[str]:
    """Distinct lexical query terms: words minus stopwords, in order, at most 32.

    When every word is a stopword the words themselves are used, so a query
    like "who is he" still searches. Terms contain only letters, digits and
    apostrophes, so no query syntax can reach a search engine.
    """
    all_words = words(text)
    kept = [w for w in all_words if w not in STOPWORDS]
    if not kept:
        kept = all_words
    return _split_clitics(kept)[:MAX_QUERY_TERMS]


def _split_clitics(kept: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for word in kept:
        head, *tails = word.split("'")
        # "caroline's" -> "caroline"; "o'neill" -> "o", "neill" (suffixes of 1-2 chars are clitics)
        for part in [head, *(t for t in tails if len(t) > 2)]:
            if part and part not in seen:
                seen[part] = None
    return list(seen)


def feedback_terms(texts: list[str], query: list[str], limit: int) -> list[str]:
    """Pseudo-relevance feedback: up to ``limit`` new terms from the top-ranked ``texts`` (best first).

    A term scores ``Σ 1/rank`` over the texts holding it (stopwords, terms of
    the query and words of one or two letters left out); ties go to the term
    seen first. No collection statistics are needed, so every backend
    expands a query the same way.
    """
    asked = set(query)
    score: dict[str, float] = {}
    for rank, text in enumerate(texts, 1):
        for term in _split_clitics([w for w in words(text) if w not in STOPWORDS]):
            if len(term) > 2 and term not in asked and term not in STOPWORDS:
                score[term] = score.get(term, 0.0) + 1.0 / rank
    order = {term: position for position, term in enumerate(score)}
    return sorted(score, key=lambda t: (-score[t], order[t]))[: max(limit, 0)]


def feedback_applies(texts: list[str], max_words: int | None) -> bool:
    """Whether pseudo-relevance feedback may expand a query from ``texts`` (the top lexical hits).

    Only while they are short: their mean content words at most ``max_words``
    (None: always). The top hits of a chat of short turns share the words of
    what was asked about and expand the query well; long texts (an assistant's
    essays, documents) hold many other words, and expanding from them drifts
    away from the question. Measured in docs/retrieval.md ("Feedback where the
    turns are short") on LoCoMo (short turns) and LongMemEval (long ones).
    """
    if max_words is None:
        return bool(texts)
    if not texts:
        return False
    return sum(content_words(t) for t in texts) <= max_words * len(texts)
