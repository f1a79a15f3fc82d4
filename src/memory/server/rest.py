"""The REST API (FastAPI), derived from :data:`memory.server.ops.OPERATIONS`.

Layout: ``/v1/namespaces`` lists namespaces; everything else lives under
``/v1/namespaces/{namespace}/…`` — the namespace is named in the URL and
checked against the API key's scope before anything runs. Errors are
``application/problem+json`` (RFC 9457). OpenAPI at ``/openapi.json``,
docs at ``/docs``; ``/healthz`` needs no key.
"""

from __future__ import annotations

import gc
import inspect
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping
from contextlib import asynccontextmanager
from typing import Annotated, Any

import anyio
from fastapi import Body, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, create_model
from pydantic.fields import FieldInfo
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from memory import __version__, limits, verbose
from memory.config import ServerSettings
from memory.errors import Error, InvalidInputError
from memory.memory import Memory
from memory.server.auth import Authenticator
from memory.server.cache import AnswerCache
from memory.server.models import InputModel, text_input
from memory.server.ops import OPERATIONS, Operation, invoke
from memory.server.problems import PROBLEM_TYPE, Problem, problem_body, problem_for
from memory.server.warm import WarmUp

__all__ = ["create_app", "BodyLimit", "API_PREFIX"]

log = logging.getLogger(__name__)

API_PREFIX = "/v1"
_PATH_VAR = re.compile(r"{(\w+)}")
#: How a request carries its API key, as the OpenAPI document declares it. Only documented: the
#: operation reads the key from the headers itself (:class:`~memory.server.auth.Authenticator`), so no
#: FastAPI security dependency runs per request (two of them cost 0.05-0.1 ms of the event loop's time each).
_SECURITY_SCHEMES: dict[str, dict[str, str]] = {
    "HTTPBearer": {
        "type": "http", "scheme": "bearer",
        "description": "Authorization: Bearer <API key from `memory keys create`>",
    },
    "APIKeyHeader": {
        "type": "apiKey", "in": "header", "name": "X-API-Key", "description": "The API key, as an alternative header",
    },
}  # fmt: skip
_SECURITY: list[dict[str, list[str]]] = [{name: []} for name in _SECURITY_SCHEMES]
_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": Problem, "content": {PROBLEM_TYPE: {}}, "description": text}
    for status, text in (
        (400, "Malformed request"), (401, "Missing or invalid API key"), (403, "Namespace or operation not allowed"),
        (404, "Not found"), (413, "Request body too large"), (422, "Invalid input"),
    )
}  # fmt: skip

ASGIApp = Callable[[MutableMapping[str, Any], Any, Any], Awaitable[None]]


class BodyLimit:
    """ASGI middleware: refuse request bodies above ``max_bytes`` with 413 (by Content-Length or as streamed)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        """Wrap ``app``."""
        self.app = app
        self.max_bytes = max_bytes

    async def _reject(self, send: Any) -> None:
        body = problem_body(413, "Payload Too Large", f"request bodies are limited to {self.max_bytes} bytes")
        headers = [(b"content-type", PROBLEM_TYPE.encode()), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        """Serve one request."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    too_big = int(value) > self.max_bytes
                except ValueError:
                    too_big = True
                if too_big:
                    await self._reject(send)
                    return
        seen = 0
        rejected = False

        async def limited_receive() -> Any:
            nonlocal seen, rejected
            message = await receive()
            if message["type"] == "http.request" and not rejected:
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    rejected = True  # the app has not answered yet: it is still reading the body
                    await self._reject(send)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Any) -> None:
            if not rejected:
                await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except Exception:
            if not rejected:
                raise


def _json_bytes(result: Any) -> bytes:
    if isinstance(result, BaseModel):
        return result.model_dump_json().encode()
    return json.dumps(result).encode()


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def _problem_response(status: int, body: bytes, headers: Mapping[str, str] | None = None) -> Response:
    return Response(body, status_code=status, media_type=PROBLEM_TYPE, headers=headers)


def _string_rules(field: FieldInfo) -> dict[str, Any]:
    """The length and pattern constraints of a model field, for the path parameter that carries it."""
    rules: dict[str, Any] = {}
    for meta in field.metadata:
        for name in ("min_length", "max_length", "pattern"):
            value = getattr(meta, name, None)
            if value is not None:
                rules[name] = value
    return rules


