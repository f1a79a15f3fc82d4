"""LoCoMo retrieval benchmark: evidence recall@k, NDCG@10 and MRR per category.

The metric is defined in ``shared/bench/README.md``. Per conversation a fresh
store is opened; every dialogue turn becomes one memory (``"Speaker: text"``,
plus ``" [shares image: caption]"`` when the turn has a BLIP caption), stored
through :meth:`Memory.remember_batch` with its dia_id, session number and
session date in metadata. Each question of category 1–4 with evidence is then
recalled (``limit=20``) against that conversation and the returned turns are
compared with the evidence turns.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory.bench.metrics import METRIC_KEYS, mean_metrics, parse_evidence, percentile, question_metrics
from memory.config import RerankSettings, Settings
from memory.embedders import create_embedder
from memory.embedders.base import Embedder
from memory.embedders.batching import forget_queries
from memory.errors import InvalidInputError
from memory.memory import Memory
from memory.retrieval.config import RetrievalConfig
from memory.retrieval.window import MONTHS

__all__ = [
    "DEFAULT_DATA",
    "CATEGORIES",
    "RECALL_LIMIT",
    "BASELINES",
    "Turn",
    "Question",
    "Conversation",
    "LocomoResult",
    "load_conversations",
    "turn_content",
    "database_url",
    "run_locomo",
    "evaluate_conversations",
    "session_time",
    "thread_of",
    "format_report",
    "baseline_results",
    "names_a_date",
]

#: Where the development split lives, relative to the repository checkout.
DEFAULT_DATA = Path("..") / "shared" / "bench" / "locomo_dev.json"
#: Category ids of the official evaluation code (5, adversarial, is skipped).
CATEGORIES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
RECALL_LIMIT = 20
#: Baselines measured on the development split (shared/bench/README.md).
_BASELINE_ROWS = {
    "BM25": (0.238, 0.445, 0.526, 0.602, 0.385, 0.367),
    "MiniLM": (0.172, 0.399, 0.493, 0.603, 0.334, 0.316),
    "RRF": (0.234, 0.475, 0.572, 0.658, 0.406, 0.388),
}
BASELINES: dict[str, dict[str, float]] = {
    name: dict(zip(METRIC_KEYS, row, strict=True)) for name, row in _BASELINE_ROWS.items()
}

_SESSION_KEY = re.compile(r"session_(\d+)")
_SESSION_TIME = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.IGNORECASE)
_MONTH_NUMBERS = {name.lower(): number for number, name in enumerate(MONTHS, 1)}


@dataclass(frozen=True, slots=True)
class Turn:
    """One dialogue turn, ready to store."""

    dia_id: str
    session: int
    session_date: str | None
    speaker: str
    content: str


@dataclass(frozen=True, slots=True)
class Question:
    """A question with its valid evidence turn ids and the evidence pieces dropped."""

    question: str
    category: int
    evidence: tuple[str, ...]
    dropped: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    """A LoCoMo conversation: its turns in order and its questions (all categories)."""

    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


@dataclass
class LocomoResult:
    """Outcome of a run: per-question metrics, dropped evidence, latencies and the config."""

    config: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    conversations: int = 0
    turns: int = 0
    ingest_seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The report as one JSON-ready object (see the module docs and bench README)."""
        by_category: dict[str, dict[str, float | int]] = {}
        for category in sorted({row["category"] for row in self.rows}):
            rows = [row for row in self.rows if row["category"] == category]
            by_category[str(category)] = {**_rounded(mean_metrics(rows)), "n": len(rows)}
        dated = [row for row in self.rows if names_a_date(row["question"])]
        return {
            "n": len(self.rows),
            "overall": _rounded(mean_metrics(self.rows)),
            "by_category": by_category,
            "dated_questions": {**_rounded(mean_metrics(dated)), "n": len(dated)},
            "dropped_evidence": len(self.dropped),
            "latency_ms": {
                "p50": round(percentile(self.latencies_ms, 50), 3),
                "p95": round(percentile(self.latencies_ms, 95), 3),
            },
            "config": dict(self.config),
        }


_NAMED_DATE = re.compile(rf"\b(?:(?:19|20)\d\d|{'|'.join(MONTHS)})\b")


def names_a_date(question: str) -> bool:
    """Whether ``question`` names a year or a month ("in 2022", "on 16 March", "in May 2023")."""
    return _NAMED_DATE.search(question) is not None


def _rounded(metrics: dict[str, float]) -> dict[str, float]:
    return {key: round(value, 4) for key, value in metrics.items()}


