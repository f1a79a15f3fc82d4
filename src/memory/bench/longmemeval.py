"""LongMemEval retrieval benchmark: session and turn recall@k, NDCG@10, per question type.

The metric is defined in ``shared/bench/README.md``. Per question a fresh
store holds that question's haystack: every turn one memory
(:meth:`Memory.remember_batch`) or one message (``mem.messages.append_many``,
embedded at once), text ``"role: content"``, thread = session id, created at
the session's date (turn ``i`` ``i`` seconds later, so the thread keeps its
order); the clock is the question's date. The question is recalled
(``limit=50``); sessions are ranked by their best turn. Session recall@k
counts answer sessions in the top k sessions, turn recall@k the
``has_answer`` turns in the top k turns; NDCG@10 with binary relevance.

``baseline=True`` also ranks every haystack with plain BM25, dense cosine
and RRF(k=60) of the two (:mod:`memory.bench.baselines`) in the same run.
"""

from __future__ import annotations

import functools
import json
import math
import re
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory.bench.baselines import baseline_rankings
from memory.bench.locomo import fresh_store
from memory.bench.metrics import ndcg_at_k, percentile, recall_at_k
from memory.bench.speed import machine_info
from memory.config import Settings
from memory.embedders.base import Embedder, embed_chunked, embed_query
from memory.embedders.batching import forget_queries
from memory.errors import InvalidInputError
from memory.memory import Memory
from memory.retrieval.config import RetrievalConfig, preset

__all__ = [
    "DEFAULT_DATA",
    "TYPES",
    "RECALL_LIMIT",
    "KS",
    "LmeTurn",
    "LmeSession",
    "LmeQuestion",
    "LmeResult",
    "load_questions",
    "parse_date",
    "run_longmemeval",
    "format_report",
    "measure_ingest",
    "round_robin",
]

DEFAULT_DATA = Path("..") / "shared" / "bench" / "longmemeval_dev.json"
TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
)
RECALL_LIMIT = 50
KS = (1, 3, 5, 10)
_DATE = re.compile(r"(\d{4})/(\d{2})/(\d{2})\s*(?:\([A-Za-z]{3}\))?\s*(\d{2}):(\d{2})")


@dataclass(frozen=True, slots=True)
class LmeTurn:
    """One haystack turn: its id ``<session>#<index>``, role, text and whether it holds the answer."""

    id: str
    role: str
    content: str
    has_answer: bool

    @property
    def text(self) -> str:
        """The stored text, ``"role: content"``."""
        return f"{self.role}: {self.content}"


@dataclass(frozen=True, slots=True)
class LmeSession:
    """A haystack session: id, date and turns."""

    id: str
    date: datetime
    turns: tuple[LmeTurn, ...]


@dataclass(frozen=True, slots=True)
class LmeQuestion:
    """A question with its haystack and the answer sessions and turns."""

    id: str
    type: str
    question: str
    date: datetime
    answer_sessions: tuple[str, ...]
    sessions: tuple[LmeSession, ...]

    @property
    def answer_turns(self) -> tuple[str, ...]:
        """Ids of the ``has_answer`` turns."""
        return tuple(t.id for s in self.sessions for t in s.turns if t.has_answer)


def parse_date(text: str) -> datetime:
    """``"2023/05/20 (Sat) 02:21"`` as a UTC datetime; raises InvalidInputError."""
    match = _DATE.fullmatch(text.strip())
    if match is None:
        raise InvalidInputError(f"unparsable LongMemEval date {text!r}")
    year, month, day, hour, minute = (int(g) for g in match.groups())
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def _parse_question(raw: dict[str, Any]) -> LmeQuestion:
    sessions = []
    for sid, date, turns in zip(
        raw["haystack_session_ids"], raw["haystack_dates"], raw["haystack_sessions"], strict=True
    ):
        parsed = tuple(
            LmeTurn(
                id=f"{sid}#{i}", role=str(t["role"]), content=str(t["content"]), has_answer=bool(t.get("has_answer"))
            )
            for i, t in enumerate(turns)
            if str(t.get("content", "")).strip()
        )
        sessions.append(LmeSession(id=str(sid), date=parse_date(date), turns=parsed))
    return LmeQuestion(
        id=str(raw["question_id"]),
        type=str(raw["question_type"]),
        question=str(raw["question"]),
        date=parse_date(raw["question_date"]),
        answer_sessions=tuple(str(s) for s in raw["answer_session_ids"]),
        sessions=tuple(sessions),
    )


