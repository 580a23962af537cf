"""Benchmark: what a user waits for — every page in headless Chromium, time to its first chart
(or first table on pages without charts), cold (first visit after the server starts), warm
(second visit by URL: a full page load) and by sidebar click (the app already loaded).

    .venv/bin/python bench/bench_browser.py [--verdicts 40000] [--repeat 2] [--db PATH]
    .venv/bin/python bench/bench_browser.py --grid 25000x8 [--keys 6] [--db PATH]

Builds a database (`python -m core init` + a synthetic Mis-prompt set of 8 models × 5 settings,
core/benchmarks/misprompt/synth.py, so run views have data, + two ProcessBench and two PCBench
runs over their samples made by the runner against tests/fake_openai.py, so the ProcessBench,
PCBench and Compare pages show runs; `--verdicts 0` for the bare initialised file),
starts `streamlit run app.py` on it, and drives Debian's Chromium through Playwright (as
tests/browser.py does; never a downloaded browser). Cold = the first visit of a page after the
server started (empty st.cache_data); warm = the next visit(s) in the same browser (median).
Goal: ≤ 2 s warm on every page.

`--pages misprompt_results[,runs…]` times only those pages (url paths; `overview` for the
Overview); the pages listed before them are visited once, untimed, to the end of their
script, so a cold visit follows the same warm-up as in the full run. `--against DIR` starts a
second server from another checkout (DIR/app.py, on its own copy of the database) and
alternates every visit between the two, so both are measured under the same load: the table
gets one row per checkout and their ratio. "settled" = from navigation until the script has
finished and every chart on the page is drawn (held 0.3 s), the median over the warm visits.
The synthetic runs are finished as the runner finishes a run (their page intervals kept).

`--audit` measures labelling in the judge audit (issue 31, point 9): the --verdicts database
with a 10% audit of every run; per round a new annotator labels 4 items with the keyboard
(1–6 = yes, S = save, → = next). Per keypress: from the key to its label shown as chosen, held
300 ms; per item: from its first key to the next item shown. `--against DIR` (also for --grid):
the same with a second server from another checkout, every round alternating between them.

`--grid ITEMSxRUNS` measures the Responses grid's j/k instead (issue 20, point 5): a synthetic
Mis-prompt set of ITEMS items × RUNS runs (as bench/bench_grid.py builds it), the grid page
opened on its first item, then j pressed `--keys` times (the grid's page is cached; each item's
drill-down is a first visit) and k as often back (everything cached: warm). Time per key = from
the key press to a settled view: the drill-down shows the new item, the script is not running,
and that holds for 300 ms (a later rerun would reset it). Goal: warm j/k ≤ 0.3 s. Per key it
also reports what does not depend on the machine's load: the server process's CPU (from
/proc, all threads: the fragment rerun, the neighbours' warming, Tornado), how many messages
the browser sent (1 = the key's one rerun request, no second rerun) and the bytes it received.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser import CHROMIUM, CHROMIUM_ARGS, free_port  # noqa: E402

GOAL_S = 2.0
# (url path, title, what to wait for): "chart" = a drawn Plotly SVG, "table" = a dataframe
PAGES = [
    ("", "Overview", "table"),
    ("misprompt_results", "Mis-prompt results", "chart"),
    ("anchoring", "Anchoring (ErrorBench)", "table"),
    ("mistake_finding", "Mistake finding (BBM)", "chart"),
    ("proactive_passive", "Proactive vs passive", "chart"),
    ("grid", "Responses", "table"),
    ("processbench_results", "ProcessBench", "table"),
    ("pcbench_results", "Premise critique (PCBench)", "table"),
    ("compare", "Compare runs", "table"),
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

    # runs as the runner leaves them (after_run: their page intervals kept)
    counts = fill(Store.open(path), SynthSpec(n_verdicts=verdicts, after_run=True))
    others = sample_runs(path)
    return (
        f"initialised database + {counts['runs']} synthetic Mis-prompt runs × "
        f"{counts['items']:,} items ({counts['verdicts']:,} verdicts) + {others}"
    )


# (benchmark, extra flags) of the runs sample_runs makes: ProcessBench with its structured
# template (a JSON answer the scripted server's schema replies satisfy), PCBench as it ships
SAMPLE_RUNS = (
    ("processbench", ("--template", "processbench/critique_structured.v1")),
    ("pcbench", ()),
)


def sample_runs(path: Path) -> str:
    """Two runs each of ProcessBench and PCBench over their samples, made by the runner
    (`python -m core run`) against the scripted server of the tests (tests/fake_openai.py), so
    the ProcessBench, PCBench and Compare pages are measured with runs to show (issue 31,
    point 8), not on their empty state."""
    from tests.fake_openai import FakeOpenAI

    made = []
    with FakeOpenAI() as server:
        for bench, extra in SAMPLE_RUNS:
            for model in ("model-a", "model-b"):
                argv = ["run", bench, "--items", f"{bench}-sample", "--db", str(path)]
                argv += ["--base-url", server.url, "--model", model, "--quiet", *extra]
                subprocess.run(
                    [sys.executable, "-m", "core", *argv],
                    cwd=ROOT,
                    env={**os.environ, "EHW_DB": str(path)},
                    check=True,
                    capture_output=True,
                )
                made.append(f"{bench} {model}")
    return f"{len(made)} runs over the samples ({', '.join(made)})"


def server_command(port: int) -> list[str]:
    """The server exactly as start.sh starts it (its last line): `streamlit run app.py` from the
    checkout, so its .streamlit/config.toml applies, with no flag start.sh does not pass (the
    tests' servers add `--server.fileWatcherType none` and more: measured that way, the grid's
    j/k was faster than what a user of ./start.sh got — issue 31, point 8)."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "app.py",
        "--server.address",
        "127.0.0.1",
        "--server.port",
        str(port),
    ]


