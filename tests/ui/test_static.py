"""The inspector's files: served at /ui with a strict CSP, all local, all shipped in the wheel."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import httpx
import pytest

from memory.ui import static_dir

pytest.importorskip("fastapi")

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(p for p in static_dir().rglob("*") if p.is_file())


def test_static_files_exist_and_reference_nothing_remote() -> None:
    names = {p.relative_to(static_dir()).as_posix() for p in FILES}
    assert {"index.html", "app.css", "js/app.js", "js/api.js", "js/pages/graph.js"} <= names
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", text), f"{path.name} loads something remote"
        # Dynamic imports only of the package's own page modules, by literal relative path.
        dynamic = re.findall(r"import\(([^)]*)\)", text)
        assert all(re.fullmatch(r'"\./pages/[a-z]+\.js"', d) for d in dynamic), (path.name, dynamic)
        assert "innerHTML" not in text and "eval(" not in text, path.name
        assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", text), f"{path.name} names a remote URL"


def test_every_module_import_resolves() -> None:
    for path in static_dir().rglob("*.js"):
        text = path.read_text(encoding="utf-8")
        for target in re.findall(r"from \"(\.[^\"]+)\"", text) + re.findall(r"import\(\"(\.[^\"]+)\"\)", text):
            assert (path.parent / target).resolve().is_file(), f"{path.name} imports missing {target}"


def test_served_with_security_headers(served) -> None:  # type: ignore[no-untyped-def]
    with httpx.Client(base_url=served.url, timeout=10) as c:
        root = c.get("/", follow_redirects=False)
        assert root.status_code == 307 and root.headers["location"] == "/ui/"
        page = c.get("/ui/")
        assert page.status_code == 200 and "<title>memory inspector</title>" in page.text
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "connect-src 'self'" in csp and "unsafe-inline" not in csp
        assert page.headers["x-frame-options"] == "DENY"
        for path in FILES:
            rel = path.relative_to(static_dir()).as_posix()
            response = c.get(f"/ui/{rel}")
            assert response.status_code == 200, rel
        assert c.get("/ui/js/app.js").headers["content-type"].startswith("text/javascript")
        assert c.get("/ui/config.json").json() == {"keysRequired": True}
        # The page holds no data: everything comes through the API, which needs a key.
        assert c.get("/v1/namespaces/a/memories").status_code == 401


def test_no_auth_server_says_no_key_is_needed(tmp_path: Path) -> None:
    from ui_helpers import start_serve, stop

    process, url = start_serve(f"sqlite:///{tmp_path / 'x.db'}", "--no-auth")
    try:
        assert httpx.get(f"{url}/ui/config.json").json() == {"keysRequired": False}
    finally:
        stop(process)


def test_memory_ui_command_serves_the_inspector(tmp_path: Path) -> None:
    from ui_helpers import start_serve, stop

    process, url = start_serve(f"sqlite:///{tmp_path / 'x.db'}", "--no-open", command_name="ui")
    try:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/ui/"), url
        page = httpx.get(url)
        assert page.status_code == 200 and "memory inspector" in page.text
        assert httpx.get(url.removesuffix("/ui/") + "/v1/whoami").status_code == 401, "keys are required by default"
    finally:
        stop(process)


def test_package_data_covers_every_static_file() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = config["tool"]["setuptools"]["package-data"]["memory.ui"]
    base = ROOT / "src" / "memory" / "ui"
    covered = {p for g in globs for p in base.glob(g)}
    assert covered == set(FILES), sorted(p.name for p in set(FILES) - covered)


@pytest.mark.slow
def test_wheel_ships_the_inspector(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True,
    )  # fmt: skip
    wheel = next(tmp_path.glob("*.whl"))  # llm_agent_memory-…whl
    names = set(zipfile.ZipFile(wheel).namelist())
    for path in FILES:
        assert "memory/ui/static/" + path.relative_to(static_dir()).as_posix() in names


def test_assets_are_versioned_cached_and_revalidated(served) -> None:  # type: ignore[no-untyped-def]
    """index.html names every file under /ui/v/<hash of the files>/ (kept by the browser, immutable);
    index.html itself is revalidated on each visit (ETag, 304), and text files come gzipped on request."""
    import hashlib

    digest = hashlib.blake2b(digest_size=6)
    for path in FILES:
        digest.update(path.relative_to(static_dir()).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    version = digest.hexdigest()
    with httpx.Client(base_url=served.url, timeout=10) as c:
        page = c.get("/ui/")
        assert page.headers["cache-control"] == "no-cache" and page.headers["etag"]
        assert f'src="v/{version}/js/app.js"' in page.text and f'href="v/{version}/app.css"' in page.text
        assert f'href="v/{version}/js/api.js"' in page.text
        assert 'src="js/' not in page.text and 'href="js/' not in page.text
        assert "pages/" not in page.text  # page modules load when shown (app.js imports them under its own URL)
        assert c.get("/ui/", headers={"If-None-Match": page.headers["etag"]}).status_code == 304
        app_js = c.get(f"/ui/v/{version}/js/app.js", headers={"Accept-Encoding": "gzip"})
        assert app_js.status_code == 200 and "immutable" in app_js.headers["cache-control"]
        assert app_js.headers["content-encoding"] == "gzip"
        assert app_js.text == (static_dir() / "js" / "app.js").read_text(encoding="utf-8")
        assert app_js.headers["content-security-policy"] and app_js.headers["x-content-type-options"] == "nosniff"
        stale = c.get("/ui/v/000000000000/js/app.js")  # an older page's version: served, but not kept
        assert stale.status_code == 200 and stale.headers["cache-control"] == "no-cache"
        assert c.get(f"/ui/v/{version}/index.html").status_code == 404
        assert c.get("/ui/nothing-here.js").status_code == 404
        assert c.get("/ui/../pyproject.toml").status_code == 404
        assert c.head(f"/ui/v/{version}/app.css").status_code == 200
        assert c.get("/ui", follow_redirects=False).headers["location"] == "/ui/"
