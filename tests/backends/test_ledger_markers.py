"""The add-entry marker of :mod:`memory.backends.ledger_refs` (pure), and the rule it rests on.

The rule: an item field outside ``VOLATILE_FIELDS`` never changes without a
ledger entry. Every ``UPDATE items`` statement in the package is read here
and its columns checked, so a new unledgered write cannot slip in unnoticed.
"""

from __future__ import annotations

import ast
import re
from datetime import UTC, datetime
from pathlib import Path

import memory
from memory.backends.ledger_refs import (
    ITEM_REF_KEY,
    VOLATILE_FIELDS,
    is_item_ref,
    item_ref,
    resolve_item_ref,
)
from memory.records import build_item, snapshot
from memory.types import MemoryItem

NOW = datetime(2026, 3, 1, 9, tzinfo=UTC)


ITEM = build_item(content="Alice moved to Berlin", namespace="ns", now=NOW, tags=["a"], metadata={"k": 1})


def _snapshot(**changes: object) -> dict[str, object]:
    return snapshot(ITEM.model_copy(update=changes))


def test_the_volatile_fields_are_item_fields() -> None:
    assert set(VOLATILE_FIELDS) <= set(MemoryItem.model_fields)
    assert not any(name.startswith("$") for name in MemoryItem.model_fields)  # the marker's key is no field


def test_a_marker_holds_only_the_volatile_values_and_resolves_back() -> None:
    after = _snapshot()
    marker = item_ref(after, after)
    assert marker == {ITEM_REF_KEY: 1, **{name: after[name] for name in VOLATILE_FIELDS}}
    assert is_item_ref(marker) and not is_item_ref(after) and not is_item_ref(None) and not is_item_ref([ITEM_REF_KEY])
    assert resolve_item_ref(marker, after) == after


def test_the_volatile_values_come_from_the_marker_the_rest_from_the_base() -> None:
    added = _snapshot()
    later = _snapshot(access_count=7, accessed_at=NOW, embedding_status="done", embedding_model="m")
    marker = item_ref(added, later)  # volatile fields differ: still a reference
    assert marker is not None
    assert resolve_item_ref(marker, later) == added
    assert list(resolve_item_ref(marker, later) or {}) == list(later)  # the base's key order


def test_an_after_that_is_not_the_item_gets_no_marker() -> None:
    added = _snapshot()
    assert item_ref(added, _snapshot(content="other words")) is None
    assert item_ref(added, _snapshot(metadata={"k": 2})) is None
    assert item_ref(added, {**added, "extra": 1}) is None  # a key more
    short = {k: v for k, v in added.items() if k != "embedding_error"}
    assert item_ref(short, {k: v for k, v in added.items() if k != "embedding_error"}) is None  # a volatile key less


def test_a_marker_with_nothing_to_resolve_against_is_none() -> None:
    marker = item_ref(_snapshot(), _snapshot())
    assert marker is not None and resolve_item_ref(marker, None) is None


# -- the rule: what changes an item without a ledger entry ---------------------------------------

#: Columns of ``items`` that are not item fields (claims, the lexical window and the engines' own).
NOT_IN_SNAPSHOTS = {"claimed_by", "claimed_until", "index_window"}
#: Functions whose ``UPDATE items`` writes a whole item and records a ledger entry with it.
LEDGERED = {"item_statements"}


def _text(node: ast.expr) -> str:
    """A string constant or f-string as text, each replacement field as ``{}``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(part) if isinstance(part, ast.Constant) else "{}" for part in node.values)
    return ""


def _item_updates(source: str, name: str) -> list[tuple[str, str, set[str]]]:
    """(file, function, columns set) of every ``UPDATE items`` written in the Python ``source``.

    Statements outside a function (a migration's list of SQL) count under ``"<module>"``.
    """
    found = []
    tree = ast.parse(source)
    parts = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    owner = {id(node): f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) for node in ast.walk(f)}
    for node in ast.walk(tree):
        text = _text(node) if isinstance(node, ast.expr) and id(node) not in parts else ""
        for match in re.finditer(r"UPDATE items\b(?: AS i)? SET (.*?)(?: WHERE|$)", text, re.S | re.I):
            columns = {part.split("=")[0].strip().removeprefix("{}") for part in match.group(1).split(",")}
            found.append((name, owner.get(id(node), "<module>"), {c for c in columns if c}))
    return found


def _unledgered(updates: list[tuple[str, str, set[str]]]) -> list[tuple[str, str, set[str]]]:
    """The updates that change an item field outside VOLATILE_FIELDS without a ledger entry."""
    allowed = set(VOLATILE_FIELDS) | NOT_IN_SNAPSHOTS
    return [(name, f, columns) for name, f, columns in updates if f not in LEDGERED and not columns <= allowed]


def test_only_volatile_fields_change_without_a_ledger_entry() -> None:
    updates = [
        found
        for path in sorted(Path(memory.__file__).parent.rglob("*.py"))
        for found in _item_updates(path.read_text(encoding="utf-8"), path.name)
    ]
    assert {(name, function) for name, function, _ in updates} >= {
        ("items_write.py", "_write_access"), ("items_write.py", "set_windows"), ("items.py", "mark_embedding"),
        ("items.py", "claim_pending_embeddings"), ("item_vectors.py", "set_vectors"),
        ("items_write.py", "item_statements"),
    }  # fmt: skip
    assert _unledgered(updates) == []


def test_the_scan_catches_an_unledgered_write_of_another_field() -> None:
    source = (
        "def bump(d, conn, ns):\n"
        "    d.run(conn, 'UPDATE items SET access_count = 0, ' f'importance = ?{ns} WHERE namespace = ?', ())\n"
        "MIGRATION = ['UPDATE items SET kind = lower(kind)']\n"
    )
    assert sorted(_unledgered(_item_updates(source, "new.py")), key=lambda found: found[1]) == [
        ("new.py", "<module>", {"kind"}), ("new.py", "bump", {"access_count", "importance"}),
    ]  # fmt: skip
