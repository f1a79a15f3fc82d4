"""The inspector in headless Chromium against a real `memory serve`: every page, the main actions, screenshots.

Each test checks what is on screen, and that the page logged no console error; screenshots go to
docs/ui/ (the README shows them).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from ui_helpers import Page, Served

from memory.errors import NotFoundError

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def tab(browser: Any, served: Served) -> Iterator[Page]:
    """One tab signed in with key `a` (read-write, namespace a, private clearance) — the key entered once."""
    page = Page(browser, served)
    page.sign_in("a")
    yield page
    page.close()


@pytest.fixture(autouse=True)
def no_console_errors(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "tab" in request.fixturenames:
        tab: Page = request.getfixturevalue("tab")
        assert tab.errors == [], tab.errors


def test_search_shows_score_parts_per_hit(tab: Page) -> None:
    page = tab.go("#/memories")
    page.fill("input[name=q]", "where does alice live")
    page.keyboard.press("Enter")
    page.wait_for_selector("ol.hits li")
    first = page.locator("ol.hits li").first
    text = first.inner_text()
    assert "Alice" in text
    for part in ("fusion", "recency", "importance", "raw"):
        assert part in text, text
    channels = page.locator("ol.hits .channel").all_inner_texts()
    assert any(c.startswith("vector #") for c in channels) and any(c.startswith("lexical #") for c in channels)
    assert "4711" not in page.inner_text("main"), "a secret must not show without clearance"
    tab.shot("memories")


def test_search_validity_filter_includes_closed_facts(tab: Page) -> None:
    page = tab.go("#/memories?q=where+does+alice+work")
    page.wait_for_selector("ol.hits li")
    assert "Alice works at Globex." in page.inner_text("ol.hits") and "Acme" not in page.inner_text("ol.hits")
    assert page.locator("details.filters input").count() == 0, "folded filters make their inputs when first shown"
    page.click("details.filters summary")
    page.select_option("select[name=validity]", "all")
    page.evaluate("document.getElementById('main').removeAttribute('data-ready')")
    page.click("button:text('Search')")
    page.wait_for_selector("main[data-ready=memories] ol.hits li")
    assert "validity=all" in page.url
    closed = page.locator("ol.hits li", has_text="Alice works at Acme Corp.")
    assert closed.count() == 1 and "closed 2023-06-30" in closed.inner_text()
    assert "closed facts included" in page.inner_text("main")


def test_filters_and_pagination(tab: Page) -> None:
    page = tab.go("#/memories?user=bob")
    assert page.locator("details.filters[open] input[name=user]").input_value() == "bob", "a set filter is shown"
    items = page.locator("ul.list li").all_inner_texts()
    assert items and all("user bob" in i for i in items)
    page = tab.go("#/memories?tags=meeting")
    assert page.locator("ul.list li").count() == 50
    first_page = set(page.locator("ul.list li a.content").all_inner_texts())
    page.evaluate("document.getElementById('main').removeAttribute('data-ready')")
    page.click("text=Next page →")
    page.wait_for_selector("main[data-ready] ul.list li")
    assert "cursor=" in page.url and page.locator("ul.list li").count() == 10
    second_page = set(page.locator("ul.list li a.content").all_inner_texts())
    assert not first_page & second_page and all(t.startswith("Meeting note") for t in second_page)
    closed_hidden = tab.go("#/memories?user=alice&kinds=fact").inner_text("main")
    assert "Acme" not in closed_hidden
    assert "Acme" in tab.go("#/memories?user=alice&kinds=fact&validity=all").inner_text("main")


def test_memory_page_history_facts_links(tab: Page, served: Served) -> None:
    page = tab.go(f"#/memory/{served.ids['closed']}")
    main = page.inner_text("main")
    assert "Alice works at Acme Corp." in main
    assert "left Acme" in main, "the update's reason is in the history"
    assert "2023-06-30" in main and "Acme Corp" in main
    assert page.locator(".facts li.closed").count() == 1, "the closed relation is shown as closed"
    closing = page.locator("ol.history > li.op-update", has_text="left Acme")
    assert "valid_to" in closing.inner_text() and "2023-06-30" in closing.inner_text()
    assert page.locator(f"a[href='#/memory/{served.ids['berlin']}']").count() == 1, "the link to the Berlin memory"
    tab.shot("memory")


def test_edit_with_confirmation(tab: Page, served: Served) -> None:
    page = tab.go(f"#/memory/{served.ids['berlin']}")
    page.click("button:text('Edit')")
    page.fill("dialog textarea[name=content]", "Alice moved to Berlin in spring 2021.")
    page.fill("dialog input[name=reason]", "more precise")
    page.click("dialog button:text('Save')")
    page.wait_for_selector("#confirm[open]")
    page.click("#confirm-ok")
    page.wait_for_selector("h1:text('Alice moved to Berlin in spring 2021.')")
    page.wait_for_selector("main[data-ready] ol.history > li.op-update")
    assert "more precise" in page.inner_text("main")
    with served.memory() as mem:
        assert mem.get(served.ids["berlin"]).content == "Alice moved to Berlin in spring 2021."


def test_forget_asks_first(tab: Page, served: Served) -> None:
    with served.memory() as mem:
        doomed = mem.remember("Bob once owned a red bicycle.", user="bob")
    page = tab.go(f"#/memory/{doomed}")
    page.click("button:text('Forget')")
    page.wait_for_selector("#confirm[open]")
    page.click("#confirm button[value=cancel]")
    with served.memory() as mem:
        assert mem.get(doomed).content.startswith("Bob once")
    page.click("button:text('Forget')")
    page.click("#confirm-ok")
    page.wait_for_url(re.compile(r"#/memories$"))
    page.wait_for_selector("main[data-ready=memories]")
    with served.memory() as mem, pytest.raises(NotFoundError):
        mem.get(doomed)


def test_thread_timeline_media_and_live_updates(tab: Page, served: Served) -> None:
    page = tab.go("#/threads")
    page.click("ul.threads a:has-text('t-berlin')")
    page.wait_for_selector("main[data-ready=thread] ol.timeline li.msg")
    turns = page.locator("ol.timeline .turn").all_inner_texts()
    assert turns == ["#1", "#2", "#3", "#4"]
    assert "embedding pending" in page.inner_text("ol.timeline")
    page.wait_for_selector("img.media")
    assert page.eval_on_selector("img.media", "img => img.complete && img.naturalWidth") == 96
    with served.memory() as mem:
        mem.messages.append("t-berlin", "Booked Dr. Weber for Tuesday!", user="alice", namespace="a")
    page.wait_for_selector("#turn-5", timeout=10_000)
    assert "Booked Dr. Weber" in page.inner_text("#turn-5")
    tab.shot("conversations")


def test_thread_list_updates_live(tab: Page, served: Served) -> None:
    page = tab.go("#/threads")
    assert page.locator("ul.threads a:has-text('t-live')").count() == 0
    with served.memory() as mem:
        mem.messages.append("t-live", "A thread started while the page was open.", user="carol", namespace="a")
    page.wait_for_selector("ul.threads a:has-text('t-live')", timeout=10_000)
    page = tab.go("#/thread/t-berlin")
    with served.memory() as mem:
        mem.messages.append("t-live", "And it grows.", role="assistant", user="carol", namespace="a")
    page.wait_for_selector("ul.threads a:has-text('t-live'):has-text('2 messages')", timeout=10_000)
    assert page.locator("ul.threads a[aria-current=page]").inner_text().startswith("t-berlin")
    page.uncheck("label:has-text('Live updates') input")
    with served.memory() as mem:
        mem.messages.append("t-quiet", "Nobody is watching.", user="carol", namespace="a")
    page.wait_for_timeout(3_000)
    assert page.locator("ul.threads a:has-text('t-quiet')").count() == 0, "live updates off: the list holds still"


def test_archive_with_confirmation(tab: Page, served: Served) -> None:
    page = tab.go("#/thread/t-tea")
    page.fill("input[aria-label='Messages to keep']", "1")
    page.click("button:text('Archive older')")
    page.click("#confirm-ok")
    page.wait_for_selector("ul.threads a:has-text('1 archived')")
    with served.memory() as mem:
        assert [m.content for m in mem.messages.archived("t-tea")] == ["Which tea should I try next?"]


def test_graph_expand_as_of_and_click_through(tab: Page) -> None:
    page = tab.go("#/graph?start=Alice&depth=2&closed=1")
    names = page.locator("svg.graph .node text").all_text_contents()
    assert {"Alice", "Berlin", "Acme Corp", "Globex"} <= set(names)
    assert page.locator("svg.graph .edge.closed").count() == 1
    assert "until 2023-06-30" in (page.locator("svg.graph .edge.closed text").text_content() or "")
    tab.shot("graph")
    page = tab.go("#/graph?start=Alice&as_of=2020-06-01")
    assert {r.split("\t")[2] for r in page.locator("table.data tbody tr").all_inner_texts()} == {"Acme Corp"}
    page = tab.go("#/graph?start=Alice&predicates=moved+to")
    assert page.locator("svg.graph .edge").count() == 1
    page = tab.go("#/graph?start=Alice")
    berlin = page.locator("svg.graph .node", has_text="Berlin")
    before = berlin.get_attribute("transform")
    box = berlin.locator("circle").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + 4, box["y"] + 4)
    page.mouse.down()
    page.mouse.move(box["x"] + 60, box["y"] + 40, steps=5)
    page.mouse.up()
    assert berlin.get_attribute("transform") != before and "start=Alice" in page.url, "dragging moves, not navigates"
    berlin.click()
    page.wait_for_url(re.compile(r"start=Berlin"))
    page.wait_for_selector("main[data-ready=graph] svg.graph")
    page.locator("svg.graph .edge").first.click()
    page.wait_for_selector(".panel a[href^='#/memory/']")
    page.click(".panel a[href^='#/memory/']")
    page.wait_for_selector("main[data-ready=memory]")
    assert "Berlin" in page.inner_text("h1")


def test_working_memory_and_tiers(tab: Page) -> None:
    page = tab.go("#/tiers?user=alice")
    main = page.inner_text("main")
    assert "Alice lives in Berlin." in main and "Find a dentist in Kreuzberg." in main
    assert "Short-term memory (7/7 pages)" in main
    assert page.locator(".segment").count() >= 1 and "heat" in page.inner_text(".segment")
    block = page.locator(".block", has_text="user_info")
    block.locator("summary").click()
    block.locator(".block-history li").first.wait_for()
    assert "noticed preference" in block.locator(".block-history").inner_text()
    tab.shot("tiers")


def test_context_budget_picture(tab: Page) -> None:
    page = tab.go("#/context")
    page.fill("textarea[name=observation]", "Where does Alice live now?")
    page.fill("input[name=user]", "alice")
    page.fill("input[name=thread]", "t-berlin")
    page.fill("input[name=budget]", "300")
    page.click("button:text('Build context')")
    page.wait_for_selector("main[data-ready=context] .budget .seg")
    statuses = set(page.locator("table.trace tbody td:nth-child(3)").all_inner_texts())
    assert "kept" in statuses and statuses & {"shrunk", "dropped", "deduplicated"}, statuses
    assert "→" in page.inner_text("table.trace") and "Berlin" in page.inner_text("ol.prompt")
    tab.shot("context")


def _total(page: Any) -> int:
    found = re.search(r"(\d+) memories", page.inner_text("main"))
    assert found, page.inner_text("main")
    return int(found.group(1))


def test_jobs_and_health(tab: Page, served: Served) -> None:
    page = tab.go("#/jobs")
    main = page.inner_text("main")
    assert "Server: ok" in main and "pending" in main and "Workers" in main
    row = page.locator("table.data tbody tr", has_text="support").first.inner_text()
    assert "v1" in row and "active" in row and "0." in row
    assert re.search(r"Counts as of \d\d:\d\d:\d\d \((just now|\d+ s ago)\)", page.inner_text("p.as-of"))
    tab.shot("jobs")
    before = _total(page)
    with served.memory() as mem:
        mem.remember("Carol counts the jobs page.", user="carol")
    tab.go("#/tiers")
    page = tab.go("#/jobs")
    assert _total(page) == before, "counts up to 30 s old are reused, and say so"
    assert "Counts as of" in page.inner_text("p.as-of")
    page.evaluate("document.getElementById('main').removeAttribute('data-ready')")
    page.click("p.as-of button:text('Refresh')")
    page.wait_for_selector("main[data-ready=jobs] p.as-of span:not(:empty)")
    assert _total(page) == before + 1 and "just now" in page.inner_text("p.as-of")


def test_keyboard_moves_between_pages(tab: Page) -> None:
    page = tab.go("#/memories")
    page.locator("body").click(position={"x": 5, "y": 500})
    page.keyboard.press("3")
    page.wait_for_selector("main[data-ready=graph]")
    page.keyboard.press("1")
    page.wait_for_selector("main[data-ready=memories]")
    page.locator("h1").click()
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.name") == "q"
    page.keyboard.type("dark mode")
    page.keyboard.press("Enter")
    page.wait_for_selector("ol.hits li")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.tagName") in ("BUTTON", "SUMMARY", "A", "INPUT", "SELECT")


def test_read_only_key_sees_no_write_controls(browser: Any, served: Served) -> None:
    ro = Page(browser, served)
    try:
        ro.sign_in("a_ro")
        assert "read-only" in ro.page.inner_text("#who")
        page = ro.go(f"#/memory/{served.ids['closed']}")
        assert page.locator("button:text('Edit')").count() == 0 and page.locator("button:text('Forget')").count() == 0
        page = ro.go("#/thread/t-berlin")
        assert page.locator("button:text('Archive older')").count() == 0
        assert page.locator("button:text('Run sync now')").count() == 0
        assert ro.errors == []
    finally:
        ro.close()
    # The server refuses it anyway (the page is not the policy).
    headers = {"Authorization": f"Bearer {served.keys['a_ro']}"}
    refused = httpx.delete(f"{served.url}/v1/namespaces/a/memories/{served.ids['closed']}", headers=headers)
    assert refused.status_code == 403


def test_other_namespaces_and_secrets_never_show(browser: Any, served: Served) -> None:
    tab_a = Page(browser, served)
    try:
        tab_a.sign_in("a")
        assert tab_a.page.locator("#ns option").all_inner_texts() == ["a"]
        for route in ("#/memories", "#/memories?q=Lisbon+plan", "#/memories?q=door+code", "#/graph"):
            text = tab_a.go(route).inner_text("main")
            assert "Lisbon" not in text and "4711" not in text
        assert tab_a.errors == []
    finally:
        tab_a.close()
    tab_secret = Page(browser, served)
    try:
        tab_secret.sign_in("a_secret")
        assert "4711" in tab_secret.go("#/memories?q=door+code").inner_text("main")
    finally:
        tab_secret.close()
    tab_b = Page(browser, served)
    try:
        tab_b.sign_in("b")
        assert tab_b.page.locator("#ns option").all_inner_texts() == ["b"]
        text = tab_b.go("#/memories").inner_text("main")
        assert "Lisbon" in text and "Alice" not in text
    finally:
        tab_b.close()


def test_wrong_key_is_refused_then_right_key_works(browser: Any, served: Served) -> None:
    tab = Page(browser, served)
    try:
        tab.page.goto("/ui/")
        tab.page.fill("#login-key", "mem_0000000000000000_" + "x" * 43)
        tab.page.click("#login-form button[type=submit]")
        tab.page.wait_for_selector("#login[open]")
        tab.page.wait_for_selector("#login-error:not(:empty)")
        assert "unknown API key" in tab.page.inner_text("#login-error")
        tab.page.fill("#login-key", served.keys["a"])
        tab.page.click("#login-form button[type=submit]")
        tab.page.wait_for_selector("main[data-ready=memories]")
        # Only the refused sign-in's 401 was logged.
        assert all("401" in e for e in tab.errors), tab.errors
        # Entered once: a reload keeps the session.
        tab.page.reload()
        tab.page.wait_for_selector("main[data-ready=memories]")
        assert not tab.page.locator("#login[open]").count()
    finally:
        tab.close()
