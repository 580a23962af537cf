"""Benchmark: what one short read of the file store costs — a DuckDB instance of its own per
operation (how the store opened files before) against the file attached to the process's
instance while in use (core/store/files.py), and inside `Store.session()`.

    .venv/bin/python bench/bench_store_open.py [--repeat 200] [--db PATH]

Builds an initialised database (`python -m core init`: published tables, the samples), then
times the same statement — the change counter every page rerun reads (`Store.data_version`) —
three ways, alternating them so they share the machine's load; median wall and CPU ms of this
process per operation, and the ratio to the first row.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.store import Store  # noqa: E402
from core.store.database import DATA_VERSION_KEY  # noqa: E402

SQL = f"SELECT value FROM meta WHERE key = '{DATA_VERSION_KEY}'"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--db", default=None, help="an existing database (default: a new one)")
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    path = Path(args.db) if args.db else Path(tmp.name) / "bench.duckdb"
    if not args.db:
        subprocess.run(
            [sys.executable, "-m", "core", "init", "--db", str(path)],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
    store = Store.open(path, create=False)

    def own_instance() -> object:
        con = duckdb.connect(str(path))
        try:
            return con.execute(SQL).fetchall()
        finally:
            con.close()

    def attached() -> object:
        return store.data_version()

    ways: list[tuple[str, Callable[[], object]]] = [
        ("duckdb.connect(path) per operation (before)", own_instance),
        ("Store.data_version(): attach, read, detach", attached),
    ]
    laps: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in ways}
    for _, fn in ways:
        fn()  # warm: imports, the instance, the page cache
    for _ in range(args.repeat):
        for name, fn in ways:
            t, c = time.perf_counter(), time.process_time()
            fn()
            laps[name].append(((time.perf_counter() - t) * 1000, (time.process_time() - c) * 1000))
    with store.session():  # the attachment held: what a burst of operations pays after the first
        name = "Store.data_version() inside Store.session()"
        laps[name] = []
        for _ in range(args.repeat):
            t, c = time.perf_counter(), time.process_time()
            store.data_version()
            laps[name].append(((time.perf_counter() - t) * 1000, (time.process_time() - c) * 1000))
    print(f"{path} ({path.stat().st_size / 1e6:.1f} MB), {args.repeat} operations each")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print(f"{'one read of the change counter':<48} {'wall ms':>8} {'CPU ms':>8} {'÷ first':>8}")
    first = None
    for name, values in laps.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        first = first or cpu
        print(f"{name:<48} {wall:8.2f} {cpu:8.2f} {cpu / first:8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
