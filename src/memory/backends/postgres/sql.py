"""Pure compilation of a :class:`~memory.filters.Filter` to a bound PostgreSQL predicate.

The predicate reproduces :func:`memory.filters.matches` exactly. Every value
is bound as a parameter (lists as one ``text[]`` parameter); nothing from the
filter is ever written into the SQL text, so hostile strings are only data.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from memory.backends.items import check_claim
from memory.filters import Filter
from memory.types import SENSITIVITY_LEVELS

__all__ = ["HNSW_MAX_DIM", "check_claim", "compile_filter", "storable", "text_list"]

_FALSE = "false"

#: pgvector's HNSW index holds ``vector`` columns of at most 2000 dimensions (larger: exact scans).
HNSW_MAX_DIM = 2000


def storable(value: str) -> bool:
    """True when PostgreSQL ``text`` can hold ``value`` (UTF-8 encodable, no NUL character).

    A string that cannot be stored can never equal a stored one, so a filter
    naming it matches nothing.
    """
    if "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def text_list(values: Iterable[str]) -> list[str]:
    """``values`` as a list for a ``text[]`` parameter, dropping strings PostgreSQL cannot hold."""
    return [v for v in values if storable(v)]


def _metadata(alias: str, key: str, expected: Any) -> tuple[str, list[Any]]:
    """One metadata equality with JSON types kept apart (True != 1, "1" != 1, None only null)."""
    value = f"({alias}.metadata -> %s)"
    if expected is None:
        return f"jsonb_typeof({value}) = 'null'", [key]
    if isinstance(expected, bool):
        return f"jsonb_typeof({value}) = 'boolean' AND ({alias}.metadata ->> %s) = %s", [
            key,
            key,
            "true" if expected else "false",
        ]
    if isinstance(expected, (int, float)):
        try:
            number = float(expected)
        except OverflowError:
            return _FALSE, []
        # numeric -> float8 fails outside the double range; such values cannot equal a float.
        return (
            f"(CASE WHEN jsonb_typeof({value}) = 'number' "
            f"AND abs(({alias}.metadata ->> %s)::numeric) < 1e308 "
            f"AND (abs(({alias}.metadata ->> %s)::numeric) > 1e-300 OR ({alias}.metadata ->> %s)::numeric = 0) "
            f"THEN ({alias}.metadata ->> %s)::numeric::float8 = %s ELSE false END)",
            [key, key, key, key, key, number],
        )
    if isinstance(expected, str):
        if not storable(expected):
            return _FALSE, []
        return f"jsonb_typeof({value}) = 'string' AND ({alias}.metadata ->> %s) = %s", [key, key, expected]
    return _FALSE, []  # the Filter model admits only JSON scalars


def compile_filter(flt: Filter, alias: str = "i") -> tuple[str, list[Any]]:
    """Return ``(predicate, params)`` selecting the rows of ``items`` (as ``alias``) that ``flt`` matches.

    Placeholders are psycopg's ``%s``. Secret, TTL and validity policy are
    part of the predicate, so a backend never hands out a row the filter
    excludes. A NULL column or a missing metadata key simply fails to match.
    """
    if not alias.isidentifier():
        raise ValueError(f"bad table alias {alias!r}")
    if not storable(flt.namespace):
        return _FALSE, []
    a = alias
    parts: list[str] = [f"{a}.namespace = %s"]
    params: list[Any] = [flt.namespace]

    def add(clause: str, values: list[Any]) -> None:
        parts.append(clause)
        params.extend(values)

    for name in ("user", "agent", "thread"):
        wanted = getattr(flt, name)
        if wanted is not None:
            column = f'{a}."{name}"'
            add(f"{column} = %s" if storable(wanted) else _FALSE, [wanted] if storable(wanted) else [])
    if flt.kinds is not None:
        add(f"{a}.kind = ANY(%s::text[])", [text_list(flt.kinds)])
    if flt.ids is not None:
        add(f"{a}.id = ANY(%s::text[])", [text_list(flt.ids)])
    tagged = f"t.namespace = {a}.namespace AND t.item_id = {a}.id AND t.tag = ANY(%s::text[])"
    if flt.tags_any is not None:
        add(f"EXISTS (SELECT 1 FROM item_tags t WHERE {tagged})", [text_list(flt.tags_any)])
    if flt.tags_all:
        wanted_tags = sorted(set(flt.tags_all))
        if not all(storable(t) for t in wanted_tags):
            add(_FALSE, [])
        else:
            add(f"(SELECT count(*) FROM item_tags t WHERE {tagged}) = %s", [wanted_tags, len(wanted_tags)])
    for key, expected in (flt.metadata or {}).items():
        clause, values = _metadata(a, key, expected)
        add(f"({clause})", values)
    if flt.created_after is not None:
        add(f"{a}.created_at >= %s", [flt.created_after])
    if flt.created_before is not None:
        add(f"{a}.created_at < %s", [flt.created_before])
    allowed = [name for name, level in SENSITIVITY_LEVELS.items() if level <= flt.max_sensitivity_level]
    if len(allowed) < len(SENSITIVITY_LEVELS):
        add(f"{a}.sensitivity = ANY(%s::text[])", [allowed])
    if not flt.include_expired:
        add(f"({a}.expires_at IS NULL OR {a}.expires_at > %s)", [flt.now])
    if not flt.include_invalid:
        add(f"({a}.valid_to IS NULL OR {a}.valid_to > %s)", [flt.now])
    return " AND ".join(parts), params
