"""Benchmark: where an import's memory goes as a big Inspect log is written (peak RSS and
DuckDB's own accounting, every 20 written batches), under a given DuckDB memory limit.

    .venv/bin/python bench/bench_import_memory.py --log /tmp/big100k.eval [--memory-limit 256MB|none]

`--memory-limit none` writes as before the limit existed (DuckDB's default, 80% of RAM);
otherwise `core.sources.service.IMPORT_MEMORY_LIMIT` is set to it. `--commit-every-batch`
(an experiment: no longer all or nothing) commits after each batch. The import is
`import results LOG --new-item-set big --benchmark processbench` into a new database file, in
this process: lines `planned` (after reading and matching), `batch N` (VmRSS / VmHWM and
duckdb_memory()'s tags over 1 MB) and `written`. Make the log as bench/bench_import.py says.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def rss() -> str:
    with open("/proc/self/status") as handle:
        lines = [x.split(":")[1].strip() for x in handle if x.startswith(("VmRSS", "VmHWM"))]
    return f"RSS {lines[1]}, peak {lines[0]}" if len(lines) == 2 else "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log", required=True, type=Path)
    parser.add_argument("--memory-limit", default="256MB", help="DuckDB size, or none")
    parser.add_argument(
        "--commit-every-batch",
        action="store_true",
        help="an experiment, not all or nothing: COMMIT after each batch (what memory the "
        "one transaction costs)",
    )
    args = parser.parse_args()
    import core.sources.service as service
    from core.store import Store

    if args.memory_limit == "none":

        @contextlib.contextmanager
        def unbounded(_store: Store) -> Iterator[None]:  # DuckDB's default limit stays
            yield

        service.bounded_memory = unbounded  # type: ignore[assignment]
    else:
        service.IMPORT_MEMORY_LIMIT = args.memory_limit
    print("machine:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.duckdb"
        subprocess.run(
            [sys.executable, "-m", "core", "init", "--db", str(db)],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        store = Store.open(db)
        started = time.perf_counter()
        print("start", rss(), flush=True)
        options = service.Options(new_item_set="big", benchmark="processbench")
        plans = service.plan_file(store, args.log, options)
        print(f"planned {time.perf_counter() - started:.0f} s", rss(), flush=True)
        real = service.write_batch
        count = [0]

        def write_batch(con: Any, batch: Any, **kw: Any) -> None:
            real(con, batch, **kw)
            if args.commit_every_batch:
                con.execute("COMMIT")
                con.execute("BEGIN TRANSACTION")
            count[0] += 1
            if count[0] % 20 == 0:
                tags = con.execute(
                    "SELECT tag, memory_usage_bytes // 1000000 FROM duckdb_memory() "
                    "WHERE memory_usage_bytes > 1000000"
                ).fetchall()
                print(f"batch {count[0]}", rss(), "duckdb MB:", dict(tags), flush=True)

        service.write_batch = write_batch
        written = service.write_plans(store, plans)
        print(f"written {written} in {time.perf_counter() - started:.0f} s", rss())
    return 0


if __name__ == "__main__":
    sys.exit(main())