def turn_content(turn: dict[str, Any]) -> str:
    """The memory text of a turn: ``"Speaker: text"`` plus ``" [shares image: caption]"``."""
    content = f"{turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        content += f" [shares image: {caption.strip()}]"
    return content


def _parse_conversation(raw: dict[str, Any]) -> Conversation:
    sample_id = str(raw["sample_id"])
    dialogue = raw["conversation"]
    sessions = sorted((int(match[1]), key) for key in dialogue if (match := _SESSION_KEY.fullmatch(key)) is not None)
    turns: list[Turn] = []
    for number, key in sessions:
        date = dialogue.get(f"{key}_date_time")
        for turn in dialogue[key]:
            turns.append(
                Turn(
                    dia_id=str(turn["dia_id"]),
                    session=number,
                    session_date=date if isinstance(date, str) else None,
                    speaker=str(turn["speaker"]),
                    content=turn_content(turn),
                )
            )
    known = {t.dia_id for t in turns}
    questions = []
    for qa in raw.get("qa", []):
        parsed = parse_evidence(qa.get("evidence") or [], known)
        questions.append(
            Question(
                question=str(qa["question"]),
                category=int(qa["category"]),
                evidence=parsed.turns,
                dropped=parsed.dropped,
            )
        )
    return Conversation(sample_id=sample_id, turns=tuple(turns), questions=tuple(questions))


def load_conversations(path: str | Path) -> list[Conversation]:
    """Read a LoCoMo JSON file (a list of conversations). Raises InvalidInputError if unusable."""
    source = Path(path)
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInputError(f"cannot read LoCoMo data {source}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{source} is not valid JSON: {exc}") from exc
    if not isinstance(data, list):
        raise InvalidInputError(f"{source} must hold a JSON list of LoCoMo conversations")
    try:
        return [_parse_conversation(entry) for entry in data]
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInputError(f"{source} does not look like LoCoMo data (missing or bad field {exc})") from exc


def database_url(backend: str, directory: Path, name: str) -> str:
    """The database URL of a fresh store for ``backend`` ('sqlite' or 'inmemory')."""
    if backend == "sqlite":
        return f"sqlite:///{(directory / f'{name}.db').resolve()}"
    if backend == "inmemory":
        return "memory://"
    raise InvalidInputError(f"unknown backend {backend!r}; use 'sqlite', 'inmemory' or 'postgres'")


@contextmanager
def fresh_store(backend: str, directory: Path, name: str, dsn: str | None = None) -> Iterator[str]:
    """The URL of a fresh store for ``backend``; 'postgres': a scratch database on ``dsn``'s server, dropped after."""
    if backend != "postgres":
        yield database_url(backend, directory, name)
        return
    if not dsn:
        raise InvalidInputError("the postgres backend needs a server: pass dsn (--dsn, or MEMORY_BENCH_DSN)")
    from memory.backends.servers import scratch_database

    with scratch_database(dsn, f"memory_bench_{name}") as url:
        yield url


def session_time(text: str | None) -> datetime | None:
    """The UTC datetime of a LoCoMo session stamp like ``"1:56 pm on 8 May, 2023"`` (None if unparsable)."""
    if not text:
        return None
    match = _SESSION_TIME.fullmatch(text.strip())
    if match is None:
        return None
    hour, minute, half, day, month, year = match.groups()
    try:
        month_number = _MONTH_NUMBERS[month.lower()]
        hour24 = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
        return datetime(int(year), month_number, int(day), hour24, int(minute), tzinfo=UTC)
    except (KeyError, ValueError):
        return None


def thread_of(conv: Conversation, turn: Turn, threads: str = "session") -> str:
    """The thread a turn is stored in: one per chat session (default), or one per conversation."""
    return f"{conv.sample_id}/session-{turn.session}" if threads == "session" else conv.sample_id


def _store_conversation(
    mem: Memory, conv: Conversation, namespace: str, threads: str = "session", extract: bool = False
) -> dict[str, list[str]]:
    """Remember every turn; returns memory id -> dia_ids (several if the store deduplicated).

    Each turn is stored as a user of the library would: its text, its chat
    session as the thread, the session's date and time as ``created_at``,
    and the LoCoMo ids in metadata (used only to score the answers).
    """
    entries = [
        {
            "content": turn.content,
            "kind": "conversation",
            "thread": thread_of(conv, turn, threads),
            **({"created_at": when} if (when := session_time(turn.session_date)) is not None else {}),
            "metadata": {
                "dia_id": turn.dia_id,
                "session": turn.session,
                "session_date": turn.session_date,
                "speaker": turn.speaker,
                "conversation": conv.sample_id,
            },
        }
        for turn in conv.turns
    ]
    ids = mem.remember_batch(entries, namespace=namespace, extract="inline" if extract else False)
    turns_of: dict[str, list[str]] = {}
    for memory_id, turn in zip(ids, conv.turns, strict=True):
        turns_of.setdefault(memory_id, []).append(turn.dia_id)
    return turns_of


