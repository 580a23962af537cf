"""Benchmark: the judge audit at scale — drawing a sample, saving labels, the results panel.

    .venv/bin/python bench/bench_audit.py [--verdicts 100000] [--saves 120] [--db PATH]

Fills a database with synthetic judged runs (core.benchmarks.misprompt.synth: 8 models × 5 settings),
then measures in one run and prints side by side:
- drawing a 10% stratified sample over every run (create_audit);
- saving labels one item per transaction (what the page does on each click): one session,
  two sessions in one process (threads; the app's browser sessions), two processes (two apps
  or app + CLI) — items/s and the ratio to one session (DuckDB allows one writer at a time, so
  the point is "nothing lost, little contention", not a speed-up);
- the results panel on three annotators who labelled the whole sample: audit_labels,
  agreement_table (Cohen's κ), fleiss_table, f1_comparison, each in ms.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from core.benchmarks.misprompt.synth import SynthSpec, fill  # noqa: E402
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS  # noqa: E402
from core.services import audit  # noqa: E402
from core.store import Store  # noqa: E402

WORKER = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from core.services import audit
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.store import Store
store = Store.open(sys.argv[2], lock_timeout=300)
queue = audit.audit_queue(store, sys.argv[3])
start, n, who = int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
for row in queue.iloc[start:start + n].itertuples():
    audit.save_labels(store, row.run_id, row.item_id, row.variant, who,
                      {l: True for l in JUDGE_LABELS})
"""


def save_range(store: Store, queue: pd.DataFrame, start: int, n: int, who: str) -> None:
    for row in queue.iloc[start : start + n].itertuples():
        audit.save_labels(
            store,
            str(row.run_id),
            str(row.item_id),
            str(row.variant),
            who,
            {label: True for label in JUDGE_LABELS},
        )


T = TypeVar("T")


def timed_ms(fn: Callable[[], T], repeat: int = 3) -> tuple[float, T]:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        best = min(best, (time.perf_counter() - t) * 1000)
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--verdicts", type=int, default=100_000)
    parser.add_argument("--saves", type=int, default=120, help="items saved per scenario")
    parser.add_argument("--db", default=None)
    args = parser.parse_args()
    tmp = tempfile.TemporaryDirectory()
    path = Path(args.db) if args.db else Path(tmp.name) / "bench.duckdb"
    store = Store.open(path)
    t = time.perf_counter()
    fill(store, SynthSpec(n_verdicts=args.verdicts))
    runs = list(store.df("SELECT run_id FROM runs ORDER BY run_id")["run_id"])
    print(
        f"database: {args.verdicts:,} verdicts in {len(runs)} runs "
        f"({time.perf_counter() - t:.1f} s to fill)"
    )

    t = time.perf_counter()
    info = audit.create_audit(store, "bench", runs, fraction=0.10, seed=0)
    draw_ms = (time.perf_counter() - t) * 1000
    print(f"create_audit 10%: {info.n_sampled:,} of {info.n_pool:,} verdicts, {draw_ms:,.0f} ms")
    queue = audit.audit_queue(store, "bench")

    n = args.saves
    t = time.perf_counter()
    save_range(store, queue, 0, n, "one")
    one = n / (time.perf_counter() - t)
    threads = [
        threading.Thread(
            target=save_range,
            args=(Store(path=path, _migrated=True), queue, n + i * (n // 2), n // 2, f"thread{i}"),
        )
        for i in range(2)
    ]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    two_threads = (n // 2 * 2) / (time.perf_counter() - t)
    t = time.perf_counter()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WORKER,
                str(ROOT),
                str(path),
                "bench",
                str(2 * n + i * (n // 2)),
                str(n // 2),
                f"proc{i}",
            ]
        )
        for i in range(2)
    ]
    for p in procs:
        p.wait()
    two_procs = (n // 2 * 2) / (time.perf_counter() - t)
    saved = store.scalar("SELECT count(*) FROM human_labels")
    expect = (n + 2 * (n // 2) * 2) * len(JUDGE_LABELS)
    print(
        f"saved labels: {saved:,} rows (expected {expect:,}: "
        f"{'nothing lost' if saved == expect else 'MISMATCH'})"
    )
    print(f"{'label saving (1 item = 1 transaction)':44s} {'items/s':>8s} {'vs 1 session':>13s}")
    for name, rate in [
        ("one session", one),
        ("two sessions, one process (threads)", two_threads),
        ("two processes", two_procs),
    ]:
        print(f"  {name:42s} {rate:8.1f} {rate / one:13.2f}")

    # Three annotators label the whole sample (bulk, to set up the results panel).
    store.execute("DELETE FROM human_labels")
    rng = np.random.default_rng(0)
    frames = []
    for who, flip in [("ann1", 0.1), ("ann2", 0.2), ("ann3", 0.3)]:
        for label in JUDGE_LABELS:
            judge = queue[label].astype(bool).to_numpy()
            frames.append(
                pd.DataFrame(
                    {
                        "run_id": queue["run_id"],
                        "item_id": queue["item_id"],
                        "variant": queue["variant"],
                        "annotator": who,
                        "label": label,
                        "value": judge ^ (rng.random(len(queue)) < flip),
                        "judge_value": judge,
                    }
                )
            )
    labels_frame = pd.concat(frames, ignore_index=True)
    store.insert_df("human_labels", labels_frame)
    print(
        f"results panel over {len(labels_frame):,} labels (3 annotators × "
        f"{len(queue):,} items × 6), best of 3:"
    )
    ms, labels = timed_ms(lambda: audit.audit_labels(store, "bench"))
    print(f"  {'audit_labels (query)':42s} {ms:8.0f} ms")
    ms, _ = timed_ms(lambda: audit.agreement_table(labels, names=JUDGE_LABELS))
    print(f"  {'agreement_table (Cohen κ, confusion)':42s} {ms:8.0f} ms")
    ms, _ = timed_ms(lambda: audit.fleiss_table(labels, names=JUDGE_LABELS))
    print(f"  {'fleiss_table':42s} {ms:8.0f} ms")
    ms, _ = timed_ms(lambda: audit.f1_comparison(store, "bench"), repeat=1)
    print(f"  {'f1_comparison (40 runs, judge + 3 humans + majority)':42s} {ms:8.0f} ms")
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
