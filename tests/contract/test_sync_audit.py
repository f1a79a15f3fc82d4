"""The sync job's audit entries in the ledger (what was embedded, by which model, when), on every backend."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory import Memory
from memory.config import Settings
from memory.embedders.hashing import HashingEmbedder
from memory.errors import EmbedderError, NotFoundError


class SwitchableEmbedder(HashingEmbedder):
    """The hashing embedder that fails while ``fail`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.fail = False

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail:
            raise EmbedderError("embedder down (test)")
        return super().embed_batch(texts)


@pytest.fixture
def emb() -> SwitchableEmbedder:
    return SwitchableEmbedder()


@pytest.fixture
def amem(make_memory: Callable[..., Memory], emb: SwitchableEmbedder, tmp_path: Path) -> Memory:
    return make_memory(embedder=emb, settings=Settings(database="memory://", media_dir=str(tmp_path / "media")))


def _audit(entries: Sequence[Any]) -> list[Any]:
    return [e for e in entries if e.op == "embed"]


def test_sync_writes_one_audit_entry_per_embedded_row(amem: Memory, emb: SwitchableEmbedder, clock: Any) -> None:
    first = amem.messages.append("t1", "I moved to Lisbon", user="maya")
    second = amem.messages.append("t1", "x" * 4500, role="assistant")
    secret = amem.messages.append("t1", "my PIN is 4417", sensitivity="secret")
    emb.fail = True
    mid = amem.remember("Maya lives in Lisbon", user="maya", thread="t1")  # stored pending: the embedder is down
    emb.fail = False
    clock.advance(seconds=5)
    report = amem.run_sync(batch_size=10)
    assert report.messages_done == 2 and report.items_done == 1

    entries = amem.history(first.id)
    assert [e.op for e in entries] == ["embed"]
    audit = entries[0]
    assert audit.at == clock() and audit.item_id == first.id and audit.namespace == amem.namespace
    assert audit.before is None and audit.after is not None
    assert audit.after["job"] == "semantic_sync" and audit.after["source"] == "message"
    assert audit.after["embedding_model"] == emb.model_name and audit.after["dim"] == emb.dimension
    assert audit.after["chars"] == len("I moved to Lisbon") and audit.after["chunks"] == 1
    assert audit.after["thread"] == "t1" and audit.after["sensitivity"] == "normal"
    assert "Lisbon" not in str(audit.after) and emb.model_name in (audit.reason or "")
    long_audit = amem.history(second.id)[0]
    assert long_audit.after is not None and long_audit.after["chunks"] == 3  # 4500 chars in 2000-char chunks
    assert long_audit.after["batch"] == audit.after["batch"]  # one batch, one batch id

    memory_history = amem.history(mid)
    assert [e.op for e in memory_history] == ["add", "embed"]
    item_audit = memory_history[1]
    assert item_audit.after is not None and item_audit.after["source"] == "memory"
    assert item_audit.after["batch"] != audit.after["batch"]

    with pytest.raises(NotFoundError):  # a secret message is never embedded, so it has no audit entry
        amem.history(secret.id, clearance="secret")
    ledger = list(amem.backend.iter_ledger())  # type: ignore[attr-defined]
    assert len(_audit(ledger)) == 3 and {e.item_id for e in _audit(ledger)} == {first.id, second.id, mid}

    assert amem.run_sync().messages_done == 0
    assert len(_audit(amem.backend.iter_ledger())) == 3  # type: ignore[attr-defined]  # nothing new: no new entries


def test_failed_rows_get_no_audit_entry_until_they_are_embedded(amem: Memory, emb: SwitchableEmbedder) -> None:
    message = amem.messages.append("t2", "hello there")
    emb.fail = True
    assert amem.run_sync().error
    assert amem.sync_status().messages == {"failed": 1}
    with pytest.raises(NotFoundError):
        amem.history(message.id)
    emb.fail = False
    assert amem.run_sync().messages_done == 1
    assert [e.op for e in amem.history(message.id)] == ["embed"]


def test_audit_entries_do_not_reveal_a_memory_made_secret(amem: Memory, emb: SwitchableEmbedder) -> None:
    emb.fail = True
    mid = amem.remember("the vault code is 1234")
    emb.fail = False
    amem.run_sync()
    amem.update(mid, sensitivity="secret")
    with pytest.raises(NotFoundError):  # the audit entry came after a normal state, but the last state is secret
        amem.history(mid)
    assert [e.op for e in amem.history(mid, clearance="secret")] == ["add", "embed", "update"]


def test_an_audit_entry_written_last_does_not_mask_a_secret_state(amem: Memory) -> None:
    """The race: the job claimed a normal memory, it became secret, then the audit line was written."""
    from memory.episodic.audit import Embedded, audit_entries, write_audit

    mid = amem.remember("the alarm code is 9876")
    amem.update(mid, sensitivity="secret")
    row = Embedded(mid, amem.namespace, "memory", 22, "normal", None)
    entries = audit_entries([row], job="semantic_sync", model="m", dim=3, batch="b", worker="w", at=amem.now())
    assert write_audit(amem.backend, entries) == 1
    assert [e.op for e in amem.history(mid, clearance="secret")] == ["add", "update", "embed"]
    with pytest.raises(NotFoundError):
        amem.history(mid)


def test_a_backend_without_the_ledger_capability_skips_the_audit(amem: Memory, caplog: Any) -> None:
    """The audit is typed by ``LedgerTransfer``: a backend without it is logged and skipped, never fails the sync."""
    from memory.backends.base import LedgerTransfer
    from memory.episodic.audit import Embedded, audit_entries, write_audit

    assert isinstance(amem.backend, LedgerTransfer)
    mid = amem.remember("the fern needs water")
    row = Embedded(mid, amem.namespace, "memory", 20, "normal", None)
    entries = audit_entries([row], job="semantic_sync", model="m", dim=3, batch="b", worker="w", at=amem.now())
    with caplog.at_level("WARNING", logger="memory.episodic.audit"):
        assert write_audit(object(), entries) == 0
    assert "no write_ledger" in caplog.text
    assert [e.op for e in amem.history(mid)] == ["add"]