def _route(app: FastAPI, mem: Memory, auth: Authenticator, op: Operation, answers: AnswerCache, warm: WarmUp) -> None:
    op = answers.wrap(op)  # stats/sync_status: reused when the client sends Cache-Control: max-age
    op = warm.wrap(op)  # recall/context arriving while their namespace is warmed wait for that work
    assert op.rest is not None
    rest = op.rest
    path_vars = _PATH_VAR.findall(rest.path)
    rest_fields = {n: f for n, f in op.params.model_fields.items() if n not in path_vars}
    in_query = rest.method in ("GET", "DELETE")
    payload_model: type[BaseModel] | None = None
    if rest_fields:
        payload_model = (
            op.params
            if not path_vars
            else create_model(  # type: ignore[call-overload]
                f"{_camel(op.name)}{'Query' if in_query else 'Body'}",
                __base__=InputModel,  # extra="forbid" and the input checks of every operation's model
                __doc__=op.params.__doc__,
                **{n: (f.annotation, f) for n, f in rest_fields.items()},
            )
        )
        if in_query:  # a query string's values are text: "true" is a boolean there (a JSON body's must be true)
            payload_model = text_input(payload_model)
    repeatable = {n for n, f in rest_fields.items() if "list[" in str(f.annotation)}
    P = inspect.Parameter
    parameters = [
        P("request", P.KEYWORD_ONLY, annotation=Request),
    ]
    if op.scoped:
        ns_path = Path(
            description="The namespace (tenant); the API key must be scoped to it.",
            min_length=1, max_length=limits.MAX_NAME_CHARS, pattern=limits.NAME_PATTERN,
        )  # fmt: skip
        parameters.append(P("namespace", P.KEYWORD_ONLY, annotation=Annotated[str, ns_path]))
    for var in path_vars:
        field = op.params.model_fields[var]
        path = Path(description=field.description, **_string_rules(field))
        parameters.append(P(var, P.KEYWORD_ONLY, annotation=Annotated[str, path]))
    if payload_model is not None:
        marker = Query() if in_query else Body()
        parameters.append(P("payload", P.KEYWORD_ONLY, annotation=Annotated[payload_model, marker]))

    def serve(headers: Mapping[str, str], values: dict[str, Any], namespace: str | None) -> Response:
        started = time.perf_counter()
        name = f"{rest.method} {op.name}"
        verbose.request("rest", name, {**values, **({"namespace": namespace} if namespace else {})})
        try:
            result, timing = answers.serving(headers, lambda: invoke(mem, op, auth.caller(headers), values, namespace))
        except Error as exc:
            verbose.response("rest", name, {"error": type(exc).__name__, "detail": str(exc)})
            raise
        # Server-Timing: the operation's own time (auth + library call), readable by the inspector and benches.
        timing["Server-Timing"] = f'op;dur={(time.perf_counter() - started) * 1000:.1f};desc="{op.name}"'
        if isinstance(result, str):
            verbose.response("rest", name, result)
            return Response(result, media_type=rest.media_type, status_code=rest.status, headers=timing)
        # Serialised here, in the worker thread, from the operation's own result model.
        body = _json_bytes(result)
        verbose.response("rest", f"{name} {rest.status}", body)
        return Response(body, media_type="application/json", status_code=rest.status, headers=timing)

    async def endpoint(**kwargs: Any) -> Response:
        request: Request = kwargs["request"]
        if in_query:  # ?user=a&user=b names one user twice: refused, not the last one taken
            seen: set[str] = set()
            for key, _ in request.query_params.multi_items():
                if key in seen and key not in repeatable:
                    raise InvalidInputError(f"query parameter {key!r} is given more than once")
                seen.add(key)
        payload = kwargs.get("payload")
        values = payload.model_dump(exclude_unset=True) if payload is not None else {}
        values.update({var: kwargs[var] for var in path_vars})
        # One hop to a worker thread per request: authentication and the Memory call both block.
        return await anyio.to_thread.run_sync(serve, request.headers, values, kwargs.get("namespace"))

    endpoint.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    endpoint.__name__ = op.name
    prefix = f"{API_PREFIX}/namespaces/{{namespace}}" if op.scoped else API_PREFIX
    is_text = op.result is str
    app.add_api_route(
        prefix + rest.path,
        endpoint,
        methods=[rest.method],
        status_code=rest.status,
        response_model=None if is_text else op.result,
        response_class=Response if is_text else JSONResponse,
        responses={**_ERRORS, **({200: {"content": {rest.media_type: {}}}} if is_text else {})},
        operation_id=op.name,
        openapi_extra={"security": _SECURITY},
        summary=op.description.split(". ")[0].rstrip("."),
        description=op.description,
        tags=list(op.tags),
    )


