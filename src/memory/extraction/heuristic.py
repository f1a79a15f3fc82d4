"""Extraction without a model: keywords, entities, relations and facts from patterns (pure functions).

Deterministic and fast, English only, and deliberately modest:

* facts — the sentences of the text (three words or more);
* keywords — content words scored by frequency, capitalisation and length;
* entities — runs of capitalised words (a sentence's first word only when it
  is not a common word), known entity names, years and dates, typed by
  simple cues (``in/at/to/from X`` → place, ``Inc``/``University`` →
  organisation, subject of a personal verb → person);
* relations — subject–verb–object patterns: ``<entity or I/my> <verb
  [preposition]> <object>``, and ``my <thing> is <value>``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from memory.llms.schemas import EntityOut, ExtractionOut, RelationOut
from memory.records import normalise_name  # the graph's merge key, re-exported here
from memory.retrieval.text import STOPWORDS, words

__all__ = [
    "extract_heuristic",
    "sentences",
    "keywords",
    "entities",
    "relations",
    "normalise_name",
    "FUNCTIONAL_PREDICATES",
    "NEGATIONS",
]

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_CAP_RUN = re.compile(r"\b(?:[A-Z][\w'’\-]*|[A-Z]{2,})(?:\s+(?:of|de|van|von|the|and)?\s*(?:[A-Z][\w'’\-]*))*")
_YEAR = re.compile(r"\b(?:1[89]|20)\d\d\b")
_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_DATE = re.compile(rf"\b(?:\d{{1,2}}\s+(?:{_MONTHS})(?:\s+\d{{4}})?|(?:{_MONTHS})\s+\d{{1,2}}(?:,?\s+\d{{4}})?)\b")
_ORG_WORDS = {"inc", "corp", "ltd", "llc", "university", "company", "group", "bank", "school", "college", "gmbh"}
_PLACE_PREPS = {"in", "at", "to", "from", "near", "visited", "into"}
_PERSON_VERBS = {
    "said", "says", "likes", "loves", "hates", "prefers", "lives", "moved", "works", "worked", "married",
    "met", "wants", "thinks", "feels", "went", "is", "was", "has", "had", "studies", "plays", "enjoys",
}  # fmt: skip
_COMMON_CAPS = {
    "i", "the", "a", "an", "my", "we", "our", "you", "your", "he", "she", "they", "it", "this", "that", "there",
    "yes", "no", "hi", "hey", "hello", "thanks", "thank", "oh", "well", "so", "but", "and", "also", "what",
    "when", "where", "who", "why", "how", "did", "do", "does", "is", "are", "was", "were", "can", "could",
    "would", "should", "will", "just", "not", "wow", "great", "sure", "ok", "okay", "sounds", "that's", "it's",
    "i'm", "i've", "let", "let's", "maybe", "really", "yeah", "nice", "good", "love", "awesome", "today",
    "yesterday", "tomorrow", "last", "next", "after", "before", "then", "if", "as", "at", "in", "on", "for",
    "with", "by", "from", "to", "of", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
}  # fmt: skip
_PREPS = r"(?:in|to|at|for|from|with|of|on|by|into|as|about)"
_ADVERB = r"(?:no longer |not |never |also |still |really |just |recently )?"
_IRREGULAR = (
    "went|met|got|made|bought|saw|took|gave|began|left|found|felt|thought|told|said|became|wrote|read|won|lost"
    "|built|ran|sang|drove|flew|ate|drank|chose|brought|taught|sold|kept|held|spent|led"
)
_VERB = (
    rf"({_ADVERB}(?:(?:is|are|was|were|am) \w+(?:ed|en) {_PREPS}|is|are|was|were|am|has|have|had|{_IRREGULAR}"
    rf"|\w+(?:s|ed))(?: {_PREPS})?)"
)
_I_VERB = rf"({_ADVERB}(?:(?:am|was) \w+(?:ed|en) {_PREPS}|\w+)(?: {_PREPS})?)"
_SUBJECT = r"([A-Z][\w'’\-]*(?:\s+[A-Z][\w'’\-]*)*)"
_SVO = re.compile(rf"^{_SUBJECT}\s+{_VERB}\s+(.+)$")
_I_SVO = re.compile(rf"^(I)\s+{_I_VERB}\s+(.+)$")
_MY_IS = re.compile(r"^[Mm]y\s+([\w\s'’\-]{1,40}?)\s+(?:is|are|was)\s+(.+)$")
_CLAUSE_END = re.compile(
    r"[,;:!?]|\s(?:because|but|and|which|who|when|so|since|while|in|on|at|during|for|with|after|before"
    r"|last|next|this|yesterday|today|tomorrow|every|ago)(?:\s|$)|\.(?:\s|$)"
)
_ARTICLES = re.compile(r"^(?:a|an|the|my|his|her|their|our|some)\s+", re.IGNORECASE)

#: Predicates that hold one value at a time: a new object replaces the old one (SUPERSEDE).
FUNCTIONAL_PREDICATES = frozenset(
    {
        "is", "am", "are", "lives in", "moved to", "works at", "works for", "works as", "is married to",
        "married", "is from", "lives at", "name is", "age is", "is called", "studies at", "studies",
        "is dating", "drives", "prefers",
    }
)  # fmt: skip
#: Words that turn a statement into the negation of an earlier one (DELETE).
NEGATIONS = ("no longer ", "not ", "never ", "doesn't ", "don't ", "isn't ", "stopped ")


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (split on . ! ? and newlines), stripped, non-empty."""
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def keywords(text: str, limit: int = 10) -> list[str]:
    """Content words of ``text`` by score: frequency, +1 if ever capitalised, + length bonus."""
    counts = Counter(w for w in words(text) if w not in STOPWORDS and len(w) >= 3 and not w.isdigit())
    capitalised = {w.lower() for w in re.findall(r"\b[A-Z][a-z]+", text)}
    scored = {w: c + (1.0 if w in capitalised else 0.0) + min(len(w), 12) / 24 for w, c in counts.items()}
    ranked = sorted(scored, key=lambda w: (-scored[w], w))
    return ranked[:limit]


