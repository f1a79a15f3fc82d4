"""The SQL of ``hybrid_search_v1``: the lexical (BM25) and vector channel statements.

Each runs as a server-side prepared statement (psycopg ``prepare=True``). The
filter is spliced in as ``{where}``, a predicate from :mod:`.sql` whose values
are all bound parameters.
"""

from __future__ import annotations

from memory.index_layout import LEXICAL_EXACT_DOCS

__all__ = [
    "MESSAGES_LEXICAL",
    "LEXICAL_TERMS_DELTA",
    "LEXICAL_TERMS_DROP_ZEROS",
    "HYBRID_SEARCH_V1_KEY",
    "hybrid_search_v1_vector",
    "LEXICAL_DF_CAP",
    "LEXICAL_POOL",
    "LEXICAL_EXACT_DOCS",
    "LEXICAL_MATCH_DOCS",
]

#: BM25 parameters, the ones SQLite's FTS5 uses.
_K1, _B = 1.2, 0.75

#: Where document frequencies are counted (the messages tables), they are counted up to
#: this many rows per term: a term in more documents of the namespace gets this as its
#: frequency (its idf is then slightly too high).
LEXICAL_DF_CAP = 1_000
#: Candidates come from the rarest query terms while their document counts add up to at
#: most this (the rarest term always), and at most this many documents are scored;
#: documents matching only more common terms are not. Both bounds keep a query on a huge
#: namespace cheap; below them (a namespace where the query's terms match fewer
#: documents) BM25 is exact.
LEXICAL_POOL = 1_000


def _bm25(sql: str) -> str:
    """Fill the pool, cap and BM25 constants into a lexical statement."""
    return (
        sql.replace("{pool}", str(LEXICAL_POOL))
        .replace("{df_cap}", str(LEXICAL_DF_CAP))
        .replace("{k1p1}", f"{_K1 + 1!r}::float8")
        .replace("{k1}", f"{_K1!r}::float8")
        .replace("{one_b}", f"{1 - _B!r}::float8")
        .replace("{b}", f"{_B!r}::float8")
    )


#: A query's distinct lexemes (English stems of the words, bound as data).
_TERMS = """terms AS (
    SELECT DISTINCT t.lexeme AS lex
    FROM unnest(%s::text[]) AS w(word), unnest(to_tsvector('memory_english'::regconfig, w.word)) AS t
)"""
#: A lexeme column as a tsquery operand (quoted, backslashes and quotes escaped).
_OPERAND = r"""('''' || replace(replace({col}, '\', '\\'), '''', '''''') || '''')"""

#: BM25 over the messages' ``tsv`` with document frequencies *counted* from its GIN index, up
#: to LEXICAL_DF_CAP rows per term (a term in more documents gets the cap as its
#: frequency, so its idf is slightly too high): ``messages.search`` (see :mod:`.episodic`);
#: items keep exact frequencies in ``lexical_terms`` instead (HYBRID_SEARCH_V1_KEY).
#: ``{where}`` is a compiled filter (bound parameters only). Parameters: terms, namespace,
#: namespace, <filter params>, k.
MESSAGES_LEXICAL = _bm25(
    f"""
WITH {_TERMS}, q AS MATERIALIZED (
    SELECT lex, {_OPERAND.replace("{col}", "lex")}::tsquery AS tq FROM terms
), stats AS MATERIALIZED (
    SELECT greatest(docs, 1)::float8 AS n, greatest(words::float8 / greatest(docs, 1), 1e-9) AS avgdl
    FROM message_lexical_stats WHERE namespace = %s
), idf AS MATERIALIZED (
    SELECT q.lex, q.tq, df.n, greatest(ln((s.n - df.n + 0.5) / (df.n + 0.5)), 1e-6) AS idf
    FROM q CROSS JOIN stats s CROSS JOIN LATERAL (
        SELECT count(*)::float8 AS n FROM (
            SELECT 1 FROM messages d WHERE d.namespace = %s AND d.tsv @@ q.tq LIMIT {{df_cap}}
        ) AS hits
    ) AS df
), chosen AS MATERIALIZED (
    SELECT tq FROM (SELECT tq, sum(n) OVER (ORDER BY n, lex) - n AS before FROM idf) AS c
    WHERE before < {{pool}} OR (SELECT n FROM stats) <= {{pool}}
), cand AS MATERIALIZED (
    SELECT i.id, i.tsv, i.doc_len FROM messages i
    WHERE i.tsv @@ (SELECT string_agg('(' || tq::text || ')', ' | ')::tsquery FROM chosen) AND {{where}}
    LIMIT {{pool}}
)
SELECT c.id, sum(idf.idf * (u.tf * {{k1p1}}) / (u.tf + {{k1}} * ({{one_b}} + {{b}} * c.doc_len / s.avgdl))) AS score
FROM cand c CROSS JOIN stats s
CROSS JOIN LATERAL (SELECT l.lexeme, cardinality(l.positions)::float8 AS tf FROM unnest(c.tsv) AS l) AS u
JOIN idf ON idf.lex = u.lexeme
GROUP BY c.id ORDER BY score DESC, c.id LIMIT %s
"""
)

