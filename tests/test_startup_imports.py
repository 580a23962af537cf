"""A shard process's start-up cost, guarded without a clock (issue 28, point 4).

Four shard processes on a 2-core machine start at once, so what each imports before its first
call is paid four times over; the openai package alone was ~0.5 s of CPU of a shard's ~1.7 s of
start-up (bench/bench_shards.py). The runner sends plain requests through httpx2 and imports
openai only for a streamed reply (core/engine/client.py). These tests run real shard commands
against a real local server with `python -X importtime` and read which modules the whole run
imported, so a regression shows whatever the machine's load.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from core.store import Store
from tests.core_cli import run_core
from tests.echo_task import create_item_set
from tests.fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "samples" / "processbench_sample.jsonl"

# Modules a plain (non-streamed) run never needs: imported only for a streamed reply.
NOT_ON_THE_RUN_PATH = ("openai", "pydantic", "jiter")


def _imported(stderr: str) -> set[str]:
    """The top-level packages named by `-X importtime` lines ("import time: self | cum | name")."""
    names = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


def _run(cmd: list[str]) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *cmd], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "done" in done.stdout, done.stdout
    imported = _imported(done.stderr)
    assert {"core", "duckdb", "httpx2"} <= imported, sorted(imported)  # the log was read
    return imported


def test_an_echo_shard_run_does_not_import_openai(db_path):
    """The command bench/bench_shards.py times: `python -m tests.echo_task … --shard 1/2`."""
    create_item_set(Store.open(db_path), "bench", "echo", [f"p{i}" for i in range(6)])
    with FakeOpenAI() as server:
        imported = _run(
            [
                "-m", "tests.echo_task", "--db", str(db_path), "--items", "bench",
                "--base-url", server.url, "--model", "fake-model", "--run-name", "s",
                "--concurrency", "4", "--shard", "1/2",
            ]
        )  # fmt: skip
        assert server.chat_requests  # model and judge calls were made by the process
    assert not imported & set(NOT_ON_THE_RUN_PATH), sorted(imported & set(NOT_ON_THE_RUN_PATH))


def test_a_benchmark_shard_run_through_the_cli_does_not_import_openai(initialised_store):
    """`python -m core run <benchmark> … --shard K/N`, the command a team runs per machine."""
    done = run_core("import", "processbench", str(SAMPLE), "--name", "pb")
    assert done.returncode == 0, done.stderr
    with FakeOpenAI() as server:
        imported = _run(
            [
                "-m", "core", "run", "processbench", "--items", "pb", "--base-url", server.url,
                "--model", "critic", "--run-name", "pb-s", "--quiet", "--shard", "2/2",
            ]
        )  # fmt: skip
        assert server.chat_requests
    assert not imported & set(NOT_ON_THE_RUN_PATH), sorted(imported & set(NOT_ON_THE_RUN_PATH))


def _gc_after_end_startup(disable_first: bool) -> str:
    script = (
        "import gc\n"
        + ("gc.disable()\n" if disable_first else "")
        + "from core.cli import end_startup\n"
        "end_startup()\n"
        "print(gc.isenabled(), gc.get_freeze_count() > 0)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_command_runs_with_the_collector_its_start_up_went_without():
    """`python -m core` (and the echo task's command) start with the collector off; the
    command gets it back, with start-up's objects frozen, so a long run's garbage is still
    collected. A process that kept it on (the app, in-process tests) freezes nothing."""
    assert _gc_after_end_startup(disable_first=True) == "True True"
    assert _gc_after_end_startup(disable_first=False) == "True False"
    main = (ROOT / "core" / "__main__.py").read_text()
    assert main.index("quiet_start()") < main.index("from core.cli import main")
    echo = (ROOT / "tests" / "echo_task.py").read_text()
    assert echo.index("quiet_start()") < echo.index("import pandas")


def _threads_after_numpy(env: dict[str, str], start_quietly: bool) -> str:
    """The line "THREADS BLAS GC" of a fresh process once numpy is imported: its OS threads, the
    OPENBLAS_NUM_THREADS it ran with (None: unset) and whether its collector was on."""
    script = (
        ("from core.startup import quiet_start\nquiet_start()\n" if start_quietly else "")
        + "import os, gc\nimport numpy\n"
        "print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'),"
        " gc.isenabled())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_command_starts_no_blas_threads_unless_the_user_asks():
    """numpy's OpenBLAS starts a thread per core at import, spinning ~0.13 s of CPU per
    process (core/startup.py); a command's process keeps BLAS on its own thread, and a value
    the user exported wins."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.endswith("NUM_THREADS")}
    cores = len(os.sched_getaffinity(0))  # OpenBLAS starts at most one thread per core
    assert _threads_after_numpy(env, start_quietly=True) == "1 1 False"
    wanted = {**env, "OPENBLAS_NUM_THREADS": "2"}
    assert _threads_after_numpy(wanted, start_quietly=True) == f"{min(2, cores)} 2 False"
    # what quiet_start avoids: without it, a BLAS thread per core beyond the first
    assert _threads_after_numpy(env, start_quietly=False) == f"{cores} None True"
