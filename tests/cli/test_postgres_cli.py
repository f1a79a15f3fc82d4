"""The CLI on PostgreSQL: init finds a local server, doctor reports it, migrate copies stores losslessly."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from datetime import UTC, datetime
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


def _snapshot(url: str) -> dict[str, object]:
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
                out[f"vectors:{ns}:{space.model}"] = {k: v.tolist() for k, v in vectors.items()}
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
