"""Real browser: the Anchoring page under `streamlit run`, in Chromium."""

from __future__ import annotations

import pytest

from tests.browser import *  # noqa: F401,F403
from tests.browser import POLL_MS, plotly_data, shot, wait_for_app, wait_for_plotly
from tests.fake_openai import FakeOpenAI
from tests.item_subsets import first_items
from tests.test_errorbench_run import cli, responder


def scripted_run_in_thread(store) -> None:
    """`cli` runs in its own thread: Playwright's sync API already runs a loop in this one."""
    with FakeOpenAI(responder=responder) as server:
        assert (
            cli(
                [
                    "run",
                    "errorbench",
                    "--items",
                    first_items(store, "errorbench-sample", 2),
                    "--base-url",
                    server.url,
                    "--model",
                    "scripted",
                    "--run-name",
                    "eb-browser",
                    "--quiet",
                ]
            )
            == 0
        )


@pytest.mark.browser
def test_anchoring_page_in_browser(app_server, page, initialised_store):
    scripted_run_in_thread(initialised_store)
    url = app_server()
    page.goto(
        f"{url}/anchoring?eb_drill_run=eb-browser&eb_drill_cond=mislead_high&eb_passage=p0001"
    )
    wait_for_app(page)
    wait_for_plotly(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    box = plotly_data(page, 0)
    assert box and box[0]["type"] == "box" and box[0]["name"] == "scripted"
    shot(page, "errorbench-count-bias")

    # the drill-down: gold and extracted edits highlighted, one ERROR line not located
    page.get_by_role("tab", name="Passage drill-down").click()
    page.wait_for_selector("mark.eb-gold")
    assert page.locator("mark.eb-gold:visible").count() == 4  # annotator 1 is collapsed
    # 5 located lines; (2,1,2) and (2,1,3) overlap, so one mark shows them (the table lists both)
    assert page.locator("mark.eb-hit").count() + page.locator("mark.eb-miss").count() == 4
    assert (
        page.locator("mark.eb-hit[data-span='2:1:2'], mark.eb-miss[data-span='2:1:2']").count() == 1
    )
    assert page.get_by_text("reported n̂ =").first.is_visible()
    shot(page, "errorbench-drilldown")

    # switching the span matching rewrites the URL and the bars' title
    page.get_by_text("strict", exact=True).first.click()
    page.wait_for_function("() => location.search.includes('eb_span=strict')", polling=POLL_MS)
    page.get_by_role("tab", name="Count-F1 vs span F0.5").click()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.js-plotly-plot')].some(p => p.layout && "
        "String((p.layout.title || {}).text || '').includes('vs strict F0.5'))",
        polling=POLL_MS,
    )
    shot(page, "errorbench-inflation")
