"""Issue 31, point 13: a run's plan is lazy. `--epochs K` made a list of K × items units (and
their keys) before the first request — `--epochs 1000000` planned 2,000,000 units without a
word while memory grew. K is capped now (core.engine.bounds.MAX_EPOCHS), and the plan holds
one epoch's units whatever K is: the others are made as the workers ask for them. SIGTERM
during such a run stops the whole command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import tracemalloc

import pytest

from core.engine import bounds
from core.engine.runner.plan import _plan, unit_key
from core.store import Store
from tests.conftest import ROOT
from tests.echo_task import EchoTask, create_item_set
from tests.fake_openai import FakeOpenAI
from tests.test_runner import spec_for

ITEMS = 2_000


@pytest.fixture
def store(tmp_path) -> Store:
    store = Store.open(tmp_path / "results.duckdb")
    create_item_set(store, "s", "echo", [f"prompt number {i}" for i in range(ITEMS)])
    return store


def _planned(store: Store, run_id: str, epochs: int):
    """The plan of a run of `epochs` epochs and the Python memory its making peaked at."""
    spec = spec_for("http://127.0.0.1:9/v1", run_id=run_id, epochs=epochs)
    tracemalloc.start()
    try:
        plan = _plan(store, spec, EchoTask(needs_judge=False), {}, set())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return plan, peak


def test_the_plan_of_the_largest_epochs_costs_what_one_epoch_costs(store):
    k = bounds.MAX_EPOCHS
    _, one = _planned(store, "one", 1)
    plan, many = _planned(store, "many", k)
    # before: 200,000 units and their keys (≈ 40 MB of Python objects); now one epoch's
    assert many < 2 * one + 1_000_000, (one, many)
    assert len(plan.units) == len(plan.todo) == ITEMS * k and plan.skipped == 0
    assert store.scalar("SELECT n_planned FROM runs WHERE run_id = 'many'") == ITEMS * k
    # epoch after epoch, each unit once per epoch, made on demand
    it = iter(plan.todo)
    first = [next(it) for _ in range(ITEMS + 1)]
    assert {u.epoch for u in first[:ITEMS]} == {1} and first[ITEMS].epoch == 2
    assert first[ITEMS].item_id == first[0].item_id
    assert unit_key(first[ITEMS]) in plan.units and ("i00001", "echo", k + 1) not in plan.units
    assert ("nope", "echo", 1) not in plan.units


def test_a_resumed_plan_skips_the_done_units_of_every_epoch(store):
    plan, _ = _planned(store, "r", 3)
    done = [u for u in plan.todo if int(u.item_id[1:]) % 2 or u.epoch == 2]

    def write(con):
        for u in done:
            con.execute(
                "INSERT INTO responses (run_id, item_id, variant, epoch, status) "
                "VALUES ('r', ?, ?, ?, 'ok')",
                [u.item_id, u.variant, u.epoch],
            )
        con.execute(
            "INSERT INTO responses (run_id, item_id, variant, epoch, status) "
            "VALUES ('r', 'i00002', 'echo', 1, 'failed')"
        )

    store.transaction(write)
    again, _ = _planned(store, "r", 3)
    left = list(again.todo)
    assert again.skipped == len(done) and len(left) == len(again.todo) == 3 * ITEMS - len(done)
    assert {unit_key(u) for u in left} == {unit_key(u) for u in plan.todo} - {
        unit_key(u) for u in done
    }
    assert again.retried == {("i00002", "echo", 1)}


def test_sigterm_stops_a_run_of_many_epochs(store):
    """A real process asked for the most epochs: it asks its first question at once (no plan
    of every unit first), and SIGTERM stops it — the run cancelled, no further request."""
    with FakeOpenAI(latency=0.2) as server:
        argv = ["-m", "tests.echo_task", "--items", "s", "--db", str(store.path), "--no-judge"]
        argv += ["--base-url", server.url, "--model", "fake-model", "--run-name", "big"]
        argv += ["--epochs", str(bounds.MAX_EPOCHS), "--concurrency", "1", "--quiet"]
        proc = subprocess.Popen(
            [sys.executable, *argv],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(server.chat_requests) < 2:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
        asked = len(server.chat_requests)
    assert proc.returncode in (0, 130, 143, -signal.SIGTERM), err
    assert store.scalar("SELECT status FROM runs WHERE run_id = 'big'") == "cancelled", out + err
    assert asked < 50  # stopped, not run on through 200,000 units
