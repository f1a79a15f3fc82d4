"""A LangGraph ``BaseStore`` whose items are memories: searchable by meaning through ``recall``.

>>> from memory import Memory
>>> from memory.integrations.langgraph import MemoryStore
>>> store = MemoryStore(Memory("sqlite:///agent.db"))                        # doctest: +SKIP
>>> store.put(("users", "alice"), "prefs", {"text": "Alice prefers dark mode"})  # doctest: +SKIP
>>> store.search(("users",), query="what does alice like?")[0].value          # doctest: +SKIP
>>> graph = builder.compile(store=store)                                      # doctest: +SKIP

Each LangGraph item ``(namespace, key) -> value`` is one memory of the
Memory's namespace: kind ``langgraph`` (or ``langgraph_raw`` for items put with
``index=False``, which a query never finds), content = the text of the indexed
fields (``index={"fields": [...]}`` like LangGraph's own stores; default the
whole value as JSON), the value itself in ``metadata["langgraph"]``. So the
items have history (``mem.history``), show up in ``memory export``, and a
query runs the library's hybrid recall (vector + BM25). Each key has its own
thread (a hash of namespace and key) so two keys holding the same text never
merge, and one tag per namespace prefix so a prefix search is an indexed
filter. A put over an existing key updates that memory (history kept); delete
forgets it. TTL (minutes) becomes the memory's ``expires_at``; reads refresh it
unless ``refresh_ttl=False``; expired items are never returned.

Limits: a value is at most 64 kB of JSON; a query search with a ``filter``
looks at the 1,000 best matches; ``list_namespaces`` and searches without a
query scan the store's LangGraph items.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from datetime import timedelta
from typing import Any

from memory.integrations import require

require("langgraph.store.base", "langgraph")

from langgraph.store.base import (  # noqa: E402
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base.embed import get_text_at_path  # noqa: E402

from memory.errors import InvalidInputError  # noqa: E402
from memory.memory import Memory  # noqa: E402
from memory.types import MemoryItem  # noqa: E402

__all__ = ["MemoryStore", "matches_filter", "namespace_tag", "KIND", "RAW_KIND"]

KIND = "langgraph"
RAW_KIND = "langgraph_raw"
_KINDS = (KIND, RAW_KIND)
_META = "langgraph"
_PAGE = 1000


def namespace_tag(prefix: tuple[str, ...]) -> str:
    """The tag every item under namespace ``prefix`` carries."""
    digest = hashlib.sha256("\x1f".join(prefix).encode()).hexdigest()[:24]
    return f"lgns:{len(prefix)}:{digest}"


def _thread(namespace: tuple[str, ...], key: str) -> str:
    digest = hashlib.sha256(json.dumps([list(namespace), key]).encode()).hexdigest()[:32]
    return f"langgraph:{digest}"


def _apply_operator(value: Any, operator: str, wanted: Any) -> bool:
    if operator == "$eq":
        return bool(value == wanted)
    if operator == "$ne":
        return bool(value != wanted)
    if operator not in ("$gt", "$gte", "$lt", "$lte"):
        raise InvalidInputError(f"unsupported filter operator {operator!r}: use $eq, $ne, $gt, $gte, $lt or $lte")
    try:
        left, right = float(value), float(wanted)
    except (TypeError, ValueError):
        return False
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[operator]


def matches_filter(value: Any, wanted: Any) -> bool:
    """Whether a stored value matches a LangGraph filter (exact values, nested dicts, $-operators)."""
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_apply_operator(value, k, v) for k, v in wanted.items())
        return isinstance(value, Mapping) and all(matches_filter(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(wanted)
            and all(matches_filter(a, b) for a, b in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


def _check_namespace(namespace: tuple[str, ...], *, allow_empty: bool = False) -> tuple[str, ...]:
    if not isinstance(namespace, tuple) or (not namespace and not allow_empty):
        raise InvalidInputError(f"a LangGraph namespace is a non-empty tuple of strings, got {namespace!r}")
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidInputError(f"namespace label {label!r} must be a non-empty string without '.' or NUL")
    return namespace


class MemoryStore(BaseStore):
    """LangGraph ``BaseStore`` over a :class:`~memory.Memory` (semantic search by ``recall``, TTL, filters)."""

    supports_ttl = True

    def __init__(
        self,
        memory: Memory,
        *,
        namespace: str | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        """Store items as memories of ``memory`` in ``namespace`` (default: the Memory's namespace).

        ``index`` takes LangGraph's ``{"fields": [...]}`` (which parts of a value
        are searchable; the Memory's own embedder does the embedding, so
        ``embed``/``dims`` are ignored). ``ttl`` is LangGraph's TTLConfig
        (``default_ttl`` minutes, ``refresh_on_read``). The caller keeps
        ``memory`` open and closes it.
        """
        self.memory = memory
        self.namespace = namespace or memory.namespace
        self.index_config = index
        self.ttl_config = ttl
        self._fields: list[str] = list((index or {}).get("fields") or ["$"])

    # -- helpers ---------------------------------------------------------------
    def _text(self, value: Mapping[str, Any], fields: list[str]) -> str:
        parts: list[str] = []
        for path in fields:
            if path == "$":
                parts.append(json.dumps(value, ensure_ascii=False, default=str))
            else:
                parts.extend(t for t in get_text_at_path(value, path) if t.strip())
        return "\n".join(parts)

    def _find(self, namespace: tuple[str, ...], key: str) -> MemoryItem | None:
        page = self.memory.list(limit=1, namespace=self.namespace, thread=_thread(namespace, key), kinds=_KINDS)
        return page.items[0] if page.items else None

    def _item(self, found: MemoryItem, score: float | None = None, *, search: bool = False) -> Item:
        meta = found.metadata.get(_META)
        assert isinstance(meta, dict)
        namespace = tuple(str(p) for p in meta["namespace"])
        value = dict(meta["value"])
        key = str(meta["key"])
        if search:
            return SearchItem(namespace, key, value, found.created_at, found.updated_at, score)
        return Item(value=value, key=key, namespace=namespace, created_at=found.created_at, updated_at=found.updated_at)

    def _refresh(self, items: list[MemoryItem], refresh_ttl: bool | None) -> None:
        refresh = refresh_ttl if refresh_ttl is not None else (self.ttl_config or {}).get("refresh_on_read", True)
        if not refresh:
            return
        now = self.memory.now()
        for found in items:
            meta = found.metadata.get(_META)
            minutes = meta.get("ttl") if isinstance(meta, dict) else None
            if isinstance(minutes, (int, float)) and found.expires_at is not None:
                self.memory.update(
                    found.id, namespace=self.namespace, expires_at=now + timedelta(minutes=float(minutes))
                )

    def _scan(self, prefix: tuple[str, ...]) -> Iterator[MemoryItem]:
        tags = [namespace_tag(prefix)] if prefix else None
        cursor: str | None = None
        while True:
            page = self.memory.list(
                limit=_PAGE, cursor=cursor, oldest_first=True, namespace=self.namespace, kinds=_KINDS, tags_all=tags
            )
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    # -- operations --------------------------------------------------------------
    def _get(self, op: GetOp) -> Item | None:
        found = self._find(_check_namespace(op.namespace), op.key)
        if found is None:
            return None
        self._refresh([found], op.refresh_ttl)
        return self._item(found)

    def _put(self, op: PutOp) -> None:
        namespace = _check_namespace(op.namespace)
        if not isinstance(op.key, str) or not op.key:
            raise InvalidInputError("a LangGraph key must be a non-empty string")
        existing = self._find(namespace, op.key)
        if op.value is None:
            if existing is not None:
                self.memory.forget(existing.id, namespace=self.namespace, reason="langgraph delete")
            return
        if not isinstance(op.value, Mapping):
            raise InvalidInputError(f"a LangGraph value must be a dict, got {type(op.value).__name__}")
        value = dict(op.value)
        fields = self._fields if op.index is None else (list(op.index) if op.index else [])
        text = self._text(value, fields) if fields else ""
        kind = KIND if text.strip() else RAW_KIND
        content = text if text.strip() else f"{'/'.join(namespace)}/{op.key}"
        ttl = op.ttl  # BaseStore.put has applied the TTLConfig's default_ttl already
        meta: dict[str, Any] = {"namespace": list(namespace), "key": op.key, "value": value}
        if ttl is not None:
            meta["ttl"] = float(ttl)
        expires_at = self.memory.now() + timedelta(minutes=float(ttl)) if ttl is not None else None
        tags = [namespace_tag(namespace[:depth]) for depth in range(1, len(namespace) + 1)]
        fields_out: dict[str, Any] = {
            "content": content, "kind": kind, "metadata": {_META: meta}, "tags": tags, "expires_at": expires_at,
        }  # fmt: skip
        if existing is not None:
            self.memory.update(existing.id, namespace=self.namespace, reason="langgraph put", **fields_out)
        else:
            self.memory.remember(
                fields_out.pop("content"), namespace=self.namespace, thread=_thread(namespace, op.key), **fields_out
            )

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = _check_namespace(op.namespace_prefix, allow_empty=True)
        limit, offset = int(op.limit), int(op.offset)
        if limit < 0 or offset < 0:
            raise InvalidInputError("limit and offset must not be negative")
        wanted = op.filter or {}
        scored: Iterable[tuple[MemoryItem, float | None]]
        if op.query:
            depth = offset + limit
            if depth > 1000:
                raise InvalidInputError("a query search reaches at most 1000 results: lower offset + limit")
            hits = self.memory.recall(
                op.query, limit=1000 if wanted else max(depth, 1), namespace=self.namespace, kinds=[KIND],
                tags_all=[namespace_tag(prefix)] if prefix else None,
            )  # fmt: skip
            scored = ((h.item, h.score) for h in hits)
        else:
            scored = ((item, None) for item in self._scan(prefix))
        chosen: list[tuple[MemoryItem, float | None]] = []
        skipped = 0
        for found, score in scored:
            meta = found.metadata.get(_META)
            if not isinstance(meta, dict) or not matches_filter(meta.get("value"), wanted):
                continue
            if skipped < offset:
                skipped += 1
                continue
            if len(chosen) >= limit:
                break
            chosen.append((found, score))
        self._refresh([c[0] for c in chosen], op.refresh_ttl)
        return [self._item(found, score, search=True) for found, score in chosen]  # type: ignore[misc]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions: tuple[MatchCondition, ...] = op.match_conditions or ()
        prefix: tuple[str, ...] = ()
        for condition in conditions:
            if condition.match_type == "prefix" and "*" not in condition.path:
                prefix = tuple(condition.path)
                break
        seen: set[tuple[str, ...]] = set()
        for found in self._scan(prefix):
            meta = found.metadata.get(_META)
            if not isinstance(meta, dict):
                continue
            namespace = tuple(str(p) for p in meta["namespace"])
            if not all(_matches(c, namespace) for c in conditions):
                continue
            seen.add(namespace[: op.max_depth] if op.max_depth is not None else namespace)
        ordered = sorted(seen)
        return ordered[op.offset : op.offset + op.limit]

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise InvalidInputError(f"unknown store operation {type(op).__name__}")

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run operations in order; returns one result per operation (None for puts)."""
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async :meth:`batch` (runs in a worker thread)."""
        return await asyncio.to_thread(self.batch, list(ops))

    def sweep_ttl(self) -> int:
        """Delete expired memories of this store's namespace now; returns how many (reads already hide them)."""
        report = self.memory.prune(namespace=self.namespace)
        return report.memories


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(p == "*" or n == p for n, p in pairs)
