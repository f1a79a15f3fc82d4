"""What may enter shared system memory: knowledge that is not about a particular person.

System memory is read by every agent of a namespace, so a candidate fact is
refused (:func:`personal_reason` names why) when it is

* **first person** — I, me, my, mine, we, our, us (the user speaking about themselves);
* **about the user** — names the user whose conversation it came from;
* **about a named person** — names someone the tiers know as a person (object
  personas of type ``person``, the people the heuristic extractor finds), or
  has a capitalised name as the subject of a verb only people do ("Sam likes …",
  "Maria lives …", "Tom earns …");
* **on a personal topic** — health, family and relationships, finances,
  where someone lives or is, contact and identity details (a word list:
  "allergic", "diagnosed", "pregnant", "divorced", "salary", "owes",
  "mortgage", "lives in", "address", "phone", "birthday", …), whoever it is about;
* from a page that is not ``normal`` (private or secret pages never feed
  system memory; the caller checks that).

Only the explicit per-namespace policy ``system_promotion = "any"``
(``mem.tiers.configure(namespace_wide=True, system_promotion="any")``, or per
agent type/agent) lets such facts through; it never lets private or secret
pages through. The rules are deliberately broad: a general fact refused by
mistake costs little, a person's fact shared by mistake is a leak.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["personal_reason", "is_personal", "likely_person"]

_FIRST_PERSON_I = re.compile(r"(?<![\w'])I(?![\w'])")
_FIRST_OTHER = re.compile(r"\b(?:me|my|mine|myself|we|our|ours|us|ourselves)\b", re.I)

_TOPICS: dict[str, tuple[str, ...]] = {
    "health": (
        "allerg",
        "asthma",
        "diabet",
        "cancer",
        "tumou?r",
        "diagnos",
        "disease",
        "illness",
        "ill\\b",
        "sick",
        "pregnan",
        "miscarr",
        "medicat",
        "prescri",
        "therap",
        "depress",
        "anxiety",
        "adhd",
        "autis",
        "surgery",
        "hospital",
        "clinic",
        "doctor",
        "symptom",
        "injur",
        "broke (?:his|her|their) ",
        "fractur",
        "migraine",
        "blood pressure",
        "cholesterol",
        "insulin",
        "vaccin",
        "hiv",
        "std\\b",
        "disabilit",
        "wheelchair",
        "mental health",
        "rehab",
        "addict",
        "sober",
        "weight",
        "diet\\b",
        "cold\\b",
        "flu\\b",
        "fever",
        "covid",
    ),
    "family": (
        "wife",
        "husband",
        "spouse",
        "partner",
        "girlfriend",
        "boyfriend",
        "fianc",
        "married",
        "marriage",
        "divorc",
        "separated",
        "widow",
        "son\\b",
        "sons\\b",
        "daughter",
        "child",
        "kids?\\b",
        "baby",
        "babies",
        "mother",
        "father",
        "mom\\b",
        "mum\\b",
        "dad\\b",
        "parent",
        "sister",
        "brother",
        "sibling",
        "grand",
        "aunt",
        "uncle",
        "cousin",
        "niece",
        "nephew",
        "in-law",
        "custody",
        "adopt",
        "dating",
        "breakup",
        "broke up",
        "family",
    ),
    "finances": (
        "salary",
        "income",
        "earns?\\b",
        "wage",
        "paid\\b",
        "pay rise",
        "raise\\b",
        "debt",
        "owes?\\b",
        "loan",
        "mortgage",
        "rent\\b",
        "bank",
        "account number",
        "credit card",
        "card number",
        "savings",
        "invest",
        "portfolio",
        "bankrupt",
        "broke\\b",
        "tax",
        "pension",
        "inherit",
        "net worth",
        "budget",
        "\\$\\d",
        "€\\d",
        "£\\d",
        "\\d+k\\b",
        "lottery",
    ),
    "location": (
        "lives? in",
        "living in",
        "moved to",
        "moving to",
        "address",
        "street",
        "apartment",
        "flat\\b",
        "neighbo",
        "hometown",
        "home town",
        "born in",
        "located",
        "commute",
        "zip code",
        "postcode",
        "stays? (?:at|in)",
        "staying (?:at|in)",
        "travell?ing to",
        "vacation in",
        "holiday in",
    ),
    "identity": (
        "phone",
        "email",
        "e-mail",
        "passport",
        "social security",
        "ssn",
        "driver'?s licen[cs]e",
        "birthday",
        "born on",
        "years old",
        "age\\b",
        "password",
        "pin\\b",
        "religio",
        "church",
        "mosque",
        "synagogue",
        "politic",
        "vote",
        "sexual",
        "gay",
        "lesbian",
        "transgender",
        "ethnic",
        "nationality",
        "citizenship",
        "visa",
        "immigra",
        "criminal",
        "arrest",
        "convict",
        "prison",
        "lawsuit",
        "fired\\b",
        "laid off",
        "unemploy",
        "job interview",
        "resign",
    ),
}
_TOPIC_RES = {name: re.compile(r"\b(?:" + "|".join(words) + ")", re.I) for name, words in _TOPICS.items()}
_PEOPLE_VERBS = (
    "likes?",
    "loves?",
    "hates?",
    "prefers?",
    "enjoys?",
    "wants?",
    "needs?",
    "feels?",
    "felt",
    "thinks?",
    "believes?",
    "lives?",
    "lived",
    "works?",
    "worked",
    "earns?",
    "owes?",
    "visited",
    "visits",
    "married",
    "dates?",
    "dated",
    "studies",
    "studied",
    "plays?",
    "played",
    "goes",
    "went",
    "bought",
    "told",
    "said",
    "says",
    "wrote",
    "writes",
    "is allergic",
    "was born",
    "has (?:a|an|two|three) (?:son|daughter|kid|child)",
    "is (?:a|an) \\w+ (?:at|for)",
    "drives",
    "drove",
    "moved",
    "quit",
    "can't stand",
    "is afraid",
)
_NAMED_SUBJECT = re.compile(
    r"(?:^|[.!?;]\s+|\band\s+)([A-Z][a-z]{1,20})(?: [A-Z][a-z]{1,20}){0,2}(?:'s)?\s+(?:"
    + "|".join(_PEOPLE_VERBS)
    + r")\b"
)
#: Words that make a "person" the extractor guessed into a place or thing.
_PLACE_WORDS = frozenset(
    "lake mount mountain river street road avenue park city town bay island bridge hotel airport station "
    "university college school museum church castle tower lane square beach valley forest national".split()
)
# Capitalised words that start a sentence without naming anyone.
_NOT_NAMES = frozenset(
    "The A An This That These Those It There Here What When Where Why How Each Every All Some Most Many Any "
    "No None Both Either Neither One Two Three Python Java Linux Windows Docker Git GitHub Kubernetes SQL "
    "Postgres PostgreSQL SQLite Excel Google Apple Microsoft Amazon Monday Tuesday Wednesday Thursday Friday "
    "Saturday Sunday January February March April May June July August September October November December "
    "Users Customers Staff Employees Everyone Nobody Someone Anyone Team Teams Support Sales Our Your".split()
)


def personal_reason(fact: str, *, user: str | None = None, people: Iterable[str] = ()) -> str | None:
    """Why ``fact`` is about a particular person (and must not enter shared memory), or None when it is not."""
    text = " ".join(fact.split())
    if _FIRST_PERSON_I.search(text) or _FIRST_OTHER.search(text):
        return "first person"
    lowered = text.lower()
    if user and re.search(rf"\b{re.escape(user.lower())}\b", lowered):
        return "names the user"
    for name in people:
        name = name.strip()
        if len(name) >= 2 and re.search(rf"\b{re.escape(name.lower())}\b", lowered):
            return f"names a person ({name})"
    for topic, pattern in _TOPIC_RES.items():
        if pattern.search(text):
            return f"personal topic ({topic})"
    for match in _NAMED_SUBJECT.finditer(text):
        if match.group(1) not in _NOT_NAMES:
            return f"about a named person ({match.group(1)})"
    return None


def is_personal(fact: str, *, user: str | None = None, people: Iterable[str] = ()) -> bool:
    """True when :func:`personal_reason` finds a reason."""
    return personal_reason(fact, user=user, people=people) is not None


def likely_person(name: str) -> bool:
    """A name the extractor typed as a person that does not look like a place (Lake Bled, Main Street)."""
    words = name.lower().split()
    return bool(words) and len(words) <= 3 and not any(w in _PLACE_WORDS for w in words)
