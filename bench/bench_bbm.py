"""Benchmark: BIG-Bench Mistake import, runs against a scripted server, and scoring.

    .venv/bin/python bench/bench_bbm.py [--limit 600] [--latency 0.02] [--concurrency 16]

1. Import the five released files (../shared/data/bigbench_mistake; the team sample repeated to
   2,186 traces without them): validate every line and write the set in one transaction.
2. direct_trace over `--limit` traces against the scripted server (tests/fake_openai.py in a child
   process, fixed latency per request): units/s achieved beside the latency bound
   concurrency / latency (ratio = how much of the ideal the runner reaches).
3. direct_step over the same traces, the server answering "No" at Thought 3: calls made with
   the paper's stop-at-first-No rule beside the calls asking every step would cost.
4. Metrics of the direct_step run (responses → per-task accuracy, split, weighted F1), and the
   Mistake-finding page's data call (published + that run).
Prints one table; each line has the measured value and the comparison it is read against.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.benchmarks.bbm.items import import_files, read_traces  # noqa: E402
from core.benchmarks.bbm.queries import combined_metrics, run_metrics  # noqa: E402
from core.cli import main as cli  # noqa: E402
from core.services.setup import init  # noqa: E402
from core.store import Store  # noqa: E402
from tests.fake_openai import FakeProcess  # noqa: E402

SHARED = ROOT.parent / "shared" / "data" / "bigbench_mistake"
SAMPLE = ROOT / "data" / "samples" / "bbm_sample.jsonl"


def source_files(tmp: Path) -> list[Path]:
    files = sorted(SHARED.glob("*.jsonl"))
    if files:
        return files
    lines = [ln for ln in SAMPLE.read_text().splitlines() if ln.strip()]
    big = tmp / "bbm_sample_x.jsonl"
    big.write_text("\n".join(lines[i % len(lines)] for i in range(2186)))
    return [big]


def run(db: Path, url: str, method: str, name: str, limit: int, concurrency: int) -> float:
    t0 = time.perf_counter()
    rc = cli(
        [
            "run",
            "bbm",
            "--db",
            str(db),
            "--items",
            "bench",
            "--base-url",
            url,
            "--model",
            "scripted",
            "--method",
            method,
            "--run-name",
            name,
            "--limit",
            str(limit),
            "--concurrency",
            str(concurrency),
            "--quiet",
            "--no-cache",
        ]
    )
    if rc != 0:
        raise SystemExit(f"run {name} failed ({rc})")
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=600)
    ap.add_argument("--latency", type=float, default=0.02)
    ap.add_argument("--concurrency", type=int, default=16)
    args = ap.parse_args()
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        db = tmp / "bench.duckdb"
        store = Store.open(db)
        init(store)
        files = source_files(tmp)
        t0 = time.perf_counter()
        result = import_files(store, files, name="bench")
        t_import = time.perf_counter() - t0
        rows.append(
            (
                "import (validate + one transaction)",
                f"{result.n_items} traces in {t_import:.2f} s",
                f"{result.n_items / t_import:,.0f} traces/s",
            )
        )

        traces = read_traces(files)[: args.limit]
        n = len(traces)
        script = {
            "latency": args.latency,
            "rules": [
                {"match": "Is Thought 3 correct", "reply": "No"},
                {"match": "Is there a logical mistake", "reply": "No"},
            ],
            "reply": "Yes",
        }
        with FakeProcess(script) as server:
            t_trace = run(db, server.url, "direct_trace", "bench-trace", n, args.concurrency)
            ideal = args.concurrency / args.latency
            got = n / t_trace
            rows.append(
                (
                    f"direct_trace, {n} traces, {args.latency * 1000:.0f} ms/request, "
                    f"concurrency {args.concurrency}",
                    f"{got:,.0f} traces/s ({t_trace:.1f} s)",
                    f"latency bound {ideal:,.0f}/s → ratio {got / ideal:.2f}",
                )
            )
            t_step = run(db, server.url, "direct_step", "bench-step", n, args.concurrency)
        calls = sum(
            json.loads(s)["n_calls"]
            for (s,) in store.rows("SELECT scores FROM responses WHERE run_id = 'bench-step'")
        )
        every = sum(len(t.steps) for t in traces)
        rows.append(
            (
                "direct_step, stop at the first No (Thought 3)",
                f"{calls:,} calls, {calls / t_step:,.0f} calls/s ({t_step:.1f} s)",
                f"every step: {every:,} calls → {every / calls:.1f}× saved",
            )
        )

        t0 = time.perf_counter()
        metrics = run_metrics(store, "bench-step")
        t_metrics = time.perf_counter() - t0
        rows.append(
            (
                "metrics of the direct_step run",
                f"{len(metrics)} rows in {t_metrics * 1000:.0f} ms",
                f"{n / t_metrics:,.0f} responses/s",
            )
        )
        t0 = time.perf_counter()
        page = combined_metrics(store, ("bench-trace", "bench-step"))
        t_page = time.perf_counter() - t0
        rows.append(
            (
                "page data: published + 2 runs",
                f"{len(page)} rows in {t_page * 1000:.0f} ms",
                "uncached; the page caches it",
            )
        )
    width = max(len(r[0]) for r in rows)
    w2 = max(len(r[1]) for r in rows)
    print(f"{'step'.ljust(width)}  {'measured'.ljust(w2)}  compared with")
    for a, b, c in rows:
        print(f"{a.ljust(width)}  {b.ljust(w2)}  {c}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
