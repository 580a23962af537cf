"""The team store against the DuckDB file, side by side in one run (issue 17, Must hold).

    .venv/bin/python bench/bench_lake.py                     # all three parts
    .venv/bin/python bench/bench_lake.py --only writers      # or page / throughput

Starts its own PostgreSQL cluster and SeaweedFS S3 server (tests/services.py; the same real
servers the tests use) and the scripted model server (tests/fake_openai.py, own process):

- page: the Mis-prompt page's data (`f1_and_diagnostics`) at --verdicts synthetic verdicts,
  on a file and on a lake holding the same rows (`store copy`): "page warm" is what a rerun
  of the page costs (read the store's version, hit the page cache keyed on it), "memo" the
  function's own cache (a new session on unchanged data), "uncached" a full count; ratios.
- throughput: the runner (EchoTask: a model call and a judge call per item) writing --items
  items into a fresh file and a fresh lake, alternately, --reps times; best of each; ratio.
- writers: --writers processes (each its own working directory) run --items items each into
  one lake at once, while an "app" process reads the page's data in a loop and a `rescore`
  re-judges another run; one writer is SIGKILLed halfway and resumed. Reports items lost and
  duplicated per run (must be 0), reader errors, and the wall time against the same runs one
  after another into a fresh lake.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.engine.runner import execute_run  # noqa: E402
from core.store import Store  # noqa: E402
from tests.echo_task import EchoTask, bench_spec, create_item_set  # noqa: E402
from tests.fake_openai import FakeProcess  # noqa: E402
from tests.services import S3, Lake, Postgres, empty_lake_template, postgres, seaweed_s3  # noqa: E402

MODEL = "fake-model"


def prompts(n: int, tag: str = "") -> list[str]:
    return [f"prompt {tag}{i}" for i in range(n)]


def median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


# -- page -------------------------------------------------------------------------------------


def bench_page(template: Lake, n_verdicts: int, repeat: int, workdir: Path) -> None:
    from core.benchmarks.misprompt.metrics import f1_and_diagnostics
    from core.benchmarks.misprompt.synth import SynthSpec, fill
    from core.services.store_copy import copy_store

    path = workdir / "page.duckdb"
    file_store = Store.open(path)
    t = time.perf_counter()
    fill(file_store, SynthSpec(n_verdicts=n_verdicts))
    print(f"  filled the file with {n_verdicts:,} verdicts in {time.perf_counter() - t:.1f} s")
    lake = template.copy()
    t = time.perf_counter()
    copy_store(path, lake.url)
    print(f"  copied it into a lake in {time.perf_counter() - t:.1f} s")
    stores = {"file": file_store, "lake": Store.open(lake.url, create=False)}
    results: dict[tuple[str, str], list[float]] = {}
    page_cache: dict[tuple[str, int], object] = {}
    for name, store in stores.items():  # fill the run-count cache and the page's cache
        page_cache[name, store.data_version()] = f1_and_diagnostics(store)
    for _ in range(repeat):  # alternate the two, so load on the machine hits both alike
        for name, store in stores.items():
            # what a rerun of the page costs: read the store's version, hit the page cache
            t = time.perf_counter()
            hit = page_cache.get((name, store.data_version()))
            results.setdefault((name, "page warm"), []).append(time.perf_counter() - t)
            assert hit is not None
            t = time.perf_counter()
            f1_and_diagnostics(store)  # the function's own memo (a new session, same data)
            results.setdefault((name, "memo"), []).append(time.perf_counter() - t)
            t = time.perf_counter()
            f1_and_diagnostics(store, use_cache=False)
            results.setdefault((name, "uncached"), []).append(time.perf_counter() - t)
    kinds = ("page warm", "memo", "uncached")
    print("  " + " " * 8 + "".join(f"{k + ' (median)':>20}" for k in kinds))
    for name in stores:
        cells = "".join(f"{median(results[name, k]) * 1000:>17.1f} ms" for k in kinds)
        print(f"  {name:8}{cells}")
    ratios = {k: median(results["lake", k]) / median(results["file", k]) for k in kinds}
    print(
        f"  lake / file: page warm {ratios['page warm']:.2f}x (must be <= 2), memo "
        f"{ratios['memo']:.2f}x, uncached {ratios['uncached']:.2f}x"
    )


# -- throughput -------------------------------------------------------------------------------


def run_echo(location: str, url: str, n_items: int, concurrency: int) -> dict[str, float]:
    store = Store.open(location)
    create_item_set(store, "bench", "echo", prompts(n_items))
    spec = bench_spec("bench", url, concurrency, MODEL)
    started = time.perf_counter()
    summary = execute_run(store, spec, EchoTask(), progress=False)
    elapsed = time.perf_counter() - started
    done = store.scalar("SELECT count(DISTINCT item_id) FROM results WHERE status = 'ok'")
    assert done == n_items, done
    return {"seconds": elapsed, "rate": summary.calls / elapsed}


def bench_throughput(
    template: Lake, n_items: int, concurrency: int, reps: int, workdir: Path
) -> None:
    best: dict[str, float] = {}
    with FakeProcess({"latency": 0.05}) as server:
        for rep in range(reps):
            for name in ("file", "lake"):
                location = (
                    str(workdir / f"thr-{rep}.duckdb") if name == "file" else template.copy().url
                )
                got = run_echo(location, server.url, n_items, concurrency)
                best[name] = max(best.get(name, 0.0), got["rate"])
                print(f"  rep {rep + 1} {name}: {got['rate']:.0f} calls/s ({got['seconds']:.1f} s)")
    print(f"  best: file {best['file']:.0f} calls/s, lake {best['lake']:.0f} calls/s")
    print(f"  lake / file: {best['lake'] / best['file']:.2f}x (must be >= 0.8)")


# -- many writers -----------------------------------------------------------------------------


def _writer(location: str, url: str, run: str, workdir: Path) -> subprocess.Popen[str]:
    workdir.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-m", "tests.echo_task", "--db", location, "--items", run]
        + ["--base-url", url, "--model", MODEL, "--run-name", run, "--concurrency", "16"]
        + ["--quiet"],
        cwd=workdir,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


_READER = """
import os, sys, time
sys.path.insert(0, {root!r})
from core.store import Store
from core.benchmarks.misprompt.metrics import f1_and_diagnostics
store = Store.open({location!r}, create=False)
reads = errors = 0
while not os.path.exists({stop!r}):
    try:
        store.data_version()
        f1_and_diagnostics(store)
        store.scalar("SELECT count(*) FROM responses")
        reads += 1
    except Exception as exc:
        errors += 1
        print("ERROR", type(exc).__name__, str(exc)[:200], flush=True)
    time.sleep(0.2)
