"""Page timings of the inspector on a large SQLite store (not a test: run by hand, see README).

    nice -n 5 .venv/bin/python tests/ui/bench_pages.py --items 100000 --runs 5

Builds (once, reused) a store of N memories with the hashing embedder plus the seed of the
browser tests, starts headless Chromium (on about:blank, as a user's browser is already running),
then a real `memory serve`, and measures per page: ``load`` = a fresh tab opening the page by URL
until it has rendered (HTML, JS modules, every API call, drawing), by the page's own clock (from
its navigation start to the moment the app marks it ready), with ``wall`` = the same seen from
this script (adds the tab's creation and the driver's round trips); ``nav`` = moving to it from
another page inside the app; ``server`` = the slowest operation behind the page, as the server
timed it (its Server-Timing header), per load. The script waits for the page by a MutationObserver in it
(:func:`wait_ready`), not by polling it. The first search and context loads after the
server said it was listening are measured first (``cold``), with the seconds since then. Prints a
table (median and max in ms) and
writes it to docs/ui/timings.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from ui_helpers import CHROMIUM, CHROMIUM_ARGS, SHOTS, make_keys, start_serve, stop  # noqa: E402
from ui_seed import seed  # noqa: E402

from memory import Memory  # noqa: E402

WORDS = (
    "alice bob carol dave tea coffee berlin paris lisbon project release roadmap meeting dentist tram "
    "holiday budget invoice design review deploy server database garden bicycle piano novel recipe"
).split()


def build(db: str, items: int) -> dict[str, str]:
    with Memory(db, embedder="hashing", namespace="a") as mem:
        have = mem.stats().total
        if have < items:
            batch = []
            for i in range(have, items):
                words = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7, 11, 13))
                batch.append({"content": f"Note {i}: {words}.", "user": f"user{i % 50}", "kind": "fact",
                              "tags": [WORDS[i % len(WORDS)]]})  # fmt: skip
                if len(batch) == 1000:
                    mem.remember_batch(batch)
                    batch = []
            if batch:
                mem.remember_batch(batch)
            ids = seed(mem, "a")
            keys = make_keys(mem)
            Path(db.removeprefix("sqlite:///") + ".json").write_text(json.dumps({"ids": ids, "keys": keys}))
    return json.loads(Path(db.removeprefix("sqlite:///") + ".json").read_text())  # type: ignore[no-any-return]


ROUTES = {
    "memories (list)": "#/memories",
    "memories (search)": "#/memories?q=where+does+alice+live",
    "memories (filtered)": "#/memories?user=user7&tags=tea",
    "memories (page 2)": None,  # filled in: the second page's cursor
    "memory": None,
    "conversations": "#/thread/t-berlin",
    "graph": "#/graph?start=Alice&depth=2&closed=1",
    "tiers": "#/tiers?user=alice",
    "context": "#/context?observation=Where+does+Alice+live%3F&user=alice&thread=t-berlin&budget=2000",
    "jobs": "#/jobs",
    "jobs (fresh counts)": "#/jobs?fresh=1",
}
COLD = ("memories (search)", "context")
#: The operations behind what a tab loaded: (name from Server-Timing, server ms), in load order.
SERVER_TIMES = """() => performance.getEntriesByType("resource").filter((e) => e.name.includes("/v1/"))
  .flatMap((e) => e.serverTiming.filter((t) => t.name === "op").map((t) => [t.description, t.duration]))"""


#: Resolves once an element matches ``selector`` (the app marking its page ready), from a MutationObserver in
#: the page: waiting does not poll the page. Playwright's default wait checks the element's visibility on every
#: animation frame, which makes the page lay itself out while it is still loading: work on the measured page's
#: main thread that a user's browser does not do.
_READY = """(selector) => new Promise((done) => {
  if (document.querySelector(selector)) return done(true);
  const seen = new MutationObserver(() => {
    if (document.querySelector(selector)) { seen.disconnect(); clearTimeout(late); done(true); }
  });
  const late = setTimeout(() => { seen.disconnect(); done(false); }, 30000);
  seen.observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-ready"] });
})"""


def wait_ready(tab: Any, selector: str = "main[data-ready]") -> None:
    """Wait until the page marks itself ready (see :data:`_READY`); AssertionError after 30 s."""
    assert tab.evaluate(_READY, selector), f"{selector} did not appear within 30 s"


def ready_at(tab: Any) -> float:
    """Milliseconds from the tab's navigation start to the app marking the page ready (the page's clock)."""
    return float(tab.eval_on_selector("main", "m => Number(m.dataset.readyAt)"))


def new_context(browser: Any, url: str, data: dict[str, Any]) -> Any:
    """A browser context (empty cache) signed in with namespace a's key."""
    context = browser.new_context(viewport={"width": 1366, "height": 860}, base_url=url)
    context.add_init_script(f"sessionStorage.setItem('memory.apiKey', {json.dumps(data['keys']['a'])})")
    return context