def _entity_type(name: str, before: str, after: str) -> str:
    lowered = name.lower().split()
    if _YEAR.fullmatch(name) or _DATE.fullmatch(name):
        return "date"
    if lowered and lowered[-1] in _ORG_WORDS or (lowered and lowered[0] in _ORG_WORDS):
        return "organisation"
    if before in {"mr", "mrs", "ms", "dr"}:
        return "person"
    if before in _PLACE_PREPS:
        return "place"
    if after in _PERSON_VERBS:
        return "person"
    return "thing"


def entities(text: str, known: Iterable[str] = ()) -> list[EntityOut]:
    """Named entities in ``text``: capitalised runs, known names, years and dates; first mention order."""
    found: dict[str, EntityOut] = {}

    def add(name: str, kind: str) -> None:
        name = name.strip(" .,;:!?\"'()")
        key = normalise_name(name)
        if not key or key in STOPWORDS or key in _COMMON_CAPS:
            return
        if key not in found or (found[key].type == "thing" and kind != "thing"):
            found[key] = EntityOut(name=found[key].name if key in found else name, type=kind)

    for sentence in sentences(text):
        dates = [m.span() for m in _DATE.finditer(sentence)]
        for match in _CAP_RUN.finditer(sentence):
            if any(start <= match.start() < end for start, end in dates):
                continue
            span = match.group(0)
            tokens = span.split()
            while tokens and tokens[0].lower().strip("'’") in _COMMON_CAPS:
                tokens = tokens[1:]  # "The Smiths" -> "Smiths" only when "The" is at the start
            while tokens and tokens[-1].lower() in {"of", "de", "van", "von", "the", "and"}:
                tokens = tokens[:-1]
            title = ""
            if tokens and tokens[0].rstrip(".").lower() in {"mr", "mrs", "ms", "dr"}:
                title, tokens = tokens[0].rstrip(".").lower(), tokens[1:]
            if not tokens:
                continue
            name = " ".join(tokens)
            head = sentence[: match.start()].split() + ([title] if title else [])
            tail = sentence[match.end() :].split()
            before = head[-1].lower() if head else ""
            after = tail[0].lower().strip(".,;:!?") if tail else ""
            add(re.sub(r"['’]s$", "", name), _entity_type(name, before, after))
        for match in _DATE.finditer(sentence):
            add(match.group(0), "date")
        for match in _YEAR.finditer(sentence):
            if not any(start <= match.start() < end for start, end in dates):
                add(match.group(0), "date")
    lowered = text.lower()
    for name in known:
        key = normalise_name(name)
        if key and key not in found and re.search(rf"(?<!\w){re.escape(key)}(?!\w)", lowered):
            found[key] = EntityOut(name=name, type="thing")
    return list(found.values())[:50]


