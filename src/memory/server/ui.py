"""Serving the web inspector: static files under ``/ui`` on the REST app, ``/`` redirecting there.

The page is plain HTML, CSS and JavaScript modules shipped in the package
(:mod:`memory.ui`); it reaches memories only through the REST API of the
same app, with the API key the user enters, so the operation registry's
policy (namespace scope, read-only keys, clearance) applies to everything
it shows or changes. Responses carry a strict Content-Security-Policy: no
inline script, nothing loaded from another origin.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.responses import Response

from memory.ui import static_dir

__all__ = ["mount_ui", "UI_PATH", "CSP"]

UI_PATH = "/ui"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "media-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)
_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    # The files change with the package version; revalidate so an upgrade is picked up at once.
    "Cache-Control": "no-cache",
}


class _UIFiles(StaticFiles):
    """Static files with the inspector's security headers."""

    async def get_response(self, path: str, scope: Any) -> Response:
        """The file's response, with the headers added."""
        response = await super().get_response(path, scope)
        response.headers.update(_HEADERS)
        return response


def mount_ui(app: FastAPI, keys_required: bool = True) -> None:
    """Serve the inspector at ``/ui/`` on ``app`` (and redirect ``/`` to it).

    ``/ui/config.json`` tells the page whether to ask for a key before its
    first call (it holds nothing else; every API call is still checked).
    """

    @app.get(UI_PATH + "/config.json", include_in_schema=False)
    def _config() -> JSONResponse:
        return JSONResponse({"keysRequired": keys_required}, headers=_HEADERS)

    app.mount(UI_PATH, _UIFiles(directory=static_dir(), html=True), name="ui")

    @app.get("/", include_in_schema=False)
    def _root() -> RedirectResponse:
        return RedirectResponse(UI_PATH + "/")
