"""Benchmark: what a user waits for — every page in headless Chromium, time to its first chart
(or first table on pages without charts), cold (first visit after the server starts), warm
(second visit by URL: a full page load) and by sidebar click (the app already loaded).

    .venv/bin/python bench/bench_browser.py [--verdicts 40000] [--repeat 2] [--db PATH]

Builds a database (`python -m core init` + a synthetic Mis-prompt set of 8 models × 5 settings,
core/benchmarks/misprompt/synth.py, so run views have data; `--verdicts 0` for the bare initialised file),
starts `streamlit run app.py` on it, and drives Debian's Chromium through Playwright (as
tests/browser.py does; never a downloaded browser). Cold = the first visit of a page after the
server started (empty st.cache_data); warm = the next visit(s) in the same browser (median).
Goal: ≤ 2 s warm on every page.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser import CHROMIUM, CHROMIUM_ARGS, free_port, streamlit_command  # noqa: E402

GOAL_S = 2.0
# (url path, title, what to wait for): "chart" = a drawn Plotly SVG, "table" = a dataframe
PAGES = [
    ("", "Overview", "table"),
    ("misprompt_results", "Mis-prompt results", "chart"),
    ("anchoring", "Anchoring (ErrorBench)", "table"),
    ("mistake_finding", "Mistake finding (BBM)", "chart"),
    ("proactive_passive", "Proactive vs passive", "chart"),
    ("grid", "Responses", "table"),
    ("playground", "Playground", "content"),
    ("runs", "Runs", "table"),
    ("import_data", "Import", "table"),
    ("judge_audit", "Judge audit", "content"),
]
SELECTORS = {
    "chart": ".js-plotly-plot .main-svg",
    "table": '[data-testid="stDataFrame"] canvas, [data-testid="stTable"] table',
    "content": '[data-testid="stMain"] [data-testid="stElementContainer"]',
}
# the element exists (not yet drawn): keep waiting for it
PENDING = {"chart": '[data-testid="stPlotlyChart"]', "table": '[data-testid="stDataFrame"]'}
DONE_JS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return app && app.getAttribute('data-test-script-state') === 'notRunning';
}"""


def build_db(path: Path, verdicts: int) -> str:
    env = {**os.environ, "EHW_DB": str(path)}
    subprocess.run(
        [sys.executable, "-m", "core", "init", "--db", str(path)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    if verdicts <= 0:
        return "initialised database (published tables + the three samples)"
    from core.benchmarks.misprompt.synth import SynthSpec, fill
    from core.store import Store

    counts = fill(Store.open(path), SynthSpec(n_verdicts=verdicts))
    return (
        f"initialised database + {counts['runs']} synthetic Mis-prompt runs × "
        f"{counts['items']:,} items ({counts['verdicts']:,} verdicts)"
    )


def start_server(db: Path) -> tuple[subprocess.Popen, str, Path]:
    port = free_port()
    log = Path(tempfile.gettempdir()) / f"bench-browser-{port}.log"
    proc = subprocess.Popen(
        streamlit_command(port),
        cwd=ROOT,
        env={**os.environ, "EHW_DB": str(db)},
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2):
                return proc, url, log
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit(f"streamlit did not start: {log.read_text()[-2000:]}")


def visit(page, url: str, kind: str, timeout_s: float = 120) -> tuple[float, str]:
    """Seconds from navigation to the first element of `kind` (falls back to 'content' when
    the page has none once its script finished)."""
    page.goto("about:blank")  # nothing of the previous visit can match
    t0 = time.perf_counter()
    page.goto(url, wait_until="commit")
    deadline = t0 + timeout_s
    since = None
    while time.perf_counter() < deadline:
        if page.query_selector(SELECTORS[kind]):
            return time.perf_counter() - t0, kind
        if (
            kind != "content"
            and page.evaluate(DONE_JS)
            and page.query_selector(SELECTORS["content"])
            and not page.query_selector(PENDING[kind])
        ):
            # the script finished without a chart/table element: a page may rerun once (tabs
            # bound to the URL draw after it), so only give up after 5 s of that
            since = since or time.perf_counter()
            if time.perf_counter() - since > 5:
                return time.perf_counter() - t0, "content (no " + kind + ")"
        else:
            since = None
        page.wait_for_timeout(20)
    return float("nan"), "timeout"


def visit_by_sidebar(page, url: str, _path: str, title: str, kind: str) -> float:
    """Seconds from a click on the page's sidebar link (the app stays loaded, as when a user
    moves between pages) to its first chart/table. Starts from the Playground, which has
    neither."""
    if kind == "content":
        return float("nan")
    page.goto(f"{url}/playground")
    page.wait_for_function(DONE_JS)
    page.wait_for_selector(SELECTORS["content"])
    link = page.locator('[data-testid="stSidebarNav"] a').filter(has_text=title).first
    t0 = time.perf_counter()
    link.click()
    page.wait_for_selector(SELECTORS[kind], timeout=120_000)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verdicts", type=int, default=40_000)
    ap.add_argument("--repeat", type=int, default=2, help="warm visits per page (median)")
    ap.add_argument("--db", default=None)
    args = ap.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    tmp = tempfile.TemporaryDirectory()
    db = Path(args.db) if args.db else Path(tmp.name) / "bench.duckdb"
    t = time.perf_counter()
    what = build_db(db, args.verdicts)
    print(f"{what}; built in {time.perf_counter() - t:.1f} s")
    proc, url, log = start_server(db)
    from playwright.sync_api import sync_playwright

    rows = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
            )
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = context.new_page()
            for path, title, kind in PAGES:
                cold, got = visit(page, f"{url}/{path}", kind)
                warm = [visit(page, f"{url}/{path}", kind)[0] for _ in range(args.repeat)]
                nav = [visit_by_sidebar(page, url, path, title, kind) for _ in range(args.repeat)]
                rows.append((title, got, cold, statistics.median(warm), statistics.median(nav)))
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(
        f"\n{'page':<26} {'waits for':<22} {'cold s':>7} {'warm s':>7} {'sidebar s':>9}"
        f"  goal ≤ {GOAL_S:g} s warm"
    )
    for title, got, cold, warm, nav in rows:
        verdict = "ok" if warm <= GOAL_S else "OVER"
        nav_s = "—" if nav != nav else f"{nav:.2f}"
        print(f"{title:<26} {got:<22} {cold:7.2f} {warm:7.2f} {nav_s:>9}  {verdict}")
    print(f"\nserver log: {log}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
