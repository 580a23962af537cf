"""The app starts under `streamlit run` and every page in the navigation opens in Chromium."""

from __future__ import annotations

import pytest

from tests.browser import *  # noqa: F401,F403
from tests.browser import shot, wait_for_app

PAGES = [
    "runs",
    "",
    "misprompt_results",
    "anchoring",
    "mistake_finding",
    "proactive_passive",
    "grid",
    "playground",
    "runs",
    "import_data",
    "judge_audit",
]


@pytest.mark.browser
def test_every_page_opens_without_exception(app_server, page, initialised_store):
    url = app_server()
    for slug in PAGES:
        page.goto(f"{url}/{slug}")
        wait_for_app(page)
        page.wait_for_selector('[data-testid="stMain"]')
        assert page.locator('[data-testid="stException"]').count() == 0, slug
        # The sidebar is app.py's st.navigation (titles), also for the very first session of a
        # fresh server entered by a deep link — never Streamlit's file-name list of pages/.
        nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
        assert "Anchoring (ErrorBench)" in nav and "common" not in nav, (slug, nav)
        shot(page, f"smoke-{slug or 'overview'}")
