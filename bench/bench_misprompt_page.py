"""Benchmark: the Mis-prompt results page over 1,000,000 synthetic verdicts.

    .venv/bin/python bench/bench_misprompt_page.py [--verdicts 1000000] [--repeat 5] [--db PATH]

Fills a database (published tables + 8 models × 5 settings over 14 categories, built in DuckDB
SQL), times the page's data call three ways — uncached (every verdict counted), first load
(counts every finished run and fills run_counts) and warm (finished runs served from
run_counts) — then every query the page issues for runs (target ≤ 100 ms each), a full AppTest
run of the page with cold caches (target ≤ 1.5 s), and the same F1 aggregation done in pandas
on frames already in memory, printing the ratios side by side.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from core.benchmarks.misprompt import metrics as mm  # noqa: E402
from core.benchmarks.misprompt import queries  # noqa: E402
from core.benchmarks.misprompt.synth import SynthSpec, fill  # noqa: E402
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS  # noqa: E402
from core.services.published import load_published, refresh_copies  # noqa: E402
from core.store import Store  # noqa: E402

QUERY_TARGET_MS = 100.0
PAGE_TARGET_S = 1.5


T = TypeVar("T")


def timed(
    fn: Callable[[], T], repeat: int, cpu: list[float] | None = None
) -> tuple[float, float, T]:
    """(first call ms, median of the next `repeat` calls ms, result); appends the median CPU
    time of this process (all threads, ms) to `cpu`: contention by other processes inflates
    wall time, much less CPU time."""
    t = time.perf_counter()
    result = fn()
    first = (time.perf_counter() - t) * 1000
    times, cpus = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        times.append((time.perf_counter() - t) * 1000)
        cpus.append((time.process_time() - c) * 1000)
    if cpu is not None:
        cpu.append(statistics.median(cpus))
    return first, statistics.median(times), result


def pandas_f1(verdicts: pd.DataFrame, runs: pd.DataFrame, items: pd.DataFrame) -> pd.DataFrame:
    """The page's run aggregation (join, sums per category, F1 per level) in pandas."""
    ok = verdicts[verdicts["status"] == "ok"]
    joined = ok.merge(runs, on="run_id").merge(items, on=["item_set", "item_id"])
    joined = joined.rename(columns={"run_id": "source"})
    joined["evaluator"] = "judge"
    keys = mm.KEYS + ["primary_category", "secondary_category", "is_error"]
    for label in JUDGE_LABELS:
        joined[f"pos_{label}"] = joined[label].fillna(False).astype(int)
        joined[f"known_{label}"] = joined[label].notna().astype(int)
    joined["n"] = 1
    cols = [f"pos_{lb}" for lb in JUDGE_LABELS] + [f"known_{lb}" for lb in JUDGE_LABELS] + ["n"]
    sums = joined.groupby(keys, dropna=False)[cols].sum().reset_index()
    return mm.f1_from_sums(sums)