print("READS", reads, "ERRORS", errors, flush=True)
"""


def _prepare(location: str, runs: list[str], n_items: int) -> Store:
    store = Store.open(location)
    for run in runs:
        create_item_set(store, run, "echo", prompts(n_items, run))
    return store


def _tally(store: Store, runs: list[str]) -> list[tuple[str, int, int, int]]:
    """Per run: (run, distinct ok results, lost, duplicated rows over responses and results)."""
    out = []
    for run in runs:
        n_items = store.scalar("SELECT n_planned FROM runs WHERE run_id = ?", [run])
        ok = store.scalar(
            "SELECT count(DISTINCT (item_id, variant)) FROM results WHERE run_id = ? "
            "AND judging = 'default' AND status = 'ok'",
            [run],
        )
        dup = 0
        for table, keys in (
            ("responses", "item_id, variant"),
            ("results", "judging, item_id, variant"),
        ):
            dup += store.scalar(
                f"SELECT count(*) - count(DISTINCT ({keys})) FROM {table} WHERE run_id = ?", [run]
            )
        out.append((run, int(ok), int(n_items) - int(ok), int(dup)))
    return out


def bench_writers(template: Lake, n_writers: int, n_items: int, workdir: Path) -> None:
    from tests.core_cli import run_core

    runs = [f"w{k}" for k in range(n_writers)]
    with FakeProcess({"latency": 0.02}) as server:
        # one after another, into a fresh lake
        seq = template.copy()
        _prepare(seq.url, runs, n_items)
        t = time.perf_counter()
        for run in runs:
            proc = _writer(seq.url, server.url, run, workdir / "seq" / run)
            out, err = proc.communicate(timeout=3600)
            assert proc.returncode == 0, err[-2000:]
        sequential = time.perf_counter() - t

        # all at once, with the app reading, a rescore, and one writer killed and resumed
        lake = template.copy()
        store = _prepare(lake.url, runs, n_items)
        assert run_core("init", "--db", lake.url).returncode == 0  # the Mis-prompt sample
        mp = run_core(
            "run", "misprompt", "--db", lake.url, "--items", "misprompt-sample", "--base-url",
            server.url, "--model", MODEL, "--run-name", "mp", "--quiet",
        )  # fmt: skip
        assert mp.returncode == 0, mp.stderr
        t = time.perf_counter()
        stop = workdir / "stop-reader"
        reader = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _READER.format(root=str(ROOT), location=lake.url, stop=str(stop)),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        writers = {run: _writer(lake.url, server.url, run, workdir / "par" / run) for run in runs}
        rescore = subprocess.Popen(
            [sys.executable, "-m", "core", "rescore", "--source", "mp", "--as", "again"]
            + ["--judge-base-url", server.url, "--judge-model", MODEL, "--quiet", "--db", lake.url],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        victim = runs[0]
        while (
            store.scalar("SELECT count(*) FROM responses WHERE run_id = ?", [victim]) or 0
        ) < n_items // 2:
            time.sleep(0.2)
        writers[victim].send_signal(signal.SIGKILL)
        writers[victim].communicate(timeout=60)
        killed_at = store.scalar("SELECT count(*) FROM responses WHERE run_id = ?", [victim])
        writers[victim] = _writer(lake.url, server.url, victim, workdir / "par" / victim)
        for run, proc in writers.items():
            out, err = proc.communicate(timeout=3600)
            assert proc.returncode == 0, (run, err[-2000:])
        parallel = time.perf_counter() - t
        out, err = rescore.communicate(timeout=3600)
        assert rescore.returncode == 0, err[-2000:]
        stop.touch()
        reader_out, _ = reader.communicate(timeout=120)
    print(f"  {victim} SIGKILLed at {killed_at} of {n_items} responses, then resumed")
    print(f"  {'run':6}{'ok':>8}{'lost':>6}{'duplicated':>12}")
    lost = dup = 0
    for run, ok, n_lost, n_dup in _tally(store, runs) + _tally(store, ["mp"]):
        print(f"  {run:6}{ok:>8}{n_lost:>6}{n_dup:>12}")
        lost, dup = lost + n_lost, dup + n_dup
    judged = store.scalar(
        "SELECT count(*) - count(DISTINCT (item_id, variant)) FROM results "
        "WHERE run_id = 'mp' AND judging = 'again'"
    )
    rescored = store.scalar(
        "SELECT count(*) FROM results WHERE run_id = 'mp' AND judging = 'again' AND status = 'ok'"
    )
    print(f"  rescore 'again': {rescored} verdicts, {judged} duplicated")
    reads = [line for line in reader_out.splitlines() if line.startswith(("READS", "ERROR"))]
    print("  app reader: " + (reads[-1] if reads else "no report"))
    print(f"  total lost {lost}, duplicated {dup + int(judged or 0)} (both must be 0)")
    print(
        f"  wall time: {n_writers} at once {parallel:.1f} s (with the app, a rescore and a "
        f"kill) vs one after another {sequential:.1f} s: {sequential / parallel:.2f}x"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("page", "throughput", "writers"), default=None)
    parser.add_argument("--verdicts", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    with postgres() as pg, seaweed_s3() as s3, tempfile.TemporaryDirectory() as tmp:
        s3.create_bucket("lake")
        os.environ.update(s3.env())
        template = _template(pg, s3)
        workdir = Path(tmp)
        if args.only in (None, "page"):
            print(f"page data at {args.verdicts:,} verdicts")
            bench_page(template, args.verdicts, args.repeat, workdir)
        if args.only in (None, "throughput"):
            print(f"runner throughput, {args.items:,} items, concurrency {args.concurrency}")
            bench_throughput(template, args.items, args.concurrency, args.reps, workdir)
        if args.only in (None, "writers"):
            print(f"{args.writers} writers x {args.items:,} items into one lake")
            bench_writers(template, args.writers, args.items, workdir)
    return 0


def _template(pg: Postgres, s3: S3) -> Lake:
    return empty_lake_template(pg, s3)


if __name__ == "__main__":
    sys.exit(main())
