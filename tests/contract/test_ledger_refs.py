"""An add entry stored by reference to its item reads back whole, on every backend (issue 22).

The SQL stores keep an add's ``after`` as a marker while it equals the
items row (:mod:`memory.backends.ledger_refs`); ``history()`` and
``iter_ledger()`` must still give the item exactly as it was added, whatever
happened to it since: accesses, an embedding finished by the sync job, an
update, a deletion, ``forget_all``, a copy to another store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory import Memory
from memory.backends.base import Backend, NewRecord
from memory.config import Settings
from memory.embedders.hashing import HashingEmbedder
from memory.errors import EmbedderError
from memory.records import build_item, ledger_entry, snapshot
from memory.registry import create
from memory.storecopy import copy_store
from memory.types import LedgerEntry
from pg_support import postgres_dsn, schema_for


class SwitchableEmbedder(HashingEmbedder):
    """The hashing embedder that fails, saying ``down``, while ``down`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.down: str | None = None

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if self.down:
            raise EmbedderError(self.down)
        return super().embed_batch(texts)


@pytest.fixture
def emb() -> SwitchableEmbedder:
    return SwitchableEmbedder()


@pytest.fixture
def rmem(make_memory: Callable[..., Memory], emb: SwitchableEmbedder, tmp_path: Path) -> Memory:
    return make_memory(embedder=emb, settings=Settings(database="memory://", media_dir=str(tmp_path / "media")))


def _added(mem: Memory, content: str, **fields: Any) -> tuple[str, dict[str, Any]]:
    """Remember ``content``; its id and its snapshot as stored, read before anything else touches it."""
    memory_id = mem.remember(content, **fields)
    return memory_id, snapshot(mem.get(memory_id, namespace=fields.get("namespace"), clearance="secret"))


def _add_after(mem: Memory, memory_id: str, namespace: str | None = None) -> Any:
    (add,) = [e for e in mem.history(memory_id, namespace=namespace, clearance="secret") if e.op == "add"]
    return add.after


def test_the_add_reads_back_as_the_item_added(backend: Backend) -> None:
    now = datetime(2026, 3, 1, 9, 15, 30, 250001, tzinfo=UTC)
    item = build_item(
        content="Alice moved to Berlin", namespace="ns", now=now, user="alice", tags=["move", "city"],
        keywords=["berlin"], metadata={"source": "chat", "score": 0.25, "nested": {"a": [1, True, None]}},
        importance=0.75, expires_at=datetime(2099, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    )  # fmt: skip
    backend.add([NewRecord(item, None, ledger_entry("add", item.id, "ns", now, after=item))])
    (add,) = backend.history("ns", item.id)
    assert add.after == snapshot(item)
    assert [e.after for e in backend.iter_ledger()] == [snapshot(item)]  # type: ignore[attr-defined]


def test_accesses_do_not_change_the_add(rmem: Memory) -> None:
    memory_id, added = _added(rmem, "Maya lives in Lisbon")
    assert [h.id for h in rmem.recall("Maya Lisbon", limit=5)] == [memory_id]
    assert [h.id for h in rmem.recall("Where does Maya live?", limit=5)] == [memory_id]
    now = rmem.get(memory_id)
    assert now.access_count == 2 and now.accessed_at is not None
    after = _add_after(rmem, memory_id)
    assert after == added and (after["access_count"], after["accessed_at"]) == (0, None)


def test_an_embedding_finished_by_the_sync_job_does_not_change_the_add(
    rmem: Memory, emb: SwitchableEmbedder, clock: Any
) -> None:
    emb.down = "down while adding"
    memory_id, added = _added(rmem, "Maya works at the harbour")
    assert added["embedding_status"] == "pending"
    emb.down = "down while syncing"
    assert rmem.run_sync().error  # the job fails too: the row is marked failed with its error
    failed = rmem.get(memory_id)
    assert failed.embedding_status == "failed" and "down while syncing" in (failed.embedding_error or "")
    emb.down = None
    clock.advance(seconds=5)
    assert rmem.run_sync().items_done == 1
    assert rmem.get(memory_id).embedding_status == "done"
    history = rmem.history(memory_id)
    assert [e.op for e in history] == ["add", "embed"]
    assert history[0].after == added
    assert (added["embedding_status"], added["embedding_model"]) == ("pending", None)
    assert "down while adding" in added["embedding_error"]  # the add's error, not the sync job's


def test_the_add_resolves_from_the_next_entry_after_an_update(rmem: Memory) -> None:
    memory_id, added = _added(rmem, "Maya has a cat", tags=["pets"])
    rmem.recall("Maya cat")  # an access between the add and the update
    rmem.update(memory_id, content="Maya has two cats", importance=0.9)
    rmem.update(memory_id, tags=["pets", "home"])
    add, first, second = rmem.history(memory_id)
    assert (add.op, first.op, second.op) == ("add", "update", "update")
    assert add.after == added
    assert first.before is not None and first.before["access_count"] == 1
    assert {k: v for k, v in first.before.items() if k not in ("access_count", "accessed_at")} == {
        k: v for k, v in added.items() if k not in ("access_count", "accessed_at")
    }


def test_the_add_survives_a_deletion(rmem: Memory) -> None:
    memory_id, added = _added(rmem, "Maya's flat is on the third floor")
    rmem.recall("Maya flat")
    assert rmem.forget(memory_id) == 1
    assert [e.op for e in rmem.history(memory_id)] == ["add", "delete"]
    assert _add_after(rmem, memory_id) == added


def test_the_add_survives_forget_all(rmem: Memory) -> None:
    kept_id, kept = _added(rmem, "kept elsewhere", namespace="other")
    ids = [_added(rmem, f"scratch note {n}", namespace="scratch", user="u") for n in range(3)]
    rmem.update(ids[0][0], content="scratch note zero", namespace="scratch")
    assert rmem.forget_all(namespace="scratch") == 3
    for memory_id, added in ids:
        assert rmem.history(memory_id, namespace="scratch")[-1].op == "delete"
        assert _add_after(rmem, memory_id, "scratch") == added
    assert _add_after(rmem, kept_id, "other") == kept


def test_an_added_entry_that_is_not_the_item_reads_back_as_given(backend: Backend) -> None:
    """A copy writes an item's current state with its original add: that add is not the row, so it stays whole."""
    now = datetime(2026, 3, 1, tzinfo=UTC)
    original = build_item(content="first words", namespace="ns", now=now)
    current = original.model_copy(update={"content": "other words", "access_count": 3})
    backend.add([NewRecord(current, None, ledger_entry("add", original.id, "ns", now, after=original))])
    (add,) = backend.history("ns", original.id)
    assert add.after == snapshot(original)


# -- memory migrate ------------------------------------------------------------------------------


def _scenario(mem: Memory, emb: SwitchableEmbedder, clock: Any) -> None:
    """Adds, accesses, an embedding finished by the sync job, updates, deletions and a forget_all."""
    ids = mem.remember_batch([f"note {n} about topic {n % 3}" for n in range(8)], user="u")
    emb.down = "down"
    pending = mem.remember("stored while the embedder is down")
    later = mem.remember("changed while pending")
    emb.down = None
    mem.recall("topic 1", limit=4)
    clock.advance(seconds=3)
    mem.run_sync()
    mem.update(ids[0], content="note 0 rewritten")
    mem.update(later, importance=0.2)
    mem.recall("note 0 rewritten")
    mem.forget([ids[1], ids[2]])
    mem.remember_batch(["gone soon", "gone too"], namespace="tmp")
    mem.forget_all(namespace="tmp")
    assert mem.get(pending).embedding_status == "done"


def _open(kind: str, where: Path) -> Backend:
    where.mkdir()
    if kind == "sqlite":
        backend: Backend = create("backend", "sqlite", {"path": str(where / "copy.db")})
    else:
        backend = create("backend", "postgres", {"dsn": postgres_dsn(), "schema": schema_for(where)})
    return backend


@pytest.fixture(params=["sqlite", "postgres"])
def copy_target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """An empty store to migrate into: SQLite or PostgreSQL, whatever the source."""
    backend = _open(str(request.param), tmp_path / f"to-{request.param}")
    yield backend
    backend.close()


def _histories(backend: Any) -> dict[tuple[str, str], list[LedgerEntry]]:
    items = {(e.namespace, e.item_id) for e in backend.iter_ledger()}
    return {key: backend.history(*key) for key in sorted(items)}


def test_a_migrated_store_has_the_same_histories(
    rmem: Memory, emb: SwitchableEmbedder, clock: Any, copy_target: Backend
) -> None:
    _scenario(rmem, emb, clock)
    source: Any = rmem.backend
    before = _histories(source)
    assert sum(e.op == "add" for entries in before.values() for e in entries) == 12
    copy_store(source, copy_target, window_size=0)
    copied = _histories(copy_target)
    assert list(copied) == list(before)
    for key, entries in before.items():
        assert copied[key] == entries, key
    assert sorted(copy_target.iter_ledger(), key=lambda e: e.id) == sorted(source.iter_ledger(), key=lambda e: e.id)  # type: ignore[attr-defined]