def page_run(view: str | None, repeat: int) -> tuple[float, float]:
    """Full AppTest run of the page: (cold caches s, warm median s)."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    def once(clear: bool) -> float:
        if clear:
            st.cache_data.clear()
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.switch_page("pages/misprompt_results.py")
        if view:
            at.query_params["view"] = view
        t = time.perf_counter()
        at.run()
        elapsed = time.perf_counter() - t
        if at.exception:
            raise RuntimeError(at.exception[0].value)
        return elapsed

    once(True)  # imports, AppTest start-up
    cold = statistics.median(once(True) for _ in range(max(1, repeat // 2)))
    warm = statistics.median(once(False) for _ in range(repeat))
    return cold, warm


def main() -> int:  # noqa: C901 - a linear benchmark script; its inner timers read its locals
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verdicts", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--db", default=None, help="database file (default: a temporary file)")
    args = parser.parse_args()

    tmp = tempfile.TemporaryDirectory()
    db = Path(args.db) if args.db else Path(tmp.name) / "bench.duckdb"
    if db.exists():
        db.unlink()
    os.environ["EHW_DB"] = str(db)
    store = Store.open(db)
    refresh_copies()
    load_published(store)
    spec = SynthSpec(n_verdicts=args.verdicts)
    t = time.perf_counter()
    counts = fill(store, spec)
    print(
        f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} "
        "(other processes share the cores; timings scale with it)"
    )
    print(
        f"filled {counts['verdicts']:,} verdicts ({spec.n_models} models × "
        f"{len(spec.settings)} settings = {counts['runs']} runs × {counts['items']:,} items, "
        f"14 categories, 1:1 controls) in {time.perf_counter() - t:.1f} s  [{db}]"
    )

    # The page's data call: uncached, first load (fills run_counts), warm (served from it)
    def first_load(fn, cpu: list) -> tuple[float, dict[str, float]]:
        laps_: dict[str, list[float]] = {}
        times, cpus = [], []
        for _ in range(args.repeat):
            store.execute("DELETE FROM run_counts")
            t_: dict[str, float] = {}
            t0, c0 = time.perf_counter(), time.process_time()
            fn(t_)
            times.append((time.perf_counter() - t0) * 1000)
            cpus.append((time.process_time() - c0) * 1000)
            for k, v in t_.items():
                laps_.setdefault(k, []).append(v)
        cpu.append(statistics.median(cpus))
        return statistics.median(times), {k: statistics.median(v) for k, v in laps_.items()}

    def warm_laps() -> dict[str, float]:
        laps_: dict[str, list[float]] = {}
        for _ in range(args.repeat):
            t_: dict[str, float] = {}
            mm.f1_and_diagnostics(store, timings=t_)
            for k, v in t_.items():
                laps_.setdefault(k, []).append(v)
        return {k: statistics.median(v) for k, v in laps_.items()}

    cpu: list[float] = []
    _, uncached_ms, _ = timed(
        lambda: mm.f1_and_diagnostics(store, use_cache=False), args.repeat, cpu
    )
    fill_ms, fill_laps = first_load(lambda t_: mm.f1_and_diagnostics(store, timings=t_), cpu)
    _, warm_ms_, _ = timed(lambda: mm.f1_and_diagnostics(store), args.repeat, cpu)
    resumed, resumed_cpu = [], []
    for _ in range(args.repeat):  # one of the 40 runs changed since cached (e.g. resumed)
        store.execute(
            "UPDATE runs SET updated_at = current_timestamp WHERE run_id = 'synthetic-m3-cot'"
        )
        t0, c0 = time.perf_counter(), time.process_time()
        mm.f1_and_diagnostics(store)
        resumed.append((time.perf_counter() - t0) * 1000)
        resumed_cpu.append((time.process_time() - c0) * 1000)
    resumed_ms = statistics.median(resumed)
    cpu.append(statistics.median(resumed_cpu))
    page_first, _ = first_load(lambda _t: queries.misprompt_page_data(store), cpu)
    _, page_warm, _ = timed(lambda: queries.misprompt_page_data(store), args.repeat, cpu)
    warm_l = warm_laps()
    print(
        f"\n{'page data: run counts cache (run_counts)':<50}{'median ms':>11}{'cpu ms':>9}"
        f"  target ≤ {QUERY_TARGET_MS:.0f} ms"
    )
    for (name, ms), c in zip(
        [
            ("f1_and_diagnostics uncached (40 runs counted)", uncached_ms),
            ("f1_and_diagnostics first load (fills cache)", fill_ms),
            ("f1_and_diagnostics warm (40 runs cached)", warm_ms_),
            ("f1_and_diagnostics, 1 of 40 runs changed", resumed_ms),
            ("misprompt_page_data first load", page_first),
            ("misprompt_page_data warm", page_warm),
        ],
        cpu,
    ):
        flag = "ok" if ms <= QUERY_TARGET_MS else "OVER"
        print(f"{name:<50}{ms:>11.1f}{c:>9.1f}  {flag}")
    print(
        f"{'    first-load statements:':<44}"
        + ", ".join(f"{k} {v:.1f}" for k, v in fill_laps.items())
    )
    print(f"{'    warm statements:':<44}" + ", ".join(f"{k} {v:.1f}" for k, v in warm_l.items()))
    print(
        f"uncached / warm = {uncached_ms / warm_ms_:.1f}×; first load / uncached = "
        f"{fill_ms / uncached_ms:.2f}× (the cost of writing the cache)"
    )
    store.execute("DELETE FROM run_counts")  # the next table starts from an empty cache

    run_a = "synthetic-m0-zero-shot"
    run_b = "synthetic-m1-zero-shot"
    item = store.scalar("SELECT item_id FROM responses WHERE run_id = ? LIMIT 1", [run_a])
    combined, _ = queries.misprompt_page_data(store)
    checks = [
        # what the page issues on every load (one cached call: the three below)
        ("misprompt_page_data (the next 2 + combine)", lambda: queries.misprompt_page_data(store)),
        ("  f1_and_diagnostics (40 runs, cached)", lambda: mm.f1_and_diagnostics(store)),
        ("  published_f1", lambda: queries.published_f1(store)),
        ("view_primary (slice for the heatmap)", lambda: queries.view_primary(combined, "average")),
        (
            "judge_human_published (Judge vs human tab)",
            lambda: queries.judge_human_published(store),
        ),
        ("consistency_checks (Consistency tab)", lambda: queries.consistency_checks(store)),
        # Runs tab
        ("run_items (drill-down list, 1 run)", lambda: queries.run_items(store, run_a)),
        (
            "run_items (inconsistent only)",
            lambda: queries.run_items(store, run_a, None, "all", True),
        ),
        ("run_item_detail", lambda: queries.run_item_detail(store, run_a, item)),
        ("run_item_count", lambda: queries.run_item_count(store, run_a)),
        ("compare_runs (2 runs item by item)", lambda: queries.compare_runs(store, run_a, run_b)),
        (
            "run_f1_ci (1 run, level all, 1,000 draws)",
            lambda: queries.run_f1_ci(store, run_a, ("all",)),
        ),
        ("run_f1_ci (1 run, all 19 categories)", lambda: queries.run_f1_ci(store, run_a)),
        ("run_export (1 run, on demand)", lambda: queries.run_export(store, run_a)),
    ]
    print(
        f"\n{'query':<44}{'first ms':>10}{'median ms':>11}{'cpu ms':>9}  target ≤ "
        f"{QUERY_TARGET_MS:.0f} ms"
    )
    for name, fn in checks:
        query_cpu: list[float] = []
        first, median, _ = timed(fn, args.repeat, query_cpu)
        flag = "ok" if median <= QUERY_TARGET_MS else "OVER"
        print(f"{name:<44}{first:>10.1f}{median:>11.1f}{query_cpu[0]:>9.1f}  {flag}")

    # The statements inside the page's one-pass call (uncached), each timed
    laps: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        t_: dict[str, float] = {}
        mm.f1_and_diagnostics(store, timings=t_, use_cache=False)
        for k, v in t_.items():
            laps.setdefault(k, []).append(v)
    for k, lap in laps.items():
        flag = "ok" if statistics.median(lap) <= QUERY_TARGET_MS else "OVER"
        print(f"{'    uncached: ' + k:<44}{'':>10}{statistics.median(lap):>11.1f}{'':>9}  {flag}")

    # The same one-pass query on a connection kept open (warm DuckDB buffers): the app cannot
    # keep one open (a CLI run must be able to write), so the difference is the cold-open cost.
    import contextlib

    import duckdb

    kept = duckdb.connect(str(db))

    class KeptStore(Store):
        @contextlib.contextmanager
        def connect(self):
            yield kept

    warm_store = KeptStore(path=db, _migrated=True)
    _, warm_ms, _ = timed(lambda: mm.f1_and_diagnostics(warm_store, use_cache=False), args.repeat)
    kept.close()
    print(
        f"{'  uncached, connection kept open':<44}{'':>10}{warm_ms:>11.1f}  "
        "(for comparison: warm buffers)"
    )

    # Same aggregation in pandas (frames already loaded; loading time shown separately)
    t = time.perf_counter()
    verdicts = store.df(
        "SELECT run_id, item_id, status, " + ", ".join(JUDGE_LABELS) + " FROM misprompt_verdicts"
    )
    runs = store.df(
        "SELECT run_id, item_set, model, setting FROM runs WHERE benchmark = 'misprompt'"
    )
    items = store.df(
        "SELECT item_set, item_id, is_error, primary_category, secondary_category "
        "FROM items WHERE benchmark = 'misprompt'"
    )
    load_ms = (time.perf_counter() - t) * 1000
    _, pandas_ms, pandas_table = timed(
        lambda: pandas_f1(verdicts, runs, items), max(1, args.repeat // 2)
    )
    _, duck_ms, duck_table = timed(lambda: queries.run_f1(store), args.repeat)
    merged = pandas_table.merge(duck_table, on=mm.COLUMNS[:-1])
    same = len(merged) == len(duck_table) and (merged["f1_x"] - merged["f1_y"]).abs().max() < 1e-9
    print(
        f"\nF1 of all runs: DuckDB SQL {duck_ms:.1f} ms vs pandas {pandas_ms:.1f} ms on in-memory "
        f"frames (+{load_ms:.0f} ms to load them) -> pandas/DuckDB = {pandas_ms / duck_ms:.1f}× "
        f"({(pandas_ms + load_ms) / duck_ms:.1f}× with loading); identical results: {same}"
    )

    print(
        f"\n{'AppTest run of the page':<44}{'cold s':>10}{'warm s':>11}  target ≤ {PAGE_TARGET_S} s"
    )
    for view in (None, "Settings", "Judge vs human", "Tables", "Consistency", "Runs"):
        cold, warm = page_run(view, max(2, args.repeat // 2))
        flag = "ok" if cold <= PAGE_TARGET_S else "OVER"
        print(f"{'view=' + (view or 'Categories (default)'):<44}{cold:>10.2f}{warm:>11.2f}  {flag}")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
