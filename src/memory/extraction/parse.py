"""Reading a spaCy parse: subjects, noun phrases and (subject, predicate, object) relations (pure functions).

Relations come from the dependency parse and from a scan of the prepositional
phrases after each verb, read off the surface because the small model's
attachments are not always right. Predicates are verb lemmas with their
particle and preposition ("move to", "work at", "have manager"); negation
("not", "no longer", "never") marks a relation negated. Used by
:mod:`memory.extraction.facts`.
"""

from __future__ import annotations

import re
from typing import Any

from memory.llms.schemas import RelationOut

__all__ = [
    "FIRST", "FIRST_OBJECT", "FIRST_POSS", "FIRST_SUBJECT", "SECOND", "RELATIVE_TIME", "possessive", "subject_of",
    "unresolved_reference", "phrase", "np_after", "clause_end", "negated", "relations_of",
]  # fmt: skip

FIRST_SUBJECT = {"i", "we"}
FIRST_OBJECT = {"me", "us", "myself", "ourselves"}
FIRST_POSS = {"my", "our", "mine", "ours"}
FIRST = FIRST_SUBJECT | FIRST_OBJECT | FIRST_POSS
SECOND = {"you", "your", "yours", "yourself", "yourselves", "ya", "u", "ur"}

#: Words that make a time expression relative to when it was said (such spans leave the statement).
RELATIVE_TIME = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|ago|last|next|this|coming|past|recently|monday|tuesday|wednesday"
    r"|thursday|friday|saturday|sunday|weekend|earlier|later)\b",
    re.IGNORECASE,
)

_OBJECT_STOP = {"PRON", "VERB", "AUX", "ADP", "SCONJ", "CCONJ", "PUNCT", "PART", "INTJ", "SPACE"}
_HOUSING = {"flat", "apartment", "house", "home", "place", "room", "condo", "studio"}
_END_NEG = re.compile(r"\b(?:any ?more|no longer|not any longer)\b", re.IGNORECASE)


def possessive(name: str) -> str:
    return f"{name}'s"


def subject_of(token: Any) -> Any:
    """The grammatical subject governing ``token`` (through aux and conj links), or None."""
    seen = 0
    while token is not None and seen < 6:
        seen += 1
        for child in token.children:
            if child.dep_ in ("nsubj", "nsubjpass", "expl"):
                return child
        if token.dep_ in ("aux", "auxpass", "conj", "xcomp", "advcl") and token.head is not token:
            token = token.head
            continue
        return None
    return None


_DEICTIC = {"this", "that", "these", "those"}
_OTHER_POSS = {"their", "his", "her", "its"}


def unresolved_reference(root: Any, start: int, end: int) -> bool:
    """Whether the clause's objects point at something only the conversation knows ("that movie", "their work")
    and the clause names nothing itself."""
    doc = root.doc
    if any(t.pos_ == "PROPN" or t.ent_type_ for t in doc[start:end]):
        return False
    objects = [c for c in root.children if c.dep_ in ("dobj", "attr", "xcomp", "ccomp")]
    holders = [root] + [c for c in root.children if c.dep_ == "acomp"]
    objects += [g for h in holders for c in h.children if c.dep_ == "prep" for g in c.children if g.dep_ == "pobj"]
    for obj in objects:
        if obj.lower_ in _DEICTIC and obj.dep_ in ("dobj", "pobj"):
            return True
        if any(c.lower_ in _DEICTIC | _OTHER_POSS and c.dep_ in ("det", "poss") for c in obj.children):
            return True
    return False


def phrase(token: Any, doc: Any) -> str:
    """The noun phrase headed by ``token`` (compounds and modifiers to its left, name continuations to its
    right), without determiners or possessives; a named entity is taken whole."""
    if token.ent_type_ and token.ent_iob_ != "O":
        for ent in doc.ents:
            if ent.start <= token.i < ent.end:
                return str(ent.text).strip()
    left = token.i
    while (
        left - 1 >= 0
        and doc[left - 1].dep_ in ("compound", "amod", "nummod", "nmod")
        and doc[left - 1].head.i
        in (
            token.i,
            left,
        )
    ):
        left -= 1
    right = token.i + 1
    while right < len(doc) and doc[right].dep_ in ("compound", "flat") and doc[right].pos_ == "PROPN":
        right += 1
    words = [t.text for t in doc[left:right] if t.pos_ not in ("DET",) and t.dep_ != "poss"]
    return " ".join(words[:6]).strip()


