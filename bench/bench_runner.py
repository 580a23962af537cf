"""Runner throughput and memory against the scripted server (issue 3, Performance).

    .venv/bin/python bench/bench_runner.py            # 2,000 items = 4,000 calls, concurrency 64

Measures in one run, against tests/fake_openai.py in its own process with a fixed 50 ms
latency:

- the server's limit: concurrency / latency = 64 / 0.05 s = 1,280 calls/s;
- the bare client's limit: a plain asyncio loop making the same calls (model call, then a
  judge call with a JSON-schema response format) through `openai.AsyncOpenAI` at the same
  concurrency, storing nothing;
- the runner: `execute_run` with EchoTask (the same two calls per item) writing responses,
  verdicts, call records and cache rows to a fresh DuckDB file;
- a naive sequential loop (one call at a time) on a few hundred calls;
- peak memory of the runner at several item counts (tracemalloc peak of Python allocations
  and the process's max RSS, each in a fresh process): results are never held, so what grows
  is only the plan (item ids) and a compact copy of the items.

Runner and bare loop are measured `--reps` times alternately and the best of each is kept
(the machine is shared; the best run is the least disturbed one). CPU time per call of the
client process is printed too: it is much less sensitive to other load than calls/s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, cast

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.engine.runner import execute_run  # noqa: E402
from core.store import Store  # noqa: E402
from tests.echo_task import ECHO_JUDGE_SCHEMA, EchoTask, bench_spec, create_item_set  # noqa: E402
from tests.fake_openai import FakeProcess  # noqa: E402

if TYPE_CHECKING:  # the SDK's request types (openai itself is imported where it is timed)
    from openai.types.chat import ChatCompletionMessageParam
    from openai.types.shared_params import ResponseFormatJSONSchema

MODEL = "fake-model"


def prompts(n: int) -> list[str]:
    return [f"Question number {i}: what is {i} plus {i}?" for i in range(n)]


def judge_messages(prompt: str, answer: str | None) -> list[ChatCompletionMessageParam]:
    """Exactly EchoTask's judge request."""
    return [
        {"role": "system", "content": "Does the answer repeat the question?"},
        {"role": "user", "content": f"Q: {prompt}\nA: {answer}"},
    ]


# -- the contenders -------------------------------------------------------------------------


def run_runner(url: str, n_items: int, concurrency: int, workdir: Path) -> dict:
    store = Store.open(workdir / f"bench-{time.monotonic_ns()}.duckdb")
    create_item_set(store, "bench", "echo", prompts(n_items))
    spec = bench_spec("bench", url, concurrency, MODEL)
    started, cpu = time.perf_counter(), time.process_time()
    summary = execute_run(store, spec, EchoTask(), progress=False)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    rows = store.scalar("SELECT count(*) FROM responses WHERE status = 'ok'")
    verdicts = store.scalar("SELECT count(*) FROM results WHERE status = 'ok'")
    calls = store.scalar("SELECT count(*) FROM calls")
    assert rows == verdicts == n_items and calls == 2 * n_items, (rows, verdicts, calls)
    return {
        "calls": summary.calls,
        "seconds": elapsed,
        "rate": summary.calls / elapsed,
        "cpu_ms": 1000 * cpu / summary.calls,
    }


async def _bare(url: str, n_items: int, concurrency: int) -> dict:
    import openai

    client = openai.AsyncOpenAI(base_url=url, api_key="not-needed", max_retries=0)
    items = iter(prompts(n_items))
    done = 0

    async def worker() -> None:
        nonlocal done
        for prompt in items:
            answer = await client.chat.completions.create(
                model=MODEL,
                messages=[{"role": "user", "content": prompt}],
                temperature=0.0,
                max_tokens=64,
            )
            await client.chat.completions.create(
                model=MODEL,
                messages=judge_messages(prompt, answer.choices[0].message.content),
                temperature=0.0,
                max_tokens=64,
                response_format=cast("ResponseFormatJSONSchema", ECHO_JUDGE_SCHEMA),
            )
            done += 2

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*[worker() for _ in range(concurrency)])
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    await client.close()
    return {"calls": done, "seconds": elapsed, "rate": done / elapsed, "cpu_ms": 1000 * cpu / done}


def run_bare(url: str, n_items: int, concurrency: int) -> dict:
    return asyncio.run(_bare(url, n_items, concurrency))


def run_sequential(url: str, n_calls: int) -> dict:
    import openai

    client = openai.OpenAI(base_url=url, api_key="not-needed", max_retries=0)
    started, cpu = time.perf_counter(), time.process_time()
    done = 0
    for prompt in prompts(n_calls // 2):
        answer = client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": prompt}],
            temperature=0.0,
            max_tokens=64,
        )
        client.chat.completions.create(
            model=MODEL,
            messages=judge_messages(prompt, answer.choices[0].message.content),
            temperature=0.0,
            max_tokens=64,
            response_format=cast("ResponseFormatJSONSchema", ECHO_JUDGE_SCHEMA),
        )
        done += 2
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    client.close()
    return {"calls": done, "seconds": elapsed, "rate": done / elapsed, "cpu_ms": 1000 * cpu / done}


