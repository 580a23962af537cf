"""Jobs: runs started as detached `python -m core run …` processes, progress, cancel, CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from core.services import jobs
from core.store import Store
from tests.core_cli import run_core
from tests.echo_task import create_item_set
from tests.fake_openai import FakeProcess

ROOT = Path(__file__).resolve().parent.parent


def wait_status(store: Store, run_id: str, statuses: set[str], timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    progress: dict = {}
    while time.monotonic() < deadline:
        progress = jobs.run_progress(store, run_id)
        if progress and progress["status"] in statuses:
            return progress
        time.sleep(0.3)
    log = jobs.read_log(store.path, run_id)
    raise AssertionError(f"run {run_id} did not reach {statuses}: {progress}\n{log}")


def test_build_cli_args_for_each_benchmark():
    assert jobs.build_cli_args(
        "misprompt",
        "s",
        endpoint="local",
        setting="cot",
        passive=True,
        judge_endpoint="openai-gpt-4o",
        limit=5,
        concurrency=4,
        run_name=" mine ",
    ) == [
        "run",
        "misprompt",
        "--items",
        "s",
        "--endpoint",
        "local",
        "--setting",
        "cot",
        "--passive",
        "--judge-endpoint",
        "openai-gpt-4o",
        "--limit",
        "5",
        "--concurrency",
        "4",
        "--run-name",
        "mine",
    ]
    assert jobs.build_cli_args(
        "errorbench",
        "p",
        base_url="http://h/v1",
        model="m",
        api_key_env="K",
        conditions=["blind", "anchored", "bogus"],
    ) == [
        "run",
        "errorbench",
        "--items",
        "p",
        "--base-url",
        "http://h/v1",
        "--model",
        "m",
        "--api-key-env",
        "K",
        "--conditions",
        "blind,anchored",
    ]
    assert jobs.build_cli_args("bbm", "t", method="cot_step")[-2:] == ["--method", "cot_step"]
    refused: list[tuple[dict[str, Any], str]] = [
        ({"benchmark": "bbm", "item_set": "t"}, "method"),
        ({"benchmark": "errorbench", "item_set": "p"}, "condition"),
        ({"benchmark": "misprompt", "item_set": ""}, "item set"),
        (
            {
                "benchmark": "misprompt",
                "item_set": "s",
                "setting": "cot",
                "base_url": "http://h/v1",
            },
            "model id",
        ),
    ]
    for kwargs, message in refused:
        with pytest.raises(ValueError, match=message):
            jobs.build_cli_args(**kwargs)


def test_start_a_misprompt_run_as_a_job_and_follow_it(initialised_store, db_path):
    store = initialised_store
    sample = store.scalar("SELECT name FROM item_sets WHERE benchmark = 'misprompt' LIMIT 1")
    assert sample, "init loads the built-in Mis-prompt sample"
    with FakeProcess({"latency": 0.02}) as server:
        args = jobs.build_cli_args(
            "misprompt",
            sample,
            base_url=server.url,
            model="fake-model",
            setting="zero-shot",
            limit=4,
        )
        job = jobs.start_cli_run(args, db_path)
        assert job.run_name.startswith("mp-fake-model-zs-") and len(job.run_name) <= 40
        progress = wait_status(store, job.run_name, {"done", "failed"})
        # the status is `done` before the process writes its last line: wait for its exit
        assert job.wait(timeout=90) == 0
    assert progress == {**progress, "planned": 4, "done": 4, "failed": 0, "status": "done"}
    assert (
        store.scalar("SELECT count(*) FROM misprompt_verdicts WHERE run_id = ?", [job.run_name])
        == 4
    )
    log = jobs.read_log(db_path, job.run_name)
    assert log is not None
    assert "--run-name " + job.run_name in log and "4/4 done" in log
    listed = jobs.list_runs(store, "misprompt")
    assert listed.loc[listed["run_id"] == job.run_name, "progress"].item() == 1.0


def test_a_job_is_waited_for_by_its_exit_not_its_status(store, db_path):
    """The final log line comes after the run's status: a test waits for the process."""
    job = jobs.start_cli_run(
        ["--items", "no-such-set", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"],
        db_path,
        module="tests.echo_task",
    )
    assert job.wait(timeout=60) == 1
    assert job.log_path.read_text(encoding="utf-8").rstrip().splitlines()[-1].startswith("error:")


def test_cancel_a_running_job(store, db_path):
    create_item_set(store, "s", "echo", [f"q{i}" for i in range(60)])
    with FakeProcess({"latency": 0.25}) as server:
        job = jobs.start_cli_run(
            [
                "--items",
                "s",
                "--base-url",
                server.url,
                "--model",
                "fake-model",
                "--concurrency",
                "1",
                "--run-name",
                "slow",
            ],
            db_path,
            module="tests.echo_task",
        )
        assert job.run_name == "slow"
        wait_status(store, "slow", {"running"})
        deadline = time.monotonic() + 60
        while jobs.run_progress(store, "slow")["done"] < 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        message = jobs.cancel_run(store, "slow")
        assert message.startswith("asked run slow")
        progress = wait_status(store, "slow", {"cancelled"}, timeout=30)
    assert 1 <= progress["done"] < 60
    assert jobs.cancel_run(store, "slow") == "run slow is cancelled; nothing to cancel"


def test_a_run_whose_process_died_is_interrupted_and_can_be_marked(store):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    store.execute(
        "INSERT INTO runs (run_id, benchmark, status, n_planned, pid) VALUES "
        "('ghost', 'bbm', 'running', 10, ?)",
        [dead.pid],
    )
    assert jobs.run_progress(store, "ghost")["status"] == "interrupted"
    assert jobs.list_runs(store)["status"].tolist() == ["interrupted"]
    assert "marked cancelled" in jobs.cancel_run(store, "ghost")
    assert jobs.run_progress(store, "ghost")["status"] == "cancelled"
    assert jobs.cancel_run(store, "nope") == "no run named 'nope'"


def test_cancel_never_signals_a_process_that_took_over_a_dead_runs_pid(store):
    """A dead run's pid reused by an unrelated process (whose command line even mentions
    `core`) is not sent SIGTERM: it started after the run last wrote its row."""
    store.execute(
        "INSERT INTO runs (run_id, benchmark, status, n_planned, pid, updated_at) VALUES "
        "('old', 'bbm', 'running', 10, 0, current_timestamp - INTERVAL 1 HOUR)"
    )
    other = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)", "core", "--run-name", "old"]
    )
    try:
        store.execute("UPDATE runs SET pid = ? WHERE run_id = 'old'", [other.pid])
        assert "marked cancelled" in jobs.cancel_run(store, "old")
        time.sleep(0.2)
        assert other.poll() is None  # still running: never signalled
    finally:
        other.kill()
        other.wait()
    started = jobs.process_started_at(os.getpid())
    assert started is not None and abs((datetime.now() - started).total_seconds()) < 3600 * 24


def test_runs_cli_lists_and_cancels(store, db_path):
    store.execute(
        "INSERT INTO runs (run_id, benchmark, status, n_planned, model, weak_model) "
        "VALUES ('r-old', 'bbm', 'done', 3, 'SmolLM2-135M-Instruct', true)"
    )
    out = run_core("runs", "--db", str(db_path)).stdout
    assert "r-old" in out and "0/3 (0%)" in out and "(weak)" in out
    out = run_core("runs", "--cancel", "r-old", "--db", str(db_path)).stdout
    assert "is done; nothing to cancel" in out
