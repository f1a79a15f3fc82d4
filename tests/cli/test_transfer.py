"""memory.transfer: JSONL export/import is lossless, validates first, dedups, re-embeds."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory.embedders.hashing import HashingEmbedder
from memory.errors import InvalidInputError
from memory.filters import Filter
from memory.memory import Memory
from memory.transfer import FORMAT, ImportReport, export_jsonl, import_jsonl
from memory.types import MemoryItem

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def everything(mem: Memory, namespace: str = "default") -> Filter:
    """A filter that sees every item of a namespace."""
    return Filter(
        namespace=namespace, clearance="secret", include_expired=True, include_invalid=True,
        now=datetime.now(UTC) + timedelta(days=3650),
    )  # fmt: skip


def snapshot(mem: Memory, namespace: str = "default") -> tuple[list[MemoryItem], dict[str, bytes]]:
    """All items of a namespace and the raw bytes of their vectors."""
    items = sorted(mem.backend.iter_items(everything(mem, namespace)), key=lambda i: i.id)
    vectors = mem.backend.get_vectors(namespace, mem.embedder.model_name, [i.id for i in items])
    for vector in vectors.values():
        assert vector.dtype == np.float32
    return items, {k: v.tobytes() for k, v in vectors.items()}


def populate(mem: Memory, clock: Clock) -> list[str]:
    """A store with every kind of field set, access counts, a closed fact, a secret, a TTL."""
    ids = [
        mem.remember(
            "Alice prefers dark mode", user="alice", agent="helper", thread="t1", kind="trait",
            tags=["ui", "'; DROP TABLE items; --"], metadata={"n": 1, "nested": {"x": [1.5, None, True]}, "s": "100%"},
            context="onboarding chat", importance=0.123456789, keywords=["dark", "mode"], entities=["Alice"],
            source_ids=["msg-1"],
        ),
        mem.remember("Bob's PIN is 1234", user="bob", sensitivity="secret"),
        mem.remember("Carol lives in Paris", user="carol", sensitivity="private", valid_from=T0 - timedelta(days=30)),
        mem.remember("Dave keeps bees", user="dave", ttl=10 * 365 * 86400),
        mem.remember("Unicode: Grüße, 東京, emoji 🐝, quote \" and \\ backslash", user="eve"),
    ]  # fmt: skip
    clock.now = T0 + timedelta(hours=1)
    mem.update(ids[2], valid_to=T0 + timedelta(minutes=30), reason="moved")  # closed fact
    mem.recall("dark mode", user="alice")
    mem.recall("dark mode", user="alice")  # access_count 2
    return ids


@pytest.fixture(params=["memory", "sqlite"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[str], str]:
    """Database URLs of the backend under test: ``url("a")`` and ``url("b")`` are two stores."""
    if request.param == "memory":
        return lambda name: "memory://"
    return lambda name: f"sqlite:///{tmp_path / name}.db"


@pytest.fixture
def source(url: Callable[[str], str]) -> Iterator[tuple[Memory, list[str]]]:
    clock = Clock()
    mem = Memory(url("source"), embedder=HashingEmbedder(), clock=clock)
    ids = populate(mem, clock)
    yield mem, ids
    mem.close()


@pytest.fixture
def target(url: Callable[[str], str]) -> Iterator[Memory]:
    mem = Memory(url("target"), embedder=HashingEmbedder())
    yield mem
    mem.close()


def dump(mem: Memory, **kwargs: Any) -> str:
    buffer = io.StringIO()
    export_jsonl(mem, buffer, **kwargs)
    return buffer.getvalue()


def test_round_trip_is_lossless(source: tuple[Memory, list[str]], target: Memory) -> None:
    mem, ids = source
    text = dump(mem, clearance="secret")
    report = import_jsonl(target, io.StringIO(text))
    assert report == ImportReport(imported=5, duplicates=0, skipped_existing=0, reembedded=0)
    before_items, before_vectors = snapshot(mem)
    after_items, after_vectors = snapshot(target)
    assert after_items == before_items  # every field, ids, timestamps, access counts
    assert after_vectors == before_vectors  # bit for bit
    assert len(before_vectors) == 4  # the secret has none
    by_id = {i.id: i for i in after_items}
    assert by_id[ids[0]].access_count == 2 and by_id[ids[0]].accessed_at is not None
    assert by_id[ids[2]].valid_to is not None
    assert [e.reason for e in target.history(ids[0])] == ["import"]
    again = dump(target, clearance="secret").splitlines()
    assert again[1:] == text.splitlines()[1:]


def test_header_and_line_shape(source: tuple[Memory, list[str]]) -> None:
    mem, _ = source
    lines = [json.loads(line) for line in dump(mem).splitlines()]
    header = lines[0]
    assert header["type"] == "header" and header["format"] == FORMAT and header["version"] == 1
    assert header["embedding_model"] == mem.embedder.model_name and header["embedding_dim"] == 384
    datetime.fromisoformat(header["exported_at"])
    for line in lines[1:]:
        assert set(line) == {"type", "item", "embedding"} and line["type"] == "memory"
        assert set(line["item"]) == set(MemoryItem.model_fields)
        assert line["embedding"]["model"] == mem.embedder.model_name
        assert line["embedding"]["dim"] == len(line["embedding"]["vector"]) == 384


def test_secrets_only_with_clearance_and_expired_never(source: tuple[Memory, list[str]]) -> None:
    mem, ids = source
    exported = {json.loads(line)["item"]["id"] for line in dump(mem).splitlines()[1:]}
    assert ids[1] not in exported and ids[2] in exported  # secret out, closed fact kept
    short = mem.remember("fleeting", ttl=1)
    mem._clock = lambda: datetime.now(UTC) + timedelta(seconds=5)  # type: ignore[method-assign]  # noqa: SLF001
    everything_ids = {json.loads(line)["item"]["id"] for line in dump(mem, clearance="secret").splitlines()[1:]}
    assert ids[1] in everything_ids and short not in everything_ids


def test_export_filters(source: tuple[Memory, list[str]]) -> None:
    mem, ids = source
    lines = dump(mem, user="alice", tags=["'; DROP TABLE items; --"]).splitlines()[1:]
    assert [json.loads(line)["item"]["id"] for line in lines] == [ids[0]]
    with pytest.raises(InvalidInputError):
        dump(mem, kinds=["Bad Kind"])


def test_second_import_skips_existing_ids(source: tuple[Memory, list[str]], target: Memory) -> None:
    text = dump(source[0])
    import_jsonl(target, io.StringIO(text))
    report = import_jsonl(target, io.StringIO(text))
    assert report == ImportReport(imported=0, duplicates=0, skipped_existing=4, reembedded=0)


def test_same_content_in_same_scope_is_a_duplicate(source: tuple[Memory, list[str]], target: Memory) -> None:
    lines = dump(source[0]).splitlines()
    copy = json.loads(lines[1])
    copy["item"]["id"] = "0193a0c2-5f1e-7c3a-9b2d-4e5f6a7b8c9d"
    report = import_jsonl(target, io.StringIO("\n".join([*lines, json.dumps(copy)])))
    assert report.imported == 4 and report.duplicates == 1


def test_other_model_is_reembedded(source: tuple[Memory, list[str]], url: Callable[[str], str]) -> None:
    mem, ids = source
    small = Memory(url("small"), embedder=HashingEmbedder(dim=64))
    report = import_jsonl(small, io.StringIO(dump(mem, clearance="secret")))
    assert report.imported == 5 and report.reembedded == 4
    items, vectors = snapshot(small)
    assert len(vectors) == 4 and all(len(v) == 64 * 4 for v in vectors.values())
    assert {i.embedding_model for i in items if i.embedding_status == "done"} == {small.embedder.model_name}
    assert small.recall("dark mode", user="alice")[0].id == ids[0]
    small.close()


def _lines(source: Memory) -> list[str]:
    return dump(source).splitlines()


Lines = list[str]


def _edit(index: int, change: Callable[[dict[str, Any]], object]) -> Callable[[Lines], Lines]:
    """Change the JSON on line ``index`` (0-based) of an export."""

    def apply(lines: Lines) -> Lines:
        data = json.loads(lines[index])
        change(data)
        return [*lines[:index], json.dumps(data), *lines[index + 1 :]]

    return apply


def _replace(index: int, old: str, new: str) -> Callable[[Lines], Lines]:
    return lambda lines: [*lines[:index], lines[index].replace(old, new), *lines[index + 1 :]]


BAD_FILES: dict[str, tuple[Callable[[Lines], Lines], str, str]] = {
    "not json": (lambda lines: [*lines[:2], "{not json", *lines[2:]], "line 3", "not valid JSON"),
    "nan": (_replace(2, '"importance":0.5', '"importance":NaN'), "line 3", "NaN"),
    "no content": (_edit(2, lambda d: d["item"].pop("content")), "line 3", "content"),
    "extra field": (_edit(3, lambda d: d["item"].update(colour="red")), "line 4", "colour"),
    "bad kind": (_edit(2, lambda d: d["item"].update(kind="Bad Kind")), "line 3", "kind"),
    "bad tag": (_edit(2, lambda d: d["item"].update(tags=[""])), "line 3", "tag"),
    "short vector": (_edit(2, lambda d: d["embedding"]["vector"].pop()), "line 3", "vector"),
    "dim lie": (_edit(2, lambda d: d["embedding"].update(dim=3, vector=[1, 2, 3])), "line 3", "vector"),
    "zero vector": (_edit(2, lambda d: d["embedding"].update(vector=[0] * 384)), "line 3", "zeros"),
    "duplicate id": (lambda lines: [*lines, lines[1]], "line 6", "already appears on line 2"),
    "no header": (lambda lines: lines[1:], "line 1", "header"),
    "bad version": (_replace(0, '"version":1', '"version":99'), "line 1", "version"),
    "not a memory": (lambda lines: [*lines, '{"type": "message"}'], "line 6", "memory"),
    "empty": (lambda lines: [], "empty", ""),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_file_names_the_line_and_writes_nothing(
    source: tuple[Memory, list[str]], target: Memory, case: str
) -> None:
    make, where, what = BAD_FILES[case]
    text = "\n".join(make(_lines(source[0])))
    with pytest.raises(InvalidInputError) as info:
        import_jsonl(target, io.StringIO(text))
    message = str(info.value)
    assert where in message and what in message
    assert "\n" not in message
    assert target.stats(clearance="secret").total == 0 and target.stats(clearance="secret").ledger_entries == 0


def test_blank_lines_are_ignored(source: tuple[Memory, list[str]], target: Memory) -> None:
    text = "\n\n" + "\n\n".join(_lines(source[0])) + "\n\n"
    assert import_jsonl(target, io.StringIO(text)).imported == 4


def test_progress_is_reported(source: tuple[Memory, list[str]], target: Memory) -> None:
    seen: list[tuple[int, int]] = []
    buffer = io.StringIO()
    assert export_jsonl(source[0], buffer, on_progress=lambda done, total: seen.append((done, total))) == 4
    assert seen[-1] == (4, 4)
    seen.clear()
    import_jsonl(target, io.StringIO(buffer.getvalue()), on_progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (4, 4)
