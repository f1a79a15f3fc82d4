"""A turn's facts as part of its index key (issue 16 item 6).

A chat turn says "I went to the support group yesterday"; the question asks
"When did Caroline go to the LGBTQ support group?". The turn's *facts* — the
offline extractor's third-person, speaker-resolved statements
(:func:`memory.extraction.message_facts.offline_facts`: "Caroline went to the
support group.") — name the speaker and the people and things the turn is
about in the words a question uses. :func:`fact_key` returns them as text;
:mod:`memory.windows` adds it to the memory's ``window`` lexical field and
blends its vector into the memory's window vector (the part that helps on
LoCoMo: docs/retrieval.md "Fact keys"), so a turn is found by what it states
as well as by its words, and stays the unit that is recalled (LongMemEval's "fact-augmented key": one index whose
keys carry the facts beats fusing a separate index of facts).

Which memories get fact keys (:data:`FACT_KEYS`, ``Settings.fact_keys``):

* ``"extracted"`` (default): memories stored with ``extract=`` (their
  metadata carries the extraction marker) — the caller asked for
  extraction, so its cost is expected;
* ``"all"``: every memory;
* ``"off"``: none.

Secret memories never get one (they are never extracted). The speaker is read
from a chat rendering ``"Name: text"`` (the form the benchmarks and
``messages`` transcripts use), else the memory's ``user``; the listener is the
nearest neighbour in the window with another speaker. Results are cached by
(text, speaker, listener), so refreshing a window again costs nothing.
The extractor reads at most :data:`MAX_FACT_CHARS` characters of a memory:
a longer text is indexed fully by its own words already.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from memory.types import MemoryItem

__all__ = ["FACT_KEYS", "MAX_FACT_CHARS", "speaker_of", "fact_key", "wants_fact_key"]

#: The values of ``Settings.fact_keys``.
FACT_KEYS = ("extracted", "all", "off")
#: Characters of a memory the extractor reads for its fact key.
MAX_FACT_CHARS = 4_000
_EXTRACTION_MARKER = "_extraction"
_CHAT_PREFIX = re.compile(r"^\s*([^\W\d_][\w .'’-]{0,39}?):\s+(?=\S)", re.UNICODE)
#: Role names used as speakers, spoken of in the third person.
_ROLE_NAMES = {"user": "the user", "assistant": "the assistant", "system": "the system"}


def wants_fact_key(item: MemoryItem, mode: str) -> bool:
    """Whether ``item`` gets a fact key under ``mode`` (see the module docstring)."""
    if mode == "off" or item.sensitivity == "secret":
        return False
    if mode == "all":
        return True
    return item.metadata.get(_EXTRACTION_MARKER) not in (None, "skipped")


def speaker_of(item: MemoryItem) -> tuple[str | None, str]:
    """``(speaker, text)``: the name before a chat prefix ``"Name: "`` and the rest, else ``(user, content)``."""
    match = _CHAT_PREFIX.match(item.content)
    if match is not None:
        name = match.group(1).strip()
        return _ROLE_NAMES.get(name.lower(), name), item.content[match.end() :]
    return item.user, item.content


def fact_key(item: MemoryItem, neighbours: Sequence[MemoryItem]) -> str:
    """The statements the offline extractor finds in ``item`` (one per line), or ``""``."""
    speaker, text = speaker_of(item)
    if not speaker:
        return ""
    listener = None
    for other in sorted(neighbours, key=lambda n: abs((n.created_at - item.created_at).total_seconds())):
        name, _ = speaker_of(other)
        if name and name != speaker:
            listener = name
            break
    return _facts(text[:MAX_FACT_CHARS], speaker, listener)


@functools.lru_cache(maxsize=8192)
def _facts(text: str, speaker: str, listener: str | None) -> str:
    from memory.extraction.message_facts import offline_facts

    try:
        found = offline_facts(text, speaker=speaker, listener=listener)
    except (ValueError, RuntimeError):  # an unparsable text has no facts; the turn is still indexed
        return ""
    return "\n".join(dict.fromkeys(f.statement for f in found.facts))
