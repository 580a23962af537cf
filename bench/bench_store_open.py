"""Benchmark: what short operations on the file store cost — a DuckDB instance of its own per
operation (how the store opened files before) against the file attached to the process's
instance while in use (core/store/files.py), inside `Store.session()`, and the same file in
DuckDB's default storage format (v0.10.2) against the one the store now writes (v1.4.0).

    .venv/bin/python bench/bench_store_open.py [--repeat 200] [--db PATH]

Builds an initialised database (`python -m core init`: published tables, the samples) and a
copy of it in the old format, then times each operation every way, alternating the ways so
they share the machine's load: median wall and CPU ms of this process per operation, and the
ratio to the first row of its table.
- a read: the change counter every page rerun reads (`Store.data_version`);
- a write: one small transaction (the commit, then the checkpoint when the file is let go);
- an open: `Store.open` (the damage probe, the schema check), what every command and the app
  pay once per store.
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

from core.store import Store, files  # noqa: E402
from core.store.database import DATA_VERSION_KEY  # noqa: E402

SQL = f"SELECT value FROM meta WHERE key = '{DATA_VERSION_KEY}'"
OLD_FORMAT = "v0.10.2"  # DuckDB's default storage version, what files were written in before


def _old_format_copy(path: Path, to: Path) -> None:
    """The same database written in DuckDB's default (older) storage format."""
    con = duckdb.connect()
    try:
        con.execute(f"ATTACH '{path}' AS src (READ_ONLY)")
        con.execute(f"ATTACH '{to}' AS dst (STORAGE_VERSION '{OLD_FORMAT}')")
        con.execute("COPY FROM DATABASE src TO dst")
    finally:
        con.close()


def _time(ways: list[tuple[str, Callable[[], object]]], repeat: int) -> dict[str, list]:
    laps: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in ways}
    for _, fn in ways:
        fn()  # warm: imports, the instance, the page cache
    for _ in range(repeat):
        for name, fn in ways:
            t, c = time.perf_counter(), time.process_time()
            fn()
            laps[name].append(((time.perf_counter() - t) * 1000, (time.process_time() - c) * 1000))
    return laps


def _table(title: str, laps: dict[str, list]) -> None:
    print(f"\n{title:<52} {'wall ms':>8} {'CPU ms':>8} {'÷ first':>8}")
    first = None
    for name, values in laps.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        first = first or cpu
        print(f"{name:<52} {wall:8.2f} {cpu:8.2f} {cpu / first:8.2f}")


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
    old = Path(tmp.name) / "old-format.duckdb"
    _old_format_copy(path, old)
    store = Store.open(path, create=False)
    old_store = Store.open(old, create=False)

    def own_instance() -> object:
        con = duckdb.connect(str(path))
        try:
            return con.execute(SQL).fetchall()
        finally:
            con.close()

    def write(s: Store) -> Callable[[], object]:
        return lambda: s.execute("UPDATE meta SET value = value WHERE key = 'schema_version'")

    reads = _time(
        [
            ("duckdb.connect(path) per operation (before)", own_instance),
            (f"attach, read, detach: a {OLD_FORMAT} file", old_store.data_version),
            (f"attach, read, detach: a {files.STORAGE_VERSION} file", store.data_version),
        ],
        args.repeat,
    )
    with store.session():  # the attachment held: what a burst pays after its first operation
        reads.update(_time([("the same inside Store.session()", store.data_version)], args.repeat))
    writes = _time(
        [
            (f"attach, commit, detach: a {OLD_FORMAT} file", write(old_store)),
            (f"attach, commit, detach: a {files.STORAGE_VERSION} file", write(store)),
        ],
        args.repeat,
    )
    opens = _time(
        [
            (f"Store.open: a {OLD_FORMAT} file", lambda: Store.open(old, create=False)),
            (f"Store.open: a {files.STORAGE_VERSION} file", lambda: Store.open(path, create=False)),
        ],
        args.repeat,
    )
    print(
        f"{path} ({path.stat().st_size / 1e6:.1f} MB; the {OLD_FORMAT} copy "
        f"{old.stat().st_size / 1e6:.1f} MB), {args.repeat} operations each"
    )
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    _table("one read of the change counter", reads)
    _table("one small write transaction", writes)
    _table("opening the store", opens)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
