"""The runner against a bare `openai.AsyncOpenAI` loop, side by side (issue 28, point 5).

    .venv/bin/python bench/bench_runner_vs_openai.py        # 10,000 items = 20,000 calls, 3 rounds

Both contenders are commands in their own process, against one scripted server in a third
(bench/scripted_server.py: the replies of tests/fake_openai.py after a fixed latency, at a
fraction of its CPU; `--server fake` uses tests/fake_openai.py itself):

- bare: `python bench/bench_runner_vs_openai.py --_bare URL` — `concurrency` asyncio workers
  sharing one `openai.AsyncOpenAI(max_retries=0)`, each item a model call then a judge call
  with a JSON-schema response format (exactly EchoTask's requests), storing nothing;
- runner: `python -m tests.echo_task --db FILE --items bench --base-url URL ...` — the runner's
  command line (the same `execute_run` as `python -m core run`) with EchoTask, progress bar on
  (to a file, as in a background job), writing responses, verdicts, call records and cache rows
  to a fresh DuckDB file (its item set written before the clock starts).

The rounds alternate which contender goes first. Per contender: calls/s over the call phase
as the server saw it (first request in → last reply out; the same clock for both), calls/s
over the whole command (process start → exit: imports, planning and the last write
included), and the process's CPU time per call (all threads, from wait4: much less sensitive
to other load than wall time). Ratios are runner ÷ bare within a round; the machine's load
average is printed with each round (this machine is shared: compare ratios, not rates).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, cast

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

if TYPE_CHECKING:  # the SDK's request types (openai itself is imported where it is timed)
    from openai.types.chat import ChatCompletionMessageParam
    from openai.types.shared_params import ResponseFormatJSONSchema

MODEL = "fake-model"


def prompts(n: int) -> list[str]:
    return [f"Question number {i}: what is {i} plus {i}?" for i in range(n)]


# -- the bare loop (child process) ------------------------------------------------------------


async def _bare(url: str, n_items: int, concurrency: int) -> dict:
    import openai

    from tests.echo_task import ECHO_JUDGE_SCHEMA

    client = openai.AsyncOpenAI(base_url=url, api_key="not-needed", max_retries=0, timeout=65.0)
    items = iter(prompts(n_items))
    done = 0

    async def worker() -> None:
        nonlocal done
        for prompt in items:
            question: list[ChatCompletionMessageParam] = [{"role": "user", "content": prompt}]
            answer = await client.chat.completions.create(
                model=MODEL, messages=question, temperature=0.0, max_tokens=64
            )
            await client.chat.completions.create(
                model=MODEL,
                messages=[
                    {"role": "system", "content": "Does the answer repeat the question?"},
                    {
                        "role": "user",
                        "content": f"Q: {prompt}\nA: {answer.choices[0].message.content}",
                    },
                ],
                temperature=0.0,
                max_tokens=64,
                response_format=cast("ResponseFormatJSONSchema", ECHO_JUDGE_SCHEMA),
            )
            done += 2

    await asyncio.gather(*[worker() for _ in range(concurrency)])
    await client.close()
    return {"calls": done}


# -- the parent -------------------------------------------------------------------------------


class Server:
    """The scripted server in its own process (fast: bench/scripted_server.py; or fake)."""

    def __init__(self, kind: str, latency: float) -> None:
        if kind == "fast":
            cmd = [sys.executable, str(ROOT / "bench" / "scripted_server.py")]
            cmd += ["--latency", str(latency)]
        else:
            cmd = [sys.executable, str(ROOT / "tests" / "fake_openai.py")]
            cmd += ["--script", json.dumps({"latency": latency})]
        self.kind = kind
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("LISTENING "):
            self.proc.kill()
            raise RuntimeError(f"the scripted server did not start: {line!r}")
        self.url = line.split()[1]

    def stats(self, reset: bool = False) -> dict | None:
        if self.kind != "fast":
            return None
        with urllib.request.urlopen(f"{self.url}/stats{'?reset=1' if reset else ''}") as r:
            return json.loads(r.read())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def _timed(cmd: list[str], stderr_path: Path, cwd: Path) -> tuple[float, float, str]:
    """Run a command; its wall time, its CPU time (user + system, all threads) and stdout."""
    with open(stderr_path, "w") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=err, text=True)
        assert proc.stdout is not None
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{cmd[:4]} failed ({proc.returncode}): {stderr_path.read_text()[-2000:]}"
        )
    return wall, usage.ru_utime + usage.ru_stime, out


def run_contender(
    name: str,
    server: Server,
    n_items: int,
    concurrency: int,
    workdir: Path,
    tag: str,
    against: Path | None = None,
) -> dict:
    from core.store import Store
    from tests.echo_task import create_item_set

    calls = 2 * n_items
    if name == "bare":
        cmd = [sys.executable, __file__, "--_bare", server.url]
        cmd += ["--items", str(n_items), "--concurrency", str(concurrency)]
    else:
        db = workdir / f"{tag}.duckdb"
        create_item_set(Store.open(db), "bench", "echo", prompts(n_items))
        cmd = [sys.executable, "-m", "tests.echo_task", "--db", str(db), "--items", "bench"]
        cmd += ["--base-url", server.url, "--model", MODEL, "--concurrency", str(concurrency)]
        cmd += ["--run-name", tag]
    cwd = against if name == "before" and against is not None else ROOT
    server.stats(reset=True)
    wall, cpu, out = _timed(cmd, workdir / f"{tag}.stderr", cwd)
    stats = server.stats(reset=True)
    if name == "bare":
        assert json.loads(out.strip().splitlines()[-1])["calls"] == calls, out
    else:
        store = Store.open(workdir / f"{tag}.duckdb")
        ok = store.scalar(
            "SELECT count(*) FROM responses r JOIN results v USING (run_id, item_id, variant) "
            "WHERE r.status = 'ok' AND v.status = 'ok'"
        )
        written = store.scalar("SELECT count(*) FROM calls")
        assert ok == n_items and written == calls, (ok, written)
    row = {"wall": wall, "command_rate": calls / wall, "cpu_ms": 1000 * cpu / calls}
    if stats is not None:
        assert stats["requests"] == calls, stats
        phase = stats["last"] - stats["first"]
        row.update(phase=phase, phase_rate=calls / phase, in_flight=stats["max_in_flight"])
    return row


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000, help="items (2 calls each)")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.05, help="server seconds per call")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--server", choices=("fast", "fake"), default="fast")
    parser.add_argument(
        "--against",
        type=Path,
        metavar="DIR",
        help="also time the runner of another checkout (e.g. the code before a change) as "
        "'before', in the same rounds",
    )
    parser.add_argument("--_bare", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    for flag, low, high in (("items", 1, 10**6), ("concurrency", 1, 4096), ("rounds", 1, 100)):
        if not low <= getattr(args, flag) <= high:
            parser.error(f"--{flag} must be within {low}..{high}")
    if args._bare:
        print(json.dumps(asyncio.run(_bare(args._bare, args.items, args.concurrency))))
        return 0

    calls = 2 * args.items
    print(
        f"{calls:,} calls per contender ({args.items:,} items x model + judge), concurrency "
        f"{args.concurrency}, server {args.server} ({args.latency * 1000:.0f} ms a call, limit "
        f"{args.concurrency / args.latency:,.0f} calls/s), {os.cpu_count()} CPUs shared with "
        "other users: compare the ratios",
        flush=True,
    )
    server = Server(args.server, args.latency)
    ratios: dict[str, list[float]] = {"phase_rate": [], "command_rate": [], "cpu_ms": []}
    before: dict[str, list[float]] = {"phase_rate": [], "command_rate": [], "cpu_ms": []}
    contenders = ["bare", "runner"] + (["before"] if args.against else [])
    try:
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            # warm-up (imports in the page cache, the server's first connections): untimed
            run_contender("bare", server, 200, args.concurrency, workdir, "warm")
            header = (
                f"{'round':>5s} {'contender':>9s} {'phase calls/s':>14s} {'command calls/s':>16s}"
                f" {'CPU ms/call':>12s} {'wall s':>7s}  load (1/5/15 min)"
            )
            print(header)
            for rnd in range(args.rounds):
                order = contenders if rnd % 2 == 0 else contenders[::-1]
                got: dict[str, dict] = {}
                for name in order:
                    got[name] = run_contender(
                        name,
                        server,
                        args.items,
                        args.concurrency,
                        workdir,
                        f"r{rnd}-{name}",
                        args.against,
                    )
                    r = got[name]
                    phase = f"{r['phase_rate']:14.0f}" if "phase_rate" in r else f"{'n/a':>14s}"
                    print(
                        f"{rnd + 1:5d} {name:>9s} {phase} {r['command_rate']:16.0f} "
                        f"{r['cpu_ms']:12.3f} {r['wall']:7.1f}  {load()}",
                        flush=True,
                    )
                for key in ratios:
                    if key in got["bare"]:
                        ratios[key].append(got["runner"][key] / got["bare"][key])
                        if "before" in got:
                            before[key].append(got["before"][key] / got["bare"][key])
                parts = [
                    f"{label} {ratios[key][-1]:.3f}"
                    for key, label in (
                        ("phase_rate", "phase"),
                        ("command_rate", "command"),
                        ("cpu_ms", "CPU/call"),
                    )
                    if len(ratios[key]) == rnd + 1
                ]
                print(f"      runner ÷ bare: {', '.join(parts)}", flush=True)
                if "before" in got:
                    parts = [
                        f"{label} {before[key][-1]:.3f}"
                        for key, label in (
                            ("phase_rate", "phase"),
                            ("command_rate", "command"),
                            ("cpu_ms", "CPU/call"),
                        )
                        if len(before[key]) == rnd + 1
                    ]
                    print(f"      before ÷ bare: {', '.join(parts)}", flush=True)
    finally:
        server.stop()
    print()
    for key, label in (
        ("phase_rate", "calls/s over the call phase (the goal: >= 0.9)"),
        ("command_rate", "calls/s over the whole command"),
        ("cpu_ms", "CPU per call (lower is better)"),
    ):
        for who, series in (("runner", ratios), ("before", before)):
            if series[key]:
                values = ", ".join(f"{v:.3f}" for v in series[key])
                print(
                    f"{who} ÷ bare, {label}: median {statistics.median(series[key]):.3f} ({values})"
                )
    key = "phase_rate" if ratios["phase_rate"] else "command_rate"
    verdict = statistics.median(ratios[key]) >= 0.9
    print(
        f"VERDICT {'PASS' if verdict else 'FAIL'}: runner ÷ bare openai loop, calls/s over the "
        f"{'call phase' if key == 'phase_rate' else 'whole command'}: median "
        f"{statistics.median(ratios[key]):.3f} over {len(ratios[key])} rounds (goal >= 0.9); "
        f"CPU per call {statistics.median(ratios['cpu_ms']):.3f}x; load now {load()}"
    )
    return 0 if verdict else 1


if __name__ == "__main__":
    sys.exit(main())