def load_questions(path: str | Path) -> list[LmeQuestion]:
    """Read a LongMemEval JSON file (a list of questions). Raises InvalidInputError if unusable."""
    source = Path(path)
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInputError(f"cannot read LongMemEval data {source}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{source} is not valid JSON: {exc}") from exc
    if not isinstance(data, list):
        raise InvalidInputError(f"{source} must hold a JSON list of LongMemEval questions")
    try:
        return [_parse_question(entry) for entry in data]
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInputError(f"{source} does not look like LongMemEval data (missing or bad field {exc})") from exc


def round_robin(questions: Sequence[LmeQuestion]) -> list[LmeQuestion]:
    """The questions interleaved by type (first of each type, then second, …), so any prefix is balanced."""
    by_type: dict[str, list[LmeQuestion]] = {}
    for q in questions:
        by_type.setdefault(q.type, []).append(q)
    out: list[LmeQuestion] = []
    for position in range(max((len(v) for v in by_type.values()), default=0)):
        out.extend(group[position] for group in by_type.values() if position < len(group))
    return out


def question_scores(ranked_turns: Sequence[str], question: LmeQuestion) -> dict[str, float]:
    """Session and turn recall@k (k in :data:`KS`) and NDCG@10 of one ranking of turn ids."""
    sessions = [t.split("#", 1)[0] for t in ranked_turns]
    out: dict[str, float] = {}
    for level, ranked, relevant in (
        ("session", sessions, question.answer_sessions),
        ("turn", list(ranked_turns), question.answer_turns),
    ):
        for k in KS:
            out[f"{level} R@{k}"] = recall_at_k(ranked, relevant, k)
        out[f"{level} NDCG@10"] = ndcg_at_k(ranked, relevant, 10)
    return out


METRICS = tuple(f"{level} {m}" for level in ("session", "turn") for m in (*(f"R@{k}" for k in KS), "NDCG@10"))


