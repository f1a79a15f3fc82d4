"""The SQLite lexical channel's ranking: FTS5 BM25, with its work bounded on large stores.

Used by the memories' channel (``items_key_fts``) and by
``messages.search`` (``messages_fts``), through :func:`search`.

FTS5's ``bm25()`` costs two things per statement: once, a pass over every
posting of every phrase of the query to count its documents (the IDF), and
then, for every row the statement visits, the score (the row's instances
and its ``%_docsize`` entry). ``ORDER BY rank`` visits every row holding
any query term, so on a large store a query of common words scores most of
the index: at 1M memories the lexical channel took 37/97 ms p50/p95 and
hybrid recall 54/117 ms.

**Exact** (``plan.path == "exact"``): while the whole match can hold at
most ``exact_docs`` rows (LEXICAL_EXACT_DOCS, 10,000), it is ranked by the
one ``ORDER BY rank`` statement, as it always was: in a store of at most
10,000 memories (by its rowid range), or when the query's terms are in at
most 10,000 documents in total (counted with repeats). Every LoCoMo
conversation (300 to 700 turns) and every store of the test suite (but
those given smaller bounds) ranks exactly as before. Deciding costs nothing in a store within the limit, and
at most ``exact_docs`` postings beyond (each term is counted up to what is
left).

**Bounded** (``"bounded"``), past that:

1. Document counts: a term's newest ``df_probe`` matches are counted
   (LEXICAL_DF_PROBE, 1,000); a term in more is estimated from ``_STRATA``
   slices of the rowid range, ``df_probe / _STRATA`` matches counted in
   each, so a term whose documents cluster in time (the ``time`` field's
   words) is estimated where it is, not from the newest rows.
2. Candidates: every document of the rarest terms while their counts add
   up to at most ``pool`` (LEXICAL_POOL, 2,000). When those hold fewer
   than a page of hits (``limit``: every term is common, or the rare ones
   are nearly absent), the newest documents of the next rarest term fill
   the pool (a rowid range, which FTS5 takes in one pass).
3. Scores: BM25 over every query term, equal to what the exact statement
   gives those rows (FTS5's own IDF over the whole table, the same N,
   average length and field weights). FTS5 cannot restrict a statement to
   a list of rowids without restarting it per rowid, IDF pass included,
   so a group of candidate terms is scored by two statements over its
   documents: ``(group)``, every candidate on the group's terms, and
   ``(group) AND (other terms)``, the candidates holding another term too,
   on all of them (each term one phrase: that is the row's BM25). Checked
   against the exact statement to 7e-15 on 1M memories.
4. IDF passes are bounded too: the other terms join the score, rarest
   first, while the postings the statements count add up to at most
   ``idf_budget`` (LEXICAL_IDF_BUDGET, 300,000); a more common term is left
   out of the score. Of the speed benchmark's 200 queries at 1M memories,
   3 left one out, a term in 1,000,000, 299,014 and 188,020 of them (idf
   1e-6, 0.85 and 1.46, where a candidate term's is 6 and more). When even
   the rarest term is over the budget (every term is in most memories, e.g.
   the year they were all written in), the channel finds nothing rather
   than rank a third of the store.

What the approximation changes, and only past ``exact_docs``: documents
holding none of the candidate terms are not ranked (one matching only more
common terms, or an older one of the term that fills the pool); terms over
the IDF budget add nothing to a score. Every document ranked gets the exact
statement's score, but for the terms left out. The filter is checked on the
ranked candidates, best first; when it turns candidates away and fewer
than ``k`` remain (a selective user, thread or agent; another namespace's
rows: the FTS5 tables span namespaces), a filtered match runs too, bounded
like the exact path (:func:`_window`): at most ``exact_docs`` matching rows
are ranked, those within the rowid range of the filter's scope when that
scope holds at most ``exact_docs`` rows (a thread, a small namespace, a user
written in one stretch: ranked whole, however old), else the newest
``exact_docs`` matches. A scope spread thin over a large store loses its
older rows that hold only common terms (the vector channel still searches
all of it); before, this match ranked every row holding a query term, a cost
that grew with the store (the 100k inspector store, user-filtered: 21 ms
for a user written in one stretch, 9 ms with the window).

On the speed benchmark's 1M store (LoCoMo sentences recombined, each ~150
times) the channel's top 10 keeps 0.58 of the exact top 10 (top 50: 0.58),
as its questions' best documents hold several moderately common words and
often no rare one; hybrid recall's top 10 keeps 0.74, and the share of
questions with an evidence sentence in it (0.363) and of such hits (0.210)
are unchanged. At 100k memories 165 of 200 queries are exact; the top 10
keeps 0.994. The pool's size is set by cost, not by those figures: 1,000
and 5,000 gave the same evidence shares.

Measured on a 2-core EPYC at 1M memories: counting ~35 ns a posting, the IDF
pass ~25 ns a posting, a row scored ~0.8 µs by ``(group)`` and ~1.5 µs by
the ``AND``; the channel took 9.0/14.7 ms p50/p95 where the whole-match
statement took 35.7/100.1 ms (the same questions, interleaved), and hybrid
recall 27.9/35.1 ms (52.7/112.2 before; ``memory bench speed``).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Any

from memory.backends.sqlite.sql import json_list
from memory.errors import InvalidInputError

# The exact statement runs while the whole match can hold at most LEXICAL_EXACT_DOCS rows (a store of at
# most that many memories, or query terms in at most that many documents in total): it then scores at
# most that many rows (~8 ms here).
from memory.index_layout import LEXICAL_EXACT_DOCS

__all__ = [
    "LEXICAL_DF_PROBE",
    "LEXICAL_EXACT_DOCS",
    "LEXICAL_IDF_BUDGET",
    "LEXICAL_POOL",
    "LexicalBounds",
    "LexicalPlan",
    "LexicalQuery",
    "ranked",
    "search",
]

#: Past that, at most this many candidate documents are scored (by two statements each,
#: ~2.3 µs a row: ~5 ms), 40 times the 50 candidates a channel returns by default.
LEXICAL_POOL = 2_000
#: A term's documents are counted up to this many (~35 µs); a term in more is estimated.
LEXICAL_DF_PROBE = 1_000
#: At most this many postings are counted by the IDF passes of the bounded statements
#: (~7.5 ms at ~25 ns a posting).
LEXICAL_IDF_BUDGET = 300_000
#: Slices of the rowid range a common term's document count is estimated from.
_STRATA = 4


@dataclass(frozen=True)
class LexicalBounds:
    """The bounds of :func:`ranked` (the module constants by default; tests pass small ones)."""

    exact_docs: int = LEXICAL_EXACT_DOCS
    pool: int = LEXICAL_POOL
    df_probe: int = LEXICAL_DF_PROBE
    idf_budget: int = LEXICAL_IDF_BUDGET

    def __post_init__(self) -> None:
        for name in ("exact_docs", "pool", "df_probe", "idf_budget"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidInputError(f"{name} must be a positive integer, got {value!r}")


@dataclass(frozen=True)
class LexicalQuery:
    """One FTS5 table's query: its name, the column filter prefix, the ``bm25()`` call, the phrases."""

    table: str
    columns: str  # "" (every column) or "{content window} : " (the weighted ones)
    bm25: str
    phrases: tuple[str, ...]
    #: The table whose ``rid`` is the index's rowid (``items``, or ``messages`` for ``messages_fts``).
    owner: str = "items"

    def match(self, phrases: builtins.list[str] | tuple[str, ...]) -> str:
        """The MATCH expression of ``phrases`` ORed (restricted to the weighted columns)."""
        return self.columns + "(" + " OR ".join(phrases) + ")"


