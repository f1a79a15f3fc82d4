"""Canonical facts from one chat message, offline: spaCy's parse, speaker-resolved, third person.

:func:`extract_offline` reads one message said by ``speaker`` (to
``listener``, when the conversation has one) and returns the facts it states
about people, each rewritten as a self-contained third-person statement
("I moved to Porto last week" said by Maya -> "Maya moved to Porto", with
``when="last week"`` for the caller to resolve against the message's time):

* sentences are kept when they disclose something: a statement (not a
  question), with a subject and a verb, about the speaker (a first-person
  pronoun anywhere) or a named person; greetings, thanks, compliments and
  reactions to the listener ("you"), hypotheticals ("would", "could"),
  imperatives and fragments are dropped;
* leading interjections, discourse words and the listener's name are cut;
  "I/me/we/us" become the speaker's name, "my/our" the speaker's
  possessive, "you/your" the listener's; verbs agree ("I am" -> "Maya is");
  relative time expressions leave the text and go to ``when``;
* relations (subject, predicate, object) come from the dependency parse and
  a scan of the prepositional phrases after each verb (the small model's
  attachments are not always right); predicates are verb lemmas with their
  particle and preposition ("move to", "work at", "have manager"); negation
  ("not", "no longer", "never") marks the relation negated;
* entities are the model's named entities (people, places, organisations,
  named things and calendar dates; numbers and relative times are not
  entities), typed by the relation they fill when that is surer
  (the object of "work at" is an organisation).

The model is loaded lazily (:mod:`memory.extraction.nlp`); callers check
:func:`memory.extraction.nlp.available` and fall back otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory.extraction import nlp as nlp_model
from memory.extraction.parse import (
    FIRST,
    FIRST_OBJECT,
    FIRST_POSS,
    FIRST_SUBJECT,
    RELATIVE_TIME,
    SECOND,
    phrase,
    possessive,
    relations_of,
    subject_of,
    unresolved_reference,
)
from memory.extraction.slots import closes_slots, slot_of
from memory.llms.schemas import EntityOut, RelationOut

__all__ = ["CanonicalFact", "MessageFacts", "extract_offline", "third_person", "RELATIVE_TIME"]

_DISCOURSE = {
    "well", "so", "yeah", "yes", "yep", "no", "nope", "oh", "wow", "hey", "hi", "hello", "anyway", "anyways",
    "actually", "also", "btw", "ok", "okay", "lol", "haha", "aw", "aww", "omg", "sure", "right", "honestly",
    "and", "but", "plus", "totally", "absolutely", "definitely", "indeed", "ah", "ahh", "hmm", "um", "oops",
    "sorry", "thanks", "cool", "great", "awesome", "nice", "yay", "woah", "whoa", "gosh", "man", "dude",
    "hahaha", "congrats", "oh,", "true", "exactly", "basically", "now", "then", "wait", "hmm,",
}  # fmt: skip
_COGNITIVE = {"think", "guess", "bet", "agree", "know", "believe", "understand", "see", "mean", "wonder", "hope",
              "wish", "suppose", "imagine", "appreciate", "thank", "congratulate", "admire", "say", "tell"}  # fmt: skip
_CERTAIN = {"sure", "certain", "determined", "confident", "positive", "glad", "convinced"}
_TOGETHER = {"together", "each", "both", "let's", "us", "all"}
_FUTURE = {"will", "'ll", "can", "ca", "gonna", "shall"}
_FEELINGS = {
    "happy", "excited", "thrilled", "glad", "grateful", "thankful", "stoked", "proud", "pumped", "sad", "nervous",
    "upset", "sorry", "relieved", "lucky", "blessed", "amazed", "overwhelmed", "bummed", "psyched",
}  # fmt: skip
_HYPOTHETICAL = {"would", "'d", "could", "should", "might", "may", "must"}
_DESIRE = {"love", "like", "prefer", "want"}
_DROP_ENTITY_LABELS = {"CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY", "TIME"}
_ENTITY_TYPES = {
    "PERSON": "person", "GPE": "place", "LOC": "place", "FAC": "place", "ORG": "organisation",
    "NORP": "group", "DATE": "date", "EVENT": "event", "PRODUCT": "thing", "WORK_OF_ART": "thing",
    "LANGUAGE": "language", "LAW": "thing",
}  # fmt: skip
_SLOT_TYPES = {
    "lives_in": "place", "home": "place", "works_at": "organisation", "studies_at": "organisation",
    "manager": "person", "partner": "person",
}  # fmt: skip
_IRREGULAR_3RD = {"be": "is", "have": "has", "do": "does", "go": "goes"}
_ATTACH_BEFORE = {"on", "in", "at", "during", "since", "from", "for", "by", "over"}


@dataclass(frozen=True)
class CanonicalFact:
    """One fact: a third-person statement, who it is about, its relations and when it happened."""

    statement: str
    subject: str
    relations: tuple[RelationOut, ...] = ()
    negated: bool = False
    when: str | None = None
    #: single-valued slot -> value this fact fills (lives_in -> Porto)
    slots: dict[str, str] = field(default_factory=dict)
    #: slots this fact ends outright ("broke up" ends partner)
    ends: tuple[str, ...] = ()
    #: ``when`` resolved against the message's time: (start, end, granularity)
    time: tuple[datetime, datetime, str] | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "statement": self.statement, "subject": self.subject,
            "relations": [r.model_dump() for r in self.relations], "negated": self.negated, "when": self.when,
            "slots": dict(self.slots), "ends": list(self.ends),
            "time": None if self.time is None else {
                "start": self.time[0].isoformat(), "end": self.time[1].isoformat(), "granularity": self.time[2],
            },
        }  # fmt: skip


@dataclass
class MessageFacts:
    """Everything one message yields: facts, entities, aliases, a correction, and who extracted it."""

    facts: list[CanonicalFact] = field(default_factory=list)
    entities: list[EntityOut] = field(default_factory=list)
    #: (alias, canonical name) pairs the message shows ("I'm Maya Chen" said by Maya)
    aliases: list[tuple[str, str]] = field(default_factory=list)
    #: the new value when the message corrects the speaker's previous fact ("sorry, I meant Tuesday")
    correction: str | None = None
    model: str = "spacy"
    fallback_reason: str | None = None


def third_person(verb: str, lemma: str) -> str:
    """The third-person singular present of a verb ("go" -> "goes", "try" -> "tries", "am" -> "is")."""
    lemma = lemma.lower()
    if lemma in _IRREGULAR_3RD:
        out = _IRREGULAR_3RD[lemma]
    elif re.search(r"[^aeiou]y$", lemma):
        out = lemma[:-1] + "ies"
    elif re.search(r"(?:s|sh|ch|x|z|o)$", lemma):
        out = lemma + "es"
    else:
        out = lemma + "s"
    return out.capitalize() if verb[:1].isupper() else out


def _content_start(sent: Any, listener_names: set[str]) -> int:
    """Index (in the doc) of the first token after leading interjections, discourse words and vocatives."""
    tokens = list(sent)
    i = 0
    lower = sent.text.lower()
    if lower.startswith("by the way"):
        i = 3
    while i < len(tokens):
        tok = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if tok.pos_ in ("INTJ", "PUNCT", "SPACE", "CCONJ") or tok.lower_ in _DISCOURSE:
            i += 1
            continue
        if tok.pos_ == "PROPN" and tok.text.lower() in listener_names and (nxt is None or nxt.pos_ == "PUNCT"):
            i += 1
            continue
        break
    return int(sent.start) + i


def _keep(root: Any, start: int, end: int, speaker_names: set[str], strict: bool = True) -> Any:
    """``root`` when the clause it heads (tokens ``start:end``) states a fact worth keeping, else None.

    ``strict=False`` skips the checks for content (a noun, two content words):
    short statements that fill a slot ("I am single", "we broke up") pass then.
    """
    body = root.doc[start:end]
    if "?" in body.text or start >= end:
        return None
    words = [t for t in body if t.is_alpha]
    if len(words) < 3:
        return None
    if root.i < start or root.pos_ not in ("VERB", "AUX"):
        return None
    lowers = {t.lower_ for t in body}
    subject = subject_of(root)
    if subject is None or not start <= subject.i < end:
        return None  # no subject, or only a vocative before the clause ("Yep John, a bit of support can…")
    subj = subject.lower_
    if subj in SECOND or any(c.lower_ in SECOND for c in subject.children if c.dep_ == "poss"):
        return None
    named_subject = subject.ent_type_ == "PERSON" or (subject.pos_ == "PROPN" and subject.ent_type_ != "")
    own_subject = (
        subj in FIRST_SUBJECT
        or subj in speaker_names
        or any(c.dep_ == "poss" and c.lower_ in FIRST_POSS for c in subject.children)
        or any(c.dep_ == "conj" and c.lower_ in FIRST_SUBJECT for c in subject.children)  # "Daniel and I"
    )
    about_speaker = subject.pos_ == "NOUN" and bool(lowers & (FIRST_OBJECT | FIRST_POSS))
    if not (own_subject or named_subject or about_speaker):
        return None  # "It's been tough, but…", "Here's a peek…", "The team is nice."
    if subj == "we" and (lowers & _TOGETHER or {c.lower_ for c in root.children if c.dep_ == "aux"} & _FUTURE):
        return None  # "We'll keep pushing each other", "We can do amazing things together": the two of us
    if lowers & SECOND and (root.lemma_ in _COGNITIVE or any(c.dep_ == "acomp" for c in root.children)):
        return None  # "I'm so happy for you", "I think you'd be great"
    if root.lemma_ in _COGNITIVE and not any(c.dep_ in ("dobj", "xcomp", "prep") for c in root.children):
        return None  # "I think it'd help", "I know it"
    if any(c.dep_ == "acomp" and c.lemma_ in _CERTAIN for c in root.children):
        return None  # "I'm sure we'll make it"
    if root.lemma_ == "be" and any(c.lower_ in ("here", "there") and c.i < root.i for c in root.children):
        return None  # "Here's a photo of my bookshelf": showing, not telling
    if unresolved_reference(root, start, end):
        return None  # "Tim loves their work", "I do this in a comfy spot": not a fact on its own
    if root.lemma_ == "mean" and subj in FIRST_SUBJECT:
        return None  # "Sorry, I meant Tuesday": a correction, handled apart
    aux = {c.lower_ for c in root.children if c.dep_ == "aux"}
    if aux & _HYPOTHETICAL and root.lemma_ not in _DESIRE:
        return None
    concrete = any(t.pos_ in ("PROPN", "NUM") or t.ent_type_ for t in body)
    if aux & {"will", "'ll"} and not concrete:
        return None  # "I'll keep you updated": a promise, unless it names a place, a person or a date
    if root.lemma_ == "be" and any(c.dep_ == "acomp" and c.lemma_ in _FEELINGS for c in root.children) and not concrete:
        return None  # "I'm so excited about this", "I'm happy with the progress": a passing feeling
    if (
        root.lemma_ == "be"
        and subj in FIRST_SUBJECT
        and any(c.dep_ == "attr" and c.ent_type_ == "PERSON" for c in root.children)
    ):
        return None  # "I'm Maya Chen": an introduction (an alias), not a fact
    if not strict:
        return root
    if not any(
        (t.pos_ in ("NOUN", "PROPN", "NUM") or (t.tag_ == "VBG" and t.dep_ in ("xcomp", "dobj")))
        and t.lower_ not in speaker_names
        for t in body
        if t.i != subject.i
    ):
        return None  # "I'm gonna make it happen": nothing a fact could be about
    content = [t for t in words if not t.is_stop and t.pos_ not in ("PRON", "INTJ") and t.lower_ not in speaker_names]
    if not content or (len(content) < 2 and root.lemma_ in _COGNITIVE | _DESIRE):
        return None  # "I love that"; but "I am a nurse" is a fact
    return root


def _rewrite(doc: Any, start: int, end: int, name: str, listener: str | None, drop: Sequence[tuple[int, int]]) -> str:
    """The tokens ``start:end`` in third person, without the character spans in ``drop``."""
    parts: list[str] = []
    for tok in doc[start:end]:
        if any(a <= tok.idx < b for a, b in drop):
            continue
        nxt = doc[tok.i + 1] if tok.i + 1 < len(doc) else None
        if (
            tok.lower_ in _ATTACH_BEFORE
            and nxt is not None
            and any(a <= nxt.idx < b for a, b in drop)
            and tok.dep_ == "prep"
        ):
            continue
        low = tok.lower_
        text = tok.text
        if low in ("i", "we"):
            text = name
        elif low in ("me", "us", "myself", "ourselves"):
            text = name
        elif low in ("my", "our", "mine", "ours"):
            text = possessive(name)
        elif low in SECOND and listener:
            text = possessive(listener) if low in ("your", "yours", "ur") else listener
        elif tok.pos_ in ("VERB", "AUX") and tok.tag_ in ("VBP",) or low in ("'m", "am", "'re", "'ve"):
            subject = subject_of(tok)
            if subject is not None and subject.lower_ in FIRST_SUBJECT:
                if low in ("'m", "am", "'re", "are"):
                    text = "is"
                elif low in ("'ve",):
                    text = "has"
                elif tok.tag_ == "VBP":
                    text = third_person(tok.text, tok.lemma_)
        elif low == "were" and (subject := subject_of(tok)) is not None and subject.lower_ == "we":
            text = "was"
        elif low == "'d":
            text = "would" if tok.tag_ == "MD" else "had"
        elif low == "'ll":
            text = "will"
        elif low == "'s" and tok.pos_ == "AUX":
            text = "'s"
        if text != tok.text and tok.text.startswith("'") and parts:
            parts.append(" ")  # "I'm" -> "Maya is": the clitic became a word
        parts.append(text + tok.whitespace_)
    statement = "".join(parts).strip()
    statement = re.sub(r"\s+([,.!;:])", r"\1", re.sub(r"\s{2,}", " ", statement))
    statement = statement.strip(" ,;:-–—")
    statement = re.sub(r"[!.]+$", "", statement).strip()
    if not statement:
        return ""
    return statement[0].upper() + statement[1:] + "."


def _time_spans(text: str) -> list[tuple[int, int, str]]:
    """Time expressions in ``text`` as (start, end, text), by :mod:`memory.temporal`."""
    from datetime import UTC

    from memory.temporal import resolve_time_expressions

    return [(m.start_char, m.end_char, m.text) for m in resolve_time_expressions(text, datetime.now(UTC))]


def extract_offline(
    text: str,
    *,
    speaker: str,
    listener: str | None = None,
    aliases: Iterable[str] = (),
) -> MessageFacts:
    """The canonical facts of one message said by ``speaker`` to ``listener`` (see the module docstring).

    Raises RuntimeError when the spaCy pipeline is not installed (check
    :func:`memory.extraction.nlp.available`).
    """
    result = MessageFacts()
    result.aliases += _short_names(text, speaker, listener)
    candidates = [p for p in _PIECES.split(text) if _may_state_a_fact(p)]
    if not candidates:
        return result  # questions and small talk: the model is not even asked
    text = " ".join(p.strip() for p in candidates)
    doc = nlp_model.parse(text)
    speaker_names = {speaker.lower(), *(a.lower() for a in aliases)}
    listener_names = {listener.lower()} if listener else set()
    listener_names |= {w for n in list(listener_names) for w in n.split()}
    time_spans = [
        (ent.start_char, ent.end_char, ent.text) for ent in doc.ents if ent.label_ in ("DATE", "TIME")
    ] + _time_spans(text)
    spans = sorted(set(time_spans))
    for sent in doc.sents:
        start, end = _content_start(sent, listener_names), sent.end
        root = _keep(sent.root, start, end, speaker_names)
        weak = False
        if root is None:
            _notice_alias_or_correction(sent, start, speaker, result)
            if "?" in sent.text:
                continue
            clause = _own_clause(sent, speaker_names)  # "Since I lost my job at X, things have been tough"
            if clause is not None:
                root, start, end = clause
            else:  # a short statement is kept only when it fills or ends a slot, or negates
                root, weak = _keep(sent.root, start, end, speaker_names, strict=False), True
                if root is None:
                    continue
        fact = _fact(doc, root, start, end, speaker, listener, spans)
        if fact is not None and (not weak or fact.slots or fact.ends or (fact.negated and fact.relations)):
            result.facts.append(fact)
    result.entities = _entities(doc, result.facts, speaker, listener)
    return result


_PIECES = re.compile(r"(?<=[.!?])\s+|\n+")
_OWN_WORDS = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|[Mm]e|[Mm]y|[Mm]ine|[Ww]e|[Ww]e're|[Ww]e've|[Oo]ur|[Uu]s)\b")
_INNER_NAME = re.compile(r"\S\s+[A-Z][a-z]")
_NAME_WORD = re.compile(r"\b[A-Z][a-z]{2,}\b")


def _may_state_a_fact(piece: str) -> bool:
    """Cheap pre-filter before parsing: a statement of 3+ words about the speaker or naming someone."""
    piece = piece.strip()
    if not piece or piece.endswith("?") or len(piece.split()) < 3:
        return False
    return bool(_OWN_WORDS.search(piece) or _INNER_NAME.search(piece))


def _short_names(text: str, speaker: str, listener: str | None) -> list[tuple[str, str]]:
    """Names in the message that shorten a participant's one-word name ("Hey Mel!" to Melanie)."""
    out: list[tuple[str, str]] = []
    for word in _NAME_WORD.findall(text):
        for full in (listener, speaker):
            if full and word != full and " " not in full and full.lower().startswith(word.lower()):
                out.append((word, full))
                break
    return list(dict.fromkeys(out))


