"""The CLI on PostgreSQL: init finds a local server, doctor reports it, migrate copies stores losslessly."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
from cli_helpers import Runner

from memory import Memory
from memory.backends import open_backend
from memory.backends.base import Backend, NewRecord
from memory.embedders.hashing import HashingEmbedder
from memory.filters import Filter
from memory.records import build_item, ledger_entry
from pg_support import fresh_database, postgres_dsn


@pytest.fixture
def dsn() -> str:
    return postgres_dsn()


@pytest.fixture
def pg_url(dsn: str) -> Iterator[str]:
    with fresh_database(dsn) as url:
        yield url


@pytest.fixture
def local_server_env(dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point detection at the test server, as PGHOST/PGPORT/PGUSER would on a real machine."""
    parts = urlsplit(dsn)
    monkeypatch.setenv("PGHOST", parts.hostname or "127.0.0.1")
    monkeypatch.setenv("PGPORT", str(parts.port or 5432))
    monkeypatch.setenv("PGUSER", parts.username or "postgres")


def test_init_postgres_creates_database_extension_and_config(
    run: Runner, dsn: str, local_server_env: None, tmp_path: Path
) -> None:
    import psycopg

    name = f"mt_init_{tmp_path.name[-12:].lower().replace('-', '_')}"[:40]
    try:
        result = run("init", "--postgres", "--pg-database", name, "--embedder", "hashing", "--json", raw=True)
        assert result.exit_code == 0, result.stderr
        report = json.loads(result.stdout)
        assert report["backend"] == "postgres" and report["database"].endswith(f"/{name}")
        assert "created database" in report["database_source"]
        config = tomllib.loads(Path(report["config"]).read_text())
        assert config["database"] == report["database"]
        with psycopg.connect(report["database"]) as conn:
            assert conn.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] >= 3
            assert conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        memory_id = run("remember", "stored in postgres", raw=True).stdout.strip()
        assert json.loads(run("get", memory_id, "--json", raw=True).stdout)["content"] == "stored in postgres"
        doctor = json.loads(run("doctor", "--json", raw=True).stdout)
        assert doctor["database_check"]["reachable"] and doctor["database_check"]["backend"] == "postgres"
        assert doctor["database_check"]["server"]["vector_spaces"][0]["hnsw_index"]
        server = doctor["database_check"]["server"]
        assert server["pgvector_runs"] == "ok"  # the CPU code of this server's pgvector ran
        assert server["pgvector_iterative_scan"] == (tuple(map(int, server["pgvector_version"].split("."))) >= (0, 8))
        assert doctor["local_postgres"]["via"].startswith("tcp 127.0.0.1")
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_init_without_postgres_flag_keeps_sqlite_and_says_what_it_found(run: Runner, local_server_env: None) -> None:
    report = json.loads(run("init", "--embedder", "hashing", "--json", raw=True).stdout)
    assert report["backend"] == "sqlite"
    assert any("memory init --postgres" in note for note in report["notes"])


def test_init_postgres_without_a_server_fails_clearly(
    run: Runner, monkeypatch: pytest.MonkeyPatch, one_line_error: object
) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("PGHOST", "127.0.0.1")
    monkeypatch.setenv("PGPORT", str(port))
    result = run("init", "--postgres", "--embedder", "hashing", raw=True)
    assert result.exit_code == 1 and "no local PostgreSQL" in result.stderr


def test_doctor_fails_for_an_unreachable_database(run: Runner) -> None:
    result = run("doctor", "--json", db="postgresql://nobody@127.0.0.1:1/none")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["database_check"]["reachable"] is False


