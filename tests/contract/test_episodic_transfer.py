"""Export/import keeps messages (hot and archived, with vectors) and blocks (with history), on every backend."""

from __future__ import annotations

import io
import json
from collections.abc import Callable

import numpy as np
import pytest

from memory import Memory
from memory.embedders.hashing import HashingEmbedder
from memory.errors import InvalidInputError
from vector_storage import as_stored


def _populate(mem: Memory) -> None:
    mem.remember("Alice likes tea", user="alice")
    for i in range(5):
        mem.messages.append("t1", f"turn text {i}", user="alice", role="user" if i % 2 == 0 else "assistant")
    mem.messages.append("t1", "the pin is 1111", sensitivity="secret")
    mem.messages.append("t2", "a photo", content_type="image", media=b"img", media_name="p.png")
    mem.run_sync()
    mem.messages.archive("t1", keep_last=3)
    mem.blocks.replace("user_info", "Name: Alice", user="alice")
    mem.blocks.append("user_info", "Drinks tea", user="alice")
    mem.blocks.replace("agent_info", "I am a helper", agent="bot")


def _snapshot(mem: Memory) -> dict[str, object]:
    threads = {t.thread: (t.messages, t.archived, t.last_turn) for t in mem.messages.threads()}
    hot = [m for t in sorted(threads) for m in mem.messages.get_thread(t, clearance="secret")]
    vectors = {m.id: mem.messages.store.get_message_vectors(m.namespace, mem.embedder.model_name, [m.id]).get(m.id)
               for m in hot}  # fmt: skip
    return {
        "threads": threads,
        "hot": hot,
        "archived": mem.messages.archived(),
        "vectors": {k: None if v is None else v.tolist() for k, v in vectors.items()},
        "blocks": mem.messages.store.iter_blocks(mem.namespace),
        "history": mem.blocks.history("user_info", user="alice"),
    }


def test_round_trip_is_lossless(make_memory: Callable[..., Memory], tmp_path: object) -> None:
    source = make_memory()
    _populate(source)
    out = io.StringIO()
    source.export(out, clearance="secret")
    kinds = [json.loads(line)["type"] for line in out.getvalue().splitlines()]
    assert kinds.count("message") == 7 and kinds.count("block") == 2 and kinds.count("memory") == 1
    before = _snapshot(source)
    target = Memory("memory://", embedder=HashingEmbedder(), clock=source._clock)
    report = target.import_(io.StringIO(out.getvalue()))
    assert (report.imported, report.messages, report.blocks) == (1, 7, 2)
    # the target holds what its store keeps of each vector (memory:// is SQLite: float16; exact from SQLite)
    kept = {k: None if v is None else as_stored(target.backend, v).tolist() for k, v in before["vectors"].items()}
    assert _snapshot(target) == {**before, "vectors": kept}
    assert target.messages.append("t1", "next").turn == 7  # turn counters survive
    again = target.import_(io.StringIO(out.getvalue()))
    assert (again.messages, again.blocks) == (0, 0)
    target.close()


def test_secret_messages_need_clearance_to_leave(mem: Memory) -> None:
    mem.messages.append("t1", "visible")
    # Not digits: a time-ordered id (hex) holds "2222" for minutes on end, and this test then failed.
    mem.messages.append("t1", "the pin is swordfish", sensitivity="secret")
    out = io.StringIO()
    mem.export(out)
    assert "swordfish" not in out.getvalue() and "visible" in out.getvalue()


def test_memory_only_filters_leave_conversations_out(mem: Memory) -> None:
    mem.messages.append("t1", "chat line")
    mem.remember("tagged", tags=["x"])
    out = io.StringIO()
    mem.export(out, tags=["x"])
    assert "chat line" not in out.getvalue()


def test_a_bad_message_line_rejects_the_whole_file(mem: Memory) -> None:
    source = Memory("memory://", embedder=HashingEmbedder())
    source.remember("a fact")
    source.messages.append("t1", "hello")
    out = io.StringIO()
    source.export(out)
    lines = out.getvalue().splitlines()
    bad = json.loads(lines[-1])
    bad["message"]["turn"] = 0
    lines[-1] = json.dumps(bad)
    with pytest.raises(InvalidInputError, match=f"line {len(lines)}"):
        mem.import_(io.StringIO("\n".join(lines)))
    assert mem.stats().total == 0 and mem.messages.threads() == []
    source.close()


def test_vectors_of_another_model_leave_messages_pending(mem: Memory) -> None:
    other = HashingEmbedder()
    other.model_name = "other-model"
    source = Memory("memory://", embedder=other)
    source.messages.append("t1", "hello there")
    source.run_sync()
    out = io.StringIO()
    source.export(out)
    mem.import_(io.StringIO(out.getvalue()))
    (message,) = mem.messages.get_thread("t1")
    assert message.embedding_status == "pending"
    mem.run_sync()
    assert mem.messages.get_thread("t1")[0].embedding_status == "done"
    assert np.isfinite(mem.messages.search("hello")[0].score)
    source.close()
