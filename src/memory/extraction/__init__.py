"""Extraction (facts, keywords, entities, relations) and update decisions.

``extract(text, llm=...)`` and ``decide(fact, neighbours, llm=...)`` are plain
functions any pipeline can call (``remember(..., extract=True)`` and the
messages pipeline do); :mod:`memory.extraction.pipeline` applies them to a
stored memory.
"""

from memory.extraction.decide import Neighbour
from memory.extraction.service import Decision, Extraction, decide, extract

__all__ = ["extract", "decide", "Extraction", "Decision", "Neighbour"]
