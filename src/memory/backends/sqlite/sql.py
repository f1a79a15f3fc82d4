"""Pure compilation of a :class:`~memory.filters.Filter` to a parameterised SQL predicate.

The predicate reproduces :func:`memory.filters.matches` exactly. Every value
is bound as a parameter (lists as one JSON array read with ``json_each``);
nothing from the filter is ever written into the SQL text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from memory.filters import Filter
from memory.ids import to_epoch
from memory.types import SENSITIVITY_LEVELS

__all__ = ["ROLE_SQL", "SPEAKER_SQL", "compile_filter", "scope_of", "json_list", "storable"]

#: An item's ``metadata["role"]`` (alias ``i``): the chat side ranking reads (retrieval/speaker.py).
ROLE_SQL = "json_extract(i.metadata, '$.role')"
#: An item's ``metadata["speaker"]`` (alias ``i``): the named speaker ranking reads (retrieval/speaker.py).
SPEAKER_SQL = "json_extract(i.metadata, '$.speaker')"

_FALSE = "0"


def storable(value: str) -> bool:
    """True when ``value`` can be stored in SQLite (UTF-8 encodable: no lone surrogates).

    A string that cannot be stored can never equal a stored one, so a filter
    naming it matches nothing.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def json_list(values: Iterable[Any]) -> str:
    """A JSON array of ``values`` for ``json_each(?)``, dropping strings SQLite cannot hold."""
    kept = [v for v in values if not isinstance(v, str) or storable(v)]
    return json.dumps(kept, ensure_ascii=False)


def _in_list(column: str, values: tuple[str, ...]) -> tuple[str, list[Any]]:
    if not values:
        return _FALSE, []
    return f"{column} IN (SELECT value FROM json_each(?))", [json_list(values)]


def _metadata(alias: str, key: str, expected: Any) -> tuple[str, list[Any]]:
    """One metadata equality with JSON types kept apart (True != 1, "1" != 1, None only null)."""
    path = "'$.\"' || ? || '\"'"
    json_type = f"json_type({alias}.metadata, {path})"
    if expected is None:
        return f"{json_type} = 'null'", [key]
    if isinstance(expected, bool):
        return f"{json_type} = ?", [key, "true" if expected else "false"]
    if isinstance(expected, (int, float)):
        try:
            number = float(expected)
        except OverflowError:
            return _FALSE, []
        return (
            f"({json_type} IN ('integer', 'real') AND CAST(json_extract({alias}.metadata, {path}) AS REAL) = ?)",
            [key, key, number],
        )
    if isinstance(expected, str):
        if not storable(expected):
            return _FALSE, []
        return f"({json_type} = 'text' AND json_extract({alias}.metadata, {path}) = ?)", [key, key, expected]
    return _FALSE, []  # the Filter model admits only JSON scalars


def compile_filter(flt: Filter, alias: str = "i", *, probe: bool = False) -> tuple[str, list[Any]]:
    """Return ``(predicate, params)`` selecting the rows of ``items`` (as ``alias``) that ``flt`` matches.

    With ``probe=False`` tag predicates are ``rid IN (tagged rows)``, which
    lets the planner start from the tags table; with ``probe=True`` they are
    per-row lookups, cheaper when checking a short list of given rows. The
    predicate never uses NOT around a comparison that may be NULL, so a
    missing metadata key or NULL column simply fails to match.
    """
    if not alias.isidentifier():
        raise ValueError(f"bad table alias {alias!r}")
    if not storable(flt.namespace):
        return _FALSE, []
    a = alias
    # With ids, the unique id index is the best way in: the unary + keeps the
    # planner from scanning the namespace index instead.
    parts: list[str] = [f"{'+' if flt.ids is not None else ''}{a}.namespace = ?"]
    params: list[Any] = [flt.namespace]

    def add(clause: str, values: list[Any]) -> None:
        parts.append(clause)
        params.extend(values)

    for name in ("user", "agent", "thread"):
        wanted = getattr(flt, name)
        if wanted is not None:
            add(f"{a}.{name} = ?" if storable(wanted) else _FALSE, [wanted] if storable(wanted) else [])
    if flt.kinds is not None:
        add(*_in_list(f"{a}.kind", flt.kinds))
    if flt.ids is not None:
        add(*_in_list(f"{a}.id", flt.ids))
    tagged = "t.namespace = ? AND t.tag IN (SELECT value FROM json_each(?))"
    if flt.tags_any is not None:
        if not flt.tags_any:
            add(_FALSE, [])
        elif probe:
            add(
                f"EXISTS (SELECT 1 FROM item_tags t WHERE {tagged} AND t.rid = {a}.rid)",
                [flt.namespace, json_list(flt.tags_any)],
            )
        else:
            add(f"{a}.rid IN (SELECT t.rid FROM item_tags t WHERE {tagged})", [flt.namespace, json_list(flt.tags_any)])
    if flt.tags_all:
        wanted_tags = sorted(set(flt.tags_all))
        tag_params = [flt.namespace, json_list(wanted_tags), len(wanted_tags)]
        if not all(storable(t) for t in wanted_tags):
            add(_FALSE, [])
        elif probe:
            add(f"(SELECT count(*) FROM item_tags t WHERE {tagged} AND t.rid = {a}.rid) = ?", tag_params)
        else:
            add(
                f"{a}.rid IN (SELECT t.rid FROM item_tags t WHERE {tagged} GROUP BY t.rid HAVING count(*) = ?)",
                tag_params,
            )
    for key, expected in (flt.metadata or {}).items():
        add(*_metadata(a, key, expected))
    if flt.created_after is not None:
        add(f"{a}.created_at >= ?", [to_epoch(flt.created_after)])
    if flt.created_before is not None:
        add(f"{a}.created_at < ?", [to_epoch(flt.created_before)])
    allowed = [name for name, level in SENSITIVITY_LEVELS.items() if level <= flt.max_sensitivity_level]
    if len(allowed) < len(SENSITIVITY_LEVELS):
        add(f"{a}.sensitivity IN ({', '.join('?' for _ in allowed)})", allowed)
    now = to_epoch(flt.now)
    if not flt.include_expired:
        add(f"({a}.expires_at IS NULL OR {a}.expires_at > ?)", [now])
    if not flt.include_invalid:
        add(f"({a}.valid_to IS NULL OR {a}.valid_to > ?)", [now])
    return " AND ".join(parts), params


def scope_of(flt: Filter) -> Filter:
    """``flt`` without its unindexed predicates (metadata, time range, policy).

    It matches a superset of ``flt``'s items using only indexed columns
    (namespace, user, agent, thread, kind, id, tags), so counting it is
    cheap; vector search uses that count to choose its strategy.
    """
    return flt.model_copy(
        update={
            "metadata": None,
            "created_after": None,
            "created_before": None,
            "clearance": "secret",
            "include_expired": True,
            "include_invalid": True,
        }
    )
