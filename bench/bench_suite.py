"""Benchmark: the whole test suite here against another commit, alternating, in one session.

    .venv/bin/python bench/bench_suite.py --against fdcf941 [--rounds 2] [-- PYTEST ARGS]

This machine's speed moves by ~20 % within hours (the same commit's suite took 5 min 59 s and
4 min 36 s on one day), so a suite time means little alone: this checks out `--against` in a
temporary git worktree (sharing this checkout's .venv), then runs `./test.sh -q` there and here
in turn, `--rounds` times, and prints each run's wall time and the machine's busy CPU over it
(/proc/stat: user + nice + system + irq + softirq + steal, every process included — Chromium,
servers, PostgreSQL) with the ratio to the other commit's mean. Both trees' mypy caches are
warmed first (one mypy run each), so neither pays a cold cache. Nothing else should run meanwhile.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _busy_ticks() -> int:
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return user + nice + system + irq + softirq + steal


def _suite(tree: Path, pytest_args: list[str]) -> tuple[float, float, str]:
    """(wall s, busy CPU s, pytest's last line) of one `./test.sh -q` in `tree`."""
    ticks, start = _busy_ticks(), time.monotonic()
    done = subprocess.run(
        ["bash", "test.sh", "-q", "-p", "no:cacheprovider", *pytest_args],
        cwd=tree,
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - start
    busy = (_busy_ticks() - ticks) / os.sysconf("SC_CLK_TCK")
    last = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    return wall, busy, last


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", required=True, help="the commit to compare with (e.g. fdcf941)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("pytest_args", nargs="*", help="after --: passed to pytest in both trees")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-suite-"))
    base = tmp / "base"
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(base), args.against],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    try:
        (base / ".venv").symlink_to(ROOT / ".venv")
        for tree in (base, ROOT):
            subprocess.run([str(ROOT / ".venv/bin/mypy")], cwd=tree, capture_output=True)
        runs: dict[str, list[tuple[float, float, str]]] = {args.against: [], "this checkout": []}
        for _ in range(args.rounds):
            for name, tree in ((args.against, base), ("this checkout", ROOT)):
                runs[name].append(_suite(tree, args.pytest_args))
                wall, busy, last = runs[name][-1]
                print(f"{name}: {wall:.0f} s, {busy:.0f} s busy CPU — {last}", flush=True)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT)
        shutil.rmtree(tmp, ignore_errors=True)
    first_wall = statistics.mean(r[0] for r in runs[args.against])
    first_busy = statistics.mean(r[1] for r in runs[args.against])
    print(f"\nload average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'suite':<24} {'wall s':>8} {'busy CPU s':>11} {'wall ÷':>7} {'CPU ÷':>7}")
    for name, values in runs.items():
        for wall, busy, _ in values:
            print(
                f"{name:<24} {wall:8.0f} {busy:11.0f} "
                f"{wall / first_wall:7.2f} {busy / first_busy:7.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
