"""The SQL of ``hybrid_search_v1``: the lexical (BM25) and vector channel statements.

Each runs as a server-side prepared statement (psycopg ``prepare=True``). The
filter is spliced in as ``{where}``, a predicate from :mod:`.sql` whose values
are all bound parameters.
"""

from __future__ import annotations

__all__ = [
    "HYBRID_SEARCH_V1_LEXICAL",
    "HYBRID_SEARCH_V1_KEY",
    "hybrid_search_v1_vector",
    "LEXICAL_DF_CAP",
    "LEXICAL_POOL",
]

#: BM25 parameters, the ones SQLite's FTS5 uses.
_K1, _B = 1.2, 0.75

#: Document frequencies are counted up to this many rows per term: a term in more documents
#: of the namespace gets this as its frequency (its idf is then slightly too high).
LEXICAL_DF_CAP = 1_000
#: Candidates come from the rarest query terms while their document counts add up to at
#: most this (the rarest term always), and at most this many documents are scored;
#: documents matching only more common terms are not. Both bounds keep a query on a huge
#: namespace cheap; below them (a namespace where the query's terms match fewer
#: documents) BM25 is exact.
LEXICAL_POOL = 2_000

#: hybrid_search_v1, lexical channel: BM25 over the generated tsvector. Per-namespace N and
#: average length come from ``lexical_stats``, document frequencies from the GIN index.
#: ``{where}`` is a compiled filter (bound parameters only). Parameters: terms, namespace,
#: namespace, <filter params>, k.
HYBRID_SEARCH_V1_LEXICAL = (
    r"""
WITH terms AS (
    SELECT DISTINCT t.lexeme AS lex
    FROM unnest(%s::text[]) AS w(word), unnest(to_tsvector('memory_english'::regconfig, w.word)) AS t
), q AS MATERIALIZED (
    SELECT lex, ('''' || replace(replace(lex, '\', '\\'), '''', '''''') || '''')::tsquery AS tq FROM terms
), stats AS MATERIALIZED (
    SELECT greatest(docs, 1)::float8 AS n, greatest(words::float8 / greatest(docs, 1), 1e-9) AS avgdl
    FROM lexical_stats WHERE namespace = %s
), idf AS MATERIALIZED (
    SELECT q.lex, q.tq, df.n, greatest(ln((s.n - df.n + 0.5) / (df.n + 0.5)), 1e-6) AS idf
    FROM q CROSS JOIN stats s CROSS JOIN LATERAL (
        SELECT count(*)::float8 AS n FROM (
            SELECT 1 FROM items d WHERE d.namespace = %s AND d.tsv @@ q.tq LIMIT {df_cap}
        ) AS hits
    ) AS df
), chosen AS MATERIALIZED (
    SELECT tq FROM (SELECT tq, sum(n) OVER (ORDER BY n, lex) - n AS before FROM idf) AS c WHERE before < {pool}
), cand AS MATERIALIZED (
    SELECT i.id, i.tsv, i.doc_len FROM items i
    WHERE i.tsv @@ (SELECT string_agg('(' || tq::text || ')', ' | ')::tsquery FROM chosen) AND {where}
    LIMIT {pool}
)
SELECT c.id, sum(idf.idf * (u.tf * {k1p1}) / (u.tf + {k1} * ({one_b} + {b} * c.doc_len / s.avgdl))) AS score
FROM cand c CROSS JOIN stats s
CROSS JOIN LATERAL (SELECT l.lexeme, cardinality(l.positions)::float8 AS tf FROM unnest(c.tsv) AS l) AS u
JOIN idf ON idf.lex = u.lexeme
GROUP BY c.id ORDER BY score DESC, c.id LIMIT %s
""".replace("{pool}", str(LEXICAL_POOL))
    .replace("{df_cap}", str(LEXICAL_DF_CAP))
    .replace("{k1p1}", f"{_K1 + 1!r}::float8")
    .replace("{k1}", f"{_K1!r}::float8")
    .replace("{one_b}", f"{1 - _B!r}::float8")
    .replace("{b}", f"{_B!r}::float8")
)

