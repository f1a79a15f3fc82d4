"""`memory bench …`: the retrieval-quality (LoCoMo) and speed benchmarks.

The work is done in :mod:`memory.bench`; these commands parse options, report
progress on stderr and print a table, or one JSON document with ``--json``.
Errors from :mod:`memory.errors` end as one line and exit code 1.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from memory.cli.bench_options import rerank_options, rerank_settings
from memory.errors import Error

__all__ = ["bench"]

_DEFAULT_DATA = Path("..") / "shared" / "bench" / "locomo_dev.json"


@contextmanager
def _errors() -> Iterator[None]:
    """Turn a library error into a one-line click error (exit code 1)."""
    try:
        yield
    except Error as exc:
        raise click.ClickException(" ".join(str(exc).split()) or type(exc).__name__) from exc


def _note(quiet: bool) -> Callable[[str], None]:
    def note(message: str) -> None:
        if not quiet:
            click.echo(message, err=True)

    return note


def _data_path(value: Path | None, *, required: bool) -> Path | None:
    if value is not None:
        return value
    if _DEFAULT_DATA.is_file():
        return _DEFAULT_DATA
    if required:
        raise click.UsageError(f"--data is required ({_DEFAULT_DATA} does not exist here)")
    return None


def _default_embedder(ctx: click.Context) -> str:
    """The root ``--embedder`` flag when given, else the library default ('auto')."""
    root = ctx.find_root().obj
    name = getattr(root, "embedder", None)
    return name if isinstance(name, str) and name else "auto"


def _emit(report: dict[str, Any], text: str, *, as_json: bool, out: Path | None) -> None:
    document = json.dumps(report, indent=2, allow_nan=False)
    if out is not None:
        try:
            out.write_text(document + "\n", encoding="utf-8")
        except OSError as exc:
            raise click.ClickException(f"cannot write {out}: {exc.strerror or exc}") from exc
    click.echo(document if as_json else text)


_DATA_TYPE = click.Path(exists=True, dir_okay=False, path_type=Path)
_OUT_TYPE = click.Path(dir_okay=False, writable=True, path_type=Path)


@click.group("bench")
def bench() -> None:
    """Run the retrieval-quality (LoCoMo) and speed benchmarks.

    \b
    Examples:
      memory bench locomo --data ../shared/bench/locomo_dev.json
      memory bench speed --sizes 10000,100000 --peer chroma --out speed.json
    """


_DSN_OPTION = click.option(
    "--dsn", metavar="URL", envvar="MEMORY_BENCH_DSN",
    help="PostgreSQL server for --backend postgres (a scratch database is created there and dropped) "
    "[env: MEMORY_BENCH_DSN].",
)  # fmt: skip


@bench.command("locomo")
@click.option("--data", type=_DATA_TYPE, help=f"LoCoMo JSON file [default: {_DEFAULT_DATA} if it exists].")
@click.option("--embedder", metavar="NAME", help="Embedder provider (auto, minilm, hashing, …) [default: auto].")
@click.option(
    "--preset", default="balanced", show_default=True, metavar="NAME", help="Retrieval preset to recall with."
)
@click.option(
    "--rrf-k", type=click.FloatRange(min=0, min_open=True), metavar="K",
    help="Override the preset's RRF constant (e.g. to sweep it).",
)  # fmt: skip
@click.option(
    "--backend", type=click.Choice(["sqlite", "inmemory", "postgres"]), default="sqlite", show_default=True,
    help="Store per conversation: a SQLite file in a temp dir, memory:// (throwaway SQLite), or a scratch PostgreSQL "
    "database on --dsn's server.",
)  # fmt: skip
@_DSN_OPTION
@click.option(
    "--limit-conversations", type=click.IntRange(min=1), metavar="N", help="Use only the first N conversations."
)
@click.option(
    "--extract",
    is_flag=True,
    help="Run extraction (heuristic LLM unless configured) at ingest; the graph channel needs it.",
)
@click.option(
    "--fact-keys", type=click.Choice(["extracted", "all", "off"]), default="extracted", show_default=True,
    help="Which turns carry their extracted facts in their index key (Settings.fact_keys; 'extracted': "
    "with --extract).",
)  # fmt: skip
@click.option(
    "--ablation", is_flag=True,
    help="Run every step of the retrieval ablation (memory.bench.ablation) and print its table.",
)  # fmt: skip
@click.option("--markdown", is_flag=True, help="With --ablation: print the table as Markdown.")
@click.option(
    "--baseline", is_flag=True,
    help="Also measure BM25 (the project's own Okapi BM25), dense cosine and RRF(k=60) in the same run.",
)  # fmt: skip
@click.option("--cache/--no-cache", default=True, show_default=True,
              help="Keep turn vectors in ~/.cache/memory/vectors ($MEMORY_CACHE_DIR) across runs.")  # fmt: skip
@click.option("--peer", type=click.Choice(["mem0"]),
              help="Also run mem0 (offline, infer=False) on the same turns, vectors and questions.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@click.option("--out", type=_OUT_TYPE, help="Also write the JSON report to this file.")
@click.option("--quiet", "-q", is_flag=True, help="No progress notes on stderr.")
@rerank_options
@click.pass_context
def locomo(
    ctx: click.Context,
    data: Path | None,
    embedder: str | None,
    preset: str,
    rrf_k: float | None,
    backend: str,
    limit_conversations: int | None,
    extract: bool,
    fact_keys: str,
    dsn: str | None,
    ablation: bool,
    markdown: bool,
    baseline: bool,
    cache: bool,
    peer: str | None,
    as_json: bool,
    out: Path | None,
    quiet: bool,
    reranker: str | None,
    rerank_top_n: int,
    rerank_weight: float,
) -> None:
    """Evidence retrieval on LoCoMo: recall@1/5/10/20, NDCG@10 and MRR, per category.

    Every dialogue turn of a conversation is stored as a memory in a fresh
    store; each question of category 1-4 is recalled (limit 20) and the hits
    are compared with the evidence turns. Malformed evidence ids are dropped
    and counted. Recall latency (query embedding included) is measured too.
    """
    from memory.bench.locomo import format_report, run_locomo

    path = _data_path(data, required=True)
    assert path is not None
    note = _note(quiet)
    if ablation:
        _ablation(ctx, path, embedder, backend, dsn, limit_conversations, markdown, as_json, out, note, cache)
        return
    from memory.bench.locomo import baseline_results, load_conversations
    from memory.bench.metrics import mean_metrics
    from memory.bench.vector_cache import DiskCachedEmbedder
    from memory.embedders import create_embedder

    with _errors():
        model: Any = create_embedder(embedder or _default_embedder(ctx))
        if cache:
            model = DiskCachedEmbedder(model)
        conversations = load_conversations(path)
        if limit_conversations is not None:
            conversations = conversations[:limit_conversations]
        result = run_locomo(
            conversations,
            embedder=model,
            backend=backend,
            preset=preset,
            rrf_k=rrf_k,
            limit_conversations=limit_conversations,
            dsn=dsn,
            progress=lambda done, total, name: note(f"conversation {done + 1}/{total}: {name}") if name else None,
            extract=extract,
            fact_keys=fact_keys,
            reranker=rerank_settings(reranker, rerank_top_n, rerank_weight),
        )
        baselines = baseline_results(conversations, model) if baseline else {}
        if peer is not None:
            from memory.bench.peer_mem0 import locomo_results, side_by_side

            theirs = locomo_results(
                conversations, model, lambda i, n, name: note(f"mem0: conversation {i + 1}/{n}") if name else None
            )
        if isinstance(model, DiskCachedEmbedder):
            model.flush()
    report = result.to_json()
    text = format_report(report, dropped=result.dropped)
    if baselines:
        report["baselines"] = {name: r.to_json() for name, r in baselines.items()}
        lines = [text, "baselines measured in this run (BM25: the project's own Okapi BM25, k1 1.2, b 0.75):"]
        for name, r in baselines.items():
            m = mean_metrics(r.rows)
            lines.append(
                f"  {name:<20}{len(r.rows):>5}"
                + "".join(f"{m[k]:>9.3f}" for k in ("recall@1", "recall@5", "recall@10", "recall@20", "ndcg@10", "mrr"))
            )
        text = "\n".join(lines)
    if peer is not None:
        report["peer"] = theirs.to_json()
        text += "\n" + side_by_side(report, report["peer"])
    _emit(report, text, as_json=as_json, out=out)


def _ablation(
    ctx: click.Context,
    path: Path,
    embedder: str | None,
    backend: str,
    dsn: str | None,
    limit_conversations: int | None,
    markdown: bool,
    as_json: bool,
    out: Path | None,
    note: Callable[[str], None],
    cache: bool = True,
) -> None:
    """`memory bench locomo --ablation`: every step of the ablation, one table."""
    from memory.bench.ablation import ablation_json, format_ablation, run_ablation
    from memory.bench.vector_cache import DiskCachedEmbedder
    from memory.embedders import create_embedder

    with _errors():
        model: Any = create_embedder(embedder or _default_embedder(ctx))
        if cache:
            model = DiskCachedEmbedder(model)
        results = run_ablation(
            path,
            embedder=model,
            backend=backend,
            limit_conversations=limit_conversations,
            progress=note,
            dsn=dsn,
        )
        if isinstance(model, DiskCachedEmbedder):
            model.flush()
    rows = ablation_json(results)
    report = {"ablation": rows}
    _emit(report, format_ablation(rows, markdown=markdown), as_json=as_json, out=out)


@bench.command("tiers")
@click.option("--data", type=_DATA_TYPE, help=f"LoCoMo JSON file (default: {_DEFAULT_DATA} when present).")
@click.option("--embedder", metavar="NAME", help="Embedder for both runs (default: the root --embedder, else auto).")
@click.option("--backend", type=click.Choice(["sqlite", "inmemory"]), default="sqlite", show_default=True,
              help="Store for each conversation.")  # fmt: skip
@click.option("--top-m", type=click.IntRange(min=1), default=5, show_default=True, help="Segments per question.")
@click.option("--top-k", type=click.IntRange(min=1), default=10, show_default=True, help="Pages from those segments.")
@click.option(
    "--limit-conversations", type=click.IntRange(min=1), metavar="N", help="Use only the first N conversations."
)
@click.option("--no-flat", is_flag=True, help="Skip the flat-recall reference run.")
@click.option("--budget", type=click.IntRange(min=0), default=4000, show_default=True,
              help="Token budget of the context runs with and without tiers (0: skip them).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@click.option("--out", type=_OUT_TYPE, help="Also write the JSON report to this file.")
@click.option("--quiet", "-q", is_flag=True, help="No progress notes on stderr.")
@click.pass_context
def tiers_bench(
    ctx: click.Context, data: Path | None, embedder: str | None, backend: str, top_m: int, top_k: int,
    limit_conversations: int | None, no_flat: bool, budget: int, as_json: bool, out: Path | None, quiet: bool,
) -> None:  # fmt: skip
    """LoCoMo through the tiers: tier retrieval (STM + top-m segments -> top-k pages) vs flat recall, segment
    join rates within/across sessions, and evidence in the default context with and without the tiers source.

    Also reports the time add_page and consolidation take per dialogue turn.
    """
    from memory.bench.tiers import format_tiers_report, run_tiers_bench

    path = _data_path(data, required=True)
    assert path is not None
    with _errors():
        report = run_tiers_bench(
            path, embedder=embedder or _default_embedder(ctx), backend=backend, top_m=top_m, top_k=top_k,
            limit_conversations=limit_conversations, progress=_note(quiet), flat=not no_flat, budget=budget,
        )  # fmt: skip
    _emit(report, format_tiers_report(report), as_json=as_json, out=out)


@bench.command("reward")
@click.option("--data", type=_DATA_TYPE, help="Labelled conversations (JSONL) [default: the packaged set].")
@click.option("--split", type=click.Choice(["dev", "holdout"]), help="Only this part of the set.")
@click.option("--llm", metavar="NAME", help="Also check this LLM provider as a judge (openai, ollama; configured "
              "as usual) [default: the configured provider unless heuristic].")  # fmt: skip
@click.option("--no-llm", is_flag=True, help="Only the offline reward, even with an LLM configured.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@click.option("--out", type=_OUT_TYPE, help="Also write the JSON report to this file.")
def reward_bench(
    data: Path | None, split: str | None, llm: str | None, no_llm: bool, as_json: bool, out: Path | None
) -> None:
    """Reward sign on labelled conversations: confusion matrix of the offline reward (and the LLM judge).

    \b
    Examples:
      memory bench reward
      memory bench reward --split holdout --json
      MEMORY_LLM=openai memory bench reward     # also checks the model as a judge
    """
    from memory.bench.reward import format_reward_report, run_reward_bench
    from memory.config import load_settings
    from memory.llms import create_llm

    with _errors():
        model = None
        if not no_llm:
            spec = load_settings().llm
            provider = llm or spec.provider
            if provider != "heuristic":
                model = create_llm(provider, spec.options if provider == spec.provider else None)
        report = run_reward_bench(data, llm=model, split=split)
    _emit(report, format_reward_report(report), as_json=as_json, out=out)


def _sizes(ctx: click.Context | None, param: click.Parameter | None, value: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in value.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter("give sizes as integers separated by commas, e.g. 10000,100000") from None
    if not sizes or min(sizes) < 1:
        raise click.BadParameter("sizes must be positive integers")
    return sizes


@bench.command("speed")
@click.option(
    "--sizes",
    default="10000,100000",
    show_default=True,
    callback=_sizes,
    help="Store sizes to measure, comma-separated.",
)
@click.option(
    "--backend", type=click.Choice(["sqlite", "inmemory", "postgres"]), default="sqlite", show_default=True,
    help="Backend of the measured store (a SQLite file in a temp dir, memory:// (throwaway SQLite), or a scratch "
    "PostgreSQL database on --dsn's server).",
)  # fmt: skip
@_DSN_OPTION
@click.option(
    "--peer", type=click.Choice(["chroma", "lancedb", "mem0", "none"]),
    help="Peer run on the same texts, vectors and queries (needs its package): a vector store (chroma, lancedb) "
    "or the memory library mem0 (offline; it embeds its live adds itself) [default: chroma if installed, else none].",
)  # fmt: skip
@click.option("--queries", type=click.IntRange(min=1), default=200, show_default=True, help="Timed queries per size.")
@click.option(
    "--k", "k", type=click.IntRange(min=1, max=1000), default=10, show_default=True, help="Results per query."
)
@click.option(
    "--batch", type=click.IntRange(min=1), default=500, show_default=True, help="Texts per remember_batch / peer add."
)
@click.option(
    "--sample", type=click.IntRange(min=1), default=2000, show_default=True,
    help="Texts per size added live (embedded during the add); the rest use cached vectors.",
)  # fmt: skip
@click.option("--embedder", metavar="NAME", help="Embedder provider (auto, minilm, hashing, …) [default: auto].")
@click.option(
    "--preset", default="balanced", show_default=True, metavar="NAME", help="Retrieval preset to recall with."
)
@click.option(
    "--data",
    type=_DATA_TYPE,
    help=f"LoCoMo JSON file to draw sentences and queries from [default: {_DEFAULT_DATA} if it exists, "
    "else built-in sentences].",
)
@click.option(
    "--cache-dir", type=click.Path(file_okay=False, path_type=Path),
    help="Where corpus embeddings are cached [default: the user cache dir, memory/bench].",
)  # fmt: skip
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the text generator.")
@click.option(
    "--index-after-load", is_flag=True,
    help="postgres: drop the HNSW index before each bulk load and rebuild it after (build time reported).",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@click.option("--out", type=_OUT_TYPE, help="Also write the JSON report to this file.")
@click.option("--quiet", "-q", is_flag=True, help="No progress notes on stderr.")
@click.pass_context
def speed(
    ctx: click.Context,
    sizes: list[int],
    backend: str,
    dsn: str | None,
    peer: str | None,
    queries: int,
    k: int,
    batch: int,
    sample: int,
    embedder: str | None,
    preset: str,
    data: Path | None,
    cache_dir: Path | None,
    seed: int,
    index_after_load: bool,
    as_json: bool,
    out: Path | None,
    quiet: bool,
) -> None:
    """Add throughput and recall latency at growing sizes, side by side with a peer store.

    Reports storage+indexing overhead as a share of embedding time, recall
    p50/p95 (query embedding included, and its share), how much of the exact
    top k vector-only search returns (against exact cosine search over the
    same vectors), and the same workload on the peer with the same embedder,
    texts and k. The machine is recorded.
    """
    import platformdirs

    from memory.bench.peers import peer_available
    from memory.bench.speed import format_speed, run_speed

    note = _note(quiet)
    if peer is None:
        peer = "chroma" if peer_available("chroma") else "none"
        if peer == "none":
            note("no peer store: chromadb is not installed (pip install 'llm-agent-memory[bench]')")

    corpus = _data_path(data, required=False)
    if corpus is None:  # the relative default is missing from here: say which texts the run uses
        note(f"corpus: the built-in sentences ({_DEFAULT_DATA} not found from {Path.cwd()}; pass --data FILE)")
    with _errors():
        report = run_speed(
            sizes=sizes,
            backend=backend,
            peer=peer,
            queries=queries,
            k=k,
            batch=batch,
            sample=sample,
            embedder=embedder or _default_embedder(ctx),
            preset=preset,
            data=corpus,
            cache_dir=cache_dir or Path(platformdirs.user_cache_dir("memory")) / "bench",
            seed=seed,
            progress=note,
            dsn=dsn,
            index_after_load=index_after_load,
        )
    _emit(report, format_speed(report), as_json=as_json, out=out)


@bench.command("sync")
@click.option(
    "--messages", type=click.IntRange(min=10), default=1000, show_default=True, help="Messages to append and sync."
)
@click.option("--embedder", metavar="NAME", help="Embedder provider (auto, minilm, hashing, …) [default: auto].")
@click.option("--batch-size", type=click.IntRange(min=1), default=64, show_default=True, help="Sync batch size.")
@click.option("--data", type=_DATA_TYPE, help="LoCoMo JSON file for realistic texts [default: built-in sentences].")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the text generator.")
@click.option("--rounds", type=click.IntRange(min=1), default=4, show_default=True,
              help="Interleaved rounds of bare embedder vs sync job.")  # fmt: skip
@click.option("--backend", type=click.Choice(["sqlite", "postgres"]), default="sqlite", show_default=True,
              help="Store to measure (postgres: scratch databases on --dsn's server).")  # fmt: skip
@click.option("--dsn", metavar="URL", envvar="MEMORY_BENCH_DSN", help="PostgreSQL server for --backend postgres.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@click.option("--out", type=_OUT_TYPE, help="Also write the JSON report to this file.")
@click.option("--quiet", "-q", is_flag=True, help="No progress notes on stderr.")
@click.pass_context
def sync_bench(
    ctx: click.Context,
    messages: int,
    embedder: str | None,
    batch_size: int,
    data: Path | None,
    seed: int,
    rounds: int,
    backend: str,
    dsn: str | None,
    as_json: bool,
    out: Path | None,
    quiet: bool,
) -> None:
    """Append throughput with the sync worker running alongside, and sync vs the bare embedder.

    The worker is a separate `memory worker --jobs sync` process on the same
    file; the sync overhead is measured against `embed_texts` on the same texts
    in the same run.
    """
    from memory.bench.sync import format_sync_bench, run_sync_bench

    with _errors():
        report = run_sync_bench(
            messages=messages, embedder=embedder or _default_embedder(ctx), batch_size=batch_size,
            data=_data_path(data, required=False), seed=seed, rounds=rounds, progress=_note(quiet),
            backend=backend, dsn=dsn,
        )  # fmt: skip
    _emit(report, format_sync_bench(report), as_json=as_json, out=out)


@bench.command(
    "embedders",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def embedders(args: tuple[str, ...]) -> None:
    """Compare the MiniLM runtimes (PyTorch reference, numpy fp32, ONNX int8); options go to it (see --help)."""
    try:
        module = importlib.import_module("memory.bench.embedders")
    except ImportError as exc:
        raise click.ClickException(f"the embedder benchmark is not available ({exc})") from exc
    main = getattr(module, "main", None)
    if not callable(main):
        raise click.ClickException("memory.bench.embedders has no main(); cannot run the embedder benchmark")
    with _errors():
        code = main(list(args))
    sys.exit(code if isinstance(code, int) else 0)


@bench.command("serve")
@click.option("--clients", type=click.IntRange(min=1), default=50, show_default=True, help="Concurrent clients.")
@click.option("--duration", type=click.FloatRange(min=0.5), default=20.0, show_default=True, help="Seconds of load.")
@click.option("--url", metavar="URL", help="Drive this server instead of starting `memory serve` (needs --key).")
@click.option("--key", metavar="KEY", help="API key for --url (scoped to namespaces load-0 … load-N or '*').")
@click.option(
    "--embedder", "embedders", metavar="NAME", multiple=True, default=("hashing",), show_default=True,
    help="Embedder of the started server; repeat to run each in turn, e.g. --embedder minilm --embedder hashing.",
)  # fmt: skip
@click.option(
    "--preload", type=click.IntRange(min=0), default=0, show_default=True, metavar="N",
    help="Store N generated memories in namespace load-0 before the server starts (its clients then search a "
    "large namespace; the summary gives the server's RSS). Embedded by the server's embedder: use hashing for 1M.",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a summary.")
@click.option("--out", type=_OUT_TYPE, help="Also write the JSON report to this file.")
def serve_load(
    clients: int, duration: float, url: str | None, key: str | None, embedders: tuple[str, ...], preload: int,
    as_json: bool, out: Path | None,
) -> None:  # fmt: skip
    """Load-test the REST API on loopback; report errors, p50/p95 latency, and lost writes.

    Starts `memory serve` on a fresh SQLite file (unless --url), runs the
    clients (remember / recall / get / list), then re-reads every write the
    server acknowledged: 'missing' must be 0. With several --embedder, one
    server per embedder runs in turn and the summary compares requests/s.

    \b
    Examples:
      memory bench serve --clients 50 --duration 20
      memory bench serve --clients 50 --embedder minilm --embedder hashing
      memory bench serve --url http://127.0.0.1:8765 --key "$KEY" --json
      memory bench serve --preload 1000000 --clients 20   # the server's RSS at 1M memories
    """
    from memory.bench.serve import run_embedders, summary

    if url is not None and key is None:
        raise click.UsageError("--url needs --key")
    if url is not None and preload:
        raise click.UsageError("--preload fills the store of a started server: not with --url")
    if url is not None and len(embedders) > 1:
        raise click.UsageError("--url drives one server: give at most one --embedder")
    report = run_embedders(
        list(dict.fromkeys(embedders)), clients=clients, duration=duration, url=url, key=key, preload=preload
    )
    _emit(report, summary(report), as_json=as_json, out=out)
    runs = report.get("runs", [report])
    errors, missing = sum(r["errors"] for r in runs), sum(r["missing"] for r in runs)
    if errors or missing:
        raise click.ClickException(f"{errors} errors, {missing} acknowledged writes missing")


@bench.command("extract")
@click.option("--data", type=_DATA_TYPE, help=f"LoCoMo JSON file [default: {_DEFAULT_DATA} if it exists].")
@click.option(
    "--embedder", default="minilm", show_default=True, metavar="NAME",
    help="Embedder of the scoring rule (the rule is defined with all-MiniLM-L6-v2).",
)  # fmt: skip
@click.option(
    "--llm", "llm_url", metavar="URL",
    help="Extract with an OpenAI-compatible endpoint (e.g. http://127.0.0.1:8080/v1) instead of offline; "
    "a bad answer falls back to the offline extractor for that message.",
)  # fmt: skip
@click.option("--llm-model", default="default", show_default=True, metavar="NAME", help="Model name for --llm.")
@click.option("--raw-turns", is_flag=True, help="Score the raw turns ('Speaker: text') as facts (the baseline).")
@click.option(
    "--limit-conversations", type=click.IntRange(min=1), metavar="N", help="Use only the first N conversations."
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@click.option("--out", type=_OUT_TYPE, help="Also write the JSON report to this file.")
@click.option("--quiet", "-q", is_flag=True, help="No progress notes on stderr.")
def extract_bench(
    data: Path | None, embedder: str, llm_url: str | None, llm_model: str, raw_turns: bool,
    limit_conversations: int | None, as_json: bool, out: Path | None, quiet: bool,
) -> None:  # fmt: skip
    """Extracted facts against LoCoMo's reference observations: recall, precision, time per message.

    Each conversation's messages go through the extractor in order (speaker,
    listener, session date). A reference fact is recalled when an extracted
    fact of its session has cosine >= 0.70 to it (all-MiniLM-L6-v2); an
    extracted fact is supported when it has cosine >= 0.70 to a reference
    fact of its session. Reported per conversation and overall.
    """
    from memory.bench.extract import format_extract_report, run_extract_bench

    path = _data_path(data, required=True)
    assert path is not None
    with _errors():
        llm = None
        if llm_url:
            from memory.llms import create_llm

            llm = create_llm("openai", {"model": llm_model, "base_url": llm_url})
        report = run_extract_bench(
            path, embedder=embedder, llm=llm, limit_conversations=limit_conversations, raw_turns=raw_turns,
            progress=_note(quiet),
        )  # fmt: skip
    _emit(report, format_extract_report(report), as_json=as_json, out=out)