@dataclass
class LmeResult:
    """Per-question scores and latencies of one retriever (a preset through one interface, or a baseline)."""

    name: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Overall and per-type means, with latency percentiles."""
        by_type = {}
        for kind in TYPES:
            rows = [r for r in self.rows if r["type"] == kind]
            if rows:
                by_type[kind] = {**_mean(rows), "n": len(rows)}
        return {
            "name": self.name,
            "n": len(self.rows),
            "overall": _mean(self.rows),
            "by_type": by_type,
            "latency_ms": {
                "p50": round(percentile(self.latencies_ms, 50), 3),
                "p95": round(percentile(self.latencies_ms, 95), 3),
            }
            if self.latencies_ms
            else None,
        }


def _mean(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    return {m: round(sum(r[m] for r in rows) / len(rows), 4) if rows else 0.0 for m in METRICS}


def _entries(question: LmeQuestion) -> tuple[list[dict[str, Any]], list[str]]:
    entries, ids = [], []
    for session in question.sessions:
        for index, turn in enumerate(session.turns):
            entries.append(
                {
                    "content": turn.text,
                    "thread": session.id,
                    "created_at": session.date + timedelta(seconds=index),
                    "metadata": {"turn": turn.id, "session": session.id, "role": turn.role},
                }
            )
            ids.append(turn.id)
    return entries, ids


@dataclass
class _Ingest:
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    turns: int = 0
    split: dict[str, float] = field(default_factory=dict)


#: Parts of an ingest timed for the cost split: (label, module path fragment, function name). Parts nest
#: (the windows' parts run inside "windows: before the insert" or "after"); "total" is all profiled time.
_SPLIT = (
    ("validate", "memory/items.py", "_prepare"),
    ("embed", "memory/items.py", "_embed_items"),
    ("store rows + vectors", "backends/items_write.py", "add"),
    ("windows: before the insert", "memory/windows.py", "_plan"),
    ("windows: after the insert", "memory/windows.py", "_finish"),
    ("windows: read threads", "memory/windows.py", "_thread_slice"),
    ("windows: compute", "memory/retrieval/window.py", "window_text"),
    ("windows: write", "backends/", "set_windows"),
    ("messages: store", "backends/", "append_messages"),
    ("messages: embed", "memory/episodic/sync.py", "embed_messages"),
)


def _profiled(run: Callable[[], Any]) -> tuple[Any, dict[str, float]]:
    """Run ``run`` under cProfile; returns its result and the cumulative seconds of the :data:`_SPLIT` parts."""
    import cProfile
    import pstats

    profile = cProfile.Profile()
    profile.enable()
    try:
        result = run()
    finally:
        profile.disable()
    profiled = pstats.Stats(profile)
    stats = profiled.stats  # type: ignore[attr-defined]
    split: dict[str, float] = {"total": float(profiled.total_tt)}  # type: ignore[attr-defined]
    for (filename, _, function), (_, _, _, cumulative, _) in stats.items():
        for label, fragment, name in _SPLIT:
            if function == name and fragment in filename.replace("\\", "/"):
                split[label] = split.get(label, 0.0) + float(cumulative)
    return result, split


def run_longmemeval(
    data: str | Path | Sequence[LmeQuestion],
    *,
    embedder: Embedder,
    presets: Sequence[str] = ("balanced",),
    interfaces: Sequence[str] = ("memories", "messages"),
    baseline: bool = False,
    backend: str = "sqlite",
    limit_questions: int | None = None,
    dsn: str | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Run the benchmark; returns the JSON-ready report (see :func:`format_report`).

    ``interfaces``: "memories" (remember/recall) and/or "messages"
    (messages.append_many + embed / messages.search). Every preset is recalled
    on the same stores. Raises InvalidInputError or ConfigError.
    """
    questions = list(data) if isinstance(data, Sequence) and not isinstance(data, str) else load_questions(data)
    if limit_questions is not None:
        questions = round_robin(questions)[:limit_questions]
    unknown = set(interfaces) - {"memories", "messages"}
    if unknown or not interfaces:
        raise InvalidInputError(f"interfaces must be among memories, messages; got {sorted(unknown)}")
    configs = {name: preset(name) for name in presets}
    results: dict[str, LmeResult] = {}
    ingest = {name: _Ingest() for name in interfaces}
    base = settings or Settings(database="memory://")
    with tempfile.TemporaryDirectory(prefix="memory-longmemeval-") as tmp:
        for number, question in enumerate(questions):
            if progress is not None:
                progress(number, len(questions), question.id)
            entries, ids = _entries(question)
            for interface in interfaces:
                name = f"lme{number}-{interface}"
                with (
                    fresh_store(backend, Path(tmp), name, dsn) as url,
                    Memory(
                        url,
                        embedder=embedder,
                        settings=base.model_copy(update={"database": url}),
                        clock=_fixed(question.date),
                    ) as mem,
                ):
                    started, cpu = time.perf_counter(), time.process_time()
                    if number == 0:  # the cost split, from the first question (profiling slows it a little)
                        search, split = _profiled(functools.partial(_ingest, mem, interface, entries))
                        ingest[interface].split = {k: round(v, 3) for k, v in split.items()}
                    else:
                        search = _ingest(mem, interface, entries)
                    ingest[interface].seconds += time.perf_counter() - started
                    ingest[interface].cpu_seconds += time.process_time() - cpu
                    ingest[interface].turns += len(entries)
                    search(question.question, configs[presets[0]])  # warm caches
                    for preset_name, config in configs.items():
                        result = results.setdefault(
                            f"{preset_name} / {interface}", LmeResult(f"{preset_name} / {interface}")
                        )
                        forget_queries(mem.embedder)  # each preset's latency includes embedding the question
                        started = time.perf_counter()
                        ranked = search(question.question, config)
                        result.latencies_ms.append((time.perf_counter() - started) * 1000.0)
                        _record(result, question, ranked)
            if baseline:
                texts = [e["content"] for e in entries]
                vectors = embed_chunked(embedder, texts)
                query_vector = embed_query(embedder, question.question)
                for label, order in baseline_rankings(texts, vectors, question.question, query_vector).items():
                    result = results.setdefault(label, LmeResult(label))
                    _record(result, question, [ids[i] for i in order[:RECALL_LIMIT]])
    if progress is not None:
        progress(len(questions), len(questions), "")
    return {
        "questions": len(questions),
        "embedder": embedder.model_name,
        "backend": backend,
        **({"reranker": base.reranker.model_dump(mode="json")} if base.reranker is not None else {}),
        "ingest": {
            name: {
                "turns": i.turns,
                "seconds": round(i.seconds, 2),
                "turns_per_second": round(i.turns / i.seconds, 1) if i.seconds else math.nan,
                "cpu_seconds": round(i.cpu_seconds, 2),
                "turns_per_cpu_second": round(i.turns / i.cpu_seconds, 1) if i.cpu_seconds else math.nan,
                "first_question_split_seconds": i.split,
            }
            for name, i in ingest.items()
        },
        "results": [r.to_json() for r in results.values()],
    }


