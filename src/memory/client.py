"""A Python client for ``memory serve`` (the REST API), with the methods of :class:`~memory.Memory`.

>>> from memory.client import Client
>>> mem = Client("http://127.0.0.1:8765", api_key="mk_...", namespace="default")  # doctest: +SKIP
>>> memory_id = mem.remember("Alice prefers dark mode", user="alice")                # doctest: +SKIP
>>> mem.recall("what does alice like?", user="alice")[0].content                     # doctest: +SKIP

:class:`Client` (sync) and :class:`AsyncClient` (async) are thin twins over
httpx; everything else (which route, which body, how to read the answer) is
built once by :class:`_Calls`. Results are the library's own types
(:class:`~memory.types.MemoryItem`, :class:`~memory.types.Hit`,
:class:`~memory.types.Page` …); errors come back as the :mod:`memory.errors`
class the server raised (the problem document's title), else by HTTP status;
a server that cannot be reached raises StoreUnavailableError.

What the client cannot do, because the REST API does not offer it: pass
precomputed vectors, ``created_at``, ``source_ids`` or ``extract`` to
``remember``; filter ``list`` by metadata; ``import_``; ``vector_of``;
``get_memory_context`` (use :meth:`Client.context`); ``extract``,
``end_conversation``, the tiers, graph, feedback and prompt APIs (the server
has routes for some of them; this client covers the memory, conversation,
block, context, sync and link methods); ``messages.get_thread``,
``messages.delete`` and ``messages.clear``; a custom clock, embedder or LLM
(those are the server's).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import IO, Any
from urllib.parse import quote

import httpx
from pydantic import TypeAdapter

from memory import errors
from memory.episodic.types import Block, Message, MessageHit, ThreadInfo
from memory.types import Hit, LedgerEntry, MemoryItem, Page, Stats

__all__ = ["Client", "AsyncClient", "Request", "error_for"]

_ERRORS_BY_STATUS: dict[int, type[errors.Error]] = {
    400: errors.InvalidInputError, 401: errors.AuthenticationError, 403: errors.PermissionDeniedError,
    404: errors.NotFoundError, 409: errors.EmbeddingMismatchError, 413: errors.InvalidInputError,
    422: errors.InvalidInputError, 502: errors.ProviderError, 503: errors.StorageError,
}  # fmt: skip


def error_for(status: int, body: bytes) -> errors.Error:
    """The :mod:`memory.errors` exception for an error response (problem+json title, else the status)."""
    title, detail = "", ""
    try:
        doc = json.loads(body)
        if isinstance(doc, dict):
            title, detail = str(doc.get("title") or ""), str(doc.get("detail") or "")
    except ValueError:
        detail = body.decode("utf-8", "replace")[:500]
    cls = getattr(errors, title, None)
    if not (isinstance(cls, type) and issubclass(cls, errors.Error)):
        cls = _ERRORS_BY_STATUS.get(status, errors.Error)
    return cls(detail or title or f"HTTP {status}")


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, (tuple, set, frozenset)):
        return [_json_value(v) for v in value]
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    return value


def _query_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return [_query_value(v) for v in value]
    return _json_value(value)


def _memory_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in fields.items() if v is not None}
    if "ttl" in out:
        out["ttl_seconds"] = out.pop("ttl")
    for name in ("kinds",):
        if isinstance(out.get(name), str):
            out[name] = [out[name]]
    return {k: _json_value(v) for k, v in out.items()}


@dataclass(frozen=True, slots=True)
class Request:
    """One REST call: method, path under the API, query or JSON body, and how to read the answer."""

    method: str
    path: str
    params: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    read: Any = None  # Callable[[httpx.Response], Any]


_ITEM = TypeAdapter(MemoryItem)
_HITS = TypeAdapter(list[Hit])
_ITEMS = TypeAdapter(list[MemoryItem])
_LEDGER = TypeAdapter(list[LedgerEntry])
_MESSAGE = TypeAdapter(Message)
_MESSAGES = TypeAdapter(list[Message])
_MESSAGE_HITS = TypeAdapter(list[MessageHit])
_THREADS = TypeAdapter(list[ThreadInfo])
_BLOCK = TypeAdapter(Block)
_BLOCKS = TypeAdapter(list[Block])
_STATS = TypeAdapter(Stats)


def _json(response: httpx.Response) -> Any:
    return response.json()


class _Calls:
    """Builds the requests of every method (pure: no I/O); shared by Client and AsyncClient."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace

    def _ns(self, namespace: str | None, path: str) -> str:
        return f"/v1/namespaces/{quote(namespace or self.namespace, safe='')}{path}"

    # memories
    def remember_batch(
        self, entries: Sequence[str | Mapping[str, Any]], namespace: str | None, **defaults: Any
    ) -> Request:
        if isinstance(entries, (str, bytes)) or not isinstance(entries, Sequence):
            raise errors.InvalidInputError("entries must be a list of strings or dicts")
        items = []
        for entry in entries:
            merged = {**defaults, **(dict(entry) if isinstance(entry, Mapping) else {"content": entry})}
            items.append(_memory_fields(merged))
        return Request("POST", self._ns(namespace, "/memories/batch"), body={"items": items},
                       read=lambda r: list(r.json()["ids"]))  # fmt: skip

    def recall(self, query: str, namespace: str | None, **filters: Any) -> Request:
        body = {"query": query, **_memory_fields(filters)}
        return Request("POST", self._ns(namespace, "/search"), body=body,
                       read=lambda r: _HITS.validate_python(r.json()["hits"]))  # fmt: skip

    def get(self, memory_id: str, namespace: str | None, clearance: str) -> Request:
        _check_id(memory_id)
        path = self._ns(namespace, f"/memories/{quote(memory_id, safe='')}")
        return Request("GET", path, params={"clearance": clearance}, read=lambda r: _ITEM.validate_python(r.json()))

    def update(self, memory_id: str, namespace: str | None, reason: str | None, changes: dict[str, Any]) -> Request:
        _check_id(memory_id)
        if not changes:
            raise errors.InvalidInputError("nothing to update; give the fields to change")
        body = {k: _json_value(v) for k, v in changes.items()}
        if reason is not None:
            body["reason"] = reason
        path = self._ns(namespace, f"/memories/{quote(memory_id, safe='')}")
        return Request("PATCH", path, body=body, read=lambda r: _ITEM.validate_python(r.json()))

    def forget(self, memory_id: str, namespace: str | None, reason: str | None) -> Request:
        _check_id(memory_id)
        path = self._ns(namespace, f"/memories/{quote(memory_id, safe='')}")
        params = {"reason": reason} if reason else {}
        return Request("DELETE", path, params=params, read=lambda r: int(r.json()["deleted"]))

    def forget_all(self, namespace: str | None, **scope: Any) -> Request:
        params = {"confirm": "true", **{k: _query_value(v) for k, v in scope.items() if v is not None}}
        return Request("DELETE", self._ns(namespace, "/memories"), params=params,
                       read=lambda r: int(r.json()["deleted"]))  # fmt: skip

    def list(self, namespace: str | None, **filters: Any) -> Request:
        params = {k: _query_value(v) for k, v in _memory_fields(filters).items()}
        return Request("GET", self._ns(namespace, "/memories"), params=params,
                       read=lambda r: Page(items=tuple(_ITEMS.validate_python(r.json()["items"])),
                                           next_cursor=r.json().get("next_cursor")))  # fmt: skip

    def history(self, memory_id: str, namespace: str | None, clearance: str) -> Request:
        _check_id(memory_id)
        path = self._ns(namespace, f"/memories/{quote(memory_id, safe='')}/history")
        return Request("GET", path, params={"clearance": clearance},
                       read=lambda r: _LEDGER.validate_python(r.json()["entries"]))  # fmt: skip

    def stats(self, namespace: str | None, **scope: Any) -> Request:
        params = {k: v for k, v in scope.items() if v is not None}
        return Request(
            "GET", self._ns(namespace, "/stats"), params=params, read=lambda r: _STATS.validate_python(r.json())
        )

    def namespaces(self) -> Request:
        return Request("GET", "/v1/namespaces", read=lambda r: list(r.json()["namespaces"]))

    def embed_pending(self, namespace: str | None, limit: int) -> Request:
        return Request("POST", self._ns(namespace, "/jobs/embed-pending"), body={"limit": limit},
                       read=lambda r: int(r.json()["embedded"]))  # fmt: skip

    def export(self, namespace: str | None, **filters: Any) -> Request:
        params = {k: _query_value(v) for k, v in _memory_fields(filters).items()}
        return Request("GET", self._ns(namespace, "/export"), params=params, read=lambda r: r.text)

    def context(self, observation: str, namespace: str | None, **fields: Any) -> Request:
        body = {"observation": observation, **{k: _json_value(v) for k, v in fields.items() if v is not None}}
        return Request("POST", self._ns(namespace, "/context"), body=body, read=_json)

    def operation(self, method: str, path: str, namespace: str | None, body: Any = None, params: Any = None) -> Request:
        return Request(method, self._ns(namespace, path), params=params or {}, body=body, read=_json)

    # conversations
    def append(self, thread: str, content: str, namespace: str | None, **fields: Any) -> Request:
        _check_id(thread, "thread")
        body = {"content": content, **_memory_fields(fields)}
        path = self._ns(namespace, f"/threads/{quote(thread, safe='')}/messages")
        return Request("POST", path, body=body, read=lambda r: _MESSAGE.validate_python(r.json()))

    def recent(self, thread: str, n: int, namespace: str | None, clearance: str) -> Request:
        _check_id(thread, "thread")
        path = self._ns(namespace, f"/threads/{quote(thread, safe='')}/messages")
        return Request("GET", path, params={"n": n, "clearance": clearance},
                       read=lambda r: _MESSAGES.validate_python(r.json()["messages"]))  # fmt: skip

    def search_messages(self, query: str, namespace: str | None, **filters: Any) -> Request:
        body = {"query": query, **_memory_fields(filters)}
        return Request("POST", self._ns(namespace, "/messages/search"), body=body,
                       read=lambda r: _MESSAGE_HITS.validate_python(r.json()["hits"]))  # fmt: skip

    def threads(self, namespace: str | None, **filters: Any) -> Request:
        params = {k: v for k, v in filters.items() if v is not None}
        return Request("GET", self._ns(namespace, "/threads"), params=params,
                       read=lambda r: _THREADS.validate_python(r.json()["threads"]))  # fmt: skip

    def blocks(self, namespace: str | None, **scope: Any) -> Request:
        params = {k: v for k, v in scope.items() if v is not None}
        return Request("GET", self._ns(namespace, "/blocks"), params=params,
                       read=lambda r: _BLOCKS.validate_python(r.json()["blocks"]))  # fmt: skip

    def write_block(self, label: str, value: str, mode: str, namespace: str | None, **scope: Any) -> Request:
        body = {"value": value, "mode": mode, **{k: v for k, v in scope.items() if v is not None}}
        path = self._ns(namespace, f"/blocks/{quote(label, safe='')}")
        return Request("PUT", path, body=body, read=lambda r: _BLOCK.validate_python(r.json()))


