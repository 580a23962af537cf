"""Benchmark: Mis-prompt's `bootstrap_ci` here vs another tree (main), side by side in one run.

    .venv/bin/python bench/bench_bootstrap.py --other /path/to/main/worktree [--repeat 5]
    .venv/bin/python bench/bench_bootstrap.py --profile   # cProfile of this tree's 40+40 case

Issue 29 made small cells draw more bootstrap replicates (core.stats.draws_for); this times
`bootstrap_ci(patterns, draws=1000)` on the same synthetic verdicts (fixed seed: erroneous items
spread over the 4 primary and 14 secondary categories, control items, some labels missing)
at three sizes, in a child process per tree (each imports its own `core`), alternating the
trees --repeat times and reporting medians and the ratio this/other, with `uptime` before and
after. Run it from this tree's directory with the shared venv.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES: tuple[tuple[int, int], ...] = ((40, 40), (400, 200), (4000, 1000))


def verdicts(n_error: int, n_control: int, seed: int = 0):  # -> pd.DataFrame
    """Synthetic verdict rows: per-label hit rates like a real judge's, 3 % labels missing."""
    import numpy as np
    import pandas as pd

    from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS, PRIMARY, SECONDARY

    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_error + n_control):
        err = i < n_error
        rate = 0.55 if err else 0.15
        labels: dict[str, object] = {
            lb: (None if rng.random() < 0.03 else bool(rng.random() < rate)) for lb in JUDGE_LABELS
        }
        rows.append(
            {
                "is_error": err,
                "primary_category": PRIMARY[int(rng.integers(len(PRIMARY)))] if err else None,
                "secondary_category": SECONDARY[int(rng.integers(len(SECONDARY)))] if err else None,
                "source": "synth",
                "model": "m",
                "setting": "s",
                "evaluator": "judge",
                **labels,
            }
        )
    return pd.DataFrame(rows)


def child(root: str, n_error: int, n_control: int) -> None:
    """Time this `root`'s bootstrap_ci once (after building the patterns), print JSON."""
    sys.path.insert(0, root)
    from core.benchmarks.misprompt.metrics import bootstrap_ci, pattern_counts

    pats = pattern_counts(verdicts(n_error, n_control))
    t0 = time.perf_counter()
    out = bootstrap_ci(pats, draws=1000, seed=0)
    wall = time.perf_counter() - t0
    print(json.dumps({"s": wall, "rows": len(out)}))


def run_child(tree: Path, n_error: int, n_control: int) -> float:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(tree)]
    cmd += ["--size", f"{n_error}+{n_control}"]
    done = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, check=True)
    return float(json.loads(done.stdout.strip().splitlines()[-1])["s"])


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--other", type=Path, help="the other tree (a worktree of main)")
    ap.add_argument("--repeat", type=int, default=5, choices=range(1, 51), metavar="1..50")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--size", default="40+40", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        n_error, n_control = (int(x) for x in args.size.split("+"))
        child(args.child, n_error, n_control)
        return
    if args.profile:
        import cProfile
        import pstats

        sys.path.insert(0, str(ROOT))
        from core.benchmarks.misprompt.metrics import bootstrap_ci, pattern_counts

        pats = pattern_counts(verdicts(40, 40))
        prof = cProfile.Profile()
        prof.runcall(bootstrap_ci, pats, 1000, 0)
        pstats.Stats(prof).sort_stats("cumulative").print_stats(20)
        return
    if args.other is None:
        ap.error("--other is needed (or --profile)")
    print("before:", uptime())
    print(f"trees: this={ROOT} other={args.other}; median of {args.repeat}, alternating")
    print(f"{'items':>12} {'other s':>9} {'this s':>9} {'this/other':>10}")
    for n_error, n_control in SIZES:
        mine: list[float] = []
        theirs: list[float] = []
        for _ in range(args.repeat):
            theirs.append(run_child(args.other, n_error, n_control))
            mine.append(run_child(ROOT, n_error, n_control))
        a, b = statistics.median(theirs), statistics.median(mine)
        print(f"{f'{n_error}+{n_control}':>12} {a:9.3f} {b:9.3f} {b / a:10.2f}")
    print("after:", uptime(), f"(cpus: {os.cpu_count()})")


if __name__ == "__main__":
    main()