def _adverbial(doc: Any, a: int, b: int) -> bool:
    """Whether the time expression at characters a:b modifies the verb ("last week", "on Monday" after a verb)
    rather than being what the sentence says ("the appointment is on Monday")."""
    tokens = [t for t in doc if a <= t.idx < b]
    heads = [t for t in tokens if not (a <= t.head.idx < b) or t.head is t]
    if not heads:
        return True
    head = heads[0]
    if head.dep_ == "pobj" and head.head.dep_ == "prep":
        return str(head.head.head.lemma_) != "be"
    return head.dep_ in ("npadvmod", "advmod", "tmod", "nmod", "dep", "appos", "conj", "compound", "amod") or (
        head.dep_ == "pobj"
    )


def _fact(
    doc: Any,
    root: Any,
    start: int,
    end: int,
    speaker: str,
    listener: str | None,
    spans: Sequence[tuple[int, int, str]],
) -> CanonicalFact | None:
    """The canonical fact of the clause ``start:end`` headed by ``root``, or None when nothing is left of it."""
    in_clause = [(a, b, t) for a, b, t in spans if doc[start].idx <= a < doc[end - 1].idx + 1]
    # relative times ("last week") leave the statement when they only modify the verb; dates stay
    dropped = [(a, b) for a, b, t in in_clause if RELATIVE_TIME.search(t) and _adverbial(doc, a, b)]
    # the time the fact is about: a relative expression first (it is what needs resolving), else a date
    in_clause.sort(key=lambda span: (RELATIVE_TIME.search(span[2]) is None, span[0]))
    statement = _rewrite(doc, start, end, speaker, listener, dropped)
    if len(statement.split()) < 3:
        return None
    pairs = relations_of(root, start, end, speaker, listener)
    subject_tok = subject_of(root)
    subject = speaker
    if (
        subject_tok is not None
        and subject_tok.lower_ not in FIRST
        and (subject_tok.ent_type_ == "PERSON" or subject_tok.pos_ == "PROPN")
        and not any(c.dep_ == "conj" and c.lower_ in FIRST_SUBJECT for c in subject_tok.children)
    ):
        subject = phrase(subject_tok, doc)
    negated = any(n for _, n in pairs) or any(c.dep_ == "neg" for c in root.children)
    slots: dict[str, str] = {}
    ends: list[str] = []
    for rel, neg in pairs:
        slot = slot_of(rel.predicate)
        if slot and not neg and rel.object != "-" and rel.subject == subject and slot not in slots:
            slots[slot] = rel.object
            status = re.match(r"be (engaged|married|dating) to$|be (dating)$", rel.predicate)
            if slot == "partner" and status:  # "engaged to Pedro": a partner and a status
                slots.setdefault("relationship_status", status.group(1) or status.group(2))
        ends += [s for s in closes_slots(rel.predicate) if rel.subject == subject and not neg]
    return CanonicalFact(
        statement=statement, subject=subject, relations=tuple(r for r, _ in pairs), negated=negated,
        when=in_clause[0][2] if in_clause else None, slots=slots, ends=tuple(dict.fromkeys(ends)),
    )  # fmt: skip