def _count_exported(text: str) -> int:
    count = 0
    for line in text.splitlines():
        if line.strip() and json.loads(line).get("type") == "memory":
            count += 1
    return count


def _check_id(value: object, what: str = "memory id") -> str:
    if not isinstance(value, str) or not value.strip():
        raise errors.InvalidInputError(f"{what} must be a non-empty string")
    return value


def _headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def _check(response: httpx.Response) -> httpx.Response:
    if response.status_code >= 300:
        raise error_for(response.status_code, response.content)
    return response


class _SyncMessages:
    """``client.messages``: the conversation log of the server (as ``Memory.messages``)."""

    def __init__(self, client: Client) -> None:
        self._c = client

    def append(self, thread: str, content: str, *, namespace: str | None = None, **fields: Any) -> Message:
        """Append a message to ``thread``; returns it with its turn number."""
        result: Message = self._c._send(self._c._calls.append(thread, content, namespace, **fields))
        return result

    def recent(
        self, thread: str, n: int = 20, *, namespace: str | None = None, clearance: str = "private"
    ) -> builtins.list[Message]:
        """The last ``n`` messages of ``thread``, oldest first."""
        result: builtins.list[Message] = self._c._send(self._c._calls.recent(thread, n, namespace, clearance))
        return result

    def search(self, query: str, *, namespace: str | None = None, **filters: Any) -> builtins.list[MessageHit]:
        """Search past messages, best first (filters: limit, thread, user, agent, roles, since, until, clearance)."""
        result: builtins.list[MessageHit] = self._c._send(self._c._calls.search_messages(query, namespace, **filters))
        return result

    def threads(self, *, namespace: str | None = None, **filters: Any) -> builtins.list[ThreadInfo]:
        """Threads of the namespace, most recently active first."""
        result: builtins.list[ThreadInfo] = self._c._send(self._c._calls.threads(namespace, **filters))
        return result