def start_server(db: Path, root: Path = ROOT) -> tuple[subprocess.Popen, str, Path]:
    """The app as ./start.sh starts it (server_command) in `root` (this checkout, or another
    one to compare), on db."""
    port = free_port()
    log = Path(tempfile.gettempdir()) / f"bench-browser-{port}.log"
    proc = subprocess.Popen(
        server_command(port),
        cwd=root,
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


GRID_SET = "grid-synth"
KEY_GOAL_S = 0.3
SETTLE_S = 0.3


def build_grid_db(path: Path, items: int, runs: int) -> tuple[str, list[str]]:
    """An initialised database + ITEMS × RUNS synthetic Mis-prompt responses with verdicts;
    returns a description and the first grid page's item ids (the order j walks)."""
    build_db(path, 0)
    from core.benchmarks.misprompt.synth import SynthSpec, fill
    from core.services import grid
    from core.store import Store

    store = Store.open(path)
    spec = SynthSpec(
        n_verdicts=items * runs,
        n_models=runs,
        settings=("zero-shot",),
        item_set=GRID_SET,
        prefix="grid",
    )
    counts = fill(store, spec)
    run_ids = tuple(grid.grid_runs(store, "misprompt", GRID_SET)["run_id"])
    ids = list(grid.grid_page(store, "misprompt", GRID_SET, run_ids, page_size=50).rows["item_id"])
    return (
        f"initialised database + {counts['items']:,} items × {counts['runs']} runs "
        f"({counts['verdicts']:,} responses with verdicts)",
        ids,
    )


SHOWS_ITEM_JS = """(item) => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
    return [...document.querySelectorAll('[data-testid="stText"]')].some(
        (e) => e.innerText.startsWith(item + ' · '));
}"""


def settled_on(page, item: str, t0: float, timeout_s: float = 120) -> float:
    """Seconds from t0 until the drill-down shows `item` with no script running, held for
    SETTLE_S (the time it first became so)."""
    deadline = t0 + timeout_s
    since = None
    while time.perf_counter() < deadline:
        if page.evaluate(SHOWS_ITEM_JS, item):
            since = since or time.perf_counter()
            if time.perf_counter() - since >= SETTLE_S:
                return since - t0
        else:
            since = None
        page.wait_for_timeout(10)
    return float("nan")


def server_cpu_s(pid: int) -> float:
    """The server process's CPU seconds so far (user + system, all its threads: the script's
    reruns, the background warming, Tornado), from /proc: not wall time, so a busy machine
    does not inflate it the way it inflates the seconds per key."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Traffic:
    """The page's websocket traffic: rerun requests sent (BackMsgs: a key's button click, a
    widget's value) and bytes received (the server's deltas), counted per key."""

    def __init__(self, page) -> None:
        self.sent = 0
        self.received = 0
        page.on("websocket", self._socket)

    def _socket(self, ws) -> None:
        if "/_stcore/stream" not in ws.url:
            return
        ws.on("framesent", self._sent)
        ws.on("framereceived", self._received)

    def _sent(self, _payload) -> None:
        self.sent += 1

    def _received(self, payload) -> None:
        self.received += len(payload)

    def mark(self) -> tuple[int, int]:
        return self.sent, self.received


def grid_keys(
    page, url: str, ids: list[str], keys: int, pid: int, traffic: Traffic
) -> tuple[float, list[float], list[float], list[tuple[float, int, int]]]:
    """(seconds to the first settled drill-down, j times, k times, per key: server CPU s,
    messages the browser sent, bytes it received) on the Responses grid."""
    t0 = time.perf_counter()
    page.goto(f"{url}/grid?g_bench=misprompt&g_set={GRID_SET}&g_item={ids[0]}")
    first = settled_on(page, ids[0], t0)
    page.wait_for_selector(SELECTORS["table"])
    page.locator("h1").first.click()  # focus outside any input
    forward: list[float] = []
    back: list[float] = []
    costs: list[tuple[float, int, int]] = []
    steps = [("j", i, forward) for i in range(1, keys + 1)]
    steps += [("k", i, back) for i in range(keys - 1, -1, -1)]
    for key, i, times in steps:
        cpu, (sent, received) = server_cpu_s(pid), traffic.mark()
        t0 = time.perf_counter()
        page.keyboard.press(key)
        times.append(settled_on(page, ids[i], t0))  # then SETTLE_S held: any later rerun is in
        now_sent, now_received = traffic.mark()
        costs.append((server_cpu_s(pid) - cpu, now_sent - sent, now_received - received))
    return first, forward, back, costs


def grid_main(args: argparse.Namespace) -> int:
    """j/k on the Responses grid; with --against, on two servers (this checkout and another,
    each its own copy of the database), every round alternating between them."""
    items, _, runs = args.grid.partition("x")
    tmp = tempfile.TemporaryDirectory()
    db = Path(args.db) if args.db else Path(tmp.name) / "bench.duckdb"
    t = time.perf_counter()
    what, ids = build_grid_db(db, int(items), int(runs or 8))
    print(f"{what}; built in {time.perf_counter() - t:.1f} s")
    roots = [ROOT] + ([Path(args.against).resolve()] if args.against else [])
    dbs = [db]
    for k in range(1, len(roots)):
        dbs.append(db.with_name(f"{db.stem}-{k}{db.suffix}"))
        shutil.copyfile(db, dbs[-1])
    servers = [start_server(d, root) for d, root in zip(dbs, roots)]
    from playwright.sync_api import sync_playwright

    laps: list[dict[str, list[float]]] = [{"first": [], "j": [], "k": []} for _ in servers]
    costs: list[list[tuple[float, int, int]]] = [[] for _ in servers]
    loads = [os.getloadavg()[0]]
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
            )
            pages = [
                browser.new_context(viewport={"width": 1440, "height": 1000}).new_page()
                for _ in servers
            ]
            traffic = [Traffic(page) for page in pages]
            order = list(range(len(servers)))
            for _ in range(args.rounds):
                for s in order:
                    first, forward, back, cost = grid_keys(
                        pages[s], servers[s][1], ids, args.keys, servers[s][0].pid, traffic[s]
                    )
                    costs[s] += cost
                    laps[s]["first"].append(first)
                    laps[s]["j"] += forward
                    laps[s]["k"] += back
                    loads.append(os.getloadavg()[0])
                order.reverse()
            browser.close()
    finally:
        for proc, _, _ in servers:
            proc.terminate()
            proc.wait(timeout=10)
    print(
        f"load average (1 min) {min(loads):.1f}–{max(loads):.1f} on {os.cpu_count()} cores "
        "(a machine shared with other users: compare the ratio, not the seconds)"
    )
    print(f"\n{'Responses grid, ' + args.grid:<44} {'median s':>9} {'max s':>7}")
    for root, lap, cost in zip(roots, laps, costs):
        if len(roots) > 1:
            print(f"-- {root}")
        cpu = [c for c, _, _ in cost]
        print(
            f"per key (load-independent): server CPU {1000 * statistics.mean(cpu):.0f} ms mean "
            f"({1000 * sum(cpu):.0f} ms over {len(cpu)} keys, {1000 / os.sysconf('SC_CLK_TCK'):.0f}"
            f" ms ticks); messages sent {statistics.mean(n for _, n, _ in cost):.2f} "
            f"(max {max(n for _, n, _ in cost)}); "
            f"received {statistics.mean(b for _, _, b in cost) / 1000:.1f} kB"
        )
        print(f"{'first load of a round to its drill-down':<44} {lap['first'][0]:9.2f}")
        for name, key in (
            ("j: next item (grid cached, drill-down new)", "j"),
            ("k: previous item (all cached: warm)", "k"),
        ):
            print(f"{name:<44} {statistics.median(lap[key]):9.2f} {max(lap[key]):7.2f}")
        warm = statistics.median(lap["k"])
        print(f"warm j/k goal ≤ {KEY_GOAL_S:g} s: {'ok' if warm <= KEY_GOAL_S else 'OVER'}")
        keys = len(cost) // (2 * args.rounds)  # each round: `keys` j then `keys` k
        for name, half in (("j", 0), ("k", 1)):
            ms = [
                1000 * c
                for r in range(args.rounds)
                for c, _, _ in cost[(2 * r + half) * keys : (2 * r + half + 1) * keys]
            ]
            print(
                f"server CPU per {name}, ms: {statistics.mean(ms):.0f} mean, {statistics.median(ms):.0f} median"
            )
        print(f"per key j: {', '.join(f'{x:.2f}' for x in lap['j'])}")
        print(f"per key k: {', '.join(f'{x:.2f}' for x in lap['k'])}")
    if len(roots) > 1:
        for key in ("j", "k"):
            a, b = statistics.median(laps[0][key]), statistics.median(laps[1][key])
            print(f"ratio {key} median {roots[0].name} ÷ {roots[1].name}: {a / b:.2f}")
    print(f"server logs: {', '.join(str(log) for _, _, log in servers)}")
    for _, _, log in servers:
        overflows = log.read_text(errors="replace").count("Inotify queue overflowed")
        print(f"{log}: {overflows} 'Inotify queue overflowed' lines")
    return 0


AUDIT_NAME = "bench-audit"
AUDIT_ITEMS = 4  # items labelled per round: 6 keypresses + save + next each

LABEL_SET_JS = """([label, value]) => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
    const box = document.querySelector('.st-key-au_' + (value ? 'yes_' : 'no_') + label);
    return !!(box && box.querySelector('[data-testid="stBaseButton-primary"]'));
}"""
ITEM_SHOWN_JS = """(k) => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
    return [...document.querySelectorAll('h4')].some((h) => h.innerText.startsWith('Item ' + k + ' of'))
        && !document.querySelector('.st-key-au_yes_detection [data-testid="stBaseButton-primary"]')
        && !document.querySelector('.st-key-au_no_detection [data-testid="stBaseButton-primary"]');
}"""


def build_audit_db(path: Path, verdicts: int) -> str:
    """An initialised database + synthetic judged runs (build_db) + a 10% audit of all runs.
    `verdicts` 0: the tests' two judged runs of 50 items (tests/audit_fixtures.py) and an audit
    of all their verdicts instead, built in seconds (the synthetic set's page intervals take
    minutes on a loaded machine); labelling touches one item at a time either way."""
    from core.services import audit
    from core.store import Store

    if verdicts:
        what = build_db(path, verdicts)
        store = Store.open(path)
    else:
        from tests.audit_fixtures import two_runs

        store = Store.open(path)
        two_runs(store)
        what = "tests/audit_fixtures.two_runs"
    candidates = audit.auditable_runs(store)
    # an audit samples one benchmark's runs; the database also holds PCBench runs
    runs = list(candidates[candidates["benchmark"] == "misprompt"]["run_id"])
    info = audit.create_audit(store, AUDIT_NAME, runs, fraction=0.10 if verdicts else 1.0, seed=0)
    return f"{what}; audit {AUDIT_NAME}: {info.n_sampled:,} items of {len(runs)} runs"


def wait_js(page, js: str, arg: object, t0: float, timeout_s: float = 120) -> float:
    """Seconds from t0 until `js(arg)` holds for SETTLE_S (the time it first held)."""
    deadline = t0 + timeout_s
    since = None
    while time.perf_counter() < deadline:
        if page.evaluate(js, arg):
            since = since or time.perf_counter()
            if time.perf_counter() - since >= SETTLE_S:
                return since - t0
        else:
            since = None
        page.wait_for_timeout(10)
    return float("nan")


def audit_keys(
    page, url: str, items: int, pid: int
) -> tuple[list[float], list[float], list[float], list[float]]:
    """(seconds per label keypress, seconds per item, server CPU seconds per keypress, per
    item) labelling `items` items from the first unlabelled one: keys 1–6 (yes), S (save),
    → (next item). Per item = from its first keypress to the next item shown. The server's CPU
    is read around each wait (clock ticks of 10 ms: a keypress's is a median of many)."""
    from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS

    annotator = f"bench{int(time.time() * 1000) % 10**8}"  # a fresh annotator each round
    page.goto(f"{url}/judge_audit?audit={AUDIT_NAME}&annotator={annotator}&au_view=Label")
    page.wait_for_function(ITEM_SHOWN_JS, arg=1, timeout=180_000)
    presses, per_item, cpu_key, cpu_item = [], [], [], []
    for k in range(1, items + 1):
        page.locator("h1").first.click()  # focus outside any input
        t_item = time.perf_counter()
        c_item = server_cpu_s(pid)
        for i, label in enumerate(JUDGE_LABELS):
            t0 = time.perf_counter()
            c0 = server_cpu_s(pid)
            page.keyboard.press(str(i + 1))
            presses.append(wait_js(page, LABEL_SET_JS, [label, True], t0))
            cpu_key.append(server_cpu_s(pid) - c0)
        page.keyboard.press("s")
        try:
            page.get_by_text("Saved item").first.wait_for(timeout=300_000)
        except Exception:
            page.screenshot(
                path=str(
                    Path(tempfile.gettempdir()) / f"bench-audit-fail-{url.rsplit(':', 1)[-1]}.png"
                )
            )
            raise
        page.locator("h1").first.click()
        page.keyboard.press("ArrowRight")
        wait_js(page, ITEM_SHOWN_JS, k + 1, t_item)
        per_item.append(time.perf_counter() - t_item)
        cpu_item.append(server_cpu_s(pid) - c_item)
    return presses, per_item, cpu_key, cpu_item


def audit_main(args: argparse.Namespace) -> int:
    """Labelling in the judge audit (issue 31, point 9); with --against, two servers, every
    round alternating between them."""
    tmp = tempfile.TemporaryDirectory()
    db = Path(args.db) if args.db else Path(tmp.name) / "bench.duckdb"
    t = time.perf_counter()
    print(f"{build_audit_db(db, args.verdicts)}; built in {time.perf_counter() - t:.1f} s")
    roots = [ROOT] + ([Path(args.against).resolve()] if args.against else [])
    dbs = [db]
    for k in range(1, len(roots)):
        dbs.append(db.with_name(f"{db.stem}-{k}{db.suffix}"))
        shutil.copyfile(db, dbs[-1])
    servers = [start_server(d, root) for d, root in zip(dbs, roots)]
    from playwright.sync_api import sync_playwright

    laps: list[dict[str, list[float]]] = [
        {"key": [], "item": [], "cpu key": [], "cpu item": []} for _ in servers
    ]
    loads = [os.getloadavg()[0]]
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
            )
            pages = [
                browser.new_context(viewport={"width": 1440, "height": 1000}).new_page()
                for _ in servers
            ]
            order = list(range(len(servers)))
            for _ in range(args.rounds):
                for s in order:
                    keys, items, cpu_keys, cpu_items = audit_keys(
                        pages[s], servers[s][1], AUDIT_ITEMS, servers[s][0].pid
                    )
                    laps[s]["key"] += keys
                    laps[s]["item"] += items
                    laps[s]["cpu key"] += cpu_keys
                    laps[s]["cpu item"] += cpu_items
                    loads.append(os.getloadavg()[0])
                order.reverse()
            browser.close()
    finally:
        for proc, _, _ in servers:
            proc.terminate()
            proc.wait(timeout=10)
    print(
        f"load average (1 min) {min(loads):.1f}–{max(loads):.1f} on {os.cpu_count()} cores "
        "(a machine shared with other users: compare the ratio, not the seconds)"
    )
    print(f"\n{'Judge audit labelling':<44} {'median s':>9} {'max s':>7}")
    for root, lap in zip(roots, laps):
        if len(roots) > 1:
            print(f"-- {root}")
        print(
            f"{'label keypress (1-6) to the label shown':<44} {statistics.median(lap['key']):9.2f} {max(lap['key']):7.2f}"
        )
        print(
            f"{'item: 6 labels + save + next':<44} {statistics.median(lap['item']):9.2f} {max(lap['item']):7.2f}"
        )
        for key, what in (("cpu key", "keypress"), ("cpu item", "item")):
            print(
                f"{'server CPU s per ' + what + ' (mean)':<44} "
                f"{statistics.mean(lap[key]):9.3f} {max(lap[key]):7.2f}"
            )
    if len(roots) > 1:
        for key in ("key", "item", "cpu key", "cpu item"):
            stat = statistics.mean if key.startswith("cpu") else statistics.median
            a, b = stat(laps[0][key]), stat(laps[1][key])
            print(
                f"ratio {key} {stat.__name__} {roots[0].name} ÷ {roots[1].name}: "
                + (f"{a / b:.2f}" if b else "—")
            )
    print(f"server logs: {', '.join(str(log) for _, _, log in servers)}")
    return 0


