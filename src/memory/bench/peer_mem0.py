"""mem0 as a benchmark peer: its open-source ``Memory``, offline, on the same MiniLM vectors.

mem0 (PyPI ``mem0ai``, in the ``bench-peers`` extra) is run the way its
documentation sets it up locally, with what is needed to keep it offline:

- vector store: embedded Qdrant in a folder (``path=…``, on disk); history in
  a SQLite file in the same folder;
- embedder: mem0's config accepts only built-in provider names, so it is
  built with provider ``openai`` and a dummy key, then its ``embedding_model``
  is replaced by an ``EmbeddingBase`` subclass that calls this project's
  embedder (the same MiniLM), or returns a vector computed beforehand for
  the text (bulk loads and timed queries, as every peer gets them);
- no LLM: ``add(..., infer=False)`` stores each text as a memory; the LLM,
  also ``openai`` with a dummy key, is never called;
- ``MEM0_TELEMETRY=False`` (set before mem0 is imported) and ``MEM0_DIR``
  inside the peer's folder, so nothing is sent and nothing written to ``~/.mem0``;
- BM25 is off: mem0's Qdrant keyword channel loads ``Qdrant/bm25`` through
  fastembed from the Hugging Face hub (offline it retries for about 39 s,
  then searches without it); the encoder is set to "unavailable" up front,
  so its search is semantic plus entity boosts;
- spaCy: mem0 lemmatizes every added text and extracts the query's entities
  with ``en_core_web_sm``, which it would download when the package of that
  name is missing. The pipeline this project ships (``memory[nlp]``) is
  handed to mem0 instead; without it mem0's spaCy steps are turned off
  (never downloaded). :attr:`Mem0Peer.notes` says which.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import logging
import os
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memory.embedders.base import Embedder, embed_query
from memory.errors import ConfigError

__all__ = ["Mem0Peer", "mem0_available", "locomo_results", "side_by_side", "USER"]

#: The mem0 user every benchmark memory belongs to (mem0 needs one of user/agent/run).
USER = "bench"
_DUMMY_KEY = "sk-dummy-never-used"
_NO_SPACY = "spaCy off (no model installed; mem0 would download one)"


def mem0_available() -> bool:
    """True when ``mem0ai`` (and its Qdrant client) are installed."""
    return importlib.util.find_spec("mem0") is not None and importlib.util.find_spec("qdrant_client") is not None


def _spacy_note(nlp: Any) -> str:
    meta = getattr(nlp, "meta", {}) or {}
    return f"spaCy {meta.get('lang', '?')}_{meta.get('name', '?')} {meta.get('version', '')}".rstrip()


def _spacy_for_mem0() -> str:
    """Give mem0 the spaCy pipeline of ``memory[nlp]`` (never a download); returns a note."""
    from mem0.utils import spacy_models

    from memory.extraction.nlp import MODEL_PACKAGES

    if spacy_models._nlp_full is not None and spacy_models._nlp_lemma is not None:
        return _spacy_note(spacy_models._nlp_full)  # handed over before in this process
    if spacy_models._load_failed_full and spacy_models._load_failed_lemma:
        return _NO_SPACY
    for name in MODEL_PACKAGES:
        try:
            package = importlib.import_module(name)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                spacy_models._nlp_full = package.load()
                spacy_models._nlp_lemma = package.load(disable=["ner", "parser"])
            return _spacy_note(spacy_models._nlp_full)
        except Exception:  # noqa: BLE001, S112 - try the next package; none means spaCy off
            continue
    spacy_models._load_failed_full = True
    spacy_models._load_failed_lemma = True
    return _NO_SPACY


def _offline_mem0() -> Any:
    """mem0's ``Memory`` class with its telemetry and remote notices off, even if mem0 was imported before."""
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("MEM0_DIR", str(Path(tempfile.gettempdir()) / "memory-bench-mem0-home"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import mem0.memory.main as mem0_main
        import mem0.memory.telemetry as mem0_telemetry
    # Read at import time into two modules; every event, flag and notice fetch checks one of them.
    mem0_telemetry.MEM0_TELEMETRY = False
    mem0_main.MEM0_TELEMETRY = False
    return mem0_main.Memory


def _embedder_class() -> type[Any]:
    """An ``EmbeddingBase`` subclass over this project's embedder (made on first use: mem0 is optional)."""
    from mem0.embeddings.base import EmbeddingBase

    class ProjectEmbedder(EmbeddingBase):  # type: ignore[misc]
        """mem0 embedder calling a memory embedder; texts in ``known`` get their given vector."""

        def __init__(self, model: Embedder) -> None:
            super().__init__()
            self.model = model
            self.known: dict[str, list[float]] = {}
            self.seconds = 0.0

        def embed(self, text: Any, memory_action: Any = None) -> list[float]:
            vector = self.known.get(text) if isinstance(text, str) else None
            if vector is not None:
                return vector
            started = time.perf_counter()
            try:
                return [float(x) for x in embed_query(self.model, str(text))]
            finally:
                self.seconds += time.perf_counter() - started

    return ProjectEmbedder


class Mem0Peer:
    """mem0's ``Memory`` in ``directory`` (see the module docs); one mem0 user, ``infer=False`` adds."""

    def __init__(self, directory: Path, model: Embedder) -> None:
        """Open a new mem0 store in ``directory``; raises ConfigError when mem0 is not installed."""
        if not mem0_available():
            raise ConfigError("peer 'mem0' needs mem0ai: pip install 'llm-agent-memory[bench-peers]'")
        directory.mkdir(parents=True, exist_ok=True)
        Mem0 = _offline_mem0()
        logging.getLogger("mem0").setLevel(logging.ERROR)  # its per-call notices would drown the progress
        dims = model.dimension
        config = {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": "bench",
                    "path": str(directory / "qdrant"),
                    "embedding_model_dims": dims,
                    "on_disk": True,
                },
            },
            "embedder": {"provider": "openai", "config": {"api_key": _DUMMY_KEY, "embedding_dims": dims}},
            "llm": {"provider": "openai", "config": {"api_key": _DUMMY_KEY}},
            "history_db_path": str(directory / "history.db"),
        }
        self.notes = [_spacy_for_mem0(), "BM25 off (fastembed would fetch Qdrant/bm25 from the hub)"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # local Qdrant: "payload indexes have no effect"
            self._mem: Any = Mem0.from_config(config)
        self._mem.vector_store._bm25_encoder = False  # "tried and unavailable": no hub download
        self._embedder: Any = _embedder_class()(model)
        self._mem.embedding_model = self._embedder
        self.name = f"mem0 {importlib.metadata.version('mem0ai')}"
        self._ids: dict[str, str] = {}  # mem0 id -> the caller's id

    @property
    def embed_seconds(self) -> float:
        """Seconds mem0 spent in the embedder on texts it had no vector for."""
        seconds: float = self._embedder.seconds
        return seconds

    def _add(self, ids: Sequence[str], texts: Sequence[str], metadata: Sequence[dict[str, Any]] | None) -> None:
        for index, (key, text) in enumerate(zip(ids, texts, strict=True)):
            extra = dict(metadata[index]) if metadata is not None else {}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = self._mem.add(text, user_id=USER, infer=False, metadata={**extra, "bench_id": key})
            for row in result.get("results", []):
                self._ids[str(row["id"])] = key

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        vectors: npt.NDArray[np.float32],
        metadata: Sequence[dict[str, Any]] | None = None,
    ) -> None:
        """Store texts with vectors computed beforehand (mem0's embedder returns them), one ``add`` each."""
        self._embedder.known = {t: [float(x) for x in v] for t, v in zip(texts, vectors, strict=True)}
        try:
            self._add(ids, texts, metadata)
        finally:
            self._embedder.known = {}

    def add_texts(
        self, ids: Sequence[str], texts: Sequence[str], metadata: Sequence[dict[str, Any]] | None = None
    ) -> None:
        """Store texts the way a mem0 user does: mem0 embeds each one (MiniLM, one call per text)."""
        self._add(ids, texts, metadata)

    def search(self, text: str, vector: npt.NDArray[np.float32] | None, k: int) -> list[str]:
        """The caller's ids of mem0's ``search(text, top_k=k)``, best first (``vector``: the text's, if known)."""
        if vector is not None:
            self._embedder.known = {text: [float(x) for x in vector]}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                found = self._mem.search(text, top_k=k, filters={"user_id": USER})
        finally:
            self._embedder.known = {}
        return [self._ids.get(str(row["id"]), str(row["id"])) for row in found.get("results", [])]

    def query(self, vector: npt.NDArray[np.float32], k: int) -> list[str]:
        """Nearest ids by the vector alone (mem0's search needs a text: use :meth:`search`)."""
        hits = self._mem.vector_store.search(query="", vectors=[float(x) for x in vector], top_k=k)
        return [self._ids.get(str(hit.id), str(hit.id)) for hit in hits]

    def close(self) -> None:
        """Close Qdrant's local client and drop the handles."""
        client = getattr(getattr(self._mem, "vector_store", None), "client", None)
        closer = getattr(client, "close", None)
        if callable(closer):
            closer()
        self._mem = None


