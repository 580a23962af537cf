"""Benchmark: importing a big Inspect AI log, beside Inspect's own reader of the same file.

    .venv/bin/python bench/bench_import.py --log /tmp/big.eval [--inspect-python PY]

Make the log first with Inspect's own writer (tests/data/tools/make_fixtures.py, which runs in
the Inspect venv): `python tests/data/tools/make_fixtures.py --big 100000 /tmp/big.eval`.

Measured side by side, each in a process of its own (so its peak RSS is its own, read with
os.wait4; the seconds are the call's own, after the process's imports):
`core.sources.service.import_file(LOG, --new-item-set big --benchmark processbench)` (what
`python -m core import results` runs) into a new database file (reading, matching, building the item set, staging every response and
result and moving them into the store), and `inspect_ai.log.read_eval_log(LOG)` in the Inspect venv (reading
and validating the samples into memory, writing nothing). Prints samples/s of each, the ratio
(ours / Inspect's; goal >= 1) and both peak RSS, with the machine's load (`uptime`).
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

IMPORT_WITH_OURS = r"""
import sys, time
sys.path.insert(0, sys.argv[3])
from pathlib import Path
from core.sources.service import Options, import_file
from core.store import Store
store = Store.open(sys.argv[2])
t = time.perf_counter()
plans, n = import_file(store, Path(sys.argv[1]), Options(new_item_set="big", benchmark="processbench"))
print(n, time.perf_counter() - t)
"""

READ_WITH_INSPECT = r"""
import sys, time
from inspect_ai.log import read_eval_log
t = time.perf_counter()
log = read_eval_log(sys.argv[1])
print(len(log.samples or []), time.perf_counter() - t)
"""


def measured(cmd: list[str], cwd: Path) -> tuple[float, int, str]:
    """(wall seconds, peak RSS in MB, stdout) of one process."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-2000:]}")
    return seconds, usage.ru_maxrss // 1024, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log", required=True, type=Path, help="an Inspect .eval log")
    parser.add_argument(
        "--inspect-python", default="/tmp/venv-inspect/bin/python", help="Inspect's venv python"
    )
    parser.add_argument(
        "--ours-only",
        action="store_true",
        help="only our import (its seconds and peak RSS), e.g. to compare two versions' memory",
    )
    args = parser.parse_args()
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    size = args.log.stat().st_size / 1e6
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.duckdb"
        init = [sys.executable, "-m", "core", "init", "--db", str(db)]
        subprocess.run(init, cwd=ROOT, check=True, capture_output=True)
        _, ours_rss, out = measured(
            [sys.executable, "-c", IMPORT_WITH_OURS, str(args.log), str(db), str(ROOT)], ROOT
        )
        n, ours_s = int(out.split()[0]), float(out.split()[1])
    if args.ours_only:
        print(f"machine: {load} (shared, loaded)")
        print(f"log: {args.log} ({size:.1f} MB, {n} samples)")
        print(
            f"import results (ours, + write): {ours_s:.1f} s, {n / ours_s:.0f} samples/s, "
            f"peak RSS {ours_rss} MB"
        )
        return 0
    _, theirs_rss, out = measured(
        [args.inspect_python, "-c", READ_WITH_INSPECT, str(args.log)], ROOT
    )
    n_theirs, theirs_s = int(out.split()[0]), float(out.split()[1])
    assert n == n_theirs, (n, n_theirs)
    ours_rate, theirs_rate = n / ours_s, n_theirs / theirs_s
    print(f"machine: {load} (shared, loaded)")
    print(f"log: {args.log} ({size:.1f} MB, {n} samples)")
    print(f"{'':34}{'seconds':>9}{'samples/s':>11}{'peak RSS MB':>13}")
    print(f"{'import results (ours, + write)':34}{ours_s:>9.1f}{ours_rate:>11.0f}{ours_rss:>13}")
    print(
        f"{'read_eval_log (Inspect, read)':34}{theirs_s:>9.1f}{theirs_rate:>11.0f}{theirs_rss:>13}"
    )
    print(f"ratio ours / Inspect: {ours_rate / theirs_rate:.2f}x")
    end = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"machine at the end: {end}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
