"""Server commands: ``memory serve`` (REST), ``memory mcp`` (stdio or streamable HTTP), ``memory keys``."""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import click

from memory.cli.common import build_settings, emit_json, global_options, info, json_option, print_table
from memory.config import ServerSettings, Settings
from memory.errors import ConfigError, NotFoundError

__all__ = ["serve", "mcp", "keys"]


def _server_settings(settings: Settings, **overrides: Any) -> ServerSettings:
    values = {k: v for k, v in overrides.items() if v is not None and v != ()}
    return settings.server.model_copy(update=values)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_no_auth(host: str, no_auth: bool) -> None:
    if no_auth and not _is_loopback(host):
        raise ConfigError(f"--no-auth serves without API keys; it is allowed on a loopback host only, not {host}")


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit this; without it keep-alive responses wait ~40 ms (Nagle + delayed ACK).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _run_uvicorn(app: Any, host: str, port: int, what: str) -> None:
    sock = _bind(host, port)
    shown = f"[{host}]" if ":" in host else host
    serve_on(app, sock, f"{what} listening on http://{shown}:{sock.getsockname()[1]}")


def serve_on(app: Any, sock: socket.socket, ready_line: str, on_ready: Callable[[], object] | None = None) -> None:
    """Run ``app`` with uvicorn on the bound ``sock``; print ``ready_line`` once the app is ready.

    Ready means the app's startup is done (the warm-up of the default
    namespace, ``server.warm_wait``): connections made before wait in the
    socket's backlog and are served then, so the line says when a request is
    served warm. ``on_ready`` (e.g. opening a browser) runs after the line.
    """
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="auto", timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)

    def announce() -> None:
        while not server.started:
            if server.should_exit:
                return
            time.sleep(0.005)
        info(ready_line)
        sys.stderr.flush()
        if on_ready is not None:
            on_ready()

    threading.Thread(target=announce, name="memory-announce", daemon=True).start()
    server.run(sockets=[sock])
    _exit_if_busy()


def _exit_if_busy(grace: float = 1.0) -> None:
    """After a shutdown (SIGTERM/SIGINT), end the process now if requests still compute in worker threads.

    uvicorn cancels what is still running after its graceful timeout, but a
    request computing in a worker thread cannot be cancelled and Python waits
    for it at exit: the server would ignore SIGTERM until it is done. Its
    transaction is not committed (SQLite and PostgreSQL roll it back), so the
    process ends without waiting.
    """
    deadline = time.monotonic() + grace
    busy = [t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon]
    for thread in busy:
        thread.join(max(0.0, deadline - time.monotonic()))
    busy = [t for t in busy if t.is_alive()]
    if busy:
        info(f"stopping with {len(busy)} request(s) still computing; their changes are not committed")
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(0)


def _authenticator(mem: Any, require_keys: bool, allow_secrets: bool) -> Any:
    from memory.backends.keys import open_key_store
    from memory.server.auth import Authenticator
    from memory.server.mcp import local_caller

    store = open_key_store(mem.backend)
    if require_keys and not any(key.active for key in store.list()):
        info("warning: no API keys exist yet, every request will get 401; create one with `memory keys create`")
    return Authenticator(
        store=store,
        require_keys=require_keys,
        local=local_caller(mem.namespace, allow_secrets=allow_secrets),
    )


def _need_server_extra() -> None:
    try:
        import fastapi  # noqa: F401
        import mcp as _mcp  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            f"the servers need the 'server' extra: pip install 'llm-agent-memory[server]' ({exc})"
        ) from None


_HOST = click.option("--host", metavar="HOST", help="Address to listen on (default 127.0.0.1).")
_NO_AUTH = click.option(
    "--no-auth", is_flag=True,
    help="Serve requests without an API key as the local user (all namespaces). Loopback only; for development.",
)  # fmt: skip
_SECRETS = click.option(
    "--allow-secrets", is_flag=True,
    help="Give the local (key-less) caller clearance for secret memories. Keys carry their own flag.",
)  # fmt: skip


@click.command()
@_HOST
@click.option("--port", type=int, metavar="PORT", help="Port (default 8765; 0 picks a free one).")
@_NO_AUTH
@_SECRETS
@click.option("--cors-origin", "cors", multiple=True, metavar="ORIGIN", help="Allow this browser origin (repeatable).")
@click.option("--max-body", type=int, metavar="BYTES", help="Largest request body accepted (default 8 MiB).")
@click.pass_context
def serve(
    ctx: click.Context, host: str | None, port: int | None, no_auth: bool, allow_secrets: bool,
    cors: tuple[str, ...], max_body: int | None,
) -> None:  # fmt: skip
    """Serve the REST API (FastAPI; OpenAPI at /openapi.json, docs at /docs).

    Every request needs an API key scoped to the namespace in its URL
    (`memory keys create`), sent as 'Authorization: Bearer <key>'.

    \b
    Examples:
      memory keys create laptop --namespace default
      memory serve --port 8765
      curl -H "Authorization: Bearer $KEY" localhost:8765/v1/namespaces/default/memories
    """
    _need_server_extra()
    from memory.memory import Memory
    from memory.server.rest import create_app

    settings = build_settings(global_options(ctx))
    server = _server_settings(settings, host=host, port=port, cors_origins=cors, max_body_bytes=max_body)
    require_keys = server.require_keys and not no_auth
    _check_no_auth(server.host, not require_keys)
    with Memory(settings=settings) as mem:
        app = create_app(mem, _authenticator(mem, require_keys, allow_secrets), server)
        _run_uvicorn(app, server.host, server.port, "REST API")


