"""Benchmark: the response grid's data calls at 25,000 items × 8 runs (200,000 responses).

    .venv/bin/python bench/bench_grid.py [--items 25000] [--runs 8] [--repeat 5] [--db PATH]

Builds a synthetic Mis-prompt database in DuckDB SQL (core/benchmarks/misprompt/synth.py: responses and
verdicts for every item of every run), then times `core.services.grid.grid_page` — one page of 50 items
with every filter and sort the page offers — cold (first call in this process) and warm
(median of the next calls; no Streamlit cache involved, so this is what a cache miss costs), and
the drill-down of one item. For comparison: reading the same 200,000 responses into pandas,
which is what a grid without SQL paging would do on every load.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.benchmarks.misprompt.synth import SynthSpec, fill  # noqa: E402
from core.services import grid  # noqa: E402
from core.store import Store  # noqa: E402

T = TypeVar("T")


def timed(fn: Callable[[], T], repeat: int) -> tuple[float, float, float, T]:
    """(cold ms, warm median ms, warm median CPU ms of this process, result): on a shared
    machine wall time moves with the other jobs, CPU time much less."""
    t = time.perf_counter()
    result = fn()
    cold = (time.perf_counter() - t) * 1000
    laps, cpus = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        laps.append((time.perf_counter() - t) * 1000)
        cpus.append((time.process_time() - c) * 1000)
    return cold, statistics.median(laps), statistics.median(cpus), result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=25_000)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--db", default=None, help="keep the database here (default: a temp dir)")
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    db = Path(args.db) if args.db else Path(tmp.name) / "grid.duckdb"
    store = Store.open(db)
    spec = SynthSpec(
        n_verdicts=args.items * args.runs,
        n_models=args.runs,
        settings=("zero-shot",),
        item_set="grid-synth",
        prefix="grid",
    )
    t = time.perf_counter()
    counts = fill(store, spec)
    print(
        f"built {counts['items']:,} items × {counts['runs']} runs = {counts['verdicts']:,} "
        f"responses with verdicts in {time.perf_counter() - t:.1f} s ({db})"
    )
    runs = tuple(grid.grid_runs(store, "misprompt", "grid-synth")["run_id"])
    cases: list[tuple[str, dict[str, Any]]] = [
        ("page 1, sort by item id", {}),
        ("page 1, sort by disagreements", {"sort": "disagreements"}),
        ("page 1, sort by category", {"sort": "category"}),
        ("last page (OFFSET 24,950)", {"page": 500}),
        ("filter: category (one of 14)", {"category": "TextContSubjSpec"}),
        ("filter: label correction_accurate true in any run", {"label": "correction_accurate"}),
        ("filter: disagreement only", {"disagree_only": True}),
        ("filter: free text 'syn-0012' (prompts + 200k responses)", {"text": "syn-0012"}),
        (
            "all filters + sort by disagreements",
            {
                "category": "TextContSubjSpec",
                "label": "guidance",
                "disagree_only": True,
                "text": "response",
                "sort": "disagreements",
            },
        ),
    ]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"\n{'grid data call (50 items a page)':<58} {'cold ms':>8} {'warm ms':>8} "
        f"{'CPU ms':>7}  matching"
    )
    for name, kw in cases:
        cold, warm, cpu, page = timed(
            functools.partial(
                grid.grid_page, store, "misprompt", "grid-synth", runs, page_size=50, **kw
            ),
            args.repeat,
        )
        print(
            f"{name:<58} {cold:8.0f} {warm:8.0f} {cpu:7.0f}  {page.total:,} items, "
            f"{len(page.rows)} rows × {len(page.columns)} runs"
        )
    item = page.rows["item_id"].iloc[0] if len(page.rows) else "syn-0000001"
    cold, warm, cpu, _ = timed(
        lambda: grid.grid_detail(store, "grid-synth", runs, item), args.repeat
    )
    print(
        f"{'drill-down of one item (8 full responses + verdicts)':<58} {cold:8.0f} {warm:8.0f} "
        f"{cpu:7.0f}"
    )
    cold, warm, cpu, frame = timed(
        lambda: store.df(
            "SELECT x.item_id, x.run_id, x.response, v.* EXCLUDE (run_id, item_id, variant) "
            "FROM responses x LEFT JOIN results v USING (run_id, item_id, variant) "
            "WHERE x.run_id IN (SELECT run_id FROM runs WHERE item_set = 'grid-synth')"
        ),
        2,
    )
    print(
        f"{'for comparison: all responses + verdicts into pandas':<58} {cold:8.0f} {warm:8.0f} "
        f"{cpu:7.0f}  {len(frame):,} rows"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
