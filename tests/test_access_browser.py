"""The real login (issue 27): `streamlit run app.py` with login on, a real OpenID Connect
provider (oidc-provider-mock, its HTTP server on a free port) and Chromium signing in as each
of the four roles — what each sees and may do, labels under the signed-in identity, logout
ending access — and no token or secret in the app's log, its pages or the store.
"""

from __future__ import annotations

import json
import re
import secrets
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from core.services import audit
from core.store import Store
from tests.browser import *  # noqa: F401,F403
from tests.browser import ARTIFACTS, POLL_MS, start_streamlit, stop_streamlit, wait_for_app

COOKIE_SECRET = secrets.token_urlsafe(32)
CLIENT_SECRET = secrets.token_urlsafe(24)
ROLES = ("viewer", "annotator", "runner", "admin")
ACCESS_TOML = """
claim = "groups"
[groups]
"ehw-viewers" = "viewer"
"ehw-annotators" = "annotator"
"ehw-runners" = "runner"
"ehw-admins" = "admin"
"""
SEEN: list[str] = []  # every page's text and HTML the journeys saw (checked for secrets)


@pytest.fixture(scope="module")
def provider() -> Iterator[str]:
    """oidc-provider-mock's server on a free port, with one user per role (their groups and
    email set through its PUT /users/<sub>)."""
    from oidc_provider_mock import run_server_in_thread

    with run_server_in_thread(port=0) as server:
        base = f"http://localhost:{server.server_port}"
        for role in ROLES:
            claims = {"email": f"{role}@lab.test", "name": role.title(), "groups": [f"ehw-{role}s"]}
            request = urllib.request.Request(
                f"{base}/users/{role}-sub",
                data=json.dumps(claims).encode(),
                method="PUT",
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                assert response.status == 204
        yield base


@pytest.fixture(scope="module")
def team_app(provider, tmp_path_factory) -> Iterator[tuple[str, Path, Path]]:
    """The app with login on over a store holding two judged runs and an audit: (its URL,
    the store, its log file)."""
    from tests.audit_fixtures import two_runs

    folder = tmp_path_factory.mktemp("team")
    db = folder / "results.duckdb"
    store = Store.open(db)
    two_runs(store)
    audit.create_audit(store, "aud", ["run-a", "run-b"], fraction=0.5, seed=1)
    (folder / "access.toml").write_text(ACCESS_TOML)
    secrets_file = folder / "secrets.toml"

    def args(port: int) -> list[str]:
        secrets_file.write_text(
            "[auth]\n"
            f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
            f'cookie_secret = "{COOKIE_SECRET}"\n'
            'client_id = "ehw-dashboard"\n'
            f'client_secret = "{CLIENT_SECRET}"\n'
            f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n'
        )
        return ["--secrets.files", str(secrets_file)]

    url, proc = start_streamlit(db, {"EHW_ACCESS_FILE": str(folder / "access.toml")}, args)
    try:
        yield url, db, ARTIFACTS / f"streamlit-{url.rsplit(':', 1)[1]}.log"
    finally:
        stop_streamlit(proc)


def _keep(page) -> None:
    SEEN.append(page.content())
    SEEN.append(page.locator("body").inner_text())


def no_page_list(page) -> None:
    """No list of pages in the sidebar, once the run has said so: the browser may draw the
    pages Streamlit announced with the session before the run's hidden navigation arrives
    (the error shown first, the navigation after it), so wait for that message, not a count
    taken in between (once seen under CI load)."""
    expect(page.locator('[data-testid="stSidebarNav"]')).to_have_count(0, timeout=30_000)


def sign_in(page, url: str, role: str) -> None:
    """From a deep link, through the provider's form, back into the app signed in."""
    page.goto(f"{url}/runs")
    page.get_by_role("button", name="Sign in").wait_for()
    no_page_list(page)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/oauth2/authorize"))
    page.fill('input[name="sub"]', f"{role}-sub")
    page.get_by_role("button", name="Authorize").click()
    page.wait_for_url(re.compile(re.escape(url)))
    wait_for_app(page)
    page.get_by_text(f"Signed in as {role}@lab.test · {role}").wait_for()
    _keep(page)


def nav_slugs(page, url: str) -> set[str]:
    """The pages the sidebar links to, by URL path ("" = the main page); a long list is
    shown whole first (Streamlit folds it behind "View more")."""
    more = page.locator('[data-testid="stSidebarNavViewButton"]')
    if more.count() and "more" in more.inner_text():
        more.click()
        page.get_by_text("View less").wait_for()
    hrefs = page.locator('[data-testid="stSidebarNav"] a').evaluate_all(
        "links => links.map(a => a.href)"
    )
    return {h[len(url) :].strip("/") for h in hrefs}


def h1(page) -> str:
    return page.locator('[data-testid="stMain"] h1').first.inner_text()


def open_page(page, url: str, slug: str) -> None:
    page.goto(f"{url}/{slug}")
    wait_for_app(page)
    _keep(page)


def open_refused(page, url: str, slug: str) -> None:
    """A page the role lacks, by URL: Streamlit says it does not exist and runs the role's
    default page instead; the dialog is closed so the test can go on."""
    open_page(page, url, slug)
    dialog = page.get_by_role("dialog")
    dialog.get_by_text("Page not found").wait_for()
    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden")


def log_out(page, url: str) -> None:
    """Log out, then come back by a deep link: the sign-in screen, nothing of the app."""
    page.locator('[data-testid="stSidebar"]').get_by_role("button", name="Log out").click()
    page.wait_for_function(
        "() => document.body.innerText.includes('End Session')"
        " || document.body.innerText.includes('sign in to continue')",
        polling=POLL_MS,
    )
    if "End Session" in page.locator("body").inner_text():  # the provider's end_session page
        page.locator("form button").first.click()
    page.goto(f"{url}/runs")
    page.get_by_role("button", name="Sign in").wait_for()
    body = page.locator("body").inner_text()
    assert "Signed in as" not in body and "Runs" not in [h1(page)]
    no_page_list(page)
    _keep(page)


def _start_button(page):
    page.get_by_role("tab", name="Start a run").click()
    button = page.get_by_role("button", name="Start run")
    button.wait_for()
    return button


@pytest.mark.browser
def test_viewer_browses_and_cannot_start_or_import(team_app, page):
    url, _db, _log = team_app
    sign_in(page, url, "viewer")
    nav = nav_slugs(page, url)
    assert {"", "runs", "judge_audit", "grid", "misprompt_results"} <= nav, nav
    assert not {"import_data", "playground", "action_log"} & nav, nav
    open_page(page, url, "runs")
    assert _start_button(page).is_disabled()
    page.get_by_text("Your role (viewer) may not start run").first.wait_for()
    open_refused(page, url, "import_data")  # by URL: not this role's page
    assert "Import" not in h1(page)
    log_out(page, url)


@pytest.mark.browser
def test_annotator_gets_the_blind_queue_only_and_labels_as_itself(team_app, page):
    url, db, _log = team_app
    sign_in(page, url, "annotator")
    assert nav_slugs(page, url) <= {""}  # one page: Streamlit draws no navigation
    # the queue is the annotator's main page ("/"); ?au_view= and ?au_judge= change nothing
    for slug in ("runs", "grid", "action_log", "judge_audit", "?au_view=Results&au_judge=true"):
        (open_page if slug.startswith("?") else open_refused)(page, url, slug)
        assert h1(page) == "Judge audit", slug
        body = page.locator('[data-testid="stMain"]').inner_text()
        assert "Results" not in [t.strip() for t in page.get_by_role("tab").all_inner_texts()]
        assert "Show judge verdict" not in body and "judge:" not in body, slug
        assert "Labelling as annotator@lab.test" in body
    names = audit.label_set_of_audit(Store.open(db, create=False), "aud").names
    yes = page.get_by_role("button", name=re.compile(r"^Yes\b"))
    for i in range(len(names)):
        yes.nth(i).click()
        page.wait_for_function(
            "(n) => [...document.querySelectorAll('button[kind=primary]')]"
            ".filter(b => b.innerText.trim().startsWith('Yes')).length >= n",
            arg=i + 1,
            polling=POLL_MS,
        )
    page.get_by_role("button", name="Save labels").click()
    page.get_by_text("Saved item 1 for annotator@lab.test").wait_for()
    assert "judge:" in page.locator('[data-testid="stMain"]').inner_text()  # now revealed
    _keep(page)
    store = Store.open(db, create=False)
    assert store.rows("SELECT DISTINCT annotator FROM human_labels") == [("annotator@lab.test",)]
    assert ("annotator@lab.test", "annotator", "label") in store.rows(
        "SELECT who, role, action FROM actions"
    )
    log_out(page, url)


@pytest.mark.browser
def test_runner_may_start_and_import_but_not_delete_or_read_the_log(team_app, page):
    url, _db, _log = team_app
    sign_in(page, url, "runner")
    nav = nav_slugs(page, url)
    assert {"runs", "import_data", "playground"} <= nav and "action_log" not in nav, nav
    open_page(page, url, "runs")
    assert _start_button(page).is_enabled()
    open_refused(page, url, "action_log")
    assert "Action log" not in h1(page)
    log_out(page, url)


@pytest.mark.browser
def test_admin_reads_the_action_log(team_app, page):
    url, _db, _log = team_app
    sign_in(page, url, "admin")
    assert {"action_log", "import_data", "runs", ""} <= nav_slugs(page, url)
    open_page(page, url, "action_log")
    assert "Action log" in h1(page)
    page.locator('[data-testid="stDataFrame"]').first.wait_for()
    log_out(page, url)


@pytest.mark.browser
def test_no_token_or_secret_in_the_log_the_pages_or_the_store(team_app):
    """After the journeys above: the server's log, every page seen and every table hold
    neither the cookie secret, the client secret nor a token (a JWT starts with eyJ)."""
    url, db, log = team_app
    assert SEEN, "run with the journeys above"
    store = Store.open(db, create=False)
    tables = [r[0] for r in store.rows("SELECT table_name FROM duckdb_tables()")]
    dumped = "\n".join(store.df(f'SELECT * FROM "{t}"').to_csv() for t in tables)
    for name, text in [("log", log.read_text()), ("pages", "\n".join(SEEN)), ("store", dumped)]:
        assert COOKIE_SECRET not in text, name
        assert CLIENT_SECRET not in text, name
        assert not re.search(r"eyJ[A-Za-z0-9_-]{10,}\.", text), name


@pytest.mark.browser
def test_an_exposed_server_without_login_serves_nothing_unless_read_only(app_server, page, store):
    """`streamlit run app.py --server.address 0.0.0.0` without login: every page is the
    refusal (what to do instead); with EHW_READ_ONLY_FOR_ALL=1 it serves, read only."""
    from tests.browser import start_streamlit as start

    exposed = ["--server.address", "0.0.0.0"]  # after the harness's 127.0.0.1: the last wins
    url, proc = start(store.path, {"EHW_ACCESS_FILE": ""}, lambda port: exposed)
    try:
        page.goto(f"{url}/runs")
        page.get_by_text("without login").wait_for()
        body = page.locator("body").inner_text()
        assert "EHW_READ_ONLY_FOR_ALL=1" in body and "every network interface" not in body
        no_page_list(page)
    finally:
        stop_streamlit(proc)
    url, proc = start(
        store.path, {"EHW_ACCESS_FILE": "", "EHW_READ_ONLY_FOR_ALL": "1"}, lambda port: exposed
    )
    try:
        page.goto(f"{url}/runs")
        wait_for_app(page)
        assert h1(page) == "Runs"
        assert _start_button(page).is_disabled()
        page.get_by_text("Read-only for everyone").wait_for()
    finally:
        stop_streamlit(proc)
