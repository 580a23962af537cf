"""Benchmark: `python -m core compare` of two Mis-prompt runs of 25,000 items each.

    .venv/bin/python bench/bench_compare.py [--items 25000] [--repeat 3] [--profile] [--db PATH]

Issue 18's must-hold: `compare` of two runs of 25,000 items each ≤ 2 s warm, and the Compare
view's data ≤ 3× the Mis-prompt page's data at the same size. Builds two synthetic runs over
one item set (core/benchmarks/misprompt/synth.py, in SQL), then times in this one process, cold
(first call) and warm (median of --repeat; with the CPU time of this process beside it): the whole command (`core.services.compare_runs.main`,
output to /dev/null), its two parts (loading the pairs, the table with its 2,000 bootstrap
draws per category), the Compare view's data (`compare_view`) and, for the ratio, the
Mis-prompt page's data (`misprompt_page_data`) over the same database. --profile prints the
top of a cProfile of one warm command.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.benchmarks.misprompt import queries  # noqa: E402
from core.benchmarks.misprompt.synth import SynthSpec, fill  # noqa: E402
from core.services import compare_runs  # noqa: E402
from core.store import Store  # noqa: E402

LIMIT_S = 2.0
VIEW_RATIO = 3.0


def timed(fn, repeat: int) -> tuple[float, float, float]:
    """(cold ms, warm median ms, warm median CPU ms of this process): on a shared machine wall
    time moves with the other jobs (DuckDB's threads wait for a core), CPU time much less."""
    t = time.perf_counter()
    fn()
    cold = (time.perf_counter() - t) * 1000
    laps, cpus = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        laps.append((time.perf_counter() - t) * 1000)
        cpus.append((time.process_time() - c) * 1000)
    return cold, statistics.median(laps), statistics.median(cpus)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=25_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--db", default=None, help="keep the database here (default: a temp dir)")
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    db = Path(args.db) if args.db else Path(tmp.name) / "compare.duckdb"
    store = Store.open(db)
    spec = SynthSpec(
        n_verdicts=2 * args.items,
        n_models=2,
        settings=("zero-shot",),
        item_set="cmp-synth",
        prefix="cmp",
    )
    t = time.perf_counter()
    counts = fill(store, spec)
    print(
        f"built {counts['items']:,} items × {counts['runs']} runs in "
        f"{time.perf_counter() - t:.1f} s (load {os.getloadavg()[0]:.1f}; {db})"
    )
    base, cand = [r[0] for r in store.rows("SELECT run_id FROM runs ORDER BY run_id")]
    cli_args = argparse.Namespace(
        db=str(db), baseline=base, candidate=cand, judging=None, format="csv", flipped=False
    )

    def command() -> None:
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
            compare_runs.main(cli_args)

    pairs = compare_runs.load_pairs(store, base, cand)
    cases = [
        ("compare (the whole command, CSV)", command),
        ("  load_pairs (SQL + labels JSON)", lambda: compare_runs.load_pairs(store, base, cand)),
        ("  compare_table (bootstrap, McNemar)", lambda: compare_runs.compare_table(pairs)),
        (
            "Compare view's data (compare_view)",
            lambda: compare_runs.compare_view(store, base, cand),
        ),
        ("Mis-prompt page's data (same database)", lambda: queries.misprompt_page_data(store)),
    ]
    results = {}
    print(f"{'call':<44} {'cold ms':>9} {'warm ms':>9} {'CPU ms':>9}")
    for name, fn in cases:
        cold, warm, cpu = timed(fn, args.repeat)
        results[name] = warm
        print(f"{name:<44} {cold:>9.0f} {warm:>9.0f} {cpu:>9.0f}")
    print(f"(load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    warm_cmd = results[cases[0][0]] / 1000
    ratio = results[cases[3][0]] / results[cases[4][0]]
    print(
        f"\ncompare warm: {warm_cmd:.2f} s (must hold ≤ {LIMIT_S:.0f} s: "
        f"{'yes' if warm_cmd <= LIMIT_S else 'NO'}); Compare view / Mis-prompt page data: "
        f"{ratio:.1f}× (must hold ≤ {VIEW_RATIO:.0f}×: {'yes' if ratio <= VIEW_RATIO else 'NO'})"
    )
    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(command)
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(25)
        print(out.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
