"""Serving the web inspector: static files under ``/ui`` on the REST app, ``/`` redirecting there.

The page is plain HTML, CSS and JavaScript modules shipped in the package
(:mod:`memory.ui`); it reaches memories only through the REST API of the
same app, with the API key the user enters, so the operation registry's
policy (namespace scope, read-only keys, clearance) applies to everything
it shows or changes. Responses carry a strict Content-Security-Policy: no
inline script, nothing loaded from another origin.

The files are read once, when the app is made, and answered from memory
(with an ETag, gzip for clients that take it). ``index.html`` names them
under ``/ui/v/<version>/``, where the version is a hash of every file, so a
browser keeps them (``immutable``) until the package's files change and
only ``index.html`` is revalidated on each visit.
"""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.responses import Response

from memory.ui import static_dir

__all__ = ["mount_ui", "UI_PATH", "CSP", "UIAssets"]

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
}
#: index.html and unversioned paths: revalidated on every visit, so an upgrade is picked up at once.
_REVALIDATE = "no-cache"
#: Files under /ui/v/<version>/: their URL changes whenever any file does.
_IMMUTABLE = "public, max-age=31536000, immutable"
_TYPES = {
    ".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8",
    ".json": "application/json", ".svg": "image/svg+xml", ".png": "image/png",
}  # fmt: skip
_VERSIONED = "v/"


@dataclass(frozen=True)
class _Asset:
    body: bytes
    gzipped: bytes | None
    media_type: str
    etag: str


def _asset(body: bytes, suffix: str) -> _Asset:
    media_type = _TYPES.get(suffix, "application/octet-stream")
    packed = gzip.compress(body, mtime=0) if media_type.startswith("text/") and len(body) > 1024 else None
    etag = '"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"'
    return _Asset(body, packed if packed is not None and len(packed) < len(body) else None, media_type, etag)


class UIAssets:
    """The inspector's files in memory: ``version`` (a hash of them all) and each file's bytes and ETag."""

    def __init__(self, root: Path) -> None:
        """Read every file under ``root``; ``index.html`` is rewritten to name the others under the version."""
        raw = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
        digest = hashlib.blake2b(digest_size=6)
        for name, body in raw.items():
            digest.update(name.encode() + b"\0" + body + b"\0")
        self.version = digest.hexdigest()
        self.files = {name: _asset(body, Path(name).suffix) for name, body in raw.items()}
        index = raw["index.html"].decode()
        prefix = f"{_VERSIONED}{self.version}/"
        for attr in ("href", "src"):
            for name in raw:
                if name != "index.html":
                    index = index.replace(f'{attr}="{name}"', f'{attr}="{prefix}{name}"')
        self.index = _asset(index.encode(), ".html")

    def find(self, path: str) -> tuple[_Asset, str] | None:
        """The asset at ``path`` (relative to /ui/) and its Cache-Control, or None."""
        if path in ("", "index.html"):
            return self.index, _REVALIDATE
        if path.startswith(_VERSIONED):
            version, _, rest = path[len(_VERSIONED) :].partition("/")
            found = self.files.get(rest) if rest != "index.html" else None
            if found is None:
                return None
            return found, _IMMUTABLE if version == self.version else _REVALIDATE
        found = self.files.get(path)
        return (found, _REVALIDATE) if found is not None else None


def _respond(request: Request, asset: _Asset, cache_control: str) -> Response:
    headers = {**_HEADERS, "Cache-Control": cache_control, "ETag": asset.etag, "Vary": "Accept-Encoding"}
    if asset.etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    body = asset.body
    if asset.gzipped is not None and "gzip" in request.headers.get("accept-encoding", ""):
        body, headers["Content-Encoding"] = asset.gzipped, "gzip"
    if request.method == "HEAD":
        headers["Content-Length"] = str(len(body))
        return Response(status_code=200, headers=headers, media_type=asset.media_type)
    return Response(body, headers=headers, media_type=asset.media_type)


def mount_ui(app: FastAPI, keys_required: bool = True) -> None:
    """Serve the inspector at ``/ui/`` on ``app`` (and redirect ``/`` to it).

    ``/ui/config.json`` tells the page whether to ask for a key before its
    first call (it holds nothing else; every API call is still checked).
    """

    @app.get(UI_PATH + "/config.json", include_in_schema=False)
    def _config() -> JSONResponse:
        return JSONResponse({"keysRequired": keys_required}, headers={**_HEADERS, "Cache-Control": _REVALIDATE})

    assets = UIAssets(static_dir())
    app.state.ui_assets = assets

    @app.api_route(UI_PATH, methods=["GET", "HEAD"], include_in_schema=False)
    def _ui_root() -> RedirectResponse:
        return RedirectResponse(UI_PATH + "/")

    @app.api_route(UI_PATH + "/{path:path}", methods=["GET", "HEAD"], include_in_schema=False)
    async def _ui_file(request: Request, path: str) -> Response:
        found = assets.find(path)
        if found is None:
            return JSONResponse({"title": "Not Found", "status": 404}, status_code=404, headers=_HEADERS)
        return _respond(request, *found)

    @app.get("/", include_in_schema=False)
    def _root() -> RedirectResponse:
        return RedirectResponse(UI_PATH + "/")
