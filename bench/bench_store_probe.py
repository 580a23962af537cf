"""Benchmark: the cost of the damage probe (core.store.database.damage_probe) that refuses a
truncated database before anything is written to it (issue 20, point 13).

    .venv/bin/python bench/bench_store_probe.py [--items 25000] [--runs 8] [--repeat 20]

Builds the grid benchmark's synthetic Mis-prompt database (25,000 items × 8 runs = 200,000
responses with verdicts), then times, on one open connection (median of --repeat, wall and CPU):
the probe as it runs on open (catalog queries + a stat) and before each write (one pragma + a
stat), the alternative it replaces (reading every column of every table, which is what makes DuckDB
verify every block's checksum), the block-checksum pass a Store runs before its first write
(issue 31, point 12), and Store.open + one small write with and without the probes. Prints the
machine's load with the numbers, since the machine is shared.
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402

from core.benchmarks.misprompt.synth import SynthSpec, fill  # noqa: E402
from core.store import Store, database  # noqa: E402


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(median wall ms, median CPU ms of this process)."""
    fn()  # warm
    laps, cpus = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        laps.append((time.perf_counter() - t) * 1000)
        cpus.append((time.process_time() - c) * 1000)
    return statistics.median(laps), statistics.median(cpus)


def read_everything(con: duckdb.DuckDBPyConnection) -> None:
    """Every column of every table read (the full-scan alternative to the probe)."""
    tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
    for table in tables:
        cols = [r[0] for r in con.execute(f'DESCRIBE "{table}"').fetchall()]
        exprs = ", ".join(f'count("{c}")' for c in cols)
        con.execute(f'SELECT {exprs}, max(hash(t)) FROM "{table}" t').fetchall()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=25_000)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    db = Path(tmp.name) / "probe.duckdb"
    store = Store.open(db)
    spec = SynthSpec(
        n_verdicts=args.items * args.runs,
        n_models=args.runs,
        settings=("zero-shot",),
        item_set="probe-synth",
        prefix="probe",
    )
    counts = fill(store, spec)
    size = db.stat().st_size
    print(
        f"database: {counts['items']:,} items × {counts['runs']} runs = "
        f"{counts['verdicts']:,} responses, {size / 2**20:.1f} MiB; "
        f"load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )

    def open_and_write() -> None:
        Store.open(db).execute("UPDATE meta SET value = value WHERE key = 'schema_version'")

    with store.connect() as con:
        rows = [
            ("damage_probe, thorough (on open)", timed(
                lambda: database.damage_probe(con, db), args.repeat)),
            ("damage_probe, quick (before each write)", timed(
                lambda: database.damage_probe(con, db, thorough=False), args.repeat)),
            ("block checksums (before a Store's first write)", timed(
                lambda: database.check_blocks(con, db), args.repeat)),
            ("alternative: read every column of every table", timed(
                lambda: read_everything(con), max(3, args.repeat // 5))),
        ]  # fmt: skip
    rows.append(("Store.open + one write, with the probes", timed(open_and_write, args.repeat)))
    real, real_blocks = database.damage_probe, database.check_blocks
    database.damage_probe = lambda *_a, **_k: None
    database.check_blocks = lambda *_a, **_k: None
    try:
        rows.append(("Store.open + one write, probes off", timed(open_and_write, args.repeat)))
    finally:
        database.damage_probe, database.check_blocks = real, real_blocks
    for name, (wall, cpu) in rows:
        print(f"{name:<55} {wall:9.2f} ms wall {cpu:9.2f} ms CPU")
    print(f"load after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