def memory_probe(url: str, n_items: int, concurrency: int) -> dict:
    """In a fresh process: peak traced Python memory during the run, and max RSS."""
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--_memory",
            str(n_items),
            "--_url",
            url,
            "--concurrency",
            str(concurrency),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _memory_child(url: str, n_items: int, concurrency: int) -> None:
    import tracemalloc

    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(Path(tmp) / "mem.duckdb")
        create_item_set(store, "bench", "echo", prompts(n_items))
        spec = bench_spec("mem", url, concurrency, MODEL)
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        tracemalloc.start()
        execute_run(store, spec, EchoTask(), progress=False)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "items": n_items,
                "traced_peak_mb": peak / 2**20,
                "max_rss_mb": rss,
                "rss_before_run_mb": rss_before,
            }
        )
    )


# -- report ---------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--sequential-calls", type=int, default=300)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument(
        "--memory-items",
        default="500,2000,8000",
        help="item counts for the memory probe ('' to skip)",
    )
    parser.add_argument("--_memory", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--_url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._memory:
        _memory_child(args._url, args._memory, args.concurrency)
        return 0

    server_limit = args.concurrency / args.latency
    print(
        f"fake server: {args.latency * 1000:.0f} ms latency, separate process; "
        f"{args.items} items x 2 calls (model + judge with JSON schema), "
        f"concurrency {args.concurrency}, {os.cpu_count()} CPUs",
        flush=True,
    )
    with FakeProcess({"latency": args.latency}) as server, tempfile.TemporaryDirectory() as tmp:
        run_bare(server.url, 64, args.concurrency)  # warm-up: imports, connections
        runner_runs, bare_runs = [], []
        for rep in range(args.reps):
            bare_runs.append(run_bare(server.url, args.items, args.concurrency))
            print(
                f"  rep {rep + 1}: bare client {bare_runs[-1]['rate']:.0f} calls/s, "
                f"{bare_runs[-1]['cpu_ms']:.2f} CPU ms/call",
                flush=True,
            )
            runner_runs.append(run_runner(server.url, args.items, args.concurrency, Path(tmp)))
            print(
                f"  rep {rep + 1}: runner      {runner_runs[-1]['rate']:.0f} calls/s, "
                f"{runner_runs[-1]['cpu_ms']:.2f} CPU ms/call",
                flush=True,
            )
        sequential = run_sequential(server.url, args.sequential_calls)
        memory = [
            memory_probe(server.url, int(n), args.concurrency)
            for n in args.memory_items.split(",")
            if n.strip()
        ]

    bare = max(bare_runs, key=lambda r: r["rate"])
    runner = max(runner_runs, key=lambda r: r["rate"])
    lower = min(server_limit, bare["rate"])
    rows = [
        ("server limit (concurrency / latency)", server_limit, None, None),
        (
            f"bare openai client, asyncio, stores nothing ({bare['calls']} calls)",
            bare["rate"],
            bare["seconds"],
            bare["cpu_ms"],
        ),
        (
            f"runner with DuckDB writes ({runner['calls']} calls)",
            runner["rate"],
            runner["seconds"],
            runner["cpu_ms"],
        ),
        (
            f"naive sequential loop ({sequential['calls']} calls)",
            sequential["rate"],
            sequential["seconds"],
            sequential["cpu_ms"],
        ),
    ]
    print()
    print(f"{'':58s} {'calls/s':>9s} {'seconds':>8s} {'÷ lower limit':>14s} {'CPU ms/call':>12s}")
    for label, rate, seconds, cpu_ms in rows:
        sec = f"{seconds:8.1f}" if seconds is not None else f"{'':8s}"
        cpu = f"{cpu_ms:12.2f}" if cpu_ms is not None else ""
        print(f"{label:58s} {rate:9.0f} {sec} {rate / lower:14.2f} {cpu}")
    print(
        f"\nlower limit = min(server, bare client) = {lower:.0f} calls/s; "
        f"runner / lower limit = {runner['rate'] / lower:.2f} (target ≥ 0.85); "
        f"runner / sequential = {runner['rate'] / sequential['rate']:.1f}x"
    )
    print(
        f"all reps (calls/s): bare {[round(r['rate']) for r in bare_runs]}, "
        f"runner {[round(r['rate']) for r in runner_runs]}"
    )
    cpu_bare = min(r["cpu_ms"] for r in bare_runs)
    cpu_runner = min(r["cpu_ms"] for r in runner_runs)
    print(
        f"CPU per call (client process, best rep): bare {cpu_bare:.2f} ms, runner "
        f"{cpu_runner:.2f} ms -> on an otherwise idle machine, where the client's CPU is the "
        f"limit, the runner would reach about {cpu_bare / cpu_runner:.2f} of the bare client"
    )
    if memory:
        print(f"\n{'items':>6s} {'traced Python peak (MB)':>24s} {'max RSS (MB)':>13s}")
        for m in memory:
            print(f"{m['items']:6d} {m['traced_peak_mb']:24.1f} {m['max_rss_mb']:13.0f}")
        if len(memory) >= 2:
            print(
                f"peak ratio {memory[-1]['items']} vs {memory[0]['items']} items: traced "
                f"{memory[-1]['traced_peak_mb'] / memory[0]['traced_peak_mb']:.2f}, RSS "
                f"{memory[-1]['max_rss_mb'] / memory[0]['max_rss_mb']:.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