@dataclass
class LexicalPlan:
    """What :func:`ranked` did: the path, the document counts, and the rows it scored."""

    #: "exact", "bounded", "empty" (even the rarest term over the IDF budget) or "skipped" (exact_only)
    path: str = "exact"
    #: Each phrase's document count: exact below the probe, else estimated (float).
    docs: dict[str, float] = field(default_factory=dict)
    chosen: tuple[str, ...] = ()  # the phrases whose documents are the candidates (the fill last)
    scored: tuple[str, ...] = ()  # the phrases the candidates are scored on
    #: Rows the bm25() statements visited (a row once per statement); None on the exact path,
    #: which ranks every match without counting them.
    rows_scored: int | None = None
    #: The phrases whose document count is an estimate (see :func:`_estimate`).
    estimated: tuple[str, ...] = ()
    #: Whether some candidates were cut to their newest documents (a term too common).
    truncated: bool = False


def ranked(
    conn: Any, query: LexicalQuery, limit: int, bounds: LexicalBounds, exact_only: bool = False
) -> tuple[builtins.list[tuple[int, float]], bool, LexicalPlan]:
    """Rows of the match ranked by ``bm25()`` (ascending: best first), whether that is all there is, the plan.

    On the exact path the best ``limit`` rows of the whole match; on the
    bounded path every candidate, ranked (see the module docs; the fill
    joins when the rarest terms hold fewer than ``limit`` documents); on
    the empty path nothing. ``complete`` is True when no other row matches:
    the exact path returned fewer than ``limit`` rows, or every match was a
    candidate. ``exact_only``: a match too large for the exact path is not
    ranked at all (path ``"skipped"``, nothing returned, complete).
    """
    plan = LexicalPlan()
    table, sql_rank = query.table, query.bm25
    fits, floors = _exact_fits(conn, query, bounds, plan)
    if not fits and exact_only:
        plan.path = "skipped"
        return [], True, plan
    if fits:
        rows = conn.execute(
            f"SELECT rowid, {sql_rank} AS rank FROM {table} WHERE {table} MATCH ? ORDER BY rank LIMIT ?",
            (query.match(query.phrases), limit),
        ).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows], len(rows) < limit, plan
    plan.path = "bounded"
    _estimate(conn, query, bounds, plan, floors)
    docs = plan.docs
    present = sorted((p for p in query.phrases if docs[p] > 0), key=lambda p: (docs[p], query.phrases.index(p)))
    # The rarest terms, all their documents, while their counts add up to at most the pool.
    chosen: builtins.list[str] = []
    total = 0.0
    for phrase in present:
        if total + docs[phrase] > bounds.pool:
            break
        chosen.append(phrase)
        total += docs[phrase]
    groups = [chosen] if chosen else []
    if total < limit and len(chosen) < len(present):
        # Too few to fill a page of hits (every term common, or the rare ones nearly absent):
        # the newest documents of the next rarest term too, up to the pool, if affordable.
        fill = present[len(chosen)]
        if _idf_cost(docs, groups + [[fill]], chosen + [fill]) <= bounds.idf_budget:
            groups.append([fill])
    if not groups:  # even the rarest term is over the IDF budget: nothing ranked
        plan.path = "empty"
        return [], False, plan
    candidates = [p for group in groups for p in group]
    scored = list(candidates)
    for phrase in present:  # the other terms join the score, rarest first, while they fit
        if phrase not in scored and _idf_cost(docs, groups, [*scored, phrase]) <= bounds.idf_budget:
            scored.append(phrase)
    plan.chosen, plan.scored = tuple(candidates), tuple(scored)
    scores: dict[int, float] = {}
    plan.rows_scored = 0
    for group in groups:
        since = None
        if group is not chosen or any(p in plan.estimated for p in group):
            # Only its newest documents, up to the pool (one pass over that many postings).
            room = bounds.pool - (total if group is not chosen else 0.0)
            row = conn.execute(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                (query.match(group), max(int(room), 1) - 1),
            ).fetchone()
            since = None if row is None else int(row[0])
            plan.truncated = plan.truncated or since is not None
        others = [p for p in scored if p not in group]
        for rid, rank in _scores(conn, query, group, others, since, plan).items():
            scores.setdefault(rid, rank)
    ordered = sorted(scores.items(), key=lambda row: (row[1], row[0]))
    complete = not plan.truncated and groups == [chosen] and len(chosen) == len(present)
    return ordered, complete, plan


