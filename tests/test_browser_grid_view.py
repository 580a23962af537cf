"""Chromium: the Responses grid at eight runs (issue 31, point 8) — every chosen run's label
shows in full in the runs box, and j / k bring the drill-down of the new item into view."""

from __future__ import annotations

import re

import pytest

from tests.browser import *  # noqa: F401,F403
from tests.browser import POLL_MS, wait_for_app

SET = "gs8"


@pytest.fixture
def eight_runs(store) -> list[str]:
    """Eight synthetic judged runs over 20 items; returns the first page's item ids."""
    from core.benchmarks.misprompt.synth import SynthSpec, fill
    from core.services import grid

    fill(store, SynthSpec(n_verdicts=160, n_models=8, settings=("zero-shot",), item_set=SET))
    runs = tuple(grid.grid_runs(store, "misprompt", SET)["run_id"])
    assert len(runs) == 8
    return list(grid.grid_page(store, "misprompt", SET, runs, page_size=50).rows["item_id"])


@pytest.mark.browser
def test_every_chosen_run_label_shows_and_j_brings_the_drilldown_into_view(
    app_server, browser, eight_runs
):
    url = app_server()
    page = browser.new_page(viewport={"width": 1440, "height": 700})
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{url}/grid?g_bench=misprompt&g_set={SET}&g_item={eight_runs[0]}")
        wait_for_app(page)
        page.wait_for_selector('[data-testid="stDataFrame"]')
        # the runs box: all eight chips inside its visible area (the fifth was scrolled away)
        clipped = page.evaluate(
            """() => {
                const box = document.querySelector('.st-key-w_g_runs [data-testid="stMultiSelect"]');
                const tags = [...box.querySelectorAll('[data-tag]')];
                const visible = (t) => {
                    const r = t.getBoundingClientRect();
                    for (let e = t.parentElement; e && e !== box.parentElement; e = e.parentElement) {
                        if (getComputedStyle(e).overflowY === 'visible') continue;
                        const p = e.getBoundingClientRect();  // a box that clips its content
                        if (r.bottom > p.bottom + 1 || r.top < p.top - 1) return false;
                    }
                    return true;
                };
                return [tags.length, tags.filter((t) => !visible(t)).map((t) => t.innerText)];
            }"""
        )
        assert clipped[0] == 8 and clipped[1] == [], clipped
        # j: the next item's drill-down is brought into view
        page.locator("h1").first.click()
        page.keyboard.press("j")
        second = eight_runs[1]
        page.wait_for_function(
            """(item) => [...document.querySelectorAll('[data-testid="stText"]')].some(
                   (e) => e.innerText.startsWith(item + ' · '))""",
            arg=second,
            polling=POLL_MS,
        )
        page.wait_for_function(
            """() => {
                const h = [...document.querySelectorAll('h3')].find(
                    (e) => e.innerText.trim() === 'Item');
                if (!h) return false;
                const r = h.getBoundingClientRect();
                return r.top >= 0 && r.top < window.innerHeight / 2;
            }""",
            polling=POLL_MS,
            timeout=15_000,
        )
    finally:
        page.close()


@pytest.mark.browser
def test_the_navigation_lists_every_page_on_a_page_with_sidebar_content(
    app_server, browser, initialised_store
):
    """13 pages fold to "View 3 more" (hiding Runs, Import, Judge audit) unless expanded."""
    url = app_server()
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{url}/misprompt_results")
        wait_for_app(page)
        nav = page.locator('[data-testid="stSidebarNav"]')
        for slug in ("runs", "import_data", "judge_audit", "compare"):
            assert nav.locator(f'a[href="{url}/{slug}"]').first.is_visible(), slug
        assert not nav.get_by_role("button", name=re.compile(r"View \d+ more")).count(), (
            nav.inner_text()
        )
    finally:
        page.close()
