"""Real browser: the Mistake finding page under `streamlit run`, in Chromium."""

from __future__ import annotations

import re
import threading

import pytest

from tests.bbm_fixtures import RUN_ID, scripted_run
from tests.browser import *  # noqa: F401,F403
from tests.browser import POLL_MS, plotly_data, shot, wait_for_app, wait_for_plotly


def heatmap(page) -> dict:
    for i in range(page.locator(".js-plotly-plot").count()):
        data = plotly_data(page, i)
        if data and data[0].get("type") == "heatmap":
            return data[0]
    raise AssertionError("no heatmap drawn")


def run_in_thread() -> None:
    """The run uses asyncio.run; Playwright's sync API already runs a loop in this thread."""
    errors: list[BaseException] = []

    def target() -> None:
        try:
            scripted_run()
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    worker = threading.Thread(target=target)
    worker.start()
    worker.join(120)
    if errors:
        raise errors[0]


@pytest.mark.browser
def test_mistake_finding_in_browser(app_server, page, initialised_store):
    run_in_thread()
    url = app_server()
    page.goto(f"{url}/mistake_finding?runs={RUN_ID}&method=direct_trace")
    wait_for_app(page)
    wait_for_plotly(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    hm = heatmap(page)
    assert f"scripted · {RUN_ID}" in hm["x"] and "GPT-4" in hm["x"]
    assert page.get_by_text("Table 4").first.is_visible()
    shot(page, "bbm-heatmap")

    # change the method in the selector: the URL follows and the heatmap redraws
    page.get_by_label("Method").first.click()
    page.get_by_role("option", name="Direct (step)").click()
    wait_for_app(page)
    page.wait_for_function("() => location.search.includes('method=direct_step')", polling=POLL_MS)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.js-plotly-plot')].some("
        "p => p.layout && p.layout.title && String(p.layout.title.text || '').includes('Direct (step)'))",
        polling=POLL_MS,
    )
    hm = heatmap(page)
    assert f"scripted · {RUN_ID}" not in hm["x"]

    # a shared link opens the drill-down on one trace, gold and prediction highlighted
    page.goto(f"{url}/mistake_finding?runs={RUN_ID}&trace_run={RUN_ID}&trace=bbm_sample:3")
    wait_for_app(page)
    page.get_by_role("tab", name="Trace drill-down").click()
    gold = page.locator(".bbm-step.bbm-gold")
    pred = page.locator(".bbm-step.bbm-pred")
    gold.first.wait_for()
    assert gold.count() == 1 and pred.count() == 1
    assert gold.first.get_attribute("data-step") == "3"
    assert pred.first.get_attribute("data-step") == "2"
    assert "gold mistake" in gold.first.inner_text()
    bg = gold.first.evaluate("e => getComputedStyle(e).backgroundColor")
    assert bg not in ("rgba(0, 0, 0, 0)", "transparent")
    gold.first.scroll_into_view_if_needed()
    shot(page, "bbm-drilldown")

    # every table has its CSV download
    page.get_by_role("tab", name=re.compile("Tables 4")).click()
    assert page.get_by_role("button", name="Download CSV").count() >= 5