def _complete_openapi(app: FastAPI) -> None:
    """Add to the OpenAPI document the API key's security schemes and the links between operations.

    Links lead from every operation whose answer carries an ``id`` to the
    operations on ``{path}/{id}``: ``POST /memories`` answers ``{"id": ...}``; its links lead to get, update,
    forget, history and links of that memory, so stateful clients and fuzzers
    (schemathesis) can follow a created resource through its life.
    """
    base_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = base_openapi()
        schema.setdefault("components", {})["securitySchemes"] = _SECURITY_SCHEMES
        paths: dict[str, dict[str, Any]] = schema.get("paths", {})
        for path, methods in paths.items():
            for method, operation in methods.items():
                if method != "post":
                    continue
                for status, response in operation.get("responses", {}).items():
                    ref = response.get("content", {}).get("application/json", {}).get("schema", {}).get("$ref", "")
                    model = schema.get("components", {}).get("schemas", {}).get(ref.rsplit("/", 1)[-1], {})
                    if not status.startswith("2") or "id" not in model.get("properties", {}):
                        continue
                    links = {}
                    for target, target_methods in paths.items():
                        if not target.startswith(f"{path}/{{id}}"):
                            continue
                        for target_op in target_methods.values():
                            parameters = {"id": "$response.body#/id"}
                            if "{namespace}" in target:
                                parameters["namespace"] = "$request.path.namespace"
                            name = f"{target_op['operationId']}"
                            links[name] = {"operationId": target_op["operationId"], "parameters": parameters}
                    if links:
                        response["links"] = links
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _allowed_methods(app: FastAPI, scope: MutableMapping[str, Any]) -> list[str]:
    """Every method some route serves at the request's path (the ``Allow`` header of a 405)."""
    methods: set[str] = set()
    for route in app.router.routes:
        match, _ = route.matches({**scope, "method": "GET"})
        if match is not Match.NONE:
            methods.update(getattr(route, "methods", None) or ())
    return sorted(methods)


def create_app(mem: Memory, auth: Authenticator, settings: ServerSettings | None = None) -> FastAPI:
    """The REST application over ``mem`` (which the caller keeps open and closes)."""
    settings = settings or mem.settings.server
    threads = settings.threads

    warm = WarmUp(mem)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Requests run in worker threads; a few avoid GIL and lock convoys under many clients.
        anyio.to_thread.current_default_thread_limiter().total_tokens = threads
        warm.start()  # first search/context not cold: the default namespace before accepting, the rest after
        if settings.warm_wait > 0:
            await anyio.to_thread.run_sync(warm.wait_ready, settings.warm_wait)
            # What startup loaded lives as long as the server: collect once and move it out of the
            # collector's view, so a full collection does not walk it during a user's first requests.
            gc.collect()
            gc.freeze()
        try:
            yield
        finally:
            warm.stop()

    app = FastAPI(
        lifespan=lifespan,
        title="memory",
        version=__version__,
        description=(
            "Long-term memory for LLM agents. Every namespaced route needs an API key scoped to that "
            "namespace (`memory keys create --namespace NS`), sent as `Authorization: Bearer <key>`."
        ),
    )

    app.state.warm_up = warm  # its times and ``done`` event, for tests and diagnostics

    @app.exception_handler(Error)
    async def _memory_error(request: Request, exc: Error) -> Response:
        status, body = problem_for(exc)
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        return _problem_response(status, body, headers)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> Response:
        errors = exc.errors()
        malformed = any(e.get("type") == "json_invalid" for e in errors)
        status = 400 if malformed else 422
        parts = ["/".join(str(p) for p in e.get("loc", ())) + f": {e.get('msg')}" for e in errors[:5]]
        body = problem_body(
            status, "Malformed JSON" if malformed else "Invalid input", "; ".join(parts),
            slug="malformed" if malformed else "invalid-input",
        )  # fmt: skip
        return _problem_response(status, body)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        detail = exc.detail if isinstance(exc.detail, str) else None
        headers = exc.headers
        if exc.status_code == 405:  # Starlette names the first matching route's methods only: name them all
            headers = {**(headers or {}), "Allow": ", ".join(_allowed_methods(app, request.scope))}
        return _problem_response(exc.status_code, problem_body(exc.status_code, detail or "Error", detail), headers)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error serving %s %s", request.method, request.url.path)
        return _problem_response(
            500, problem_body(500, "Internal Server Error", "unexpected error; see the server log")
        )

    @app.get("/healthz", tags=["health"], summary="Liveness check (no key needed)")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    answers = AnswerCache()
    for op in OPERATIONS.values():
        if op.rest is not None:
            _route(app, mem, auth, op, answers, warm)

    _complete_openapi(app)
    if settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST", "PATCH", "DELETE"],
            allow_headers=["Authorization", "X-API-Key", "Content-Type"],
        )
    from memory.server.ui import mount_ui  # the web inspector at /ui (issue 21)

    mount_ui(app, keys_required=auth.require_keys)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    return app
