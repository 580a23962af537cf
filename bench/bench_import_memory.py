"""Benchmark: peak memory of importing Inspect AI logs of several sizes (does it grow with the log?).

    .venv/bin/python bench/bench_import_memory.py /tmp/big10k.eval /tmp/big50k.eval /tmp/big100k.eval

Each log is imported in a process of its own (`import results LOG --new-item-set big
--benchmark processbench`, core.sources.service.import_file, into a new database file), whose
RSS is sampled every 0.2 s by a thread of that process (VmRSS; the peak is VmHWM, and
os.wait4's ru_maxrss agrees); the child prints its RSS at each phase (after the imports, after
planning, every 10 staged batches, after the move). Prints one row per log — samples, peak
RSS, RSS after the process's imports, samples/s — and the machine's load (`uptime`) before and
after. Make the logs with bench/make_big_eval.py N OUT (or Inspect's own recorder,
tests/data/tools/make_fixtures.py --big N OUT).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import logging, sys, threading, time
sys.path.insert(0, sys.argv[3])

def rss(field="VmRSS"):
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field):
                return int(line.split()[1]) // 1024
    return -1

samples = []
def sample():
    while True:
        samples.append(rss())
        time.sleep(0.2)
threading.Thread(target=sample, daemon=True).start()

class Phase(logging.Handler):
    def emit(self, record):
        msg = record.getMessage()
        if not msg.startswith("staged batch") or msg.split()[2].endswith("0"):
            print(f"  {msg[:60]:60s} RSS {rss()} MB", flush=True)

from pathlib import Path
from core.sources.service import Options, import_file, plan_file, write_plans
from core.store import Store
logging.getLogger("core.sources.service").addHandler(Phase())
logging.getLogger("core.sources.service").setLevel(logging.INFO)
store = Store.open(sys.argv[2])
print(f"  imports done{'':48s} RSS {rss()} MB", flush=True)
base = rss()
t = time.perf_counter()
plans = plan_file(store, Path(sys.argv[1]), Options(new_item_set="big", benchmark="processbench"))
print(f"  planned{'':53s} RSS {rss()} MB", flush=True)
n = write_plans(store, plans)
seconds = time.perf_counter() - t
print(f"RESULT {n} {seconds:.2f} {rss('VmHWM')} {base} {max(samples)}", flush=True)
"""


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def measure(log: Path) -> tuple[int, float, int, int, int]:
    """(samples written, seconds, peak RSS MB, RSS after imports MB, ru_maxrss MB)."""
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.duckdb"
        subprocess.run(
            [sys.executable, "-m", "core", "init", "--db", str(db)],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(log), str(db), str(ROOT)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        result = ""
        for line in proc.stdout:
            if line.startswith("RESULT"):
                result = line
            else:
                print(line, end="", flush=True)
        _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0 or not result:
            raise SystemExit(f"the import of {log} failed ({status})")
        n, seconds, peak, base, _ = result.split()[1:]
        return int(n), float(seconds), int(peak), int(base), usage.ru_maxrss // 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+", type=Path, help="Inspect .eval logs, small to big")
    args = parser.parse_args()
    print("machine:", load(), flush=True)
    rows = []
    for log in args.logs:
        print(f"{log} ({log.stat().st_size / 1e6:.1f} MB):", flush=True)
        started = time.perf_counter()
        n, seconds, peak, base, maxrss = measure(log)
        rows.append((log.name, n, peak, base, maxrss, seconds, n / seconds))
        print(f"  done in {time.perf_counter() - started:.0f} s; {load()}", flush=True)
    print("\n| log | samples | peak RSS | RSS after imports | ru_maxrss | seconds | samples/s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, n, peak, base, maxrss, seconds, rate in rows:
        print(
            f"| {name} | {n:,} | {peak} MB | {base} MB | {maxrss} MB | {seconds:.1f} | {rate:.0f} |"
        )
    if len(rows) > 1:
        print(
            f"\npeak RSS growth {rows[0][1]:,} -> {rows[-1][1]:,} samples: {rows[-1][2] - rows[0][2]:+d} MB"
        )
    print("machine:", load())
    return 0


if __name__ == "__main__":
    sys.exit(main())
