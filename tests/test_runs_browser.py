"""Runs page in a real browser: start a Mis-prompt run from the form, watch it finish.

The run is a `python -m core run misprompt` process started by the app's process, talking to
the scripted server; the page follows its progress from the database.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from core.services import jobs
from tests.browser import *  # noqa: F401,F403  (fixtures: browser, app_server, page)
from tests.browser import POLL_MS, shot, start_streamlit, stop_streamlit, wait_for_app
from tests.conftest import copy_of
from tests.fake_openai import FakeProcess


@pytest.fixture(scope="module")
def runs_app(tmp_path_factory, _initialised_template):
    """One initialised database and one `streamlit run` for the two tests (a server start and
    its first page load cost ~2.5 s of CPU; the tests' pages share a context, where the second
    finds Streamlit's frontend compiled): each test starts runs of its own names, against its
    own scripted server typed into the form, and reads back only those runs."""
    path = tmp_path_factory.mktemp("runs") / "results.duckdb"
    store = copy_of(_initialised_template, path)
    url, proc = start_streamlit(path)
    try:
        yield store, url
    finally:
        stop_streamlit(proc)


@pytest.mark.browser
def test_start_watch_and_finish_a_run_in_the_browser(runs_app, shared_pages):
    store, url = runs_app
    page = shared_pages()
    with FakeProcess({"latency": 0.2}) as server:
        page.goto(url + "/runs")
        wait_for_app(page)
        page.get_by_role("tab", name="Start a run").click()
        page.locator('[data-testid="stRadio"]').get_by_text(
            "Mis-prompt (proactive; judged)"
        ).click()
        # custom endpoint: the scripted server
        page.locator('[data-testid="stSelectbox"]').filter(has_text="Model endpoint").click()
        page.get_by_role("option", name="Custom base URL…").click()
        for label, value in [
            ("Base URL", server.url),
            ("Model id", "fake-model"),
            # ^…$: not the field's help button ("Help for Limit …")
            (re.compile(r"^Limit \(0 = all items\)$"), "6"),
            (re.compile("^Run name"), "browser-run"),
        ]:
            box = page.get_by_label(label).locator("visible=true").first
            box.wait_for()
            box.fill(value)
            box.press("Enter")
            wait_for_app(page)
        page.wait_for_function(
            "() => [...document.querySelectorAll('code')].some(c => "
            "c.innerText.includes('--run-name browser-run') && c.innerText.includes('--limit 6'))",
            polling=POLL_MS,
        )
        shot(page, "runs-start-form")
        page.get_by_role("button", name="Start run").click()
        # the start's rerun first (it puts the run into the URL): a tab clicked while it is
        # redrawing the page stays unselected (CI on 1e7d12d, under load)
        page.wait_for_function(
            "() => location.search.includes('run=browser-run')", timeout=60_000, polling=POLL_MS
        )
        wait_for_app(page)

        # the watch panel follows the run until it is done (fragment refresh every 2 s)
        runs_tab = page.get_by_role("tab", name="Runs")
        runs_tab.click()
        expect(runs_tab).to_have_attribute("aria-selected", "true")
        page.wait_for_function(  # the watch panel, then the full refresh when it ends
            "() => document.body.innerText.includes('done: 6 of 6 done, 0 failed') && "
            "document.body.innerText.includes('6 / 6')",
            timeout=90_000,
            polling=POLL_MS,
        )
        wait_for_app(page)
        shot(page, "runs-watch-done")
    progress = jobs.run_progress(store, "browser-run")
    assert (progress["done"], progress["planned"], progress["status"]) == (6, 6, "done")
    assert page.get_by_text("browser-run").count() >= 1


@pytest.mark.browser
def test_the_runs_page_follows_the_run_just_started(runs_app, shared_pages):
    """Start a run, then a second one: the page (selector, URL and watch panel) moves to the
    second, not back to the first (seen three times before the fix)."""
    store, url = runs_app
    page = shared_pages()
    with FakeProcess({"latency": 0.05}) as server:
        for name in ("first-run", "second-run"):
            page.goto(url + "/runs")
            wait_for_app(page)
            page.get_by_role("tab", name="Start a run").click()
            page.locator('[data-testid="stRadio"]').get_by_text(
                "Mis-prompt (proactive; judged)"
            ).click()
            page.locator('[data-testid="stSelectbox"]').filter(has_text="Model endpoint").click()
            page.get_by_role("option", name="Custom base URL…").click()
            for label, value in [
                ("Base URL", server.url),
                ("Model id", "fake-model"),
                (re.compile(r"^Limit \(0 = all items\)$"), "2"),
                (re.compile("^Run name"), name),
            ]:
                box = page.get_by_label(label).locator("visible=true").first
                box.wait_for()
                box.fill(value)
                box.press("Enter")
                wait_for_app(page)
            page.wait_for_function(
                "name => [...document.querySelectorAll('code')].some(c => "
                "c.innerText.includes('--run-name ' + name))",
                arg=name,
                polling=POLL_MS,
            )
            page.get_by_role("button", name="Start run").click()
            page.wait_for_function(
                "name => location.search.includes('run=' + name)",
                arg=name,
                timeout=30_000,
                polling=POLL_MS,
            )
            wait_for_app(page)
        page.get_by_role("tab", name="Runs").click()
        page.wait_for_function(
            "() => document.body.innerText.includes('second-run')", timeout=30_000, polling=POLL_MS
        )
        shot(page, "runs-follow-second")
        # the watch selector shows the new run (the first one is done and listed above it)
        page.wait_for_function(
            "() => [...document.querySelectorAll('[data-testid=\"stSelectbox\"]')].some(e => "
            "e.textContent.includes('second-run') || [...e.querySelectorAll('input')].some("
            "i => (i.value || '').includes('second-run')))",
            timeout=30_000,
            polling=POLL_MS,
        )
        assert "run=second-run" in page.url
        page.wait_for_function(  # and it keeps following it to the end
            "() => document.body.innerText.includes('done: 2 of 2 done, 0 failed')",
            timeout=60_000,
            polling=POLL_MS,
        )
        assert "run=second-run" in page.url
    for name in ("first-run", "second-run"):
        assert jobs.run_progress(store, name)["planned"] == 2