@click.command()
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP (endpoint /mcp) instead of stdio.")
@_HOST
@click.option("--port", type=int, metavar="PORT", help="Port for --http (default 8766; 0 picks a free one).")
@_NO_AUTH
@_SECRETS
@click.option("--read-only", is_flag=True, help="stdio: refuse tools that change memories.")
@click.pass_context
def mcp(
    ctx: click.Context, use_http: bool, host: str | None, port: int | None, no_auth: bool, allow_secrets: bool,
    read_only: bool,
) -> None:  # fmt: skip
    """Serve the MCP tools and resources over stdio (default) or streamable HTTP.

    Over stdio the client is the local user: every namespace, the default
    one (--namespace) when a tool names none. Over HTTP each request needs
    an API key (as for `memory serve`) unless --no-auth.

    \b
    Examples:
      memory mcp                      # for Claude Desktop and other MCP clients
      memory --namespace work mcp --allow-secrets
      memory mcp --http --port 8766   # endpoint http://127.0.0.1:8766/mcp
    """
    _need_server_extra()
    from memory.memory import Memory
    from memory.server import mcp as mcp_server

    settings = build_settings(global_options(ctx))
    with Memory(settings=settings) as mem:
        if not use_http:
            caller = mcp_server.local_caller(mem.namespace, allow_secrets=allow_secrets, read_only=read_only)
            mcp_server.run_stdio(mem, caller)
            return
        server = _server_settings(settings, host=host)
        require_keys = server.require_keys and not no_auth
        _check_no_auth(server.host, not require_keys)
        bind_port = port if port is not None else server.mcp_port
        app = mcp_server.http_app(
            mem,
            _authenticator(mem, require_keys, allow_secrets),
            host=server.host,
            max_body_bytes=server.max_body_bytes,
        )
        _run_uvicorn(app, server.host, bind_port, "MCP (streamable HTTP, endpoint /mcp)")


def _key_store(ctx: click.Context) -> Any:
    from memory.backends import open_backend
    from memory.backends.keys import open_key_store

    settings = build_settings(global_options(ctx))
    backend = open_backend(settings.database)
    return backend, open_key_store(backend)


@click.group()
def keys() -> None:
    """Manage the API keys of `memory serve` and `memory mcp --http` (stored hashed in the database)."""


@keys.command("create")
@click.argument("name")
@click.option(
    "--namespace", "namespaces", multiple=True, metavar="NS", required=True,
    help="A namespace the key may use (repeatable); '*' for all.",
)  # fmt: skip
@click.option("--read-only", is_flag=True, help="The key may read but not change memories.")
@click.option("--allow-secrets", is_flag=True, help="The key may read secret memories (clearance='secret').")
@json_option
@click.pass_context
def create_key(
    ctx: click.Context, name: str, namespaces: tuple[str, ...], read_only: bool, allow_secrets: bool, as_json: bool
) -> None:
    """Create a key and print it (shown only once; only its hash is stored).

    \b
    Examples:
      memory keys create laptop --namespace default
      memory keys create reader --namespace team-a --namespace team-b --read-only
    """
    from memory.ids import utcnow
    from memory.keys import new_key

    backend, store = _key_store(ctx)
    try:
        record, token = new_key(name, namespaces, now=utcnow(), read_only=read_only, allow_secrets=allow_secrets)
        store.add(record)
    finally:
        backend.close()
    if as_json:
        emit_json({"id": record.id, "key": token, **record.model_dump(mode="json", exclude={"token_hash", "id"})})
        return
    click.echo(token)
    info(f"key {record.id} ({record.name}) for {', '.join(record.namespaces)}; store it now: it is not shown again")


@keys.command("list")
@json_option
@click.pass_context
def list_keys(ctx: click.Context, as_json: bool) -> None:
    """List keys (ids, names, scopes; never the keys themselves)."""
    backend, store = _key_store(ctx)
    try:
        records = store.list()
    finally:
        backend.close()
    if as_json:
        emit_json([r.model_dump(mode="json", exclude={"token_hash"}) for r in records])
        return
    rows = [
        [r.id, r.name, ",".join(r.namespaces), "read-only" if r.read_only else "read-write",
         "yes" if r.secrets else "no", r.created_at.strftime("%Y-%m-%d %H:%M"),
         r.revoked_at.strftime("%Y-%m-%d %H:%M") if r.revoked_at else ""]
        for r in records
    ]  # fmt: skip
    print_table(
        ["id", "name", "namespaces", "access", "secrets", "created", "revoked"], rows, no_wrap=("id", "created")
    )


@keys.command("revoke")
@click.argument("key_id")
@click.pass_context
def revoke_key(ctx: click.Context, key_id: str) -> None:
    """Revoke a key by id: requests with it are refused from now on."""
    from memory.ids import utcnow

    backend, store = _key_store(ctx)
    try:
        if not store.revoke(key_id, utcnow()):
            raise NotFoundError(f"no active key {key_id!r}; see `memory keys list`")
    finally:
        backend.close()
    info(f"revoked key {key_id}")