def test_memory_dsn_selects_the_database(run: Runner, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_DSN", pg_url)
    stats = json.loads(run("--embedder", "hashing", "stats", "--json", raw=True).stdout)
    assert stats["backend"] == "postgres"
    doctor = json.loads(run("doctor", "--json", raw=True).stdout)
    assert doctor["database_source"] == "MEMORY_DSN"


def _fill(url: str) -> None:
    """A store with several namespaces, secrets, updates, a deletion, access counts and vectors."""
    clock_time = datetime(2026, 2, 1, 9, 30, 15, 123456, tzinfo=UTC)
    with Memory(url, embedder=HashingEmbedder(), clock=lambda: clock_time) as mem:
        ids = mem.remember_batch(
            [f"note {n} about topic {n % 4}" for n in range(40)], namespace="alpha", tags=["t"], user="u1"
        )
        mem.remember("the vault code is 1234", namespace="alpha", sensitivity="secret", metadata={"k": 1.5})
        mem.remember("beta fact with a deadline", namespace="beta", ttl=3600, importance=0.9)
        mem.update(ids[0], content="note 0 was rewritten", namespace="alpha")
        mem.forget(ids[1], namespace="alpha")
        mem.recall("topic 2", namespace="alpha")
    backend = open_backend(url)
    try:  # an item still waiting for its embedding
        item = build_item(content="not embedded yet", namespace="beta", now=clock_time)
        backend.add([NewRecord(item, None, ledger_entry("add", item.id, "beta", clock_time, after=item))])
    finally:
        backend.close()


def _snapshot(url: str, *, float16: bool = False) -> dict[str, object]:
    """Items, vectors (as float16 roundings with ``float16``: what a SQLite store keeps of them), ledger, histories."""
    backend: Backend = open_backend(url)
    try:
        now = datetime(2026, 2, 1, tzinfo=UTC)
        out: dict[str, object] = {"spaces": backend.vector_spaces(), "namespaces": backend.namespaces()}
        for ns in backend.namespaces():
            everything = Filter(namespace=ns, clearance="secret", include_expired=True, include_invalid=True, now=now)
            items = list(backend.iter_items(everything))
            out[f"items:{ns}"] = items
            for space in backend.vector_spaces():
                vectors = backend.get_vectors(ns, space.model, [i.id for i in items])
                out[f"vectors:{ns}:{space.model}"] = {
                    k: (v.astype(np.float16).astype(np.float32) if float16 else v).tolist() for k, v in vectors.items()
                }
            out[f"ledger_count:{ns}"] = backend.ledger_count(ns)
        ledger = list(backend.iter_ledger())  # type: ignore[attr-defined]
        out["ledger"] = sorted(ledger, key=lambda e: e.id)
        out["histories"] = {e.item_id: backend.history(e.namespace, e.item_id) for e in ledger}
        return out
    finally:
        backend.close()


def test_migrate_round_trip_sqlite_postgres_sqlite(run: Runner, pg_url: str, tmp_path: Path) -> None:
    first = f"sqlite:///{tmp_path / 'a.db'}"
    back = f"sqlite:///{tmp_path / 'b.db'}"
    _fill(first)
    report = run.json("migrate", "--from", first, "--to", pg_url)
    assert report["items"] == 42 and report["namespaces"] == 2 and report["synthesised_add_entries"] == 0
    assert report["vectors"] == 40  # secrets and the pending item have none
    run.json("migrate", "--from", pg_url, "--to", back)
    original, via_pg, returned = _snapshot(first), _snapshot(pg_url), _snapshot(back)
    assert original == via_pg
    assert original == returned
    assert any(i.sensitivity == "secret" for i in original["items:alpha"])  # type: ignore[attr-defined]
    again = run("migrate", "--from", first, "--to", pg_url)
    assert again.exit_code == 1 and "not empty" in again.stderr


def test_detection_finds_the_server_on_its_unix_socket(dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg

    from memory.backends.postgres.admin import detect_local

    with psycopg.connect(dsn) as conn:
        socket_dir = str(conn.execute("SHOW unix_socket_directories").fetchone()[0]).split(",")[0].strip()
    parts = urlsplit(dsn)
    monkeypatch.setenv("PGHOST", socket_dir)
    monkeypatch.setenv("PGPORT", str(parts.port))
    monkeypatch.setenv("PGUSER", parts.username or "postgres")
    server = detect_local()
    assert server is not None and server.via == f"socket {socket_dir}"
    assert server.pgvector_available is not None
    with psycopg.connect(server.url("postgres")) as conn:  # the socket URL form works
        assert conn.execute("SELECT 1").fetchone() == (1,)


def _fill_conversations(url: str) -> None:
    """Messages in two namespaces (embedded, pending, secret, archived) and a block with history."""
    with Memory(url, embedder=HashingEmbedder()) as mem:
        for n in range(12):
            mem.messages.append(f"t{n % 2}", f"turn {n} about the harbour", user="u1", namespace="alpha")
        mem.messages.append("t0", "the door code is 4711", sensitivity="secret", namespace="alpha")
        mem.messages.append("t9", "beta chat", namespace="beta", metadata={"k": 1.5})
        mem.run_sync()
        mem.messages.append("t1", "not embedded yet", namespace="alpha")
        mem.messages.archive("t0", keep_last=2, namespace="alpha")
        mem.blocks.replace("user_info", "likes tea", user="u1", namespace="alpha")
        mem.blocks.append("user_info", "lives by the sea", user="u1", namespace="alpha")


def _conversations(url: str) -> dict[str, object]:
    backend = open_backend(url)
    try:
        store = backend.episodic  # type: ignore[attr-defined]
        now = datetime(2030, 1, 1, tzinfo=UTC)
        out: dict[str, object] = {"namespaces": store.message_namespaces()}
        for ns in store.message_namespaces():
            from memory.episodic.types import MessageQuery

            hot = store.list_messages(
                MessageQuery(namespace=ns, clearance="secret", include_expired=True, now=now), 1000
            )
            out[f"hot:{ns}"] = hot
            out[f"vectors:{ns}"] = {
                m.id: store.get_message_vectors(ns, m.embedding_model, [m.id]).get(m.id, np.zeros(0)).tolist()
                for m in hot
                if m.embedding_model
            }
            out[f"archived:{ns}"] = list(store.iter_archived(ns))
            out[f"threads:{ns}"] = [(t.thread, t.messages, t.last_turn, t.archived) for t in store.threads(ns)]
            out[f"blocks:{ns}"] = [
                (b, store.block_history(ns, b.user, b.agent, b.label)) for b in store.iter_blocks(ns)
            ]
        return out
    finally:
        backend.close()


def test_migrate_copies_conversations_sqlite_postgres_sqlite(run: Runner, pg_url: str, tmp_path: Path) -> None:
    first = f"sqlite:///{tmp_path / 'c.db'}"
    back = f"sqlite:///{tmp_path / 'd.db'}"
    _fill_conversations(first)
    from memory.backends.keys import open_key_store
    from memory.keys import new_key

    source = open_backend(first)
    try:
        key, _ = new_key("ops", ["alpha"], now=datetime(2026, 2, 1, tzinfo=UTC), read_only=True)
        open_key_store(source).add(key)
    finally:
        source.close()
    report = run.json("migrate", "--from", first, "--to", pg_url)
    assert (report["messages"], report["blocks"], report["api_keys"]) == (15, 1, 1)
    assert run.json("migrate", "--from", pg_url, "--to", back)["messages"] == 15
    original, via_pg, returned = _conversations(first), _conversations(pg_url), _conversations(back)
    assert original == via_pg
    assert original == returned
    target = open_backend(back)
    try:
        assert open_key_store(target).list() == [key]  # the hash and every field survive both copies
    finally:
        target.close()
    assert len(original["archived:alpha"]) == 5 and len(original["vectors:alpha"]) == 7  # type: ignore[arg-type]
    assert len(original["blocks:alpha"][0][1]) == 2  # type: ignore[index]


#: Two chat threads; the replies are found by the questions in their context windows.
_DIALOGUE = [
    ("t0", "Did you go hiking in the Alps this year?"),
    ("t0", "Yes, two weekends ago!"),
    ("t0", "Which hut did you sleep in?"),
    ("t0", "The one below the glacier, it was freezing."),
    ("t1", "My sister moved to Lisbon in March."),
    ("t1", "the door code of her flat is 4711"),
    ("t1", "Does she like it there?"),
    ("t1", "She loves the trams and the food."),
]
_QUERIES = ["hiking in the Alps", "where did you sleep", "Lisbon sister", "door code", "Alice", "trams"]


def _fill_graph_tiers_windows(url: str) -> None:
    """Threaded memories (a secret among them), an extracted graph with an alias, a closed relation and a link,
    and tier pages, personas-to-be and a per-agent config, in two namespaces."""
    start = datetime(2026, 3, 1, 10, 0, 0, 123456, tzinfo=UTC)
    ticks = iter(range(10_000))

    def tick() -> datetime:
        return start + timedelta(seconds=next(ticks))

    with Memory(url, embedder=HashingEmbedder(), clock=tick) as mem:
        for thread, text in _DIALOGUE:
            secret = "door code" in text
            mem.remember(
                text, thread=thread, user="u1", namespace="alpha", sensitivity="secret" if secret else "normal"
            )
        first = mem.remember("Alice moved to Berlin.", namespace="alpha", thread="t2", extract="inline")
        second = mem.remember("Alice works at Acme.", namespace="alpha", thread="t2", extract="inline")
        mem.remember("Alice moved to Paris.", namespace="beta", extract="inline")
        store = mem.graph.store
        alice = mem.graph.entity("Alice", namespace="alpha")
        store.add_alias("alpha", alice.id, "Ally", tick())
        moved = [r for r in store.relations("alpha", [alice.id]) if r.predicate.startswith("moved")]
        assert store.invalidate_relations("alpha", [moved[0].id], tick()) == 1
        mem.link(first, second, namespace="alpha")
        mem.tiers.configure(agent="guide", namespace="alpha", stm_capacity=3)
        for n in range(4):  # one more than the queue holds: a segment forms
            mem.tiers.add_page(f"question {n} about the Alps", f"answer {n}", agent="guide", user="u1",
                               namespace="alpha", created_at=tick())  # fmt: skip
        mem.prompts.create("guide", "You are a mountain guide.", namespace="alpha")
        mem.prompts.add_version("guide", "You are a careful mountain guide.", namespace="alpha")
        mem.prompts.use("t1", "guide", user="u1", namespace="alpha")
        mem.feedback.record("t1", rating=2, feedback="forgot the weather", user="u1", namespace="alpha")
        mem.reflect(namespace="alpha")


def _feedback(url: str) -> dict[str, object]:
    backend = open_backend(url)
    try:
        store = backend.feedback  # type: ignore[attr-defined]
        out: dict[str, object] = {"namespaces": store.namespaces()}
        for ns in store.namespaces():
            out[f"records:{ns}"] = list(store.iter_records(ns))
            out[f"prompts:{ns}"] = [store.prompt_versions(ns, name) for name in store.prompt_names(ns)]
        return out
    finally:
        backend.close()


def _windows(url: str) -> dict[str, str]:
    """Every memory's stored window text (read straight from the tables: no API returns it)."""
    if url.startswith("sqlite"):
        import sqlite3

        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            return dict(conn.execute("SELECT id, index_window FROM items").fetchall())
    import psycopg

    with psycopg.connect(url) as conn:
        return {str(i): str(w) for i, w in conn.execute("SELECT id, index_window FROM items").fetchall()}


def _graph_and_tiers(url: str) -> dict[str, object]:
    backend = open_backend(url)
    try:
        graph, tiers = backend.graph, backend.tiers  # type: ignore[attr-defined]
        out: dict[str, object] = {"graph_namespaces": graph.namespaces(), "tier_namespaces": tiers.namespaces()}
        for ns in graph.namespaces():
            dump = graph.export_graph(ns)
            out[f"entities:{ns}"] = [(e, m, None if v is None else v.tolist()) for e, m, v in dump.entities]
            out[f"relations:{ns}"] = [(r, m, None if v is None else v.tolist()) for r, m, v in dump.relations]
            out[f"mentions:{ns}"], out[f"links:{ns}"] = dump.mentions, dump.links
        for ns in tiers.namespaces():
            out[f"tiers:{ns}"] = tiers.export_records(ns)
        return out
    finally:
        backend.close()


def _recalls(url: str, clearance: str = "private") -> list[list[tuple[str, float]]]:
    at = datetime(2026, 3, 2, tzinfo=UTC)
    with Memory(url, embedder=HashingEmbedder(), clock=lambda: at) as mem:
        return [
            [(h.id, round(h.score, 9)) for h in mem.recall(q, namespace="alpha", limit=5, clearance=clearance)]
            for q in _QUERIES
        ]


def test_migrate_copies_graph_tiers_and_windows_sqlite_postgres_sqlite(
    run: Runner, pg_url: str, tmp_path: Path
) -> None:
    first = f"sqlite:///{tmp_path / 'g.db'}"
    back = f"sqlite:///{tmp_path / 'h.db'}"
    _fill_graph_tiers_windows(first)
    report = run.json("migrate", "--from", first, "--to", pg_url)
    source = _graph_and_tiers(first)
    assert report["entities"] == sum(len(source[f"entities:{ns}"]) for ns in ("alpha", "beta"))  # type: ignore[arg-type]
    assert report["relations"] == 3 and report["links"] == 1 and report["mentions"] >= 4
    assert report["tier_records"] == len(source["tiers:alpha"]) > 3  # type: ignore[arg-type]
    # 11 memories; the one rated conversation is too little support for a reflection lesson (issue 18)
    assert report["windows"] == report["items"] == 11 and report["skipped"] == []
    again = run.json("migrate", "--from", pg_url, "--to", back)
    assert {k: again[k] for k in ("entities", "relations", "mentions", "links", "tier_records", "windows")} == {
        k: report[k] for k in ("entities", "relations", "mentions", "links", "tier_records", "windows")
    }
    # everything comes back identical: items, vectors (window spaces included), ledger, graph, tiers, windows.
    # Window vectors are rebuilt on each destination: PostgreSQL keeps the float32 blend, SQLite its float16
    # rounding, as of any vector (the copied own vectors are float16 values already, exact on PostgreSQL).
    assert _snapshot(first) == _snapshot(back) == _snapshot(pg_url, float16=True)
    assert source == _graph_and_tiers(pg_url) == _graph_and_tiers(back)
    assert (report["feedback_records"], report["prompt_versions"]) == (1, 2)
    feedback = _feedback(first)
    assert feedback["namespaces"] == ["alpha"] and feedback == _feedback(pg_url) == _feedback(back)
    windows = _windows(first)
    assert windows == _windows(pg_url) == _windows(back)
    assert any("hiking in the Alps" in text for text in windows.values())
    assert not any("4711" in text for text in windows.values())  # a secret never enters another memory's window
    closed = [r for r, _, _ in source["relations:alpha"] if r.invalid_at is not None]  # type: ignore[attr-defined]
    assert len(closed) == 1
    assert any("Ally" in e.aliases for e, _, _ in source["entities:alpha"])  # type: ignore[attr-defined]
    # recall ranks exactly as on the source, windows included; secrets stay secret on the copies
    ranked = _recalls(first)
    assert ranked == _recalls(back)
    assert [[i for i, _ in hits] for hits in ranked] == [[i for i, _ in hits] for hits in _recalls(pg_url)]
    contents = {i.id: i.content for i in _snapshot(back)["items:alpha"]}  # type: ignore[attr-defined]
    assert not any("4711" in contents[i] for hits in _recalls(back) for i, _ in hits)
    assert any("4711" in contents[i] for hits in _recalls(back, "secret") for i, _ in hits)


def test_migrate_text_output_names_graph_tiers_and_windows(run: Runner, tmp_path: Path) -> None:
    first = f"sqlite:///{tmp_path / 'i.db'}"
    _fill_graph_tiers_windows(first)
    counts = run.json("migrate", "--from", first, "--to", f"sqlite:///{tmp_path / 'j.db'}")
    result = run.ok("migrate", "--from", first, "--to", f"sqlite:///{tmp_path / 'k.db'}")
    lines = result.stdout.splitlines()
    assert (
        f"graph: {counts['entities']} entities, {counts['relations']} relations, {counts['mentions']} mentions, "
        f"{counts['links']} links"
    ) in lines
    assert f"tiers: {counts['tier_records']} tier records" in lines
    assert (
        f"feedback: {counts['feedback_records']} conversation records, {counts['prompt_versions']} prompt versions"
        in lines
    )
    assert f"windows: {counts['windows']} context windows rebuilt" in lines
    assert counts["windows"] == 11 and not any(line.startswith("skipped") for line in lines)
    assert "knowledge graph" in run.ok("migrate", "--help").stdout
