"""``copy_store`` (memory migrate) and the graph, tier and window parts of a copy, on real SQLite files.

The full sqlite → postgres → sqlite round trip through the CLI is in
``tests/cli/test_postgres_cli.py``; this file checks the decisions made
before anything is written, the skip notes, and a copy out of the in-process
backend.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory import Memory
from memory.backends import open_backend
from memory.backends.base import Backend
from memory.backends.sqlite.throwaway import ThrowawaySQLiteBackend
from memory.embedders.hashing import HashingEmbedder
from memory.errors import ConfigError, InvalidInputError
from memory.storecopy import copy_store

START = datetime(2026, 4, 1, 8, tzinfo=UTC)


def _fill(mem: Memory) -> None:
    """Threaded memories, an extracted graph with an alias and a link, tier pages and a config."""
    a = mem.remember("Alice moved to Berlin.", thread="t", namespace="n1", extract="inline")
    b = mem.remember("Alice works at Acme.", thread="t", namespace="n1", extract="inline")
    mem.remember("Did you like it there?", thread="t", namespace="n1")
    mem.remember("Bob lives in Rome.", namespace="n2", extract="inline")
    alice = mem.graph.entity("Alice", namespace="n1")
    mem.graph.store.add_alias("n1", alice.id, "Ally", mem.now())
    mem.link(a, b, namespace="n1")
    mem.tiers.configure(agent="guide", namespace="n1", stm_capacity=2)
    for n in range(3):
        mem.tiers.add_page(f"q{n}", f"r{n}", agent="guide", user="u", namespace="n1")


def _memory(backend: Backend | str) -> Memory:
    ticks = itertools.count()
    clock = lambda: START + timedelta(seconds=next(ticks))  # noqa: E731
    if isinstance(backend, str):
        return Memory(backend, embedder=HashingEmbedder(), clock=clock)
    return Memory(backend=backend, embedder=HashingEmbedder(), clock=clock)


@pytest.fixture
def source(tmp_path: Path) -> Iterator[Backend]:
    url = f"sqlite:///{tmp_path / 'src.db'}"
    with _memory(url) as mem:
        _fill(mem)
    backend = open_backend(url)
    yield backend
    backend.close()


@pytest.fixture
def target(tmp_path: Path) -> Iterator[Backend]:
    backend = open_backend(f"sqlite:///{tmp_path / 'dst.db'}")
    yield backend
    backend.close()


def _untouched(backend: Any) -> None:
    assert backend.namespaces() == [] and list(backend.iter_ledger()) == []
    assert backend.graph.namespaces() == [] and backend.tiers.namespaces() == []
    assert backend.episodic.message_namespaces() == []


@pytest.mark.parametrize("missing", ["graph", "tiers"])
def test_a_target_without_the_store_the_source_fills_fails_before_writing(
    source: Backend, target: Any, missing: str
) -> None:
    saved = getattr(target, missing)
    setattr(target, missing, None)
    with pytest.raises(ConfigError, match="knowledge graph" if missing == "graph" else "tier store"):
        copy_store(source, target)
    setattr(target, missing, saved)
    _untouched(target)


@pytest.mark.parametrize("attribute", ["graph", "tiers"])
def test_a_target_holding_graph_or_tiers_is_refused_before_writing(
    source: Backend, target: Any, attribute: str
) -> None:
    if attribute == "graph":
        target.graph.upsert_entity("elsewhere", "Carol", "person", START)
    else:
        target.tiers.set_config("elsewhere", "agent:x", {"stm_capacity": 4})
    with pytest.raises(ConfigError, match="not empty|already holds"):
        copy_store(source, target)
    assert target.namespaces() == [] and list(target.iter_ledger()) == []  # type: ignore[attr-defined]


def test_a_source_without_graph_or_tiers_is_skipped_and_the_report_says_so(source: Any, target: Any) -> None:
    source.graph, source.tiers = None, None
    report = copy_store(source, target)
    assert report.items == 4 and (report.entities, report.relations, report.tier_records) == (0, 0, 0)
    assert [note.split(":")[0] for note in report.skipped] == ["graph", "tiers"]
    assert all("source backend" in note for note in report.skipped)
    assert target.graph.namespaces() == [] and target.tiers.namespaces() == []


def test_windows_off_or_bad_size(source: Backend, target: Backend) -> None:
    with pytest.raises(InvalidInputError):
        copy_store(source, target, window_size=-1)
    _untouched(target)
    report = copy_store(source, target, window_size=0)
    assert report.windows == 0 and report.skipped == ("windows: context windows are off (context_window = 0)",)
    assert report.entities > 0  # the rest is copied


def test_copy_out_of_the_in_process_backend_keeps_graph_tiers_and_windows(target: Any) -> None:
    memory_backend = ThrowawaySQLiteBackend()
    with _memory(memory_backend) as mem:
        _fill(mem)
        report = copy_store(memory_backend, target)
        assert (report.items, report.windows, report.links, report.skipped) == (4, 4, 1, ())
        for ns in ("n1", "n2"):
            original, copied = memory_backend.graph.export_graph(ns), target.graph.export_graph(ns)
            assert [e for e, _, _ in copied.entities] == [e for e, _, _ in original.entities]
            assert [(r, m) for r, m, _ in copied.relations] == [(r, m) for r, m, _ in original.relations]
            assert (copied.mentions, copied.links) == (original.mentions, original.links)
        assert target.tiers.export_records("n1") == memory_backend.tiers.export_records("n1")
        assert report.tier_records == len(memory_backend.tiers.export_records("n1")) == 4
        # recall on the copy ranks as on the original (same windows, same vectors; scores up to rounding,
        # since the two backends compute BM25 and cosine separately)
        with _memory(target) as copy:
            for query in ("Alice Berlin", "like it there", "Acme", "Rome"):
                for ns in ("n1", "n2"):
                    ours, theirs = mem.recall(query, namespace=ns), copy.recall(query, namespace=ns)
                    assert [h.id for h in theirs] == [h.id for h in ours]
                    assert [h.score for h in theirs] == pytest.approx([h.score for h in ours], abs=1e-5)


def test_feedback_records_and_prompt_versions_are_copied(tmp_path: Path, target: Backend) -> None:
    url = f"sqlite:///{tmp_path / 'fb.db'}"
    with _memory(url) as mem:
        mem.remember("a memory", namespace="n1")
        mem.prompts.create("greeter", "You greet people.", namespace="n1")
        mem.prompts.add_version("greeter", "You greet people warmly.", namespace="n1")
        mem.prompts.use("t1", "greeter", namespace="n1")
        mem.feedback.record("t1", rating=2, feedback="too curt", namespace="n1")
        mem.prompts.create("helper", "You help.", namespace="only-feedback")  # a namespace with no memories
        mem.prompts.use("t2", "helper", namespace="only-feedback")
        mem.feedback.record("t2", rating=5, namespace="only-feedback")
        mem.reflect(namespace="n1")
    source = open_backend(url)
    try:
        report = copy_store(source, target)
        assert (report.feedback_records, report.prompt_versions) == (2, 3)
        assert not [n for n in report.skipped if n.startswith("feedback")]
        for ns in ("n1", "only-feedback"):
            assert list(target.feedback.iter_records(ns)) == list(source.feedback.iter_records(ns))
            for name in source.feedback.prompt_names(ns):
                assert target.feedback.prompt_versions(ns, name) == source.feedback.prompt_versions(ns, name)
        assert target.feedback.get_record("n1", "t1").reflected_at is not None  # reflection does not run twice
    finally:
        source.close()


def test_a_target_that_already_holds_feedback_is_refused_before_writing(tmp_path: Path) -> None:
    source_url, target_url = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    with _memory(source_url) as mem:
        mem.remember("a memory")
        mem.prompts.create("greeter", "You greet people.")
    with _memory(target_url) as mem:
        mem.prompts.create("other", "Something else.")
    source, target = open_backend(source_url), open_backend(target_url)
    try:
        with pytest.raises(ConfigError, match="already holds feedback"):
            copy_store(source, target)
        assert target.namespaces() == [] and target.feedback.prompt_names("default") == ["other"]
    finally:
        source.close()
        target.close()