def search(
    conn: Any,
    query: LexicalQuery,
    k: int,
    bounds: LexicalBounds,
    probe: tuple[str, builtins.list[Any]],
    predicate: tuple[str, builtins.list[Any]],
    *,
    scope: tuple[str, builtins.list[Any]] | None = None,
    exact_only: bool = False,
) -> builtins.list[tuple[str, float]]:
    """``(id, bm25)`` of the best ``k`` rows of ``query.owner`` that match and pass the filter, best first.

    The match is ranked by :func:`ranked` (a page of ``max(4 k, 200)``
    rows); the filter, ``probe`` (checking given rows of the owner table as
    ``i``), is applied to the ranked rows, best first, a page at a time.
    Only when fewer than ``k`` pass because the filter turned rows away (a
    selective filter, or other namespaces' rows: the FTS5 tables span
    namespaces) and the ranked rows were not all there is does a filtered
    match run, ``predicate`` (the owner table as ``i``) applied while FTS5
    drives the join (CROSS JOIN keeps the planner from scanning the owner
    table): the whole match on the exact path (at most ``exact_docs`` rows);
    on the bounded path the rows of :func:`_window` only, on the scored
    terms, merged with the candidates that passed. ``scope`` is the filter
    on indexed columns only (``i``: cheap to count), which places that
    window. Ties are broken by id. ``exact_only``: nothing when the match is
    too large to rank exactly (:func:`ranked`).
    """
    pool = max(4 * int(k), 200)
    owner = query.owner
    ranked_rows, complete, plan = ranked(conn, query, pool, bounds, exact_only)
    allowed: dict[int, str] = {}
    checked = 0
    where, params = probe
    while checked < len(ranked_rows) and len(allowed) < k:  # best first: usually one page is enough
        rids = [row[0] for row in ranked_rows[checked : checked + pool]]
        checked += len(rids)
        allowed.update(
            conn.execute(
                f"SELECT i.rid, i.id FROM json_each(?) AS j CROSS JOIN {owner} i ON i.rid = j.value WHERE {where}",
                [json_list(rids), *params],
            ).fetchall()
        )
    # The bounded path ranks what it ranks: only a filter that turned candidates away
    # sends the search to a filtered match (bounded too: see _window).
    bounded = plan.path != "exact" and len(allowed) == checked
    found = {str(allowed[rid]): rank for rid, rank in ranked_rows if rid in allowed}
    if not (len(allowed) >= k or complete or bounded):
        phrases = query.phrases if plan.path == "exact" else plan.scored
        window = (None, None) if plan.path == "exact" else _window(conn, query, phrases, bounds, scope)
        for item_id, rank in _filtered_match(conn, query, phrases, window, predicate, k) if window else ():
            found.setdefault(item_id, rank)
    hits = sorted((rank, item_id) for item_id, rank in found.items())
    return [(item_id, rank) for rank, item_id in hits[:k]]


