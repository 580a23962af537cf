"""The app starts under `streamlit run` and every page in the navigation opens in Chromium."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.browser import *  # noqa: F401,F403
from tests.browser import shot, wait_for_app
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
        stem = Path(benchmark.page).stem
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
    # The first request is a deep link to a page (not the root) on a freshly started server.
    for slug in ["runs", *pages]:
        page.goto(f"{url}/{slug}")
        wait_for_app(page)
        page.wait_for_selector('[data-testid="stMain"]')
        errors = page.locator('[data-testid="stException"]')
        assert errors.count() == 0, (slug, errors.first.inner_text()[:1500])
        # The sidebar is app.py's st.navigation (titles), also for the very first session of a
        # fresh server entered by a deep link — never Streamlit's file-name list of pages/.
        nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
        assert "Anchoring (ErrorBench)" in nav and "common" not in nav, (slug, nav)
        shot(page, f"smoke-{slug or 'overview'}")