ALL_DRAWN_JS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
    const charts = document.querySelectorAll('[data-testid="stPlotlyChart"]').length;
    return document.querySelectorAll('.js-plotly-plot .main-svg').length >= charts
        && document.querySelectorAll('[data-testid="stMain"] [data-testid="stElementContainer"]').length > 0;
}"""


def settled(page, t0: float, timeout_s: float = 120) -> float:
    """Seconds from t0 until the script is done and every chart is drawn, held for SETTLE_S
    (the time it first became so; a rerun in between resets it)."""
    deadline = t0 + timeout_s
    since = None
    while time.perf_counter() < deadline:
        if page.evaluate(ALL_DRAWN_JS):
            since = since or time.perf_counter()
            if time.perf_counter() - since >= SETTLE_S:
                return since - t0
        else:
            since = None
        page.wait_for_timeout(20)
    return float("nan")


def visit(
    page, url: str, kind: str, timeout_s: float = 120, settle: bool = False
) -> tuple[float, str, float]:
    """(seconds from navigation to the first element of `kind` — falls back to 'content' when
    the page has none once its script finished —, what was found, seconds to a settled page
    if `settle` else NaN)."""
    page.goto("about:blank")  # nothing of the previous visit can match
    t0 = time.perf_counter()
    page.goto(url, wait_until="commit")
    deadline = t0 + timeout_s
    since = None
    while time.perf_counter() < deadline:
        if page.query_selector(SELECTORS[kind]):
            first = time.perf_counter() - t0
            return first, kind, settled(page, t0) if settle else float("nan")
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
                first = time.perf_counter() - t0
                return first, "content (no " + kind + ")", first
        else:
            since = None
        page.wait_for_timeout(20)
    return float("nan"), "timeout", float("nan")


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


def select_pages(spec: str | None) -> tuple[list[tuple[str, str, str]], list[str]]:
    """(pages to time, url paths to visit once untimed before them) for --pages."""
    if not spec:
        return PAGES, []
    wanted = {"" if p.strip() == "overview" else p.strip() for p in spec.split(",")}
    unknown = wanted - {p for p, _, _ in PAGES}
    if unknown:
        raise SystemExit(f"unknown pages {sorted(unknown)}; known: {[p for p, _, _ in PAGES]}")
    first = min(i for i, (p, _, _) in enumerate(PAGES) if p in wanted)
    return [pg for pg in PAGES if pg[0] in wanted], [p for p, _, _ in PAGES[:first]]


def measure(pw, servers: list[str], pages, before: list[str], repeat: int) -> list[list[tuple]]:
    """Per server, per page: (title, found, cold, warm median, sidebar median, settled median).
    With two servers every visit alternates between them (who goes first alternates too)."""
    browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
    tabs = [
        browser.new_context(viewport={"width": 1400, "height": 1000}).new_page() for _ in servers
    ]
    rows: list[list[tuple]] = [[] for _ in servers]
    order = list(range(len(servers)))
    for path in before:
        for s in order:
            # to the end of its script (as the full run's repeated visits leave it): abandoned
            # at its first element, the Overview's first visit was still opening the store
            # when the timed cold visit began (seen in the server's timestamps)
            t0 = time.perf_counter()
            visit(tabs[s], f"{servers[s]}/{path}", "content")
            settled(tabs[s], t0)
    for path, title, kind in pages:
        cold, got = {}, {}
        warm: dict[int, list[float]] = {s: [] for s in order}
        nav: dict[int, list[float]] = {s: [] for s in order}
        done: dict[int, list[float]] = {s: [] for s in order}
        for s in order:
            cold[s], got[s], _ = visit(tabs[s], f"{servers[s]}/{path}", kind)
        order.reverse()
        for _ in range(repeat):
            for s in order:
                first, _, all_drawn = visit(tabs[s], f"{servers[s]}/{path}", kind, settle=True)
                warm[s].append(first)
                done[s].append(all_drawn)
            order.reverse()
        for _ in range(repeat):
            for s in order:
                nav[s].append(visit_by_sidebar(tabs[s], servers[s], path, title, kind))
            order.reverse()
        for s in range(len(servers)):
            rows[s].append(
                (
                    title,
                    got[s],
                    cold[s],
                    statistics.median(warm[s]),
                    statistics.median(nav[s]),
                    statistics.median(done[s]),
                )
            )
    browser.close()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verdicts", type=int, default=40_000)
    ap.add_argument("--repeat", type=int, default=2, help="warm visits per page (median)")
    ap.add_argument("--db", default=None)
    ap.add_argument("--grid", default=None, help="ITEMSxRUNS: measure the grid's j/k only")
    ap.add_argument("--keys", type=int, default=6, help="j presses (then as many k) for --grid")
    ap.add_argument("--rounds", type=int, default=2, help="--grid/--audit: rounds per server")
    ap.add_argument(
        "--audit", action="store_true", help="measure labelling in the judge audit instead"
    )
    ap.add_argument("--pages", default=None, help="url paths to time (comma-separated)")
    ap.add_argument("--against", default=None, help="another checkout to time side by side")
    args = ap.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    if args.grid:
        return grid_main(args)
    if args.audit:
        return audit_main(args)
    tmp = tempfile.TemporaryDirectory()
    db = Path(args.db) if args.db else Path(tmp.name) / "bench.duckdb"
    t = time.perf_counter()
    what = build_db(db, args.verdicts)
    print(f"{what}; built in {time.perf_counter() - t:.1f} s")
    pages, before = select_pages(args.pages)
    roots = [ROOT] + ([Path(args.against).resolve()] if args.against else [])
    dbs = [db]
    for k in range(1, len(roots)):  # the same file for every server, each its own copy
        dbs.append(db.with_name(f"{db.stem}-{k}{db.suffix}"))
        shutil.copyfile(db, dbs[-1])
    servers = [start_server(d, root) for d, root in zip(dbs, roots)]
    from playwright.sync_api import sync_playwright

    try:
        with sync_playwright() as pw:
            rows = measure(pw, [url for _, url, _ in servers], pages, before, args.repeat)
    finally:
        for proc, _, _ in servers:
            proc.terminate()
            proc.wait(timeout=10)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    names = [str(r) for r in roots]
    print(
        f"\n{'page':<26} {'waits for':<22} {'cold s':>7} {'warm s':>7} {'sidebar s':>9}"
        f" {'settled s':>9}  goal ≤ {GOAL_S:g} s warm"
    )
    for k, name in enumerate(names):
        if len(names) > 1:
            print(f"-- {name}")
        for title, got, cold, warm, nav, done in rows[k]:
            verdict = "ok" if warm <= GOAL_S else "OVER"
            nav_s = "—" if nav != nav else f"{nav:.2f}"
            print(
                f"{title:<26} {got:<22} {cold:7.2f} {warm:7.2f} {nav_s:>9} {done:9.2f}  {verdict}"
            )
    if len(names) > 1:
        print(f"-- ratio {names[0]} ÷ {names[1]}")
        for a, b in zip(rows[0], rows[1]):
            ratios = [
                f"{x / y:7.2f}" if y == y and y > 0 and x == x else "      —"
                for x, y in zip(a[2:], b[2:])
            ]
            print(f"{a[0]:<26} {'':<22} {ratios[0]} {ratios[1]} {ratios[2]:>9} {ratios[3]:>9}")
    print(f"\nserver logs: {', '.join(str(log) for _, _, log in servers)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
