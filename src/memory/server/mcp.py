"""The MCP server (official SDK, low-level ``Server``), derived from :mod:`memory.server.ops`.

Tools are the registry's operations with ``mcp=True``: input schema = the
operation's pydantic model (plus an optional ``namespace``), output schema =
its result model, the result both as JSON text and as structured content.
Errors come back as tool results with ``isError`` and the message of the
:mod:`memory.errors` exception. Resources are :data:`~memory.server.ops.RESOURCES`.

Over stdio the caller is the local user (:func:`local_caller`); over
streamable HTTP each request's API key decides (see :mod:`memory.server.auth`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, MutableMapping
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS
from pydantic import BaseModel

from memory import __version__, verbose
from memory.errors import AuthenticationError, Error, PermissionDeniedError
from memory.keys import Caller
from memory.memory import Memory
from memory.server import descriptors
from memory.server.auth import Authenticator
from memory.server.ops import OPERATIONS, RESOURCES, ResourceSpec, invoke, tool_schema
from memory.server.problems import PROBLEM_TYPE, problem_for
from memory.server.rest import BodyLimit

__all__ = ["build_server", "http_app", "tool_schema", "local_caller", "INSTRUCTIONS"]

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Long-term memory. Call `recall` before answering questions about the user or earlier conversations; "
    "call `remember` for durable facts and preferences worth keeping (one fact per call); `update` or "
    "`forget` when something changes or is wrong. Memories are scoped by namespace and optionally by "
    "user, agent and thread."
)

CallerFor = Callable[[Any], Caller]


def local_caller(namespace: str, *, allow_secrets: bool = False, read_only: bool = False) -> Caller:
    """The caller of a local (stdio or --no-auth) server: every namespace, default ``namespace``."""
    return Caller(
        namespaces=None,
        clearance="secret" if allow_secrets else "private",
        read_only=read_only,
        default_namespace=namespace,
    )


def _template_regex(template: str) -> re.Pattern[str]:
    parts = re.split(r"({\w+})", template)
    pattern = "".join(f"(?P<{p[1:-1]}>[^/]+)" if p.startswith("{") else re.escape(p) for p in parts)
    return re.compile(f"^{pattern}$")


def _dump(result: Any) -> Any:
    return result.model_dump(mode="json") if isinstance(result, BaseModel) else result


def _error_text(exc: Error) -> str:
    return f"{type(exc).__name__}: {exc}"


def build_server(mem: Memory, caller_for: CallerFor) -> Server[Any]:
    """An MCP server over ``mem``; ``caller_for(ctx)`` names the caller of each request."""
    tools = [op for op in OPERATIONS.values() if op.mcp]
    resources = [(spec, _template_regex(spec.uri)) for spec in RESOURCES]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=op.name,
                    description=op.description,
                    input_schema=tool_schema(op),
                    output_schema=op.result.model_json_schema() if isinstance(op.result, type) and issubclass(
                        op.result, BaseModel) else None,
                    annotations=types.ToolAnnotations(read_only_hint=not op.write, destructive_hint=op.destructive),
                )
                for op in tools
            ]
        )  # fmt: skip

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        op = OPERATIONS.get(params.name)
        if op is None or not op.mcp:
            return _tool_error(f"unknown tool {params.name!r}; call tools/list for the tools")
        arguments = dict(params.arguments or {})
        namespace = arguments.pop("namespace", None) if op.scoped else None
        verbose.request(
            "mcp", f"tools/call {op.name}", {**arguments, **({"namespace": namespace} if namespace else {})}
        )
        try:
            if namespace is not None and not isinstance(namespace, str):
                return _tool_error("InvalidInputError: namespace must be a string")
            caller = caller_for(ctx)
            # abandon_on_cancel: a shutdown does not wait for a computing call (its transaction is not committed)
            result = await anyio.to_thread.run_sync(
                lambda: invoke(mem, op, caller, arguments, namespace), abandon_on_cancel=True
            )
        except Error as exc:
            verbose.response("mcp", f"tools/call {op.name}", {"isError": True, "text": _error_text(exc)})
            return _tool_error(_error_text(exc))
        except Exception:
            log.exception("tool %s failed unexpectedly", op.name)
            return _tool_error(f"internal error in {op.name}; see the server log")
        data = _dump(result)
        verbose.response("mcp", f"tools/call {op.name}", data)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
            structured_content=data,
        )

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(uri=s.uri, name=s.name, description=s.description, mime_type="application/json")
                for s, _ in resources
                if "{" not in s.uri
            ]
            + [
                types.Resource(
                    uri=descriptors.uri(name), name=f"{descriptors.VERSION}/{name}", mime_type=descriptors.MIME,
                    description=f"JSON Schema of {resource}: {description}",
                )
                for name, (resource, _, _, description) in descriptors.DESCRIPTORS.items()
            ]
        )  # fmt: skip

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=s.uri, name=s.name, description=s.description, mime_type="application/json"
                )
                for s, _ in resources
                if "{" in s.uri
            ]
        )

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri.startswith(descriptors.URI_PREFIX):
            name = uri.removeprefix(descriptors.URI_PREFIX)
            if name in descriptors.DESCRIPTORS:
                verbose.request("mcp", "resources/read", uri)
                text = descriptors.load(name)
                return types.ReadResourceResult(
                    contents=[types.TextResourceContents(uri=uri, mime_type=descriptors.MIME, text=text)]
                )
        for spec, pattern in resources:
            match = pattern.match(uri)
            if match:
                return await _read(spec, match.groupdict(), uri, ctx)
        raise MCPError(code=INVALID_PARAMS, message=f"unknown resource {uri}", data={"uri": uri})

    async def _read(spec: ResourceSpec, values: dict[str, str], uri: str, ctx: Any) -> types.ReadResourceResult:
        op = OPERATIONS[spec.operation]
        namespace = values.pop("namespace", None)
        verbose.request("mcp", "resources/read", uri)
        try:
            caller = caller_for(ctx)
            result = await anyio.to_thread.run_sync(
                lambda: invoke(mem, op, caller, values, namespace), abandon_on_cancel=True
            )
        except Error as exc:
            raise MCPError(code=INVALID_PARAMS, message=_error_text(exc), data={"uri": uri}) from None
        text = json.dumps(_dump(result), ensure_ascii=False)
        verbose.response("mcp", "resources/read", text)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=text)]
        )

    return Server(
        "memory",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


def _tool_error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


class _RequireKey:
    """ASGI middleware: 401/403 problem responses before the MCP transport for requests without a usable key."""

    def __init__(self, app: Any, auth: Authenticator) -> None:
        self.app = app
        self.auth = auth

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            try:
                await anyio.to_thread.run_sync(lambda: self.auth.caller(headers))
            except (AuthenticationError, PermissionDeniedError) as exc:
                status, body = problem_for(exc)
                await send({
                    "type": "http.response.start", "status": status,
                    "headers": [(b"content-type", PROBLEM_TYPE.encode()), (b"www-authenticate", b"Bearer")],
                })  # fmt: skip
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def http_app(mem: Memory, auth: Authenticator, *, host: str = "127.0.0.1", max_body_bytes: int = 8_388_608) -> Any:
    """The streamable-HTTP ASGI app (MCP endpoint at ``/mcp``), every request authenticated by ``auth``."""

    def caller_for(ctx: Any) -> Caller:
        request = getattr(ctx, "request", None)
        headers = {k.lower(): v for k, v in request.headers.items()} if request is not None else {}
        return auth.caller(headers)

    server = build_server(mem, caller_for)
    app = server.streamable_http_app(streamable_http_path="/mcp", host=host, max_request_body_size=max_body_bytes)
    return BodyLimit(_RequireKey(app, auth), max_body_bytes)


def run_stdio(mem: Memory, caller: Caller) -> None:
    """Serve MCP over stdin/stdout until the client closes the stream."""
    from mcp.server.stdio import stdio_server

    server = build_server(mem, lambda ctx: caller)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)