class _SyncBlocks:
    """``client.blocks``: working-memory blocks (as ``Memory.blocks``)."""

    def __init__(self, client: Client) -> None:
        self._c = client

    def all(self, *, namespace: str | None = None, user: str | None = None, agent: str | None = None) -> list[Block]:
        """The blocks of a user/agent."""
        result: list[Block] = self._c._send(self._c._calls.blocks(namespace, user=user, agent=agent))
        return result

    def replace(self, label: str, value: str, *, namespace: str | None = None, **scope: Any) -> Block:
        """Rewrite a block (scope: user, agent, reason)."""
        result: Block = self._c._send(self._c._calls.write_block(label, value, "replace", namespace, **scope))
        return result

    def append(self, label: str, value: str, *, namespace: str | None = None, **scope: Any) -> Block:
        """Add to a block (scope: user, agent, reason)."""
        result: Block = self._c._send(self._c._calls.write_block(label, value, "append", namespace, **scope))
        return result


class Client:
    """Sync client for ``memory serve``: the :class:`~memory.Memory` methods over HTTP."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        namespace: str = "default",
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """Talk to the server at ``url`` with ``api_key``; ``namespace`` is the default of every call."""
        self._calls = _Calls(namespace)
        self._http = httpx.Client(
            base_url=url.rstrip("/"), headers=_headers(api_key), timeout=timeout, transport=transport
        )
        self.messages = _SyncMessages(self)
        self.blocks = _SyncBlocks(self)

    @property
    def namespace(self) -> str:
        """The default namespace of this client."""
        return self._calls.namespace

    def _send(self, request: Request) -> Any:
        try:
            response = self._http.request(
                request.method, request.path, params=request.params or None,
                json=request.body if request.body is not None else None,
            )  # fmt: skip
        except (TypeError, ValueError) as exc:  # not JSON: unsupported types, NaN, lone surrogates
            raise errors.InvalidInputError(f"cannot send this request as JSON: {exc}") from None
        except httpx.TransportError as exc:
            raise errors.StoreUnavailableError(
                f"cannot reach the memory server at {self._http.base_url}: {exc}"
            ) from exc
        return request.read(_check(response))

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def remember(
        self, content: str | Sequence[str | Mapping[str, Any]], *, namespace: str | None = None, **fields: Any
    ) -> Any:
        """Store a memory (or a batch); returns its id (or ids, in order). See :meth:`memory.Memory.remember`."""
        if isinstance(content, str):
            return self._send(self._calls.remember_batch([content], namespace, **fields))[0]
        return self.remember_batch(content, namespace=namespace, **fields)

    def remember_batch(
        self, entries: Sequence[str | Mapping[str, Any]], *, namespace: str | None = None, **defaults: Any
    ) -> builtins.list[str]:
        """Store many memories in one transaction; returns their ids in order."""
        result: builtins.list[str] = self._send(self._calls.remember_batch(entries, namespace, **defaults))
        return result

    def recall(self, query: str, *, namespace: str | None = None, **filters: Any) -> builtins.list[Hit]:
        """The memories most relevant to ``query``, best first (filters as :meth:`memory.Memory.recall`)."""
        result: builtins.list[Hit] = self._send(self._calls.recall(query, namespace, **filters))
        return result

    def get(self, memory_id: str, *, namespace: str | None = None, clearance: str = "private") -> MemoryItem:
        """The memory with this id. Raises NotFoundError."""
        result: MemoryItem = self._send(self._calls.get(memory_id, namespace, clearance))
        return result

    def update(
        self, memory_id: str, *, namespace: str | None = None, reason: str | None = None, **changes: Any
    ) -> MemoryItem:
        """Change fields of a memory; returns the updated item."""
        result: MemoryItem = self._send(self._calls.update(memory_id, namespace, reason, changes))
        return result

    def forget(self, memory_id: str | Sequence[str], *, namespace: str | None = None, reason: str | None = None) -> int:
        """Delete a memory (or several); returns how many were deleted."""
        ids = [memory_id] if isinstance(memory_id, str) else list(memory_id)
        return sum(int(self._send(self._calls.forget(one, namespace, reason))) for one in ids)

    def forget_all(self, *, namespace: str | None = None, **scope: Any) -> int:
        """Delete every memory of a scope (user, agent, thread, reason); returns how many."""
        result: int = self._send(self._calls.forget_all(namespace, **scope))
        return result

    def list(self, *, namespace: str | None = None, **filters: Any) -> Page:
        """A page of memories, newest first; pass ``cursor=page.next_cursor`` for the next."""
        result: Page = self._send(self._calls.list(namespace, **filters))
        return result

    def iter_all(self, *, namespace: str | None = None, **filters: Any) -> Iterator[MemoryItem]:
        """Every memory matching ``filters``, following the pages."""
        cursor: str | None = None
        while True:
            page = self.list(namespace=namespace, cursor=cursor, **filters)
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def history(
        self, memory_id: str, *, namespace: str | None = None, clearance: str = "private"
    ) -> builtins.list[LedgerEntry]:
        """Every recorded change of a memory, oldest first. Raises NotFoundError."""
        result: builtins.list[LedgerEntry] = self._send(self._calls.history(memory_id, namespace, clearance))
        return result

    def stats(self, *, namespace: str | None = None, **scope: Any) -> Stats:
        """Counts of memories in a scope."""
        result: Stats = self._send(self._calls.stats(namespace, **scope))
        return result

    def namespaces(self) -> builtins.list[str]:
        """The namespaces the API key may see that hold memories."""
        result: builtins.list[str] = self._send(self._calls.namespaces())
        return result

    def embed_pending(self, *, namespace: str | None = None, limit: int = 1000) -> int:
        """Embed memories left without a vector; returns how many."""
        result: int = self._send(self._calls.embed_pending(namespace, limit))
        return result

    def export(self, stream: IO[str], *, namespace: str | None = None, **filters: Any) -> int:
        """Write the JSONL export to ``stream``; returns how many memories."""
        text: str = self._send(self._calls.export(namespace, **filters))
        stream.write(text)
        return _count_exported(text)

    def context(self, observation: str, *, namespace: str | None = None, **fields: Any) -> dict[str, Any]:
        """The context for the next model call: ``{"messages": [...], "trace": {...}}`` (fields: budget_tokens, …)."""
        result: dict[str, Any] = self._send(self._calls.context(observation, namespace, **fields))
        return result

    def run_sync(self, *, namespace: str | None = None, dry_run: bool = False) -> dict[str, Any]:
        """Run the episodic→semantic sync job on the server; returns its report."""
        out: dict[str, Any] = self._send(self._calls.operation("POST", "/jobs/sync", namespace, {"dry_run": dry_run}))
        return dict(out["result"])

    def link(
        self, memory_id: str, target: str, type: str = "relates_to", *, namespace: str | None = None
    ) -> dict[str, Any]:
        """Link two memories with a typed edge; returns the link."""
        path = f"/memories/{quote(memory_id, safe='')}/links"
        result: dict[str, Any] = self._send(
            self._calls.operation("POST", path, namespace, {"target": target, "type": type})
        )
        return result


class _AsyncMessages:
    """``client.messages`` of :class:`AsyncClient`."""

    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def append(self, thread: str, content: str, *, namespace: str | None = None, **fields: Any) -> Message:
        """Append a message to ``thread``."""
        result: Message = await self._c._send(self._c._calls.append(thread, content, namespace, **fields))
        return result

    async def recent(
        self, thread: str, n: int = 20, *, namespace: str | None = None, clearance: str = "private"
    ) -> builtins.list[Message]:
        """The last ``n`` messages of ``thread``, oldest first."""
        result: builtins.list[Message] = await self._c._send(self._c._calls.recent(thread, n, namespace, clearance))
        return result

    async def search(self, query: str, *, namespace: str | None = None, **filters: Any) -> builtins.list[MessageHit]:
        """Search past messages, best first."""
        result: builtins.list[MessageHit] = await self._c._send(
            self._c._calls.search_messages(query, namespace, **filters)
        )
        return result

    async def threads(self, *, namespace: str | None = None, **filters: Any) -> builtins.list[ThreadInfo]:
        """Threads of the namespace."""
        result: builtins.list[ThreadInfo] = await self._c._send(self._c._calls.threads(namespace, **filters))
        return result


class AsyncClient:
    """Async twin of :class:`Client` (same methods, awaitable)."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        namespace: str = "default",
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """Talk to the server at ``url`` with ``api_key``; ``namespace`` is the default of every call."""
        self._calls = _Calls(namespace)
        self._http = httpx.AsyncClient(
            base_url=url.rstrip("/"), headers=_headers(api_key), timeout=timeout, transport=transport
        )
        self.messages = _AsyncMessages(self)

    @property
    def namespace(self) -> str:
        """The default namespace of this client."""
        return self._calls.namespace

    async def _send(self, request: Request) -> Any:
        try:
            response = await self._http.request(
                request.method, request.path, params=request.params or None,
                json=request.body if request.body is not None else None,
            )  # fmt: skip
        except (TypeError, ValueError) as exc:  # not JSON: unsupported types, NaN, lone surrogates
            raise errors.InvalidInputError(f"cannot send this request as JSON: {exc}") from None
        except httpx.TransportError as exc:
            raise errors.StoreUnavailableError(
                f"cannot reach the memory server at {self._http.base_url}: {exc}"
            ) from exc
        return request.read(_check(response))

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def remember(
        self, content: str | Sequence[str | Mapping[str, Any]], *, namespace: str | None = None, **fields: Any
    ) -> Any:
        """Store a memory (or a batch); returns its id (or ids)."""
        if isinstance(content, str):
            return (await self._send(self._calls.remember_batch([content], namespace, **fields)))[0]
        return await self.remember_batch(content, namespace=namespace, **fields)

    async def remember_batch(
        self, entries: Sequence[str | Mapping[str, Any]], *, namespace: str | None = None, **defaults: Any
    ) -> builtins.list[str]:
        """Store many memories in one transaction."""
        result: builtins.list[str] = await self._send(self._calls.remember_batch(entries, namespace, **defaults))
        return result

    async def recall(self, query: str, *, namespace: str | None = None, **filters: Any) -> builtins.list[Hit]:
        """The memories most relevant to ``query``, best first."""
        result: builtins.list[Hit] = await self._send(self._calls.recall(query, namespace, **filters))
        return result

    async def get(self, memory_id: str, *, namespace: str | None = None, clearance: str = "private") -> MemoryItem:
        """The memory with this id."""
        result: MemoryItem = await self._send(self._calls.get(memory_id, namespace, clearance))
        return result

    async def update(
        self, memory_id: str, *, namespace: str | None = None, reason: str | None = None, **changes: Any
    ) -> MemoryItem:
        """Change fields of a memory."""
        result: MemoryItem = await self._send(self._calls.update(memory_id, namespace, reason, changes))
        return result

    async def forget(
        self, memory_id: str | Sequence[str], *, namespace: str | None = None, reason: str | None = None
    ) -> int:
        """Delete a memory (or several); returns how many."""
        ids = [memory_id] if isinstance(memory_id, str) else list(memory_id)
        return sum([int(await self._send(self._calls.forget(one, namespace, reason))) for one in ids])

    async def forget_all(self, *, namespace: str | None = None, **scope: Any) -> int:
        """Delete every memory of a scope."""
        result: int = await self._send(self._calls.forget_all(namespace, **scope))
        return result

    async def list(self, *, namespace: str | None = None, **filters: Any) -> Page:
        """A page of memories, newest first."""
        result: Page = await self._send(self._calls.list(namespace, **filters))
        return result

    async def iter_all(self, *, namespace: str | None = None, **filters: Any) -> AsyncIterator[MemoryItem]:
        """Every memory matching ``filters``, following the pages."""
        cursor: str | None = None
        while True:
            page = await self.list(namespace=namespace, cursor=cursor, **filters)
            for item in page.items:
                yield item
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def history(
        self, memory_id: str, *, namespace: str | None = None, clearance: str = "private"
    ) -> builtins.list[LedgerEntry]:
        """Every recorded change of a memory."""
        result: builtins.list[LedgerEntry] = await self._send(self._calls.history(memory_id, namespace, clearance))
        return result

    async def stats(self, *, namespace: str | None = None, **scope: Any) -> Stats:
        """Counts of memories in a scope."""
        result: Stats = await self._send(self._calls.stats(namespace, **scope))
        return result

    async def namespaces(self) -> builtins.list[str]:
        """The namespaces the API key may see."""
        result: builtins.list[str] = await self._send(self._calls.namespaces())
        return result

    async def embed_pending(self, *, namespace: str | None = None, limit: int = 1000) -> int:
        """Embed memories left without a vector."""
        result: int = await self._send(self._calls.embed_pending(namespace, limit))
        return result

    async def export(self, stream: IO[str], *, namespace: str | None = None, **filters: Any) -> int:
        """Write the JSONL export to ``stream``; returns how many memories."""
        text: str = await self._send(self._calls.export(namespace, **filters))
        stream.write(text)
        return _count_exported(text)

    async def context(self, observation: str, *, namespace: str | None = None, **fields: Any) -> dict[str, Any]:
        """The context for the next model call."""
        result: dict[str, Any] = await self._send(self._calls.context(observation, namespace, **fields))
        return result

    async def run_sync(self, *, namespace: str | None = None, dry_run: bool = False) -> dict[str, Any]:
        """Run the sync job on the server."""
        out: dict[str, Any] = await self._send(
            self._calls.operation("POST", "/jobs/sync", namespace, {"dry_run": dry_run})
        )
        return dict(out["result"])

    async def link(
        self, memory_id: str, target: str, type: str = "relates_to", *, namespace: str | None = None
    ) -> dict[str, Any]:
        """Link two memories."""
        path = f"/memories/{quote(memory_id, safe='')}/links"
        result: dict[str, Any] = await self._send(
            self._calls.operation("POST", path, namespace, {"target": target, "type": type})
        )
        return result
