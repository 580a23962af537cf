"""Real-browser test harness: `streamlit run app.py` in a subprocess + Debian's Chromium via Playwright.

Use in a test module:

    from tests.browser import *  # noqa: F401,F403  (fixtures: browser, app_server, page)

    @pytest.mark.browser
    def test_x(app_server, page, initialised_store):
        url = app_server()                      # starts streamlit against $EHW_DB
        page.goto(url + "/misprompt_results")
        wait_for_app(page); wait_for_plotly(page)
        shot(page, "misprompt")                 # test-artifacts/misprompt.png (EHW_SHOTS=1)

Screenshots cost Chromium CPU (a full-page PNG of a long page): `shot` takes them only with
EHW_SHOTS=1; the `page` fixture takes a final one of a test that failed (and of every test with
EHW_SHOTS=1). Waits poll every POLL_MS instead of on every animation frame.

Chromium comes from Debian (`apt-get install chromium`); Playwright never downloads a browser.
Without it the tests skip, except when EHW_REQUIRE_BROWSER=1 (CI), where they fail.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = os.environ.get("EHW_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    # Pages of one site share one renderer process, so a second page on the same server finds
    # Streamlit's scripts compiled (a page in a process of its own: ~2 s more CPU, cold).
    "--process-per-site",
]
# In-test screenshots only on request (EHW_SHOTS=1): each is a full-page PNG that Chromium
# renders and encodes (~0.2 s of CPU, more on long pages); no doc image comes from them.
SHOTS = os.environ.get("EHW_SHOTS") == "1"
# wait_for_function polls every POLL_MS instead of on every animation frame (Playwright's
# default): a predicate such as `document.body.innerText.includes(...)` run 60 times a second
# costs the renderer ~0.07 s of CPU per second of waiting, every 100 ms ~0.01 s.
POLL_MS = 100


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _require_browser() -> None:
    if Path(CHROMIUM).exists() or shutil.which(CHROMIUM):
        return
    message = f"Chromium not found at {CHROMIUM} (apt-get install chromium chromium-driver)"
    if os.environ.get("EHW_REQUIRE_BROWSER") == "1":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def browser():
    """Module-scoped: Playwright's sync API leaves an event loop on the thread while it is open,
    which would break `asyncio.run` in later (non-browser) test modules."""
    _require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def failed(node: pytest.Item) -> bool:
    """Whether the test's setup or call failed so far (reports kept by tests/conftest.py's
    pytest_runtest_makereport); fixtures read it in their teardown."""
    return any(
        getattr(node, f"rep_{when}", None) is not None and getattr(node, f"rep_{when}").failed
        for when in ("setup", "call")
    )


def _final_shot(pg: Any, node: pytest.Item, name: str) -> None:
    """A page fixture's last screenshot: of a test that failed (or every test, EHW_SHOTS=1);
    a page that cannot be drawn any more is no reason to fail the teardown."""
    if SHOTS or failed(node):
        try:
            shot(pg, name, force=True)
        except Exception:
            pass


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    try:
        yield pg
    finally:
        _final_shot(pg, request.node, f"{request.node.name}-final")
        context.close()


@pytest.fixture(scope="module")
def shared_context(browser):
    """One browser context for a module's tests against one shared server: their pages share
    a renderer process (--process-per-site) where Streamlit's scripts are already compiled. Use
    `shared_pages`, which clears the origin's storage after each test."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        yield context
    finally:
        context.close()


@pytest.fixture
def shared_pages(shared_context, request) -> Iterator[Callable[..., object]]:
    """Factory: shared_pages(viewport=None) opens a page in the module's shared context. After
    the test its pages close and cookies, localStorage and sessionStorage are cleared (Streamlit
    keeps sidebar and theme state there), as a fresh context would have them."""
    opened: list = []

    def new(viewport: dict[str, int] | None = None) -> object:
        pg = shared_context.new_page()
        if viewport:
            pg.set_viewport_size(viewport)
        pg.set_default_timeout(60_000)
        opened.append(pg)
        return pg

    yield new
    for k, pg in enumerate(opened):
        _final_shot(pg, request.node, f"{request.node.name}-final-{k}")
        try:
            pg.evaluate("() => { localStorage.clear(); sessionStorage.clear(); }")
        except Exception:
            pass
        pg.close()
    shared_context.clear_cookies()


class PortTaken(RuntimeError):
    """streamlit could not bind the port it was given."""