#: A query lexeme's document frequency in a namespace: the items holding it in any field
#: of the mask (1 content, 2 window, 4 time), from ``lexical_terms``.
_DF = """coalesce((
        SELECT sum(lt.df) FROM lexical_terms lt
        WHERE lt.namespace = %s AND lt.lexeme = terms.lex AND (lt.mask & {mask}) <> 0
    ), 0)::float8"""

#: The documents a query's lexemes are in within a namespace, counted once per lexeme (the
#: fields of the mask): words, namespace, mask.
LEXICAL_MATCH_DOCS = f"""WITH {_TERMS} SELECT coalesce(sum({_DF.replace("{mask}", "%s::int")}), 0) FROM terms"""

#: hybrid_search_v1, lexical channel over the index key (content, window, time words;
#: ``retrieval.window``) with per-field weights, ranked as SQLite's
#: ``bm25(items_key_fts, w_content, w_window, w_time)``: a term's frequency is the
#: weighted sum of its occurrences per field (weight labels A, B, C of ``key_tsv``), the
#: document length counts the words of all three fields, document frequencies count the
#: documents that hold the term in a weighted field (``lexical_terms`` rows whose mask
#: meets the weighted fields' mask; the tsquery is restricted to their labels). A
#: content-only search is this with weights 1, 0, 0. Candidates are the documents of the
#: rarest query terms while their frequencies add up to at most LEXICAL_POOL (the rarest
#: term always), at most LEXICAL_POOL of them: a namespace where the query's terms are in
#: fewer documents is ranked exactly (FTS5's BM25); on a huge one, documents that match
#: only terms common enough to be outside the pool are not scored, so the cost stays
#: bounded. ``{where}`` is a compiled filter (bound parameters only). Parameters: w_content, w_window, w_time,
#: terms, labels (e.g. ``'AB'``), namespace, namespace, mask (e.g. 3), <filter params>, k.
HYBRID_SEARCH_V1_KEY = _bm25(
    f"""
WITH wt AS MATERIALIZED (
    SELECT %s::float8 AS wa, %s::float8 AS wb, %s::float8 AS wc
), {_TERMS}, labels AS MATERIALIZED (
    SELECT %s::text AS l
), stats AS MATERIALIZED (
    SELECT greatest(docs, 1)::float8 AS n,
           greatest((words + window_words + 3 * docs)::float8 / greatest(docs, 1), 1e-9) AS avgdl
    FROM lexical_stats WHERE namespace = %s
), df AS MATERIALIZED (
    SELECT terms.lex, {_DF.replace("{mask}", "%s::int")} AS n FROM terms
), idf AS MATERIALIZED (
    SELECT df.lex, ({_OPERAND.replace("{col}", "df.lex")} || ':' || labels.l)::tsquery AS tq, df.n,
           greatest(ln((s.n - df.n + 0.5) / (df.n + 0.5)), 1e-6) AS idf
    FROM df CROSS JOIN stats s CROSS JOIN labels WHERE df.n > 0
), chosen AS MATERIALIZED (
    SELECT tq FROM (SELECT tq, sum(n) OVER (ORDER BY n, lex) - n AS before FROM idf) AS c
    WHERE before < {{pool}} OR (SELECT n FROM stats) <= {{pool}}
), cand AS MATERIALIZED (
    SELECT i.id, i.key_tsv AS tsv, i.doc_len + i.window_len + 3 AS dl FROM items i
    WHERE i.key_tsv @@ (SELECT string_agg('(' || tq::text || ')', ' | ')::tsquery FROM chosen) AND {{where}}
    LIMIT {{pool}}
)
SELECT c.id, sum(idf.idf * (u.tf * {{k1p1}}) / (u.tf + {{k1}} * ({{one_b}} + {{b}} * c.dl / s.avgdl))) AS score
FROM cand c CROSS JOIN stats s CROSS JOIN wt
CROSS JOIN LATERAL unnest(c.tsv) AS l
JOIN idf ON idf.lex = l.lexeme
CROSS JOIN LATERAL (
    SELECT wt.wa * coalesce(cardinality(array_positions(l.weights, 'A')), 0)
         + wt.wb * coalesce(cardinality(array_positions(l.weights, 'B')), 0)
         + wt.wc * coalesce(cardinality(array_positions(l.weights, 'C')), 0) AS tf
    OFFSET 0
) AS u
GROUP BY c.id ORDER BY score DESC, c.id LIMIT %s
"""
)

