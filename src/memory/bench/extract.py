"""``memory bench extract``: extracted facts scored against LoCoMo's reference observations.

Each conversation's messages go through the message extractor in order, as a
user's chat would (speaker, the other participant as listener, the
session's date as the message time). The facts are scored against the data
set's ``observation`` facts (GPT-written, per session and speaker) by a fixed
rule: both are embedded with all-MiniLM-L6-v2 (the default embedder); a
reference fact is *recalled* when some extracted fact of the same session has
cosine >= 0.70 to it, and an extracted fact is *supported* when it has cosine
>= 0.70 to some reference fact of its session. Recall = recalled / references,
precision = supported / extracted (both pooled over sessions), per
conversation and overall, with facts per message and extraction time per
message (p50/p95 wall time, and the CPU time of the extracting thread, which
depends less on how busy the machine is; the embedding for scoring is not
timed; the first message's model load is excluded by a warm-up).

``raw_turns=True`` scores the raw turns ("Speaker: text") as facts instead,
the baseline the extractor must beat.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memory.bench.locomo import session_time
from memory.bench.metrics import percentile
from memory.embedders import create_embedder
from memory.embedders.base import Embedder, embed_texts
from memory.errors import InvalidInputError
from memory.llms.base import LLM

__all__ = ["run_extract_bench", "format_extract_report", "THRESHOLD", "score_session"]

#: Cosine at or above which two facts count as saying the same thing (the issue's fixed rule).
THRESHOLD = 0.70


@dataclass
class _Totals:
    references: int = 0
    recalled: int = 0
    extracted: int = 0
    supported: int = 0
    messages: int = 0
    fallbacks: int = 0
    times_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)

    def add(self, other: _Totals) -> None:
        self.references += other.references
        self.recalled += other.recalled
        self.extracted += other.extracted
        self.supported += other.supported
        self.messages += other.messages
        self.fallbacks += other.fallbacks
        self.times_ms += other.times_ms
        self.cpu_ms += other.cpu_ms

    def to_json(self) -> dict[str, Any]:
        return {
            "references": self.references, "extracted": self.extracted,
            "recall": round(self.recalled / self.references, 4) if self.references else 0.0,
            "precision": round(self.supported / self.extracted, 4) if self.extracted else 0.0,
            "facts_per_message": round(self.extracted / self.messages, 3) if self.messages else 0.0,
            "messages": self.messages, "llm_fallbacks": self.fallbacks,
            "ms_per_message": {
                "p50": round(percentile(self.times_ms, 50), 3) if self.times_ms else 0.0,
                "p95": round(percentile(self.times_ms, 95), 3) if self.times_ms else 0.0,
            },
            "cpu_ms_per_message": {
                "p50": round(percentile(self.cpu_ms, 50), 3) if self.cpu_ms else 0.0,
                "p95": round(percentile(self.cpu_ms, 95), 3) if self.cpu_ms else 0.0,
            },
        }  # fmt: skip


def score_session(references: np.ndarray, extracted: np.ndarray, threshold: float = THRESHOLD) -> tuple[int, int]:
    """(recalled references, supported extracted facts) for one session's unit-length embeddings."""
    if len(references) == 0 or len(extracted) == 0:
        return 0, 0
    sims = references @ extracted.T
    return int((sims.max(axis=1) >= threshold).sum()), int((sims.max(axis=0) >= threshold).sum())