def _window(
    conn: Any,
    query: LexicalQuery,
    phrases: tuple[str, ...],
    bounds: LexicalBounds,
    scope: tuple[str, builtins.list[Any]] | None,
) -> tuple[int | None, int | None] | None:
    """The rowid range a filtered match on the bounded path ranks: at most ``exact_docs`` matching rows.

    Within the rowid range of the filter's indexed scope when that holds at
    most ``exact_docs`` rows (a user, thread or namespace written in one
    stretch is ranked whole, however old), else within the whole index: its
    newest ``exact_docs`` matches (an open end, None, where nothing bounds
    it). None when the scope is empty: no row to rank.
    """
    low: int | None = None
    high: int | None = None
    if scope is not None:
        where, params = scope
        count, first, last = conn.execute(
            f"SELECT count(*), min(rid), max(rid) FROM (SELECT i.rid AS rid FROM {query.owner} i "
            f"WHERE {where} LIMIT ?)",
            [*params, bounds.exact_docs + 1],
        ).fetchone()
        if count == 0:
            return None
        if count <= bounds.exact_docs:
            low, high = int(first), int(last)
    table = query.table
    inside, inside_params = _within(table, low, high)
    row = conn.execute(
        f"SELECT rowid FROM {table} WHERE {table} MATCH ?{inside} ORDER BY rowid DESC LIMIT 1 OFFSET ?",
        (query.match(phrases), *inside_params, bounds.exact_docs - 1),
    ).fetchone()
    if row is not None:  # more matches than that: the newest of them
        low = int(row[0]) if low is None else max(low, int(row[0]))
    return low, high


