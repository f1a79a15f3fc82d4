"""``exact_only`` lexical searches: nothing where the engine would bound its work, the same hits elsewhere.

Pseudo-relevance feedback runs its second search with it, so a large store never pays a
second bounded search (docs/retrieval.md, "Feedback where the turns are short"). The bound
is made small here (60 documents), so a few hundred memories count as a large store.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from memory.backends.base import Backend, NewRecord
from memory.backends.sqlite.lexical import LexicalBounds
from memory.episodic.types import Message, MessageQuery
from memory.filters import Filter
from memory.ids import new_id
from memory.records import build_item, ledger_entry

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
BOUND = 60
VOCAB = "apple banana cherry delta echo fox golf hotel india juliet kilo lima".split()


def _small_bound(backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    if hasattr(backend, "_lexical_bounds"):  # the SQLite engine (SQLite, libSQL)
        monkeypatch.setattr(backend, "_lexical_bounds", LexicalBounds(exact_docs=BOUND, pool=20, df_probe=8))
    else:
        import memory.backends.postgres.backend as pg_backend
        import memory.backends.postgres.episodic as pg_episodic

        monkeypatch.setattr(pg_backend, "LEXICAL_EXACT_DOCS", BOUND)
        monkeypatch.setattr(pg_episodic, "LEXICAL_EXACT_DOCS", BOUND)


def _texts() -> list[str]:
    rng = random.Random(5)
    texts = [" ".join(rng.choice(VOCAB) for _ in range(6)) for _ in range(300)]
    return [*texts, "zulu yankee", "zulu whiskey"]  # zulu: in 2 documents only


def test_items(backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    items = [build_item(content=t, namespace="default", now=NOW) for t in _texts()]
    backend.add([NewRecord(i, None, ledger_entry("add", i.id, i.namespace, i.created_at, after=i)) for i in items])
    _small_bound(backend, monkeypatch)
    flt = Filter(namespace="default", now=NOW + timedelta(hours=1))
    common = ["apple", "banana"]  # in most of the 302 documents: over the bound
    assert backend.search_lexical(flt, common, 10)  # a normal search ranks them (bounded or not)
    assert backend.search_lexical(flt, common, 10, exact_only=True) == []
    rare = ["zulu"]
    expected = backend.search_lexical(flt, rare, 10)
    assert len(expected) == 2
    assert backend.search_lexical(flt, rare, 10, exact_only=True) == expected


def test_messages(backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    store = backend.episodic
    assert store is not None
    store.append_messages(
        [
            Message(id=new_id(), namespace="default", thread="t", role="user", content=t, created_at=NOW)
            for t in _texts()
        ]
    )
    _small_bound(backend, monkeypatch)
    query = MessageQuery(namespace="default", now=NOW + timedelta(hours=1))
    assert store.search_messages_lexical(query, ["apple", "banana"], 10)
    assert store.search_messages_lexical(query, ["apple", "banana"], 10, exact_only=True) == []