def _fixed(moment: datetime) -> Callable[[], datetime]:
    """A clock that always says ``moment`` (the question's date)."""
    return lambda: moment


def _record(result: LmeResult, question: LmeQuestion, ranked: Sequence[str]) -> None:
    result.rows.append(
        {"id": question.id, "type": question.type, "ranked": list(ranked), **question_scores(ranked, question)}
    )


def _ingest(mem: Memory, interface: str, entries: list[dict[str, Any]]) -> Callable[[str, RetrievalConfig], list[str]]:
    """Store ``entries`` through ``interface``; returns a search function giving turn ids best first."""
    if interface == "memories":
        mem.remember_batch([{**e, "kind": "conversation"} for e in entries])

        def recall(query: str, config: RetrievalConfig) -> list[str]:
            hits = mem.recall(query, limit=RECALL_LIMIT, retrieval=config)
            return [str(h.item.metadata["turn"]) for h in hits]

        return recall
    mem.messages.append_many([{**e, "role": e["metadata"]["role"]} for e in entries], embed=True)

    def search(query: str, config: RetrievalConfig) -> list[str]:
        hits = mem.messages.search(query, limit=RECALL_LIMIT, retrieval=config)
        return [str(h.message.metadata["turn"]) for h in hits]

    return search


def _reranker_label(spec: dict[str, Any]) -> str:
    """``provider (top N, weight W)`` of a report's rerank stage."""
    return f"{spec['provider']} (top {spec['top_n']}, weight {spec['weight']})"


