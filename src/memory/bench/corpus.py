"""Texts for the speed benchmark, and a cache of their embeddings.

:func:`generate_texts` makes any number of distinct, realistic chat lines,
deterministically: sentences of LoCoMo dialogue turns recombined under random
speaker names, with an occasional concrete detail (a date, an amount, an
order number). Without the LoCoMo file a small built-in grammar is used. The
first ``n`` texts are the same whatever the total asked, so a cache built for
100k serves 10k too.

:func:`cached_vectors` embeds texts once and keeps the vectors in a ``.npy``
file keyed by embedder, corpus and seed; a later run embeds only what the
cache lacks.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from memory.embedders.base import Embedder, embed_texts
from memory.errors import InvalidInputError

__all__ = [
    "Corpus",
    "load_corpus",
    "generate_texts",
    "corpus_queries",
    "cached_vectors",
    "corpus_cache_key",
    "GENERATOR_VERSION",
]

#: Bump when the generator changes, so cached vectors of old texts are not reused.
GENERATOR_VERSION = 1

_NAMES = (
    "Alice Amara Ben Carlos Chen Dana Elena Farah Gabriel Hana Ivan Jade Jonas Kai Lena Liam Maya Mei "
    "Nadia Noah Omar Priya Quinn Rafael Sara Sofia Tariq Uma Victor Wen Yara Zoe Aiko Bruno Clara Dmitri "
    "Emeka Fatima Greta Hugo Ines Joel Keiko Lucas Marta Nikhil Olga Pablo Rosa Samir Tomas Ulla Vera"
).split()
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_BUILTIN_SENTENCES = tuple(
    f"{opening} {subject} {verb} {thing} {when}."
    for opening in ("Guess what,", "Honestly,", "So", "By the way,", "Last week")
    for subject in ("I", "my sister", "our team", "my neighbour")
    for verb in ("finally fixed", "started learning", "signed up for", "talked about", "gave away")
    for thing in ("the old bike", "a pottery class", "the garden shed", "a trip to Lisbon", "the charity run")
    for when in ("on Saturday", "after work", "before the holidays", "this morning")
)
_BUILTIN_QUESTIONS = tuple(
    f"{ask} {thing}?"
    for ask in ("Who talked about", "When did someone mention", "What happened with", "Why did they bring up")
    for thing in ("the old bike", "a pottery class", "the garden shed", "a trip to Lisbon", "the charity run")
)


class Corpus:
    """Sentences to recombine and questions to ask, with a fingerprint of their source."""

    def __init__(self, sentences: Sequence[str], questions: Sequence[str], source: str) -> None:
        """Hold ``sentences`` (at least 10) and ``questions``; ``source`` names where they came from."""
        if len(sentences) < 10:
            raise InvalidInputError("the corpus needs at least 10 sentences")
        self.sentences = tuple(sentences)
        self.questions = tuple(questions) or _BUILTIN_QUESTIONS
        self.source = source
        digest = hashlib.sha256()
        for text in (*self.sentences, "\x00", *self.questions):
            digest.update(text.encode("utf-8") + b"\n")
        self.fingerprint = digest.hexdigest()[:16]


def load_corpus(path: Path | None) -> Corpus:
    """Sentences and questions from a LoCoMo JSON file, or the built-in grammar when ``path`` is None.

    Raises InvalidInputError when the file cannot be read or holds no dialogue.
    """
    if path is None:
        return Corpus(_BUILTIN_SENTENCES, _BUILTIN_QUESTIONS, "builtin")
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        sentences: dict[str, None] = {}
        questions: dict[str, None] = {}
        for conversation in data:
            for key, turns in conversation["conversation"].items():
                if not re.fullmatch(r"session_\d+", key):
                    continue
                for turn in turns:
                    for sentence in _SENTENCE_END.split(str(turn["text"]).strip()):
                        if len(sentence) >= 12:
                            sentences.setdefault(sentence, None)
            for qa in conversation.get("qa", []):
                questions.setdefault(str(qa["question"]).strip(), None)
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc}") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInputError(f"{path} does not look like LoCoMo data: {exc}") from exc
    return Corpus(list(sentences), [q for q in questions if q], f"locomo:{Path(path).name}")


def _detail(rng: random.Random) -> str:
    choice = rng.randrange(4)
    if choice == 0:
        day = rng.randint(1, 28)
        month = rng.choice(["March", "May", "July", "October"])
        return f" It was on {day} {month} {rng.randint(2019, 2025)}."
    if choice == 1:
        return f" It cost about {rng.randint(5, 900)} dollars."
    if choice == 2:
        return f" (ref #{rng.randint(10_000, 99_999)})"
    return f" I told {rng.choice(_NAMES)} about it."


def generate_texts(corpus: Corpus, n: int, *, seed: int = 0) -> list[str]:
    """``n`` distinct chat lines ``"Name: sentence [sentence] [detail]"``, deterministic in ``seed``.

    The first ``k`` texts do not depend on ``n`` (prefix-stable).
    """
    if n < 0:
        raise InvalidInputError("n must not be negative")
    rng = random.Random(f"memory-bench-{GENERATOR_VERSION}-{seed}")
    seen: dict[str, None] = {}
    while len(seen) < n:
        parts = [rng.choice(corpus.sentences)]
        if rng.random() < 0.5:
            parts.append(rng.choice(corpus.sentences))
        text = f"{rng.choice(_NAMES)}: {' '.join(parts)}"
        if rng.random() < 0.3:
            text += _detail(rng)
        seen.setdefault(text, None)
    return list(seen)


def corpus_queries(corpus: Corpus, n: int, *, seed: int = 0) -> list[str]:
    """``n`` questions drawn from the corpus (all of them, shuffled, repeated if ``n`` is larger)."""
    rng = random.Random(f"memory-bench-queries-{seed}")
    pool = list(corpus.questions)
    rng.shuffle(pool)
    return [pool[i % len(pool)] for i in range(n)]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:80]


def corpus_cache_key(corpus: Corpus, seed: int) -> str:
    """The :func:`cached_vectors` key of the texts :func:`generate_texts` makes from ``corpus`` with ``seed``."""
    return f"{corpus.source}-{corpus.fingerprint}-g{GENERATOR_VERSION}-s{seed}"


def cached_vectors(
    embedder: Embedder,
    texts: Sequence[str],
    cache_dir: Path,
    key: str,
    *,
    chunk: int = 2_000,
    progress: Callable[[int, int], None] | None = None,
) -> npt.NDArray[np.float32]:
    """Vectors of ``texts`` (unit length, one row each), from the cache where possible.

    The cache ``<model>-d<dim>-<key>.npy`` holds vectors of a text sequence and
    ``….keys.npy`` a 64-bit hash of each of its texts; only the leading rows
    whose texts match are reused. Missing rows are embedded in chunks of
    ``chunk`` (reporting ``progress(done, total)``) and the cache is extended;
    it never shrinks.
    """
    cache_dir.mkdir(parents=True, exist_ok=True)
    stem = cache_dir / f"{_slug(embedder.model_name)}-d{embedder.dimension}-{_slug(key)}"
    array_path, keys_path = Path(f"{stem}.npy"), Path(f"{stem}.keys.npy")
    wanted = _text_keys(texts)
    cached = np.zeros((0, embedder.dimension), dtype=np.float32)
    cached_keys = np.zeros(0, dtype=np.uint64)
    if array_path.exists() and keys_path.exists():
        try:
            loaded = np.load(array_path, mmap_mode="r")
            loaded_keys = np.load(keys_path)
            if loaded.ndim == 2 and loaded.shape[1] == embedder.dimension and loaded.shape[0] == loaded_keys.shape[0]:
                cached, cached_keys = loaded, loaded_keys
        except (OSError, ValueError):
            pass
    common = min(len(wanted), cached_keys.shape[0])
    mismatch = np.nonzero(cached_keys[:common] != wanted[:common])[0]
    usable = int(mismatch[0]) if mismatch.size else common
    if usable == len(texts):
        return np.array(cached[:usable], dtype=np.float32)
    parts = [np.array(cached[:usable], dtype=np.float32)]
    done = usable
    while done < len(texts):
        batch = list(texts[done : done + chunk])
        parts.append(embed_texts(embedder, batch))
        done += len(batch)
        if progress is not None:
            progress(done, len(texts))
    vectors = np.vstack(parts).astype(np.float32)
    if vectors.shape[0] > cached_keys.shape[0] or usable < cached_keys.shape[0]:
        _atomic_save(array_path, vectors)
        _atomic_save(keys_path, wanted)
    return vectors


def _text_keys(texts: Sequence[str]) -> npt.NDArray[np.uint64]:
    return np.array(
        [int.from_bytes(hashlib.blake2b(t.encode("utf-8"), digest_size=8).digest(), "little") for t in texts],
        dtype=np.uint64,
    )


def _atomic_save(path: Path, array: npt.NDArray[np.generic]) -> None:
    tmp = path.with_name(path.name + ".tmp.npy")
    np.save(tmp, array)
    tmp.replace(path)