def locomo_results(
    conversations: Sequence[Any], model: Embedder, progress: Callable[[int, int, str], None] | None = None
) -> Any:
    """LoCoMo evidence retrieval with mem0: each conversation's turns in a fresh mem0, each question searched.

    Turns are stored with the vectors the memory store gets (``embed_chunked``
    of the same embedder) and their ``dia_id``; questions are searched with
    ``top_k`` = :data:`memory.bench.locomo.RECALL_LIMIT` (latency includes the
    query embedding, as the memory run's). Returns a ``LocomoResult``.
    """
    from memory.bench.locomo import CATEGORIES, RECALL_LIMIT, LocomoResult
    from memory.bench.metrics import question_metrics
    from memory.embedders.base import embed_chunked

    result = LocomoResult(config={"peer": "mem0", "embedder": model.model_name, "top_k": RECALL_LIMIT})
    with tempfile.TemporaryDirectory(prefix="memory-locomo-mem0-") as tmp:
        for index, conv in enumerate(conversations):
            if progress is not None:
                progress(index, len(conversations), conv.sample_id)
            texts = [turn.content for turn in conv.turns]
            ids = [turn.dia_id for turn in conv.turns]
            peer = Mem0Peer(Path(tmp) / f"conv-{index}", model)
            if index == 0:
                result.config["notes"] = list(peer.notes)
                result.config["peer"] = peer.name
            try:
                started = time.perf_counter()
                peer.add(ids, texts, embed_chunked(model, texts))
                result.ingest_seconds += time.perf_counter() - started
                result.turns += len(texts)
                result.conversations += 1
                for question in conv.questions:
                    if question.category not in CATEGORIES:
                        continue
                    result.dropped.extend((conv.sample_id, piece) for piece in question.dropped)
                    if not question.evidence:
                        continue
                    started = time.perf_counter()
                    ranked = peer.search(question.question, embed_query(model, question.question), RECALL_LIMIT)
                    result.latencies_ms.append((time.perf_counter() - started) * 1000.0)
                    result.rows.append(
                        {
                            "conversation": conv.sample_id,
                            "category": question.category,
                            "question": question.question,
                            "evidence": list(question.evidence),
                            "ranked": ranked,
                            **question_metrics(ranked, question.evidence),
                        }
                    )
            finally:
                peer.close()
    if progress is not None:
        progress(len(conversations), len(conversations), "")
    return result