def _within(table: str, low: int | None, high: int | None) -> tuple[str, tuple[int, ...]]:
    """`` AND`` conditions keeping ``table``'s rowid within ``[low, high]`` (None: unbounded), and their parameters."""
    conditions = ""
    params: tuple[int, ...] = ()
    if low is not None:
        conditions, params = f" AND {table}.rowid >= ?", (low,)
    if high is not None:
        conditions, params = conditions + f" AND {table}.rowid <= ?", (*params, high)
    return conditions, params


def _filtered_match(
    conn: Any,
    query: LexicalQuery,
    phrases: tuple[str, ...],
    window: tuple[int | None, int | None],
    predicate: tuple[str, builtins.list[Any]],
    k: int,
) -> builtins.list[tuple[str, float]]:
    """``(id, bm25)`` of the best ``k`` rows matching ``phrases`` within ``window`` that pass ``predicate``."""
    table = query.table
    where, params = predicate
    inside, inside_params = _within(table, *window)
    rows = conn.execute(
        f"SELECT i.id, {query.bm25} AS rank FROM {table} CROSS JOIN {query.owner} i ON i.rid = {table}.rowid "
        f"WHERE {table} MATCH ?{inside} AND {where} ORDER BY rank, i.id LIMIT ?",
        [query.match(phrases), *inside_params, *params, int(k)],
    ).fetchall()
    return [(str(r[0]), float(r[1])) for r in rows]


def _idf_cost(docs: dict[str, float], groups: builtins.list[builtins.list[str]], scored: builtins.list[str]) -> float:
    """Postings the IDF passes of :func:`_scores` count for ``groups`` scored on ``scored``.

    A group's ``(group)`` counts its terms; its ``(group) AND (others)``,
    run when there are others, counts its terms again and the others.
    """
    cost = 0.0
    for group in groups:
        own = sum(docs[p] for p in group)
        others = [p for p in scored if p not in group]
        cost += own + (own + sum(docs[p] for p in others) if others else 0.0)
    return cost


def _scores(
    conn: Any,
    query: LexicalQuery,
    group: builtins.list[str],
    others: builtins.list[str],
    since: int | None,
    plan: LexicalPlan,
) -> dict[int, float]:
    """``bm25()`` over ``group`` and ``others`` of the documents of ``group`` (rowid >= ``since``).

    ``(group)`` scores every candidate on the group's terms, and
    ``(group) AND (others)`` the candidates that hold another term too on
    all of them (each term is one phrase of it, so that is the row's BM25):
    the second score wins where there is one.
    """
    table = query.table
    range_, params = ("", ()) if since is None else (" AND rowid >= ?", (since,))
    statement = f"SELECT rowid, {query.bm25} FROM {table} WHERE {table} MATCH ?{range_}"
    scores = {int(rid): float(value) for rid, value in conn.execute(statement, (query.match(group), *params))}
    plan.rows_scored = (plan.rows_scored or 0) + len(scores)
    if others:
        both = query.columns + "((" + " OR ".join(group) + ") AND (" + " OR ".join(others) + "))"
        rows = conn.execute(statement, (both, *params)).fetchall()
        plan.rows_scored += len(rows)
        scores.update((int(rid), float(value)) for rid, value in rows)
    return scores