def _load(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInputError(f"cannot read LoCoMo data {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(data, list) or not all(isinstance(c, dict) and "observation" in c for c in data):
        raise InvalidInputError(f"{path} must be a JSON list of LoCoMo conversations with 'observation' facts")
    return data


def _sessions(conv: dict[str, Any]) -> list[int]:
    dialogue = conv["conversation"]
    numbers = []
    for key in dialogue:
        if key.startswith("session_") and key[len("session_") :].isdigit():
            numbers.append(int(key[len("session_") :]))
    return sorted(numbers)


def _references(conv: dict[str, Any], session: int) -> list[str]:
    block = conv.get("observation", {}).get(f"session_{session}_observation") or {}
    refs: list[str] = []
    for entries in block.values():
        for entry in entries or []:
            text = entry[0] if isinstance(entry, list) and entry else entry
            if isinstance(text, str) and text.strip():
                refs.append(text.strip())
    return refs


def _run_conversation(
    conv: dict[str, Any], embedder: Embedder, llm: LLM | None, raw_turns: bool
) -> tuple[_Totals, list[dict[str, Any]]]:
    from memory.extraction.message_facts import facts_of_message

    dialogue = conv["conversation"]
    a, b = str(dialogue.get("speaker_a", "")), str(dialogue.get("speaker_b", ""))
    totals = _Totals()
    samples: list[dict[str, Any]] = []
    for session in _sessions(conv):
        at = session_time(dialogue.get(f"session_{session}_date_time"))
        facts: list[str] = []
        for turn in dialogue[f"session_{session}"]:
            speaker = str(turn["speaker"])
            listener = b if speaker == a else a if speaker == b else None
            text = str(turn.get("text") or "")
            totals.messages += 1
            if raw_turns:
                facts.append(f"{speaker}: {text}")
                continue
            started, started_cpu = time.perf_counter(), time.thread_time()
            found = facts_of_message(text, speaker=speaker, listener=listener, at=at, llm=llm)
            totals.times_ms.append((time.perf_counter() - started) * 1000)
            totals.cpu_ms.append((time.thread_time() - started_cpu) * 1000)
            totals.fallbacks += found.fallback_reason is not None
            facts += [f.statement for f in found.facts]
            if len(samples) < 40 and found.facts:
                samples.append({"turn": turn.get("dia_id"), "text": text, "facts": [f.statement for f in found.facts]})
        refs = _references(conv, session)
        totals.references += len(refs)
        totals.extracted += len(facts)
        if refs and facts:
            matrix = embed_texts(embedder, refs + facts)
            recalled, supported = score_session(matrix[: len(refs)], matrix[len(refs) :])
            totals.recalled += recalled
            totals.supported += supported
    return totals, samples


def run_extract_bench(
    path: str | Path,
    *,
    embedder: str | Embedder = "minilm",
    llm: LLM | None = None,
    limit_conversations: int | None = None,
    raw_turns: bool = False,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Score the extractor on a LoCoMo file; returns the report (overall, per conversation, config).

    Raises InvalidInputError for unusable data, ConfigError for an unknown embedder.
    """
    conversations = _load(Path(path))[:limit_conversations]
    model = create_embedder(embedder) if isinstance(embedder, str) else embedder
    if not raw_turns and llm is None:
        from memory.extraction.message_facts import offline_facts

        offline_facts("I moved to Lisbon last week.", speaker="Warm Up")  # load the NLP model before timing
    overall = _Totals()
    per: dict[str, Any] = {}
    samples: dict[str, Any] = {}
    for index, conv in enumerate(conversations):
        name = str(conv.get("sample_id", index))
        if progress:
            progress(f"conversation {index + 1}/{len(conversations)}: {name}")
        totals, shown = _run_conversation(conv, model, llm, raw_turns)
        overall.add(totals)
        per[name] = totals.to_json()
        samples[name] = shown[:10]
    return {
        "overall": overall.to_json(),
        "per_conversation": per,
        "samples": samples,
        "config": {
            "data": str(path), "embedder": model.model_name, "threshold": THRESHOLD,
            "extractor": "raw turns" if raw_turns else (getattr(llm, "model_name", "llm") if llm else "offline"),
            "conversations": len(conversations),
        },
    }  # fmt: skip


def format_extract_report(report: dict[str, Any]) -> str:
    """A plain-text table of a report."""
    config = report["config"]
    lines = [
        f"LoCoMo fact extraction  extractor={config['extractor']}  embedder={config['embedder']}  "
        f"threshold={config['threshold']}",
        f"{'conversation':<14}{'recall':>8}{'precision':>11}{'facts/msg':>11}{'p50 ms':>9}{'p95 ms':>9}"
        f"{'cpu p50':>9}{'refs':>7}{'facts':>7}",
    ]
    rows: Sequence[tuple[str, dict[str, Any]]] = [*report["per_conversation"].items(), ("overall", report["overall"])]
    for name, row in rows:
        lines.append(
            f"{name:<14}{row['recall']:>8.3f}{row['precision']:>11.3f}{row['facts_per_message']:>11.3f}"
            f"{row['ms_per_message']['p50']:>9.2f}{row['ms_per_message']['p95']:>9.2f}"
            f"{row['cpu_ms_per_message']['p50']:>9.2f}{row['references']:>7}{row['extracted']:>7}"
        )
    if report["overall"].get("llm_fallbacks"):
        lines.append(f"LLM answers replaced by the offline extractor: {report['overall']['llm_fallbacks']}")
    return "\n".join(lines)


def with_fact_keys(conversations: Sequence[Any]) -> list[Any]:
    """LoCoMo conversations whose turns carry their extracted facts in their index key.

    Each turn's stored text becomes ``"Speaker: text"`` followed by the facts
    the offline extractor finds in it (one per line), so both the lexical and
    the vector index see them; the turn stays the unit that is recalled and
    scored (LongMemEval's "fact-augmented key" idea).
    """
    from dataclasses import replace

    from memory.extraction.message_facts import facts_of_message

    out = []
    for conv in conversations:
        speakers = list(dict.fromkeys(t.speaker for t in conv.turns))
        turns = []
        for turn in conv.turns:
            others = [s for s in speakers if s != turn.speaker]
            text = turn.content.split(": ", 1)[1] if ": " in turn.content else turn.content
            text = text.split(" [shares image:", 1)[0]
            found = facts_of_message(
                text, speaker=turn.speaker, listener=others[0] if others else None, at=session_time(turn.session_date)
            )
            facts = [f.statement for f in found.facts]
            turns.append(replace(turn, content="\n".join([turn.content, *facts])) if facts else turn)
        out.append(replace(conv, turns=tuple(turns)))
    return out


def run_fact_index_ablation(
    path: str | Path,
    *,
    embedder: str | Embedder = "auto",
    backend: str = "sqlite",
    limit_conversations: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """LoCoMo evidence recall (the ``memory bench locomo`` metric) with turns as stored, and with their facts added
    to each turn's index key; returns both reports (overall and per category)."""
    from memory.bench.locomo import load_conversations, run_locomo

    conversations = load_conversations(path)[:limit_conversations]
    model = create_embedder(embedder) if isinstance(embedder, str) else embedder
    report: dict[str, Any] = {}
    for name, convs in (("turns", conversations), ("turns+facts", None)):
        if convs is None:
            if progress:
                progress("extracting facts for the turns' index keys")
            convs = with_fact_keys(conversations)
        if progress:
            progress(f"LoCoMo recall with {name}")
        result = run_locomo(convs, embedder=model, backend=backend).to_json()
        report[name] = {"overall": result["overall"], "by_category": result["by_category"], "n": result["n"]}
    return report