def run_locomo(
    data: str | Path | Sequence[Conversation],
    *,
    embedder: str | Embedder = "auto",
    backend: str = "sqlite",
    preset: str = "balanced",
    rrf_k: float | None = None,
    limit_conversations: int | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    extract: bool = False,
    dsn: str | None = None,
    fact_keys: str = "extracted",
    reranker: RerankSettings | None = None,
) -> LocomoResult:
    """Run the benchmark; returns per-question metrics and latencies.

    ``data`` is a path to a LoCoMo JSON file or loaded conversations;
    ``embedder`` a provider name or instance (created once, shared by all
    conversations); ``backend`` 'sqlite' (a file per conversation in a temp
    dir), 'inmemory' or 'postgres' (a scratch database per conversation on
    ``dsn``'s server, dropped afterwards); ``preset`` a retrieval preset name, with its RRF
    constant replaced by ``rrf_k`` when given; ``extract`` runs extraction
    (the configured LLM, heuristic by default) inline at ingest, which the
    graph channel needs; ``fact_keys`` is the stores' ``Settings.fact_keys``; ``reranker``
    the stores' rerank stage (none by default). Raises
    InvalidInputError or ConfigError (unknown preset, embedder or backend).
    """
    conversations = list(data) if isinstance(data, Sequence) and not isinstance(data, str) else load_conversations(data)
    if limit_conversations is not None:
        if limit_conversations < 1:
            raise InvalidInputError("limit_conversations must be at least 1")
        conversations = conversations[:limit_conversations]
    settings = Settings(database="memory://", retrieval=preset, fact_keys=fact_keys, reranker=reranker)
    config = settings.retrieval_config()  # raises ConfigError for an unknown preset before any work
    if rrf_k is not None:
        settings = settings.model_copy(update={"retrieval": config.model_copy(update={"rrf_k": float(rrf_k)})})
    model = create_embedder(embedder) if isinstance(embedder, str) else embedder
    result = LocomoResult(
        config={
            "embedder": model.model_name,
            "backend": backend,
            "preset": preset,
            "rrf_k": config.rrf_k if rrf_k is None else rrf_k,
            **({"extract": True} if extract else {}),
            **({"fact_keys": fact_keys} if fact_keys != "extracted" else {}),
            **({"reranker": reranker.model_dump(mode="json")} if reranker is not None else {}),
        }
    )
    evaluate_conversations(
        conversations, model, backend, settings, {"run": (settings.retrieval_config(), result)},
        progress=progress, dsn=dsn, extract=extract,
    )  # fmt: skip
    return result


def evaluate_conversations(
    conversations: Sequence[Conversation],
    model: Embedder,
    backend: str,
    settings: Settings,
    runs: dict[str, tuple[RetrievalConfig, LocomoResult]],
    *,
    threads: str = "session",
    progress: Callable[[int, int, str], None] | None = None,
    dsn: str | None = None,
    extract: bool = False,
) -> None:
    """Store each conversation once (with ``settings``) and recall every question with each run's config.

    Metrics, dropped evidence and latencies are appended to each run's result.
    """
    with tempfile.TemporaryDirectory(prefix="memory-locomo-") as tmp:
        for index, conv in enumerate(conversations):
            if progress is not None:
                progress(index, len(conversations), conv.sample_id)
            namespace = f"locomo-{conv.sample_id}"
            with (
                fresh_store(backend, Path(tmp), conv.sample_id, dsn) as url,
                Memory(url, embedder=model, settings=settings.model_copy(update={"database": url})) as mem,
            ):
                started = time.perf_counter()
                turns_of = _store_conversation(mem, conv, namespace, threads, extract)
                ingest = time.perf_counter() - started
                if conv.questions:  # warm caches, so the first config timed is not penalised
                    mem.recall(conv.questions[0].question, limit=RECALL_LIMIT, namespace=namespace)
                for _, result in runs.values():
                    result.ingest_seconds += ingest
                    result.turns += len(conv.turns)
                    result.conversations += 1
                _ask(mem, conv, namespace, turns_of, list(runs.values()))
    if progress is not None:
        progress(len(conversations), len(conversations), "")