def cold_loads(context: Any, errors: list[str], only: str | None) -> dict[str, dict[str, float]]:
    """The first search and context loads right after the server said it was listening."""
    served_at = time.perf_counter()
    out: dict[str, dict[str, float]] = {}
    for name in COLD:
        if only and only not in name:
            continue
        tab = context.new_page()
        tab.on("console", lambda m: m.type == "error" and errors.append(m.text))
        since = time.perf_counter() - served_at
        t0 = time.perf_counter()
        tab.goto(f"/ui/{ROUTES[name]}")
        wait_ready(tab)
        wall = (time.perf_counter() - t0) * 1000
        ms = ready_at(tab)
        server = max((d for _, d in tab.evaluate(SERVER_TIMES)), default=0.0)
        out[name] = {"load": round(ms), "wall": round(wall), "server": round(server), "since_start_s": round(since, 1)}
        print(f"{name:22s} COLD load {ms:6.0f} ms (wall {wall:4.0f}, server {server:4.0f} ms), "
              f"{since:.1f} s after start", flush=True)  # fmt: skip
        tab.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000, help="Memories in the store (built once, reused).")
    parser.add_argument("--runs", type=int, default=5, help="Loads and navigations per page.")
    parser.add_argument("--db", default="/tmp/memory-ui-bench/ui100k.db", help="The store's SQLite file.")
    parser.add_argument("--only", help="Measure only pages whose name contains this.")
    parser.add_argument("--cold-runs", type=int, default=5, help="Server starts to time the first loads after.")
    parser.add_argument("--out", type=Path, help="Where to write the JSON (default docs/ui/timings.json).")
    args = parser.parse_args()
    Path(args.db).parent.mkdir(parents=True, exist_ok=True)
    db = f"sqlite:///{args.db}"
    load_start = os.getloadavg()
    started = time.perf_counter()
    data = build(db, args.items)
    print(f"store ready in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    ROUTES["memory"] = f"#/memory/{data['ids']['closed']}"
    from playwright.sync_api import sync_playwright

    results: dict[str, dict[str, list[float]]] = {}
    cold: dict[str, list[dict[str, float]]] = {}
    op_medians: dict[str, dict[str, float]] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        browser.new_page().goto("about:blank")  # the browser is running before the server starts
        errors: list[str] = []
        for _ in range(args.cold_runs):  # each: a new server, and a browser context that never saw the page
            process, url = start_serve(db)
            try:
                context = new_context(browser, url, data)
                for name, timing in cold_loads(context, errors, args.only).items():
                    cold.setdefault(name, []).append(timing)
                context.close()
            finally:
                stop(process)
        process, url = start_serve(db)
        try:
            context = new_context(browser, url, data)
            page = context.new_page()
            page.on("console", lambda m: m.type == "error" and errors.append(m.text))
            page.goto("/ui/#/memories")
            page.wait_for_selector("main[data-ready]")
            page.click("text=Next page →")
            page.wait_for_selector("main[data-ready] ul.list li")
            ROUTES["memories (page 2)"] = "#" + page.url.split("#", 1)[1]
            for name, route in ROUTES.items():
                assert route is not None
                if args.only and args.only not in name:
                    continue
                loads, walls, navs, server = [], [], [], []
                ops: dict[str, list[float]] = {}
                for _ in range(args.runs):
                    tab = context.new_page()
                    tab.on("console", lambda m: m.type == "error" and errors.append(m.text))
                    t0 = time.perf_counter()
                    tab.goto(f"/ui/{route}")
                    wait_ready(tab)
                    walls.append((time.perf_counter() - t0) * 1000)
                    loads.append(ready_at(tab))
                    timed = tab.evaluate(SERVER_TIMES)
                    server.append(max((d for _, d in timed), default=0.0))
                    for op, d in timed:
                        ops.setdefault(op, []).append(d)
                    other = "#/tiers" if name == "jobs" else "#/jobs"
                    tab.evaluate(f"location.hash = {other!r}")
                    wait_ready(tab, f"main[data-ready={other[2:]}]")
                    tab.evaluate("document.getElementById('main').removeAttribute('data-ready')")
                    t0 = time.perf_counter()
                    tab.evaluate(f"location.hash = {route!r}")
                    wait_ready(tab)
                    navs.append((time.perf_counter() - t0) * 1000)
                    tab.close()
                results[name] = {"load": loads, "wall": walls, "nav": navs, "server": server}
                op_medians[name] = {op: round(statistics.median(d), 1) for op, d in ops.items()}
                print(f"{name:22s} load median {statistics.median(loads):6.0f} max {max(loads):6.0f} ms "
                      f"(wall {statistics.median(walls):4.0f}) | "
                      f"nav median {statistics.median(navs):6.0f} max {max(navs):6.0f} ms | "
                      f"server {statistics.median(server):5.0f} ms {op_medians[name]}", flush=True)  # fmt: skip
        finally:
            stop(process)
        browser.close()
    for name, runs in cold.items():
        loads, served = [r["load"] for r in runs], [r["server"] for r in runs]
        print(f"{name:22s} COLD over {len(runs)} starts: load median {statistics.median(loads):.0f} "
              f"max {max(loads):.0f} ms, server median {statistics.median(served):.0f} ms")  # fmt: skip
    summary = {
        "command": " ".join(["tests/ui/bench_pages.py", *sys.argv[1:]]), "items": args.items, "runs": args.runs,
        "load_avg_start": load_start, "load_avg": os.getloadavg(), "console_errors": errors, "cold": cold,
        "cold_medians": {n: {k: round(statistics.median(r[k] for r in runs)) for k in ("load", "wall", "server")}
                         for n, runs in cold.items()},
        "pages": {n: {k: [round(x) for x in v] for k, v in r.items()} for n, r in results.items()},
        "medians": {n: {k: round(statistics.median(v)) for k, v in r.items()} for n, r in results.items()},
        "server_ops_median_ms": op_medians,
    }  # fmt: skip
    out = args.out or SHOTS / "timings.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1) + "\n")
    print("console errors:", errors)


if __name__ == "__main__":
    main()