#: Add ``sign`` (+1 or -1) times the listed items to the namespace's lexical statistics:
#: their documents and words (content and window) to ``lexical_stats``, the lexemes of
#: their ``key_tsv`` to the document frequencies in ``lexical_terms``, in lexeme order (so
#: concurrent writers lock rows in one order). Run before rows change or vanish (-1) and
#: after they were written (+1), the statistics follow every write from the rows
#: themselves. Returns the ``lexical_terms`` rows touched with their new df (rows at 0 are
#: then deleted, so nothing of a forgotten memory stays behind). Parameters (by name):
#: sign, namespace, ids.
LEXICAL_TERMS_DELTA = """
WITH counted AS (
    SELECT count(*) AS docs, coalesce(sum(doc_len), 0) AS words, coalesce(sum(window_len), 0) AS window_words
    FROM items WHERE namespace = %(namespace)s AND id = ANY(%(ids)s::text[])
), stats AS (
    INSERT INTO lexical_stats AS s (namespace, docs, words, window_words)
    SELECT %(namespace)s, %(sign)s::int * docs, %(sign)s::int * words, %(sign)s::int * window_words
    FROM counted WHERE docs > 0
    ON CONFLICT (namespace) DO UPDATE SET docs = s.docs + EXCLUDED.docs, words = s.words + EXCLUDED.words,
        window_words = s.window_words + EXCLUDED.window_words
)
INSERT INTO lexical_terms AS lt (namespace, lexeme, mask, df)
SELECT i.namespace, t.lexeme, memory_weight_mask(t.weights), %(sign)s::int * count(*)
FROM items i CROSS JOIN LATERAL unnest(i.key_tsv) AS t
WHERE i.namespace = %(namespace)s AND i.id = ANY(%(ids)s::text[])
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
ON CONFLICT (namespace, lexeme, mask) DO UPDATE SET df = lt.df + EXCLUDED.df
RETURNING lexeme, mask, df
"""

#: Delete a namespace's document-frequency rows that fell to zero. Parameters: lexemes,
#: masks (parallel arrays), namespace.
LEXICAL_TERMS_DROP_ZEROS = """
DELETE FROM lexical_terms lt USING unnest(%s::text[], %s::smallint[]) AS z(lexeme, mask)
WHERE lt.namespace = %s AND lt.lexeme = z.lexeme AND lt.mask = z.mask AND lt.df <= 0
"""


def hybrid_search_v1_vector(table: str, where: str, *, exact: bool) -> str:
    """hybrid_search_v1, vector channel: cosine over one space's table, joined to the filtered items.

    ``exact`` ranks every matching row (the ``+ 0`` keeps the planner off the
    HNSW index); otherwise the HNSW index orders candidates and pgvector's
    iterative scan keeps reading until the filter lets ``k`` through. Scores
    are exact cosines either way. Parameters: query, namespace, <filter>, query, k.
    """
    order = "(v.embedding <=> %s::vector) + 0" if exact else "v.embedding <=> %s::vector"
    return (
        f"WITH c AS MATERIALIZED (SELECT i.id, v.embedding <=> %s::vector AS d FROM {table} v "
        "JOIN items i ON i.namespace = v.namespace AND i.id = v.id "
        f"WHERE v.namespace = %s AND {where} ORDER BY {order} LIMIT %s) "
        "SELECT id, 1 - d FROM c ORDER BY d, id"
    )