def format_report(report: dict[str, Any]) -> str:
    """Plain-text tables: overall (session and turn metrics, latency), then turn R@5 / R@10 per type."""
    head = f"{'retriever':<34}{'n':>4}" + "".join(
        f"{m.replace('session ', 's ').replace('turn ', 't '):>9}" for m in METRICS
    )
    lines = [
        f"LongMemEval retrieval  embedder={report['embedder']}  backend={report['backend']}  "
        f"questions={report['questions']}"
        + (f"  reranker={_reranker_label(report['reranker'])}" if "reranker" in report else ""),
        head + f"{'p50 ms':>9}{'p95 ms':>9}",
    ]
    for r in report["results"]:
        latency = r["latency_ms"]
        tail = f"{latency['p50']:>9.1f}{latency['p95']:>9.1f}" if latency else f"{'-':>9}{'-':>9}"
        lines.append(f"{r['name']:<34}{r['n']:>4}" + "".join(f"{r['overall'][m]:>9.3f}" for m in METRICS) + tail)
    lines.append("")
    lines.append("turn R@5 / R@10 per type")
    lines.append(f"{'retriever':<34}" + "".join(f"{t[:22]:>24}" for t in TYPES))
    for r in report["results"]:
        cells = []
        for kind in TYPES:
            m = r["by_type"].get(kind)
            cells.append(f"{m['turn R@5']:.3f} / {m['turn R@10']:.3f}" if m else "-")
        lines.append(f"{r['name']:<34}" + "".join(f"{c:>24}" for c in cells))
    for name, i in report["ingest"].items():
        lines.append(
            f"ingest via {name}: {i['turns']} turns in {i['seconds']:.1f} s ({i['turns_per_second']} turns/s; "
            f"CPU {i['cpu_seconds']:.1f} s, {i['turns_per_cpu_second']} turns per CPU-second)"
        )
        split = ", ".join(f"{k} {v:.2f} s" for k, v in i["first_question_split_seconds"].items())
        if split:
            lines.append(f"  cost split of the first question (cumulative, profiled): {split}")
    return "\n".join(lines)


@contextmanager
def _ingest_store(
    backend: str, directory: Path, dsn: str | None, embedder: Embedder, date: datetime, name: str
) -> Iterator[Memory]:
    """A fresh store ``name`` for one haystack's ingest, its clock fixed at the question's date."""
    with (
        fresh_store(backend, directory, name, dsn) as url,
        Memory(url, embedder=embedder, settings=Settings(database=url), clock=_fixed(date)) as mem,
    ):
        yield mem


def measure_ingest(
    data: str | Path | Sequence[LmeQuestion],
    *,
    embedder: Embedder,
    backend: str = "sqlite",
    limit_questions: int | None = None,
    dsn: str | None = None,
) -> dict[str, Any]:
    """``remember_batch`` of each haystack with precomputed vectors: turns/s (wall and CPU) and the cost split.

    The vectors are computed first (``embedder``, e.g. a cached one), outside
    the timing; each haystack is then one ``remember_batch`` into a fresh
    store, as an application importing a chat history with its own vectors.
    The cost split comes from a profiled run of the first haystack into a
    store of its own, which the rates do not count (the profiler slows it).
    """
    questions = list(data) if isinstance(data, Sequence) and not isinstance(data, str) else load_questions(data)
    if limit_questions is not None:
        questions = round_robin(questions)[:limit_questions]
    total = _Ingest()
    machine = machine_info()
    with tempfile.TemporaryDirectory(prefix="memory-longmemeval-ingest-") as tmp:
        for number, question in enumerate(questions):
            entries, _ = _entries(question)
            vectors = embed_chunked(embedder, [e["content"] for e in entries])
            batch = [{**e, "kind": "conversation", "vector": v} for e, v in zip(entries, vectors, strict=True)]
            store = functools.partial(_ingest_store, backend, Path(tmp), dsn, embedder, question.date)
            if number == 0:  # the cost split, from a profiled run into a store of its own (not timed)
                with store("profiled") as mem:
                    _, split = _profiled(functools.partial(mem.remember_batch, batch))
                    total.split = {k: round(v, 3) for k, v in split.items()}
            with store(f"ingest{number}") as mem:
                started, cpu = time.perf_counter(), time.process_time()
                mem.remember_batch(batch)
                total.seconds += time.perf_counter() - started
                total.cpu_seconds += time.process_time() - cpu
                total.turns += len(batch)
    return {
        "questions": len(questions),
        "turns": total.turns,
        "seconds": round(total.seconds, 2),
        "turns_per_second": round(total.turns / total.seconds, 1) if total.seconds else math.nan,
        "cpu_seconds": round(total.cpu_seconds, 2),
        "turns_per_cpu_second": round(total.turns / total.cpu_seconds, 1) if total.cpu_seconds else math.nan,
        "first_question_split_seconds": total.split,
        "machine": {**machine, "load_avg_end": machine_info()["load_avg"]},
    }