#: hybrid_search_v1, lexical channel over the index key (content, window, time words;
#: ``retrieval.window``) with per-field weights, ranked as SQLite's
#: ``bm25(items_key_fts, w_content, w_window, w_time)``: a term's frequency is the
#: weighted sum of its occurrences per field (weight labels A, B, C of ``key_tsv``), the
#: document length counts the words of all three fields, document frequencies count the
#: documents that hold the term in a weighted field (the tsquery is restricted to their
#: labels). Parameters: w_content, w_window, w_time, terms, labels (e.g. ``'AB'``),
#: namespace, namespace, <filter params>, k.
HYBRID_SEARCH_V1_KEY = (
    r"""
WITH wt AS MATERIALIZED (
    SELECT %s::float8 AS wa, %s::float8 AS wb, %s::float8 AS wc
), terms AS (
    SELECT DISTINCT t.lexeme AS lex
    FROM unnest(%s::text[]) AS w(word), unnest(to_tsvector('memory_english'::regconfig, w.word)) AS t
), q AS MATERIALIZED (
    SELECT lex, ('''' || replace(replace(lex, '\', '\\'), '''', '''''') || ''':' || %s::text)::tsquery AS tq
    FROM terms
), stats AS MATERIALIZED (
    SELECT greatest(docs, 1)::float8 AS n,
           greatest((words + window_words + 3 * docs)::float8 / greatest(docs, 1), 1e-9) AS avgdl
    FROM lexical_stats WHERE namespace = %s
), idf AS MATERIALIZED (
    SELECT q.lex, q.tq, df.n, greatest(ln((s.n - df.n + 0.5) / (df.n + 0.5)), 1e-6) AS idf
    FROM q CROSS JOIN stats s CROSS JOIN LATERAL (
        SELECT count(*)::float8 AS n FROM (
            SELECT 1 FROM items d WHERE d.namespace = %s AND d.key_tsv @@ q.tq LIMIT {df_cap}
        ) AS hits
    ) AS df
), chosen AS MATERIALIZED (
    SELECT tq FROM (SELECT tq, sum(n) OVER (ORDER BY n, lex) - n AS before FROM idf) AS c WHERE before < {pool}
), cand AS MATERIALIZED (
    SELECT i.id, i.key_tsv AS tsv, i.doc_len + i.window_len + 3 AS dl FROM items i
    WHERE i.key_tsv @@ (SELECT string_agg('(' || tq::text || ')', ' | ')::tsquery FROM chosen) AND {where}
    LIMIT {pool}
)
SELECT c.id, sum(idf.idf * (u.tf * {k1p1}) / (u.tf + {k1} * ({one_b} + {b} * c.dl / s.avgdl))) AS score
FROM cand c CROSS JOIN stats s CROSS JOIN wt
CROSS JOIN LATERAL (
    SELECT l.lexeme, (
        SELECT coalesce(sum(CASE x WHEN 'A' THEN wt.wa WHEN 'B' THEN wt.wb WHEN 'C' THEN wt.wc ELSE 0 END), 0)
        FROM unnest(l.weights) AS x
    )::float8 AS tf
    FROM unnest(c.tsv) AS l
) AS u
JOIN idf ON idf.lex = u.lexeme
GROUP BY c.id ORDER BY score DESC, c.id LIMIT %s
""".replace("{pool}", str(LEXICAL_POOL))
    .replace("{df_cap}", str(LEXICAL_DF_CAP))
    .replace("{k1p1}", f"{_K1 + 1!r}::float8")
    .replace("{k1}", f"{_K1!r}::float8")
    .replace("{one_b}", f"{1 - _B!r}::float8")
    .replace("{b}", f"{_B!r}::float8")
)


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