def _ask(
    mem: Memory,
    conv: Conversation,
    namespace: str,
    turns_of: dict[str, list[str]],
    runs: list[tuple[RetrievalConfig, LocomoResult]],
) -> None:
    """Recall every scored question of ``conv`` with each run's config; record metrics and latency.

    Configs take turns question by question, so a change in machine load
    during the run weighs on every config's latency alike.
    """
    for question in conv.questions:
        if question.category not in CATEGORIES:
            continue
        for config, result in runs:
            result.dropped.extend((conv.sample_id, piece) for piece in question.dropped)
            if not question.evidence:
                continue
            forget_queries(mem.embedder)  # each config's latency includes embedding the question
            started = time.perf_counter()
            hits = mem.recall(question.question, limit=RECALL_LIMIT, namespace=namespace, retrieval=config)
            result.latencies_ms.append((time.perf_counter() - started) * 1000.0)
            ranked = [turn for hit in hits for turn in _hit_turns(hit.item.metadata, turns_of.get(hit.id))]
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


def baseline_results(conversations: Sequence[Conversation], model: Embedder) -> dict[str, LocomoResult]:
    """BM25, dense cosine and RRF(k=60) over each conversation's turns, scored like the stores' runs.

    See :mod:`memory.bench.baselines` (the project's own Okapi BM25, not bm25s).
    Measured in the same run, on the same vectors the stores hold.
    """
    from memory.bench.baselines import baseline_rankings
    from memory.embedders.base import embed_chunked, embed_texts

    results: dict[str, LocomoResult] = {}
    for conv in conversations:
        texts = [t.content for t in conv.turns]
        vectors = embed_chunked(model, texts)
        asked = [q for q in conv.questions if q.category in CATEGORIES and q.evidence]
        if not asked:
            continue
        queries = embed_texts(model, [q.question for q in asked] + ([asked[0].question] if len(asked) == 1 else []))
        for question, query_vector in zip(asked, queries, strict=False):
            for name, order in baseline_rankings(texts, vectors, question.question, query_vector).items():
                result = results.setdefault(name, LocomoResult(config={"baseline": name}))
                ranked = [conv.turns[i].dia_id for i in order[:RECALL_LIMIT]]
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
    return results


def _hit_turns(metadata: dict[str, Any], stored_as: list[str] | None) -> list[str]:
    """Turn ids a hit stands for: its metadata dia_id, plus turns deduplicated into it."""
    turns = [metadata["dia_id"]] if isinstance(metadata.get("dia_id"), str) else []
    for turn in stored_as or ():
        if turn not in turns:
            turns.append(turn)
    return turns


def format_report(report: dict[str, Any], *, dropped: Sequence[tuple[str, str]] = ()) -> str:
    """A plain-text table of a :meth:`LocomoResult.to_json` report (overall, per category, baseline)."""
    columns = ("R@1", "R@5", "R@10", "R@20", "NDCG@10", "MRR")
    header = f"{'':<22}{'n':>5}" + "".join(f"{c:>9}" for c in columns)

    def line(label: str, n: int | str, metrics: dict[str, Any]) -> str:
        return f"{label:<22}{n!s:>5}" + "".join(f"{metrics[key]:>9.3f}" for key in METRIC_KEYS)

    config = report["config"]
    lines = [
        f"LoCoMo evidence retrieval  embedder={config['embedder']}  backend={config['backend']}  "
        f"preset={config['preset']}"
        + (
            f"  reranker={config['reranker']['provider']} (top {config['reranker']['top_n']}, "
            f"weight {config['reranker']['weight']})"
            if "reranker" in config
            else ""
        ),
        header,
        line("overall", report["n"], report["overall"]),
    ]
    for category, metrics in report["by_category"].items():
        name = CATEGORIES.get(int(category), "?")
        lines.append(line(f"  {category} {name}", metrics["n"], metrics))
    if report.get("dated_questions", {}).get("n"):
        lines.append(line("  naming a date/month/yr", report["dated_questions"]["n"], report["dated_questions"]))
    lines.append(line("baseline RRF (README)", "", BASELINES["RRF"]))
    shown = ", ".join(f"{conv} {piece!r}" for conv, piece in dropped)
    lines.append(f"dropped evidence ids: {report['dropped_evidence']}" + (f" ({shown})" if shown else ""))
    latency = report["latency_ms"]
    lines.append(f"recall latency: p50 {latency['p50']:.1f} ms, p95 {latency['p95']:.1f} ms (query embedding included)")
    return "\n".join(lines)
