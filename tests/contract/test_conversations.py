"""Conversations through the facade (`mem.messages`, `mem.blocks`, sync, prune), on every backend."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from memory import Memory
from memory.embedders.hashing import HashingEmbedder
from memory.episodic.sync import SyncReport
from memory.episodic.types import Block, Message
from memory.errors import BlockLimitError, EmbedderError, InvalidInputError, NotFoundError


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, recording every text it is asked to embed; can be told to fail."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []
        self.fail = False

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail:
            raise EmbedderError("embedder down (test)")
        self.seen.extend(texts)
        return super().embed_batch(texts)


@pytest.fixture
def counting() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture
def cmem(make_memory: Callable[..., Memory], counting: CountingEmbedder, tmp_path: Path) -> Memory:
    from memory.config import Settings

    return make_memory(embedder=counting, settings=Settings(database="memory://", media_dir=str(tmp_path / "media")))


def test_append_assigns_turns_and_never_waits_for_the_embedder(cmem: Memory, counting: CountingEmbedder) -> None:
    a = cmem.messages.append("t1", "I moved to Berlin", user="alice")
    b = cmem.messages.append("t1", "Nice city", role="assistant")
    assert (a.turn, b.turn, a.embedding_status) == (1, 2, "pending")
    assert counting.seen == []
    c = cmem.messages.append("t1", "Embed me now", embed=True)
    assert c.embedding_status == "done" and counting.seen == ["Embed me now"]
    assert [m.content for m in cmem.messages.recent("t1", 2)] == ["Nice city", "Embed me now"]
    assert [m.turn for m in cmem.messages.get_thread("t1", after_turn=1)] == [2, 3]
    assert cmem.messages.get(a.id) == a


@pytest.mark.parametrize(
    ("args", "fields", "needle"),
    [
        (("t1", ""), {}, "empty"),
        (("t1", "hi"), {"role": "User!"}, "role"),
        (("", "hi"), {}, "thread"),
        (("t1", "hi"), {"content_type": "video"}, "content_type"),
        (("t1", "a picture"), {"content_type": "image"}, "needs media"),
        (("t1", "hi"), {"media": b"x"}, "text message takes no media"),
        (("t1", "hi"), {"ttl": 5, "expires_at": "2030-01-01T00:00:00"}, "not both"),
        (("t1", "hi"), {"colour": "red"}, "unknown field"),
        (("t1", "hi"), {"sensitivity": "top"}, "sensitivity"),
        (("t1", "hi"), {"ttl": 7.3e265}, "too large"),
        (("t1", "hi"), {"ttl": float("nan")}, "positive, finite"),
    ],
)
def test_bad_messages_are_rejected_and_change_nothing(
    cmem: Memory, args: tuple[str, str], fields: dict[str, object], needle: str
) -> None:
    with pytest.raises(InvalidInputError, match=needle):
        cmem.messages.append(*args, **fields)
    assert cmem.messages.threads() == []


def test_media_is_stored_once_by_content_hash(cmem: Memory, tmp_path: Path) -> None:
    png = b"\x89PNG fake image bytes"
    first = cmem.messages.append("t1", "my cat", content_type="image", media=png, media_name="cat.png")
    source = tmp_path / "again.png"
    source.write_bytes(png)
    second = cmem.messages.append("t1", None, content_type="image", media=str(source))
    assert first.media is not None and second.media is not None
    assert first.media.sha256 == second.media.sha256 and first.media.mime == "image/png"
    files = [p for p in (tmp_path / "media").rglob("*") if p.is_file()]
    assert len(files) == 1 and files[0].read_bytes() == png
    assert cmem.messages.media(cmem.messages.get(first.id)) == png
    snap = cmem.messages.append("t1", "state of the repo", content_type="snapshot", uri="s3://bucket/snap-1")
    assert snap.media is not None and snap.media.uri == "s3://bucket/snap-1"


def test_search_is_hybrid_after_sync(cmem: Memory) -> None:
    cmem.messages.append("t1", "We adopted a golden retriever puppy", user="alice")
    cmem.messages.append("t1", "The quarterly tax report is due", user="alice")
    cmem.messages.append("t2", "golden retriever training tips", user="bob")
    before = cmem.messages.search("retriever puppy")
    channels = set().union(*(h.channels for h in before))
    assert "lexical" in channels and "vector" not in channels  # no vectors before the sync (feedback may join)
    report = cmem.run_sync()
    assert isinstance(report, SyncReport) and report.messages_done == 3
    hits = cmem.messages.search("retriever puppy", user="alice")
    assert hits[0].message.content.startswith("We adopted") and {"lexical", "vector"} <= set(hits[0].channels)
    assert all(h.message.user == "alice" for h in hits)
    assert [h.message.thread for h in cmem.messages.search("retriever", thread="t2")] == ["t2"]


def test_sync_skips_secrets_and_expired_and_embeds_pending_memories(
    cmem: Memory, counting: CountingEmbedder, clock: object
) -> None:
    cmem.messages.append("t1", "public words")
    hidden = cmem.messages.append("t1", "the vault code is 9913", sensitivity="secret")
    short = cmem.messages.append("t1", "short lived", ttl=60)
    counting.fail = True
    memory_id = cmem.remember("Alice likes tea")  # stored pending: the embedder is down
    counting.fail = False
    clock.advance(seconds=120)  # type: ignore[attr-defined]
    estimate = cmem.run_sync(dry_run=True)
    assert (estimate.messages, estimate.items) == (1, 1)  # type: ignore[union-attr]
    report = cmem.run_sync()
    assert isinstance(report, SyncReport)
    assert (report.messages_done, report.messages_skipped, report.items_done) == (1, 2, 1)
    assert "9913" not in " ".join(counting.seen) and "short lived" not in counting.seen
    statuses = {m.id: m.embedding_status for m in cmem.messages.get_thread("t1", clearance="secret")}
    assert statuses[hidden.id] == "skipped" and short.id not in statuses  # expired: hidden
    assert cmem.get(memory_id).embedding_status == "done"
    assert cmem.sync_status().pending == 0


def test_a_failing_embedder_leaves_rows_failed_with_the_error_and_the_next_run_finishes(
    cmem: Memory, counting: CountingEmbedder
) -> None:
    for i in range(5):
        cmem.messages.append("t1", f"message number {i}")
    counting.fail = True
    report = cmem.run_sync(batch_size=2)
    assert isinstance(report, SyncReport) and report.error and "embedder down" in report.error
    status = cmem.sync_status()
    assert status.messages == {"failed": 2, "pending": 3}
    assert status.state is not None and "embedder down" in (status.state.last_error or "")
    failed = [m for m in cmem.messages.get_thread("t1") if m.embedding_status == "failed"]
    assert all(m.embedding_error and "embedder down" in m.embedding_error for m in failed)
    counting.fail = False
    again = cmem.run_sync(batch_size=2)
    assert isinstance(again, SyncReport) and again.messages_done == 5 and again.error is None
    assert cmem.sync_status().messages == {"done": 5}
    assert sorted(counting.seen) == sorted(f"message number {i}" for i in range(5))


def test_embed_pending_respects_other_workers_claims(cmem: Memory) -> None:
    backend = cmem.backend
    first = cmem.remember("first fact")
    second = cmem.remember("second fact")
    # put both back to pending, then let another worker hold one of them
    backend.mark_embedding(cmem.namespace, [first, second], "pending", None)
    held = backend.claim_pending_embeddings(cmem.namespace, 1, "other-worker", 300, cmem.now())
    assert [i.id for i in held] == [first]
    assert cmem.embed_pending() == 1
    assert cmem.get(second).embedding_status == "done"
    assert cmem.get(first).embedding_status == "pending"


def test_archive_and_clear_through_the_facade(cmem: Memory, clock: object) -> None:
    for i in range(6):
        cmem.messages.append("t1", f"line {i}")
        clock.advance(minutes=10)  # type: ignore[attr-defined]
    assert cmem.messages.archive("t1", keep_last=4) == 2
    assert [m.turn for m in cmem.messages.get_thread("t1")] == [3, 4, 5, 6]
    assert [m.turn for m in cmem.messages.archived("t1")] == [1, 2]
    assert cmem.messages.get(cmem.messages.archived("t1")[0].id).turn == 1
    # now = +60 min; older than 35 min = turns 1-3 (created at +0, +10, +20): 2 archived, 1 hot
    assert cmem.messages.clear("t1", older_than=timedelta(minutes=35)) == 3
    assert [m.turn for m in cmem.messages.get_thread("t1")] == [4, 5, 6]
    assert cmem.messages.archived("t1") == []
    with pytest.raises(InvalidInputError, match="keep_last"):
        cmem.messages.archive("t1")
    assert cmem.messages.append("t1", "after").turn == 7


def test_secret_messages_need_clearance(cmem: Memory) -> None:
    hidden = cmem.messages.append("t1", "pin 4242", sensitivity="secret")
    assert cmem.messages.recent("t1") == []
    assert cmem.messages.search("pin 4242") == []
    with pytest.raises(NotFoundError):
        cmem.messages.get(hidden.id)
    assert cmem.messages.get(hidden.id, clearance="secret").content == "pin 4242"


def test_namespaces_include_message_only_ones(cmem: Memory) -> None:
    cmem.remember("a fact", namespace="facts")
    cmem.messages.append("t1", "hello", namespace="chats")
    assert {"facts", "chats"} <= set(cmem.namespaces())
    assert cmem.messages.threads(namespace="facts") == []


def test_blocks_read_replace_append_with_limits_and_history(cmem: Memory) -> None:
    empty = cmem.blocks.get("user_info", user="alice")
    assert (empty.value, empty.limit, empty.version) == ("", 2000, 0)
    cmem.blocks.replace("user_info", "Name: Alice", user="alice")
    block = cmem.blocks.append("user_info", "Lives in Berlin", user="alice")
    assert block.value == "Name: Alice\nLives in Berlin" and block.version == 2
    with pytest.raises(BlockLimitError, match="over its limit of 2000"):
        cmem.blocks.append("user_info", "x" * 2000, user="alice")
    assert cmem.blocks.get("user_info", user="alice") == block
    small = cmem.blocks.replace("mood", "calm", limit=10, agent="bot")
    assert small.limit == 10
    with pytest.raises(BlockLimitError):
        cmem.blocks.replace("mood", "far too long for ten", agent="bot")
    with pytest.raises(InvalidInputError, match="label"):
        cmem.blocks.get("User Info")
    assert [c.op for c in cmem.blocks.history("user_info", user="alice")] == ["replace", "append"]
    labels = [b.label for b in cmem.blocks.all(user="alice")]
    assert {"user_info", "last_conversation_summary", "agent_beliefs"} <= set(labels)
    assert cmem.blocks.get("user_info").value == ""  # another scope


def test_a_block_reason_is_checked_before_anything_is_written(cmem: Memory) -> None:
    cmem.blocks.replace("user_info", "Name: Alice", user="alice", reason="told so")
    for bad, message in (("a\x00b", "NUL"), ("x" * 2001, "at most 2000"), (5, "string")):
        with pytest.raises(InvalidInputError, match=message):
            cmem.blocks.append("user_info", "Lives in Berlin", user="alice", reason=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="NUL"):
        cmem.blocks.replace("user_info", "Name:\x00Alice", user="alice")
    assert cmem.blocks.get("user_info", user="alice").value == "Name: Alice"
    assert [c.reason for c in cmem.blocks.history("user_info", user="alice")] == ["told so"]


def test_concurrent_appends_to_a_block_all_land(cmem: Memory) -> None:
    def add(i: int) -> None:
        for j in range(5):
            cmem.blocks.append("important_context", f"note {i}-{j}")

    workers = [threading.Thread(target=add, args=(i,)) for i in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    lines = cmem.blocks.get("important_context").value.splitlines()
    assert sorted(lines) == sorted(f"note {i}-{j}" for i in range(4) for j in range(5))


def test_end_conversation_updates_blocks_extractively(cmem: Memory) -> None:
    cmem.messages.append("t1", "Hi! My name is Alice and I live in Berlin.", user="alice")
    cmem.messages.append("t1", "Nice to meet you, Alice. How can I help?", role="assistant", user="alice")
    cmem.messages.append("t1", "I want to learn German before my Berlin job starts.", user="alice")
    cmem.messages.append("t1", "my bank pin is 5521", user="alice", sensitivity="secret")
    result = cmem.end_conversation("t1")
    assert result.user == "alice" and result.messages == 3
    assert {"last_conversation_summary", "user_info", "goals_and_status"} <= set(result.updated)
    info = cmem.blocks.get("user_info", user="alice").value
    assert "Lives in: Berlin" in info and "My name is" not in info  # a profile from facts, not a quote
    assert "learn German" in cmem.blocks.get("goals_and_status", user="alice").value
    summary = cmem.blocks.get("last_conversation_summary", user="alice").value
    assert "Berlin" in summary and "5521" not in summary
    again = cmem.end_conversation("t1")
    assert "user_info" not in again.updated  # nothing new: no duplicate lines
    assert cmem.blocks.get("user_info", user="alice").value == info


def test_end_conversation_takes_a_custom_summarizer(cmem: Memory) -> None:
    class Shouty:
        def summarize(self, messages: Sequence[Message], blocks: Mapping[str, Block]) -> dict[str, str]:
            return {"last_conversation_summary": " / ".join(m.content.upper() for m in messages)}

    cmem.messages.append("t9", "hello there", agent="bot")
    result = cmem.end_conversation("t9", summarizer=Shouty())
    assert result.updated["last_conversation_summary"].value == "HELLO THERE"
    assert cmem.blocks.get("last_conversation_summary", agent="bot").value == "HELLO THERE"


def test_prune_deletes_expired_messages_and_memories(cmem: Memory, clock: object) -> None:
    kept = cmem.remember("stays")
    gone = cmem.remember("goes", ttl=60)
    cmem.messages.append("t1", "brief", ttl=60)
    cmem.messages.append("t1", "lasting")
    clock.advance(seconds=61)  # type: ignore[attr-defined]
    report = cmem.prune()
    assert (report.messages, report.memories) == (1, 1)
    assert [e.op for e in cmem.history(gone)] == ["add", "expire"]
    assert cmem.get(kept).content == "stays"
    assert [m.content for m in cmem.messages.get_thread("t1")] == ["lasting"]
    assert cmem.prune().to_dict() == {"messages": 0, "memories": 0, "media_files": 0}


def test_prune_collects_media_no_message_references(cmem: Memory, tmp_path: Path) -> None:
    shared = cmem.messages.append("t1", "pic", content_type="image", media=b"shared bytes", media_name="a.png")
    cmem.messages.append("t1", "pic", content_type="image", media=b"shared bytes", namespace="other")
    lonely = cmem.messages.append("t2", "pic", content_type="image", media=b"lonely bytes", media_name="b.png")
    archived = cmem.messages.append("t3", "old pic", content_type="image", media=b"archived bytes")
    cmem.messages.append("t3", "newer")
    assert cmem.messages.archive("t3", keep_last=1) == 1
    assert cmem.messages.clear("t1", keep_last=0) == 1 and cmem.messages.clear("t2", keep_last=0) == 1
    assert cmem.prune().media_files == 0  # inside the grace period: kept
    assert cmem.prune(namespace=cmem.namespace, media_grace_seconds=0).media_files == 0  # one namespace: no GC
    assert cmem.prune(media_grace_seconds=0).media_files == 1
    store = cmem.messages.media_store
    assert not store.path_of(lonely.media.sha256).exists()  # type: ignore[union-attr]
    assert store.path_of(shared.media.sha256).exists()  # type: ignore[union-attr]  # still used in "other"
    assert store.path_of(archived.media.sha256).exists()  # type: ignore[union-attr]  # archived still references it


def test_sync_releases_claims_of_dead_local_workers_only(cmem: Memory) -> None:
    import socket
    import subprocess
    import sys

    for i in range(3):
        cmem.messages.append("t1", f"text {i}")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = f"{socket.gethostname()}:{int(gone.stdout)}:abc"
    store = cmem.messages.store
    store.claim_pending_messages(None, 1, dead, 300, cmem.now())
    store.claim_pending_messages(None, 1, "elsewhere:1:abc", 300, cmem.now())  # another host: its lease must run out
    report = cmem.run_sync()
    assert isinstance(report, SyncReport) and (report.released, report.messages_done) == (1, 2)
    assert cmem.sync_status().claimed == {"elsewhere:1:abc": 1}


def test_media_dir_defaults_next_to_the_database_and_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "chat.db"
    with Memory(str(db), embedder=HashingEmbedder()) as mem:
        assert mem.messages.media_store.root == tmp_path / "chat.db.media"
    monkeypatch.setenv("MEMORY_MEDIA_DIR", str(tmp_path / "elsewhere"))
    with Memory(str(db), embedder=HashingEmbedder()) as mem:
        message = mem.messages.append("t1", None, content_type="file", media=b"%PDF", media_name="a.pdf")
        assert mem.messages.media_store.path_of(message.media.sha256).parent.parent == tmp_path / "elsewhere"  # type: ignore[union-attr]