def np_after(doc: Any, i: int, end: int) -> tuple[str, Any] | None:
    """The noun phrase starting at ``i`` (determiners/adjectives/nouns/names, up to ``end``) and its head."""
    j = i
    head = None
    while j < end and (doc[j].pos_ not in _OBJECT_STOP or (head is not None and doc[j].pos_ == "VERB")):
        if doc[j].ent_type_ in ("DATE", "TIME") and (head is not None or j > i):
            break
        if head is not None and (doc[j].ent_iob_ == "B" or doc[j].pos_ in ("ADJ", "NUM", "DET")):
            break
        if (
            head is not None
            and doc[j].pos_ == "VERB"
            and doc[j].tag_ in ("VBP", "NN")
            and (j + 1 >= end or doc[j + 1].pos_ in ("ADP", "PUNCT"))
        ):
            head = doc[j]  # "a team lead at X": the small model tags "lead" a verb
            j += 1
            continue
        if doc[j].pos_ == "VERB":
            break
        if doc[j].pos_ in ("NOUN", "PROPN", "NUM", "X"):
            head = doc[j]
        elif head is not None and doc[j].pos_ not in ("ADJ",):
            break
        j += 1
    if head is None:
        return None
    words = [t.text for t in doc[i:j] if t.pos_ != "DET"]
    return " ".join(words[:6]), head


def clause_end(verb: Any, limit: int) -> int:
    doc = verb.doc
    j = int(verb.i) + 1
    while j < limit:
        tok = doc[j]
        if tok.text in (",", ";", "-", "–", "—", ":", "!", ".") or tok.lower_ in ("because", "but", "which", "who"):
            return j
        subject = subject_of(tok) if tok.pos_ in ("VERB", "AUX") else None
        if subject is not None and subject is not subject_of(verb):
            if subject.i == j - 1 and j >= 2 and doc[j - 2].pos_ == "DET":
                j += 1  # "as a team lead at X": a noun the model took for a clause
                continue
            return j
        j += 1
    return limit


def negated(verb: Any, body_text: str) -> bool:
    if any(c.dep_ == "neg" or c.lower_ in ("never", "no") for c in verb.children):
        return True
    if any(c.dep_ == "advmod" and any(g.dep_ == "neg" for g in c.children) for c in verb.children):
        return True  # "no longer"
    return any(c.dep_ == "neg" for aux in verb.children if aux.dep_ == "aux" for c in aux.children) or bool(
        _END_NEG.search(body_text) and " not " in f" {body_text.lower()} "
    )