def _own_clause(sent: Any, speaker_names: set[str]) -> tuple[Any, int, int] | None:
    """A subordinate or conjoined clause of a rejected sentence whose own subject is the speaker."""
    for verb in sent.root.children:
        if verb.dep_ not in ("advcl", "ccomp", "conj", "acl", "appos", "parataxis") or verb.pos_ not in (
            "VERB",
            "AUX",
        ):
            continue
        subject = next((c for c in verb.children if c.dep_ in ("nsubj", "nsubjpass")), None)
        if subject is None or subject.lower_ not in FIRST_SUBJECT:
            continue
        tokens = list(verb.subtree)
        start, end = tokens[0].i, tokens[-1].i + 1
        while start < end and (sent.doc[start].dep_ in ("mark", "cc", "advmod", "punct") and start < subject.i):
            start += 1
        if _keep(verb, start, end, speaker_names) is not None:
            return verb, start, end
    return None


def _notice_alias_or_correction(sent: Any, start: int, speaker: str, result: MessageFacts) -> None:
    """Greetings that introduce the speaker ("Hi, I'm Maya Chen") give an alias; "I meant X" a correction."""
    body = sent.doc[start : sent.end]
    tokens = [t for t in body if not t.is_punct]
    for k in range(len(tokens) - 2):  # "(sorry / no wait / oops,) I meant Tuesday"
        if tokens[k].lower_ == "i" and tokens[k + 1].lemma_ == "mean" and tokens[k + 1].tag_ == "VBD":
            result.correction = " ".join(t.text for t in tokens[k + 2 :]).strip()
            return
    if len(tokens) >= 3 and tokens[0].lower_ == "i" and tokens[1].lemma_ == "be":
        names = [e for e in sent.ents if e.label_ == "PERSON" and e.start >= start]
        if names and speaker.lower() in names[0].text.lower() and names[0].text.lower() != speaker.lower():
            result.aliases.append((names[0].text, speaker))


