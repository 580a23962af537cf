"""Chromium: the Responses grid — filter, select a row, read the drill-down, URL follows."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from tests.browser import *  # noqa: F401,F403
from tests.browser import POLL_MS, shot, wait_for_app
from tests.grid_fixtures import all_runs


def _params(page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


@pytest.mark.browser
def test_filter_select_row_drilldown_and_url(app_server, page, store):
    all_runs(store)
    url = app_server()
    sent: list[str] = []  # the messages the page sends the server (rerun requests)
    page.on(
        "websocket",
        lambda ws: (
            ws.on("framesent", lambda payload: sent.append("m"))
            if "/_stcore/stream" in ws.url
            else None
        ),
    )
    page.goto(f"{url}/grid?g_bench=misprompt&g_set=gs")
    wait_for_app(page)
    page.wait_for_selector('[data-testid="stDataFrame"]')
    page.get_by_text("4 items match").wait_for()

    # filter: only items on which the runs disagree (c1, e1, e3)
    page.get_by_text("runs disagree").click()
    page.get_by_text("3 items match").wait_for()
    page.wait_for_function("() => location.search.includes('g_dis=runs+disagree')", polling=POLL_MS)
    wait_for_app(page)

    # select the first row (c1) by its row marker
    grid = page.locator('[data-testid="stDataFrame"]').first
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 15, box["y"] + 35 + 17)
    page.wait_for_function("() => location.search.includes('g_item=c1')", polling=POLL_MS)
    page.locator('[data-testid="stText"]').filter(has_text="Prompt of c1").first.wait_for()
    full = page.locator('[data-testid="stText"]').filter(has_text="All good.").first
    full.wait_for()
    assert full.inner_text().count("All good.") == 30  # the full response, plain text
    assert _params(page)["g_dis"] == "runs disagree"
    # the runs' responses side by side: their headers on one line, in three columns
    heads = [
        page.locator('[data-testid="stText"]').filter(has_text=f"{run} · model-{run}").first
        for run in ("r1", "r2", "r3")
    ]
    boxes = [h.bounding_box() for h in heads]
    assert len({round(b["y"]) for b in boxes}) == 1
    assert len({round(b["x"]) for b in boxes}) == 3
    shot(page, "grid-drilldown")

    # j moves to the next item of the page (e1), the URL follows
    page.locator("h1").first.click()  # focus outside any input
    wait_for_app(page)
    before = len(sent)
    page.keyboard.press("j")
    page.wait_for_function("() => location.search.includes('g_item=e1')", polling=POLL_MS)
    page.locator('[data-testid="stText"]').filter(has_text="Prompt of e1").first.wait_for()
    wait_for_app(page)
    # k back to c1 and j again: each key is one request (the reader fragment's rerun), no
    # second rerun for the URL or the grid's tick (issue 31, point 8); counted once k's item
    # shows, so a second request that j's drawing would send is in by then
    page.keyboard.press("k")
    page.locator('[data-testid="stText"]').filter(has_text="Prompt of c1").first.wait_for()
    wait_for_app(page)
    page.keyboard.press("j")
    page.locator('[data-testid="stText"]').filter(has_text="Prompt of e1").first.wait_for()
    wait_for_app(page)
    assert len(sent) - before == 3

    # the URL reproduces the view in a fresh tab
    page.goto(page.url)
    wait_for_app(page)
    page.get_by_text("3 items match").wait_for()
    page.locator('[data-testid="stText"]').filter(has_text="Prompt of e1").first.wait_for()
