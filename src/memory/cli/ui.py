"""``memory ui``: the REST API with the web inspector, opened in a browser."""

from __future__ import annotations

import webbrowser

import click

from memory.cli.common import build_settings, global_options
from memory.cli.servers import (
    _HOST,
    _NO_AUTH,
    _SECRETS,
    _authenticator,
    _bind,
    _check_no_auth,
    _need_server_extra,
    _server_settings,
    serve_on,
)

__all__ = ["ui"]


@click.command()
@_HOST
@click.option("--port", type=int, metavar="PORT", help="Port (default 8765; 0 picks a free one).")
@_NO_AUTH
@_SECRETS
@click.option("--open/--no-open", "open_browser", default=True, help="Open the inspector in a browser (default: open).")
@click.pass_context
def ui(
    ctx: click.Context, host: str | None, port: int | None, no_auth: bool, allow_secrets: bool, open_browser: bool
) -> None:
    """Serve the web inspector (and the REST API) and open it in a browser.

    The inspector shows memories with their score parts, conversations,
    the knowledge graph, working memory and tiers, context traces, jobs and
    prompt versions. It asks for an API key once (`memory keys create`) and
    shows only what that key may read; a read-only key changes nothing.
    `memory serve` serves the same page at /ui.

    \b
    Examples:
      memory keys create me --namespace default && memory ui
      memory ui --no-auth --allow-secrets      # loopback only, no key
    """
    _need_server_extra()
    from memory.memory import Memory
    from memory.server.rest import create_app
    from memory.server.ui import UI_PATH

    settings = build_settings(global_options(ctx))
    server = _server_settings(settings, host=host, port=port)
    require_keys = server.require_keys and not no_auth
    _check_no_auth(server.host, not require_keys)
    with Memory(settings=settings) as mem:
        app = create_app(mem, _authenticator(mem, require_keys, allow_secrets), server)
        sock = _bind(server.host, server.port)
        shown = f"[{server.host}]" if ":" in server.host else server.host
        url = f"http://{shown}:{sock.getsockname()[1]}{UI_PATH}/"
        opener = (lambda: webbrowser.open(url)) if open_browser else None
        serve_on(app, sock, f"inspector at {url} (REST API under /v1, docs at /docs)", opener)