def relations_of(root: Any, start: int, end: int, name: str, listener: str | None) -> list[tuple[RelationOut, bool]]:
    """(relation, negated) pairs of the clause headed by ``root`` and its conjoined verbs."""
    doc = root.doc
    out: list[tuple[RelationOut, bool]] = []

    def who(token: Any) -> str | None:
        low = token.lower_
        if low in FIRST_SUBJECT | FIRST_OBJECT or any(
            c.dep_ == "conj" and c.lower_ in FIRST_SUBJECT for c in token.children
        ):
            return name
        if low in SECOND:
            return listener
        if token.pos_ == "PROPN" or token.ent_type_ == "PERSON":
            return phrase(token, doc)
        if token.pos_ == "NOUN":
            poss = [c for c in token.children if c.dep_ == "poss"]
            if poss and poss[0].lower_ in FIRST_POSS:
                return f"{possessive(name)} {token.text}"
        return None

    def add(subject: str | None, predicate: str, obj: str, negated: bool) -> None:
        if subject and predicate and len(obj) <= 200:
            out.append((RelationOut(subject=subject, predicate=predicate, object=obj or "-"), negated))

    verbs = [root] + [c for c in root.children if c.dep_ == "conj" and c.pos_ in ("VERB", "AUX")]
    for verb in verbs:
        if verb.i < start or verb.i >= end:
            continue
        subject_tok = subject_of(verb)
        if subject_tok is None:
            continue
        neg = negated(verb, doc[start:end].text)
        lemma = verb.lemma_.lower()
        prt = " ".join(c.lower_ for c in verb.children if c.dep_ == "prt")
        base = f"{lemma} {prt}".strip()
        subject = who(subject_tok)
        poss = [c for c in subject_tok.children if c.dep_ == "poss" and c.lower_ in FIRST_POSS]
        if lemma == "be":
            attrs = [c for c in verb.children if c.dep_ in ("attr", "acomp")]
            for attr in attrs:
                value = phrase(attr, doc)
                attr_poss = [c for c in attr.children if c.dep_ == "poss" and c.lower_ in FIRST_POSS]
                if poss and subject_tok.pos_ == "NOUN":  # "my manager is Rui"
                    add(name, f"have {phrase(subject_tok, doc).lower()}", value, neg)
                elif attr_poss and subject_tok.pos_ in ("PROPN", "NOUN"):  # "Rui is my manager"
                    add(name, f"have {attr.lemma_.lower()}", phrase(subject_tok, doc), neg)
                elif attr.pos_ == "NUM" and subject == name:
                    add(name, "have age", value, neg)
                elif (
                    attr.dep_ == "attr"
                    and not any(c.dep_ in ("det", "poss") for c in attr.children)
                    and (attr.pos_ in ("NOUN", "ADJ") and " " not in value)
                ):  # "I am vegan", "I am single"
                    add(subject, f"be {attr.lower_}", value, neg)
                elif attr.pos_ == "ADJ":
                    preps = [p for p in attr.children if p.dep_ == "prep"]
                    objs = [o for p in preps for o in p.children if o.dep_ == "pobj"]
                    if preps and objs:  # "allergic to penicillin", "keen on counseling"
                        add(subject, f"be {attr.lemma_.lower()} {preps[0].lower_}", phrase(objs[0], doc), neg)
                    else:
                        add(subject, f"be {attr.lemma_.lower()}", value, neg)
                else:
                    add(subject, "be", value, neg)
        elif lemma == "have":
            for obj in (c for c in verb.children if c.dep_ == "dobj"):
                named = [g for c in obj.children if c.dep_ == "acl" for g in c.children if g.dep_ in ("oprd", "attr")]
                if named:
                    add(subject, f"have {obj.lemma_.lower()}", phrase(named[0], doc), neg)
                else:
                    add(subject, "have", phrase(obj, doc), neg)
        else:
            for obj in (
                c
                for c in verb.children
                if c.dep_ in ("dobj", "attr", "oprd") or (c.dep_ == "npadvmod" and c.pos_ == "PROPN")
            ):
                named = [g for c in obj.children if c.dep_ == "acl" for g in c.children if g.dep_ in ("oprd", "attr")]
                if named:  # "adopted a cat named Miso" -> (adopt cat, Miso), (have cat, Miso)
                    add(subject, f"{base} {obj.lemma_.lower()}", phrase(named[0], doc), neg)
                    add(subject, f"have {obj.lemma_.lower()}", phrase(named[0], doc), neg)
                elif obj.pos_ != "PRON":
                    add(subject, base, phrase(obj, doc), neg)
            for xcomp in (c for c in verb.children if c.dep_ == "xcomp" and c.pos_ == "VERB"):
                objects = [c for c in xcomp.children if c.dep_ == "dobj" and c.pos_ != "PRON"]
                for obj in objects:
                    add(subject, f"{base} to {xcomp.lemma_.lower()}", phrase(obj, doc), neg)
                if not objects and xcomp.tag_ == "VBG":  # "I enjoy running"
                    add(subject, base, xcomp.text.lower(), neg)
            if prt and not any(r.predicate == base for r, _ in out):
                add(subject, base, "", neg)
        if any(c.dep_ == "auxpass" for c in verb.children) and not any(c.dep_ == "dobj" for c in verb.children):
            add(subject, f"be {verb.lower_}", verb.lower_, neg)  # "I am married", "I got divorced"
        # prepositional phrases after the verb, read off the surface (robust to attachment errors)
        stop = clause_end(verb, end)
        dobj = next((c for c in verb.children if c.dep_ == "dobj" and c.pos_ != "PRON"), None)
        j = verb.i + 1
        while j < stop:
            tok = doc[j]
            nxt = doc[j + 1] if j + 1 < stop else None
            if tok.lower_ in ("out", "away") and nxt is not None and nxt.lower_ in ("of", "from"):
                found = np_after(doc, j + 2, stop)  # "moved out of Paris"
                if found is not None:
                    add(subject, f"{base} {tok.lower_} {nxt.lower_}", found[0], neg)
                j += 2
                continue
            if (
                tok.lower_ in ("at", "in", "to", "for", "as", "from", "with", "into", "on")
                or (prt and tok.lower_ == "of")
            ) and tok.pos_ in (
                "ADP",
                "SCONJ",
            ):
                found = np_after(doc, j + 1, stop)
                if found is not None:
                    value, head = found
                    if head.ent_type_ in ("DATE", "TIME") or RELATIVE_TIME.search(value):
                        j += 1
                        continue
                    if lemma == "be" and tok.head.pos_ == "ADJ":
                        j += 1
                        continue
                    predicate = base if lemma != "be" else f"be {tok.lower_}".strip()
                    if lemma != "be":
                        if dobj is not None and dobj.lemma_.lower() in _HOUSING | {"job"}:
                            predicate = f"{base} {dobj.lemma_.lower()}"
                        predicate = f"{predicate} {tok.lower_}"
                    else:
                        predicate = f"be {tok.lower_}"
                    add(subject, predicate, value, neg)
            j += 1
    return out