def streamlit_command(port: int) -> list[str]:
    """`streamlit run app.py` headless on 127.0.0.1:port (tests and bench/bench_browser.py)."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(ROOT / "app.py"),
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
    ]


def start_streamlit(
    db_path: Path,
    extra_env: dict[str, str] | None = None,
    extra_args: Callable[[int], list[str]] | None = None,
) -> tuple[str, subprocess.Popen]:
    """`streamlit run app.py` against the database at db_path: (base URL, process).
    `extra_args(port)`: more command-line options, made once the port is chosen."""
    # With parallel workers (test.sh runs pytest-xdist) another process may take the free
    # port between free_port() and streamlit's bind: try a new port then.
    for _attempt in range(3):
        try:
            return _start_on(free_port(), db_path, extra_env, extra_args)
        except PortTaken:
            continue
    raise RuntimeError("streamlit found no free port in 3 tries")


def _start_on(
    port: int,
    db_path: Path,
    extra_env: dict[str, str] | None,
    extra_args: Callable[[int], list[str]] | None = None,
) -> tuple[str, subprocess.Popen]:
    env = {**os.environ, "EHW_DB": str(db_path), **(extra_env or {})}
    ARTIFACTS.mkdir(exist_ok=True)
    log = ARTIFACTS / f"streamlit-{port}.log"
    proc = subprocess.Popen(
        # No full garbage collection after every script run (Streamlit's runner.postScriptGC,
        # a memory-hygiene default): ~0.1 s of the server's CPU per rerun, a fifth of a
        # judge-audit keypress; a test's server lives a minute, its memory does not matter.
        [
            *streamlit_command(port),
            "--runner.postScriptGC",
            "false",
            *(extra_args(port) if extra_args else []),
        ],
        cwd=ROOT,
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            text = log.read_text()
            if f"Port {port} is not available" in text:
                raise PortTaken(port)
            raise RuntimeError(f"streamlit exited early: {text[-2000:]}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return url, proc
        except OSError:
            time.sleep(0.1)
    stop_streamlit(proc)
    raise RuntimeError(f"streamlit did not start: {log.read_text()[-2000:]}")


def stop_streamlit(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def app_server(db_path) -> Iterator[Callable[..., str]]:
    """Factory: app_server(extra_env={...}) starts `streamlit run app.py`, returns its base URL."""
    procs: list[subprocess.Popen] = []

    def start(extra_env: dict[str, str] | None = None) -> str:
        url, proc = start_streamlit(db_path, extra_env)
        procs.append(proc)
        return url

    yield start
    for proc in procs:
        stop_streamlit(proc)


def wait_for_app(page, timeout_ms: int = 60_000) -> None:
    """Wait until the script run finished and something rendered in the main area.

    After a widget interaction, Streamlit may still report `notRunning` for a moment before the
    rerun starts: wait for the content you expect to change rather than for this alone.
    """
    page.wait_for_selector(
        '[data-testid="stApp"][data-test-connection-state="CONNECTED"]', timeout=timeout_ms
    )
    page.wait_for_function(
        """() => {
            const app = document.querySelector('[data-testid="stApp"]');
            if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
            return document.querySelectorAll(
                '[data-testid="stMain"] [data-testid="stElementContainer"]').length > 0;
        }""",
        timeout=timeout_ms,
        polling=POLL_MS,
    )


def wait_for_plotly(page, count: int = 1, timeout_ms: int = 60_000) -> None:
    """Wait until at least `count` Plotly charts have drawn their SVG (first one can take ~10 s)."""
    page.wait_for_function(
        "(n) => document.querySelectorAll('.js-plotly-plot .main-svg').length >= n",
        arg=count,
        timeout=timeout_ms,
        polling=POLL_MS,
    )


def plotly_data(page, index: int = 0) -> list:
    """The `data` array of the index-th drawn Plotly chart, read from the live DOM."""
    return page.evaluate(
        """(i) => {
            const plots = document.querySelectorAll('.js-plotly-plot');
            const p = plots[i];
            return p && p.data ? JSON.parse(JSON.stringify(p.data)) : null;
        }""",
        index,
    )


def shot(page, name: str, force: bool = False) -> Path | None:
    """test-artifacts/<name>.png of the whole page, with EHW_SHOTS=1 (or `force`: a failure)."""
    if not (SHOTS or force):
        return None
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
