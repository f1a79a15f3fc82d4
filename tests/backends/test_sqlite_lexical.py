"""The SQLite lexical channel's bounded work (backends/sqlite/lexical.py).

Small bounds are passed in (``LexicalBounds``), so a store of a few hundred
memories is "large": the bounded path is exercised without building one.
What is checked is which path runs, which rows are scored and how many,
never timings (the speed targets live in ``memory bench speed``).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory.backends.base import NewRecord
from memory.backends.sqlite import SQLiteBackend
from memory.backends.sqlite.lexical import LexicalBounds, LexicalPlan, LexicalQuery, ranked
from memory.episodic.types import Message, MessageQuery
from memory.errors import InvalidInputError
from memory.filters import Filter
from memory.ids import new_id
from memory.index_layout import field_weights
from memory.records import build_item, ledger_entry
from memory.retrieval.config import DEFAULT_FIELDS
from memory.types import MemoryItem

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
#: A store of a few hundred memories counts as large with these.
SMALL = LexicalBounds(exact_docs=60, pool=20, df_probe=8, idf_budget=100_000)
CONTENT = (1.0, 0.0, 0.0)
KEY = field_weights(DEFAULT_FIELDS)


def make_item(content: str, **fields: Any) -> MemoryItem:
    fields.setdefault("namespace", "default")
    return build_item(content=content, now=fields.pop("created_at", NOW), **fields)


def add(backend: SQLiteBackend, texts: list[str], **fields: Any) -> list[MemoryItem]:
    """Add ``texts`` in order (later ones get larger rowids: newer)."""
    items = [make_item(text, **fields) for text in texts]
    backend.add([NewRecord(i, None, ledger_entry("add", i.id, i.namespace, i.created_at, after=i)) for i in items])
    return items


def flt(**fields: Any) -> Filter:
    fields.setdefault("namespace", "default")
    fields.setdefault("now", NOW + timedelta(hours=1))
    return Filter(**fields)


def plan_of(backend: SQLiteBackend, terms: list[str], weights: tuple[float, ...] = CONTENT) -> LexicalPlan:
    """The plan ``search_lexical`` follows for ``terms`` (the same call on the backend's connection)."""
    query = backend._lexical_query(terms, weights)
    return ranked(backend._conn, query, 200, backend._lexical_bounds)[2]


def exact_scores(backend: SQLiteBackend, terms: list[str], weights: tuple[float, ...] = CONTENT) -> dict[str, float]:
    """Every matching memory's score from the whole-match statement (what the exact path ranks by)."""
    query = backend._lexical_query(terms, weights)
    table = query.table
    rows = backend._conn.execute(
        f"SELECT i.id, {query.bm25} FROM {table} JOIN items i ON i.rid = {table}.rowid WHERE {table} MATCH ?",
        (query.match(query.phrases),),
    ).fetchall()
    return {str(r[0]): -float(r[1]) for r in rows}


@pytest.fixture
def small(tmp_path: Path) -> Iterator[SQLiteBackend]:
    with SQLiteBackend(tmp_path / "memory.db", lexical_bounds=SMALL) as backend:
        yield backend


def test_bounds_are_positive_integers() -> None:
    for bad in (0, -1, 1.5, True, "10"):
        with pytest.raises(InvalidInputError):
            LexicalBounds(pool=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("weights", [CONTENT, KEY])
def test_below_the_bounds_results_equal_the_old_statement(tmp_path: Path, weights: tuple[float, ...]) -> None:
    """A store whose query terms are in few documents ranks with the one ORDER BY rank statement, as before."""
    rng = random.Random(11)
    vocab = "apple banana cherry delta echo fox golf hotel india juliet kilo lima".split()
    with SQLiteBackend(tmp_path / "memory.db") as backend:
        add(backend, [" ".join(rng.choice(vocab) for _ in range(rng.randrange(3, 15))) for _ in range(300)])
        query_sets = (["apple"], ["fox", "golf"], ["kilo", "lima", "india"], ["banana", "zulu"], vocab)
        for terms in query_sets:
            assert plan_of(backend, terms, weights).path == "exact"
            fields = dict(zip(("content", "window", "time"), weights, strict=True))
            hits = backend.search_lexical(flt(), terms, 25, fields=fields)
            # The old statement: the best max(4k, 200) rows of the whole match, ties by id.
            query = backend._lexical_query(terms, weights)
            table = query.table
            old = backend._conn.execute(
                f"SELECT i.id, {query.bm25} AS rank FROM {table} JOIN items i ON i.rid = {table}.rowid "
                f"WHERE {table} MATCH ? ORDER BY rank LIMIT 200",
                (query.match(query.phrases),),
            ).fetchall()
            expected = sorted((float(rank), str(item_id)) for item_id, rank in old)[:25]
            assert [(h.id, h.score) for h in hits] == [(item_id, -rank) for rank, item_id in expected]


def test_the_bounded_path_is_taken_only_past_the_bounds(small: SQLiteBackend) -> None:
    add(small, [f"common filler {n}" for n in range(100)] + [f"rare note {n}" for n in range(5)])
    assert plan_of(small, ["rare"]).path == "exact"  # 5 documents
    assert plan_of(small, ["rare", "note"]).path == "exact"  # 10: within exact_docs (60)
    plan = plan_of(small, ["rare", "common"])  # 105: past it
    assert plan.path == "bounded"
    assert plan.docs['"rare"'] == 5  # below df_probe: counted exactly
    assert '"common"' in plan.estimated and plan.docs['"common"'] >= SMALL.df_probe


def test_the_bounded_path_scores_a_bounded_set_exactly(small: SQLiteBackend) -> None:
    """The rare term's memories all, the common term's newest up to the pool; each scored as the exact statement."""
    rare = add(small, [f"rare common thing {n}" for n in range(5)])  # the oldest rows
    common = add(small, [f"common filler {n}" for n in range(300)])
    plan = plan_of(small, ["rare", "common"])
    assert plan.path == "bounded" and plan.chosen == ('"rare"', '"common"')  # the common one fills the pool
    assert plan.scored == ('"rare"', '"common"')
    # Two statements per group, each over at most the pool's rows: not the 305 the old statement scores.
    assert plan.rows_scored is not None and plan.rows_scored <= 2 * SMALL.pool
    hits = small.search_lexical(flt(), ["rare", "common"], 10)
    assert {h.id for h in hits[:5]} == {i.id for i in rare}  # old rows, found through the rare term
    newest = {i.id for i in common[-(SMALL.pool - 5) :]}
    assert all(h.id in newest for h in hits[5:])
    exact = exact_scores(small, ["rare", "common"])
    assert [h.score for h in hits] == pytest.approx([exact[h.id] for h in hits], rel=1e-9)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_rare_terms_are_candidates_whole_up_to_the_pool(tmp_path: Path) -> None:
    """Terms in few memories are taken whole, rarest first, while their counts add up to at most the pool."""
    bounds = LexicalBounds(exact_docs=60, pool=20, df_probe=16, idf_budget=100_000)
    with SQLiteBackend(tmp_path / "memory.db", lexical_bounds=bounds) as backend:
        alpha = add(backend, [f"alpha common {n}" for n in range(6)])
        beta = add(backend, [f"beta common {n}" for n in range(10)])
        add(backend, [f"gamma common {n}" for n in range(30)] + [f"common filler {n}" for n in range(200)])
        terms = ["common", "gamma", "beta", "alpha"]
        plan = plan_of(backend, terms)
        assert plan.path == "bounded"
        # 6 + 10 <= 20, whole; gamma (30) does not fit: its newest 4 fill the pool.
        assert plan.chosen == ('"alpha"', '"beta"', '"gamma"') and plan.truncated
        assert set(plan.scored) == set(plan.chosen) | {'"common"'}
        hits = backend.search_lexical(flt(), terms, 16)
        assert {h.id for h in hits} == {i.id for i in alpha + beta}  # the rarest terms' memories rank first
        exact = exact_scores(backend, terms)
        assert [h.score for h in hits] == pytest.approx([exact[h.id] for h in hits], rel=1e-9)


def test_every_term_common_ranks_the_newest_memories_of_the_rarest(small: SQLiteBackend) -> None:
    old = add(small, [f"shared word {n}" for n in range(100)])
    new = add(small, [f"shared word other {n}" for n in range(100)])
    plan = plan_of(small, ["word", "other"])
    assert plan.path == "bounded" and plan.truncated
    assert plan.chosen == ('"other"',)  # the rarer of two common terms, its newest documents
    assert plan.rows_scored is not None and plan.rows_scored <= 2 * SMALL.pool
    hits = small.search_lexical(flt(), ["word", "other"], 10)
    assert len(hits) == 10 and {h.id for h in hits} <= {i.id for i in new[-SMALL.pool :]}
    assert not {h.id for h in hits} & {i.id for i in old}


def test_a_term_over_the_idf_budget_is_left_out_of_the_score(tmp_path: Path) -> None:
    bounds = LexicalBounds(exact_docs=60, pool=20, df_probe=8, idf_budget=60)
    with SQLiteBackend(tmp_path / "memory.db", lexical_bounds=bounds) as backend:
        add(backend, [f"rare common {n}" for n in range(5)] + [f"common filler {n}" for n in range(200)])
        plan = plan_of(backend, ["rare", "common"])
        assert plan.path == "bounded" and plan.scored == ('"rare"',)  # counting "common" would cost 200
        hits = backend.search_lexical(flt(), ["rare", "common"], 10)
        # Only the rare term's memories are candidates, and the filter turned none away: no fallback.
        assert len(hits) == 5
        alone = exact_scores(backend, ["rare"])
        assert [h.score for h in hits] == pytest.approx([alone[h.id] for h in hits], rel=1e-9)
        # Even the rarest term over the budget: the channel finds nothing (no whole-match fallback).
        assert plan_of(backend, ["common", "filler"]).path == "empty"
        assert backend.search_lexical(flt(), ["common", "filler"], 10) == []


def test_a_selective_filter_still_finds_its_hits(small: SQLiteBackend) -> None:
    """User b's memories are the oldest, outside the bounded candidates: the filtered full query finds them."""
    theirs = add(small, [f"common word {n}" for n in range(30)], user="b")
    add(small, [f"common word {n} more" for n in range(200)], user="a")
    assert plan_of(small, ["common", "word"]).path == "bounded"
    hits = small.search_lexical(flt(user="b"), ["common", "word"], 10)
    assert len(hits) == 10 and {h.id for h in hits} <= {i.id for i in theirs}
    exact = exact_scores(small, ["common", "word"])
    assert [h.score for h in hits] == pytest.approx([exact[h.id] for h in hits], rel=1e-9)


def test_a_filtered_match_past_the_bounds_ranks_its_newest_rows_only(small: SQLiteBackend) -> None:
    """Users a and b write in turns; b's old memories score best, but only the newest matches are ranked.

    The filter turns the candidates away, and b's scope (120 memories) is larger than ``exact_docs``
    (60) and spread over the whole store: the filtered match ranks the newest 60 matches only, not
    every memory of the store holding a query term.
    """
    add(small, [f"other filler {n}" for n in range(300)], user="c")  # holds no query term
    old_b = []
    for n in range(60):  # b's oldest say "common" three times
        add(small, [f"common word filler {n} a"], user="a")
        old_b += add(small, [f"common common common word {n}"], user="b")
    new_b = []
    for n in range(60):
        add(small, [f"common word filler {n} more a"], user="a")
        new_b += add(small, [f"common word {n} more b"], user="b")
    assert plan_of(small, ["common", "word"]).path == "bounded"
    hits = small.search_lexical(flt(user="b"), ["common", "word"], 40)
    newest = {i.id for i in new_b[-30:]}  # b's share of the newest 60 matches
    assert len(hits) == 30 and {h.id for h in hits} == newest
    exact = exact_scores(small, ["common", "word"])
    assert [h.score for h in hits] == pytest.approx([exact[h.id] for h in hits], rel=1e-9)
    assert max(exact[i.id] for i in old_b) > max(h.score for h in hits)  # the whole match would have ranked them


def test_a_namespace_written_in_one_stretch_is_ranked_whole(small: SQLiteBackend) -> None:
    """Another namespace's newer memories fill the index; this one's, older and few, are all ranked."""
    theirs = add(small, [f"common word {n}" for n in range(40)], namespace="early")
    add(small, [f"common word {n} later" for n in range(300)])
    hits = small.search_lexical(flt(namespace="early"), ["common", "word"], 50)
    assert {h.id for h in hits} == {i.id for i in theirs}
    exact = exact_scores(small, ["common", "word"])
    assert [h.score for h in hits] == pytest.approx([exact[h.id] for h in hits], rel=1e-9)


def test_an_empty_scope_runs_no_filtered_match(small: SQLiteBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    from memory.backends.sqlite import lexical

    def not_run(*args: Any) -> None:
        raise AssertionError("a filtered match ran for a scope with no memory")

    add(small, [f"common word {n}" for n in range(200)], user="a")
    monkeypatch.setattr(lexical, "_filtered_match", not_run)
    assert plan_of(small, ["common", "word"]).path == "bounded"
    assert small.search_lexical(flt(user="nobody"), ["common", "word"], 10) == []


def test_a_term_clustered_in_old_rows_is_estimated_by_where_it_is(tmp_path: Path) -> None:
    """The time words of old memories: a count from the newest rows alone would say almost none."""
    bounds = LexicalBounds(exact_docs=100, pool=20, df_probe=40, idf_budget=100_000)
    with SQLiteBackend(tmp_path / "memory.db", lexical_bounds=bounds) as backend:
        may = datetime(2023, 5, 8, tzinfo=UTC)
        add(backend, [f"note {n}" for n in range(240)], created_at=may)
        add(backend, [f"note {n}" for n in range(360)])  # January 2026
        plan = plan_of(backend, ["may", "note"], KEY)
        assert plan.path == "bounded" and '"may"' in plan.estimated
        assert 120 <= plan.docs['"may"'] <= 480  # 240 in truth


# -- messages: messages.search's lexical channel is bounded the same way ---------------------------


def append(backend: SQLiteBackend, texts: list[str], thread: str = "t1", namespace: str = "default") -> list[str]:
    """Append ``texts`` to ``thread`` in order (later ones newer); their ids."""
    messages = [
        Message(id=new_id(), namespace=namespace, thread=thread, role="user", content=text,
                created_at=NOW + timedelta(seconds=n))
        for n, text in enumerate(texts)
    ]  # fmt: skip
    return [m.id for m in backend.episodic.append_messages(messages)]


def message_query(terms: list[str]) -> LexicalQuery:
    return LexicalQuery("messages_fts", "", "bm25(messages_fts)", tuple(f'"{t}"' for t in terms), owner="messages")


def message_scores(backend: SQLiteBackend, terms: list[str]) -> dict[str, float]:
    """Every matching message's score from the whole-match statement."""
    query = message_query(terms)
    rows = backend._conn.execute(
        "SELECT m.id, bm25(messages_fts) FROM messages_fts JOIN messages m ON m.rid = messages_fts.rowid "
        "WHERE messages_fts MATCH ?",
        (query.match(query.phrases),),
    ).fetchall()
    return {str(r[0]): -float(r[1]) for r in rows}


def mq(**fields: Any) -> MessageQuery:
    fields.setdefault("namespace", "default")
    return MessageQuery(now=NOW + timedelta(hours=1), **fields)


def test_message_search_below_the_bounds_equals_the_whole_match(tmp_path: Path) -> None:
    rng = random.Random(5)
    vocab = "apple banana cherry delta echo fox golf hotel".split()
    with SQLiteBackend(tmp_path / "memory.db") as backend:
        append(backend, [" ".join(rng.choice(vocab) for _ in range(rng.randrange(3, 12))) for _ in range(200)])
        append(backend, ["apple pie elsewhere"], namespace="other")
        for terms in (["apple"], ["fox", "golf"], vocab):
            assert ranked(backend._conn, message_query(terms), 200, backend._lexical_bounds)[2].path == "exact"
            hits = backend.episodic.search_messages_lexical(mq(), terms, 25)
            old = backend._conn.execute(
                "SELECT m.id, bm25(messages_fts) AS rank FROM messages_fts "
                "CROSS JOIN messages m ON m.rid = messages_fts.rowid "
                "WHERE messages_fts MATCH ? AND m.namespace = 'default' ORDER BY rank, m.id LIMIT 25",
                (message_query(terms).match(message_query(terms).phrases),),
            ).fetchall()
            assert [(h.id, h.score) for h in hits] == [(str(i), -float(r)) for i, r in old]


def test_message_search_past_the_bounds_scores_a_bounded_set(small: SQLiteBackend) -> None:
    """A large thread: the rare term's messages all, the common term's newest; exact scores; filters hold."""
    theirs = append(small, [f"common word {n}" for n in range(12)], thread="t2")  # the oldest
    rare = append(small, [f"rare common thing {n}" for n in range(5)])
    common = append(small, [f"common filler {n}" for n in range(300)])
    plan = ranked(small._conn, message_query(["rare", "common"]), 200, small._lexical_bounds)[2]
    assert plan.path == "bounded" and plan.rows_scored is not None and plan.rows_scored <= 2 * SMALL.pool
    hits = small.episodic.search_messages_lexical(mq(thread="t1"), ["rare", "common"], 10)
    assert {h.id for h in hits[:5]} == set(rare)  # old rows, found through the rare term
    assert all(h.id in set(common[-SMALL.pool :]) for h in hits[5:])
    exact = message_scores(small, ["rare", "common"])
    assert [h.score for h in hits] == pytest.approx([exact[h.id] for h in hits], rel=1e-9)
    # Thread t2's messages are not among the candidates: the filtered whole match finds them.
    found = small.episodic.search_messages_lexical(mq(thread="t2"), ["common", "word"], 10)
    assert len(found) == 10 and {h.id for h in found} <= set(theirs)
    # Nothing crosses a namespace.
    assert small.episodic.search_messages_lexical(mq(namespace="elsewhere"), ["rare", "common"], 10) == []


def test_message_search_ranks_an_old_thread_whole(small: SQLiteBackend) -> None:
    """A thread's messages hold only words the newer thread is full of: its own range is ranked, all of it."""
    theirs = append(small, [f"common word {n}" for n in range(12)], thread="t2")  # the oldest
    append(small, [f"common word filler {n}" for n in range(300)])
    assert ranked(small._conn, message_query(["common", "word"]), 200, small._lexical_bounds)[2].path == "bounded"
    found = small.episodic.search_messages_lexical(mq(thread="t2"), ["common", "word"], 10)
    assert len(found) == 10 and {h.id for h in found} <= set(theirs)
    exact = message_scores(small, ["common", "word"])
    assert [h.score for h in found] == pytest.approx([exact[h.id] for h in found], rel=1e-9)