def _rowid_range(conn: Any, owner: str) -> tuple[int | None, int | None]:
    """The smallest and largest rowid of ``owner``'s rows (an FTS5 table's rowid is its owner's ``rid``)."""
    low = conn.execute(f"SELECT min(rid) FROM {owner}").fetchone()[0]
    high = conn.execute(f"SELECT max(rid) FROM {owner}").fetchone()[0]
    return (None, None) if low is None or high is None else (int(low), int(high))


def _count(conn: Any, query: LexicalQuery, phrase: str, limit: int) -> int:
    """How many documents hold ``phrase``, counted up to ``limit`` (newest first)."""
    table = query.table
    row = conn.execute(
        f"SELECT count(*) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT ?)",
        (query.match([phrase]), limit),
    ).fetchone()
    return int(row[0])


def _exact_fits(
    conn: Any, query: LexicalQuery, bounds: LexicalBounds, plan: LexicalPlan
) -> tuple[bool, dict[str, int]]:
    """Whether the whole match fits ``exact_docs`` (the store does, or the terms' counts do), and floors.

    Exact counts (below the limit they were counted to, ``df_probe`` at
    least) go to ``plan.docs``; the phrases counted to their limit are
    returned with that count, a floor for :func:`_estimate`.
    """
    low, high = _rowid_range(conn, query.owner)
    if low is None or high is None or high - low + 1 <= bounds.exact_docs:
        return True, {}  # the whole match cannot hold more rows than the store: nothing to count
    left = bounds.exact_docs
    fits = True
    floors: dict[str, int] = {}
    for phrase in query.phrases:
        limit = max(bounds.df_probe, left + 1) if fits else bounds.df_probe
        count = _count(conn, query, phrase, limit)
        if count < limit:
            plan.docs[phrase] = float(count)
        else:
            floors[phrase] = count
        if fits and count <= left:
            left -= count
        else:
            fits = False
    return fits, floors


def _estimate(conn: Any, query: LexicalQuery, bounds: LexicalBounds, plan: LexicalPlan, floors: dict[str, int]) -> None:
    """Estimate the document counts of ``floors``' phrases from ``_STRATA`` rowid slices (at least the floor)."""
    if not floors:
        return
    low, high = _rowid_range(conn, query.owner)
    if low is None or high is None:  # emptied meanwhile (another connection): only the floors
        plan.docs.update({p: float(n) for p, n in floors.items()})
        return
    span = high - low + 1
    per = max(1, bounds.df_probe // _STRATA)
    table = query.table
    sql = (
        f"SELECT count(*), max(rowid) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? "
        "AND rowid >= ? AND rowid < ? ORDER BY rowid LIMIT ?)"
    )
    for phrase, floor in floors.items():
        match = query.match([phrase])
        estimate = 0.0
        for part in range(_STRATA):
            start, stop = low + span * part // _STRATA, low + span * (part + 1) // _STRATA
            if stop <= start:
                continue
            count, last = conn.execute(sql, (match, start, stop, per)).fetchone()
            if count < per or last is None:
                estimate += count
            else:  # ``per`` matches in [start, last]: that density over the slice
                estimate += per * (stop - start) / (int(last) - start + 1)
        plan.docs[phrase] = max(estimate, float(floor))
        plan.estimated += (phrase,)