def _entities(doc: Any, facts: Sequence[CanonicalFact], speaker: str, listener: str | None) -> list[EntityOut]:
    found: dict[str, EntityOut] = {}

    def put(name: str, kind: str, override: bool = False) -> None:
        name = re.sub(r"^(?:the|a|an)\s+", "", name.strip(" .,;:!?\"'()"), flags=re.IGNORECASE)
        name = re.sub(r"['’]s$", "", name)
        key = name.lower()
        if len(key) < 2 or not re.search(r"[a-z0-9]", key) or key in _DISCOURSE or key in FIRST | SECOND:
            return
        if key not in found or override:
            found[key] = EntityOut(name=found[key].name if key in found else name, type=kind)

    put(speaker, "person")
    if listener:
        put(listener, "person")
    for ent in doc.ents:
        if ent.label_ in _DROP_ENTITY_LABELS:
            continue
        if ent.label_ == "DATE" and (RELATIVE_TIME.search(ent.text) or not re.search(r"\d|[A-Z]", ent.text)):
            continue
        put(ent.text, _ENTITY_TYPES.get(ent.label_, "thing"))
    objects = [rel.object.lower() for fact in facts for rel in fact.relations]
    for fact in facts:
        for rel in fact.relations:
            slot = slot_of(rel.predicate)
            if slot in _SLOT_TYPES and rel.object != "-":
                put(rel.object, _SLOT_TYPES[slot], override=True)
    # a name that is only part of a longer phrase the message is about ("A2" in "A2 exam") is not an entity
    return [
        e for key, e in found.items()
        if not any(key != o and re.search(rf"(?<!\w){re.escape(key)}(?!\w)", o) for o in objects)
    ][:50]  # fmt: skip
