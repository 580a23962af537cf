"""Real browser (Debian Chromium via Playwright) against `streamlit run app.py`.

Waits for the Mis-prompt heatmaps to draw, changes the label filter in the sidebar and checks
that the chart's data and the URL change. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import pytest

from tests.browser import *  # noqa: F401,F403
from tests.browser import POLL_MS, plotly_data, shot, wait_for_app, wait_for_plotly
from tests.misprompt_fixtures import insert_run, random_verdicts


@pytest.mark.browser
def test_label_filter_changes_heatmap_and_url(app_server, page, initialised_store):
    insert_run(
        initialised_store,
        "browser-run",
        random_verdicts(84, 84, seed=5),
        model="tiny",
        setting="zero-shot",
    )
    url = app_server()  # (every page opening: tests/test_browser_smoke.py)
    page.goto(f"{url}/misprompt_results")
    wait_for_app(page)
    wait_for_plotly(page, count=2)
    before = plotly_data(page, 0)
    # runs never share the published heatmap: the run is a row of the runs' own heatmap, named
    # with its judge, judge template and mode
    assert not any("browser-run" in y for y in before[0]["y"])
    runs = plotly_data(page, 1)
    assert (
        "browser-run · tiny (judge test-judge, judge template unknown, proactive)" in runs[0]["y"]
    )
    shot(page, "misprompt-heatmap-average")

    box = page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').filter(
        has_text="Label"
    )
    box.click()
    page.get_by_role("option", name="Detection", exact=True).click()
    # Wait for the rerun to finish: the URL carries the new label AND the first chart is the
    # Detection heatmap (a transient redraw of the old chart must not count as the change).
    page.wait_for_url("**label=detection**", timeout=60_000)
    page.wait_for_function(
        """(old) => {
            const p = document.querySelector('.js-plotly-plot');
            const title = p && p.layout && p.layout.title && (p.layout.title.text || '');
            return p && p.data && title.includes('Detection')
                && JSON.stringify(p.data[0].z) !== old;
        }""",
        arg=__import__("json").dumps(before[0]["z"]),
        timeout=60_000,
        polling=POLL_MS,
    )
    wait_for_app(page)
    after = plotly_data(page, 0)
    assert after[0]["z"] != before[0]["z"]
    assert "label=detection" in page.url
    title = page.locator(".js-plotly-plot .gtitle").first.text_content()
    assert "Detection" in title
    shot(page, "misprompt-heatmap-detection")

    # a shared link reproduces the view: same label, same data
    page.goto(page.url)
    wait_for_app(page)
    wait_for_plotly(page, count=2)
    # the first chart can be drawn for a moment before its data arrive (under load a one-row
    # placeholder was read): wait for the Detection heatmap with all its rows, then compare
    page.wait_for_function(
        """(rows) => {
            const p = document.querySelector('.js-plotly-plot');
            const title = p && p.layout && p.layout.title && (p.layout.title.text || '');
            return p && p.data && p.data[0] && title.includes('Detection')
                && p.data[0].z && p.data[0].z.length === rows;
        }""",
        arg=len(after[0]["z"]),
        timeout=60_000,
        polling=POLL_MS,
    )
    assert plotly_data(page, 0)[0]["z"] == after[0]["z"]

    # the settings view (Table 6) draws too
    page.goto(f"{url}/misprompt_results?view=Settings&label=guidance")
    wait_for_app(page)
    wait_for_plotly(page, count=1)
    assert "Guidance" in page.locator(".js-plotly-plot .gtitle").first.text_content()
    shot(page, "misprompt-settings-guidance")


@pytest.mark.browser
def test_runs_and_judge_vs_human_views_draw(app_server, page, initialised_store):
    insert_run(
        initialised_store,
        "browser-run",
        random_verdicts(84, 84, seed=5),
        model="tiny",
        setting="zero-shot",
    )
    insert_run(
        initialised_store,
        "browser-passive",
        random_verdicts(84, 84, seed=6),
        model="tiny",
        setting="zero-shot",
        mode="passive",
        item_set="set-browser-run",
        weak=True,
    )
    url = app_server()
    page.goto(f"{url}/misprompt_results?view=Runs&run=browser-passive&run_b=browser-run")
    wait_for_app(page)
    wait_for_plotly(page, count=3)  # interval chart + two comparison charts
    text = page.locator('[data-testid="stMain"]').inner_text()
    assert "Weak model" in text and "Inconsistent verdicts" in text
    assert "Ground truth" in text and "Raw judge output" in text
    shot(page, "misprompt-runs-drilldown")
    page.goto(f"{url}/misprompt_results?view=Judge+vs+human&label=detection")
    wait_for_app(page)
    wait_for_plotly(page, count=3)
    assert "5.59" in page.locator('[data-testid="stMain"]').inner_text()
    shot(page, "misprompt-judge-vs-human")
