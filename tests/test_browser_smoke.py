"""The app starts under `streamlit run` and every page in the navigation opens in Chromium."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.browser import *  # noqa: F401,F403
from tests.browser import POLL_MS, shot, wait_for_app
from tests.conftest import ROOT
from tests.misprompt_fixtures import insert_run, random_verdicts


def _app_pages() -> list[str]:
    """Page slugs of the navigation: app.py's own st.Page entries (the default page is the root
    URL) and each registered benchmark's results page, which app.py lists from the registry."""
    from core.registry import BENCHMARKS

    text = (ROOT / "app.py").read_text()
    slugs = []
    for path, rest in re.findall(r'st\.Page\(\s*"pages/([a-z_]+)\.py"([^)]*)\)', text):
        slugs.append("" if "default=True" in rest else path)
    for benchmark in BENCHMARKS.values():
        stem = Path(benchmark.results_page.path).stem
        if stem != "overview" and stem not in slugs:
            slugs.append(stem)
    return slugs


@pytest.mark.browser
def test_every_page_opens_without_exception(app_server, page, initialised_store):
    insert_run(  # a run in the database: the pages draw its rows too
        initialised_store,
        "browser-run",
        random_verdicts(84, 84, seed=5),
        model="tiny",
        setting="zero-shot",
    )
    url = app_server()
    pages = _app_pages()
    assert len(pages) >= 10 and "misprompt_results" in pages and "" in pages
    # The first request is a deep link to a page (not the root) on a freshly started server;
    # from there every page is opened as a user moves around, by its link in the sidebar (each
    # page's own deep link is opened by its own browser test, and every page renders in a new
    # session in AppTest: tests/test_lake_app.py; a page load costs Chromium ~2x a click).
    page.goto(f"{url}/runs")
    wait_for_app(page)
    for slug in pages:
        title = page.locator('[data-testid="stMain"] h1').first.inner_text()
        page.locator(f'[data-testid="stSidebarNav"] a[href="{url}/{slug}"]').first.click()
        page.wait_for_function(  # this page's run finished: its own title replaced the last one
            """([slug, title]) => {
                const app = document.querySelector('[data-testid="stApp"]');
                const h1 = document.querySelector('[data-testid="stMain"] h1');
                return location.pathname.replace(/^\\/+|\\/+$/g, '') === slug
                    && app && app.getAttribute('data-test-script-state') === 'notRunning'
                    && h1 && h1.innerText !== title;
            }""",
            arg=[slug, title],
            polling=POLL_MS,
        )
        assert urlsplit(page.url).path.strip("/") == slug, (slug, page.url)
        errors = page.locator('[data-testid="stException"]')
        assert errors.count() == 0, (slug, errors.first.inner_text()[:1500])
        # The sidebar is app.py's st.navigation (titles), also for the very first session of a
        # fresh server entered by a deep link — never Streamlit's file-name list of pages/.
        nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
        assert "Anchoring (ErrorBench)" in nav and "common" not in nav, (slug, nav)
        shot(page, f"smoke-{slug or 'overview'}")