def _object(text: str) -> str:
    cut = _CLAUSE_END.search(text)
    value = text[: cut.start()] if cut else text
    value = _ARTICLES.sub("", value.strip().rstrip("."))
    return " ".join(value.split()[:6])


def relations(text: str, speaker: str | None = None) -> list[RelationOut]:
    """Subject–verb–object statements in ``text``; "I"/"my" resolve to ``speaker`` (else "user")."""
    me = speaker or "user"
    out: list[RelationOut] = []
    seen: set[tuple[str, str, str]] = set()
    for sentence in sentences(text):
        sentence = sentence.strip().rstrip(".!?")
        found: tuple[str, str, str] | None = None
        my = _MY_IS.match(sentence)
        if my:
            found = (me, my.group(1).strip().lower(), _object(my.group(2)))
        else:
            svo = _I_SVO.match(sentence) or _SVO.match(sentence)
            if svo:
                subject = svo.group(1)
                first = subject.split()[0].lower()
                if subject == "I":
                    subject = me
                elif first in _COMMON_CAPS:
                    subject = ""
                predicate = svo.group(2).lower()
                if predicate == "am" or predicate.startswith("am "):
                    predicate = "is" + predicate[2:]
                found = (subject, predicate, _object(svo.group(3)))
        if found and all(found) and len(found[2]) <= 200:
            key = (normalise_name(found[0]), found[1], normalise_name(found[2]))
            if key not in seen:
                seen.add(key)
                out.append(RelationOut(subject=found[0], predicate=found[1], object=found[2]))
    return out[:50]


_SPEAKER_PREFIX = re.compile(r"^([A-Z][\w'’\-]*(?: [A-Z][\w'’\-]*)?):\s+")


def extract_heuristic(text: str, *, known_entities: Sequence[str] = (), speaker: str | None = None) -> ExtractionOut:
    """Facts, keywords, entities and relations of ``text`` by the rules in the module docstring.

    A transcript line "Name: text" names its speaker ("I"/"my" become Name).
    """
    prefix = _SPEAKER_PREFIX.match(text)
    body = text
    if prefix:
        speaker = speaker or prefix.group(1)
        body = text[prefix.end() :]
    facts = [s for s in sentences(text) if len(s.split()) >= 3][:50]
    found_entities = entities(text, known_entities)
    rels = relations(body, speaker)
    names = {normalise_name(e.name) for e in found_entities}
    for rel in rels:  # subjects and objects of relations are entities too
        for name in (rel.subject, rel.object):
            if normalise_name(name) not in names and len(found_entities) < 50 and len(name.split()) <= 4:
                names.add(normalise_name(name))
                found_entities.append(EntityOut(name=name, type="person" if name == rel.subject else "thing"))
    return ExtractionOut(facts=facts, keywords=keywords(text), entities=found_entities, relations=rels)