def side_by_side(ours: dict[str, Any], theirs: dict[str, Any]) -> str:
    """Recall@5/@10 per category and latency of two LoCoMo reports (``LocomoResult.to_json``), as text."""
    from memory.bench.locomo import CATEGORIES

    name = str(theirs.get("config", {}).get("peer", "mem0"))
    lines = [f"{'LoCoMo, same turns and vectors':<32}{'memory R@5':>11}{'R@10':>7}{name + ' R@5':>16}{'R@10':>7}"]

    def row(label: str, a: dict[str, Any], b: dict[str, Any]) -> str:
        return f"{label:<32}{a['recall@5']:>11.3f}{a['recall@10']:>7.3f}{b['recall@5']:>16.3f}{b['recall@10']:>7.3f}"

    lines.append(row(f"overall (n={ours['n']})", ours["overall"], theirs["overall"]))
    for category, metrics in ours["by_category"].items():
        other = theirs["by_category"].get(category)
        if other is not None:
            lines.append(row(f"  {category} {CATEGORIES.get(int(category), '?')}", metrics, other))
    a, b = ours["latency_ms"], theirs["latency_ms"]
    lines.append(
        f"{'latency p50 / p95 ms':<32}{a['p50']:>11.1f}{a['p95']:>7.1f}{b['p50']:>16.1f}{b['p95']:>7.1f}"
        "  (query embedding included)"
    )
    notes = theirs.get("config", {}).get("notes")
    if notes:
        lines.append(f"{name}: {'; '.join(notes)}; infer=False, embedded Qdrant, search threshold 0.1 (its default)")
    return "\n".join(lines)
