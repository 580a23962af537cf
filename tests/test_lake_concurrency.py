"""Keys hold under concurrent writers on a lake, by design (the write guard, core/store/lake.py):
eight processes write the same keys through the store's own writers, two are SIGKILLed mid-way,
then a full key scan (`store check`) finds no key held twice and nothing lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from core.engine.results import Response, Result, ResultBatch, save_batch
from core.services.store_check import check_store
from core.store import Store, replace_item_set
from tests.lake_writer import ITEMS, LABELS, RUN, items_frame

ROOT = Path(__file__).resolve().parent.parent
WRITERS = 8
ROUNDS = 2
KILLED = (2, 5)


def _seed(store: Store) -> None:
    """The run the writers race on: its item set, its row, one judged response per item."""
    store.transaction(
        lambda con: replace_item_set(con, "race-set", "misprompt", items_frame("seed"), origin="t")
    )
    for run_id in [RUN, "twice", *(f"own-{n}" for n in range(WRITERS))]:
        store.execute(
            "INSERT INTO runs (run_id, benchmark, item_set, model, judge_model, status) "
            "VALUES (?, 'misprompt', 'race-set', 'm', 'j', 'done')",
            [run_id],
        )
    batch = ResultBatch()
    for i in range(ITEMS):
        key = (RUN, f"i{i}", "zero-shot")
        batch.add_response(key, Response(text="seed"))
        batch.add_result(key, Result(labels={n: True for n in LABELS}, judge_model="j"))
    save_batch(store, batch)


def _writer(n: int, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.lake_writer", str(n), str(ROUNDS)],
        cwd=ROOT,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env=dict(os.environ),
    )


def _wait_for_line(proc: subprocess.Popen, log: Path, line: str) -> None:
    """Block until `line` is in the writer's log (or it exited)."""
    import time

    while line not in log.read_text():
        assert proc.poll() is None, log.read_text()
        time.sleep(0.02)


def test_eight_writers_on_the_same_keys_with_kills_leave_no_duplicate(lake, tmp_path):
    store = Store.open(lake.url)
    _seed(store)
    logs = [tmp_path / f"writer{n}.log" for n in range(WRITERS)]
    procs = [_writer(n, logs[n]) for n in range(WRITERS)]
    try:
        for n in KILLED:  # each killed in the middle of its second round's writes
            _wait_for_line(procs[n], logs[n], "round 0")
            procs[n].send_signal(signal.SIGKILL)
        for n, proc in enumerate(procs):
            code = proc.wait(timeout=600)
            if n in KILLED:
                assert code == -signal.SIGKILL
            else:
                assert code == 0, logs[n].read_text()
                assert f"round {ROUNDS - 1}" in logs[n].read_text()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    # the full key scan: every table's key, orphans, files
    findings = check_store(Store.open(lake.url, create=False))
    # the cache alone may hold a request twice (runs' flushes commit side by side; readers
    # take any row of a key, a copy keeps the first): never another table
    assert [f for f in findings if f.table != "call_cache"] == [], [f.line() for f in findings]
    # nothing lost: every key the survivors wrote is there, once
    one = Store.open(lake.url, create=False)
    survivors = [n for n in range(WRITERS) if n not in KILLED]
    for n in survivors:
        assert one.scalar("SELECT count(*) FROM responses WHERE run_id = ?", [f"own-{n}"]) == (
            5 * ROUNDS
        )
        assert one.scalar("SELECT count(*) FROM results WHERE run_id = ?", [f"own-{n}"]) == (
            5 * ROUNDS
        )
    assert one.scalar("SELECT count(*) FROM responses WHERE run_id = 'twice'") == 5 * ROUNDS
    assert one.scalar("SELECT count(*) FROM results WHERE run_id = 'twice'") == 5 * ROUNDS
    keys = {r[0] for r in one.rows("SELECT key FROM call_cache")}
    assert keys == {f"scope:k{n}" for n in range(ROUNDS - 1 + ITEMS)}
    assert one.scalar("SELECT count(*) FROM human_labels") == ROUNDS
    for r in range(ROUNDS):
        audit = f"shared-{r}"
        assert one.scalar("SELECT count(*) FROM audit_samples WHERE audit = ?", [audit]) == ITEMS
        assert one.scalar("SELECT count(*) FROM item_sets WHERE name = ?", [f"swap-{r}"]) == 1
        assert one.scalar("SELECT count(*) FROM items WHERE item_set = ?", [f"swap-{r}"]) == ITEMS
        assert one.scalar("SELECT count(*) FROM runs WHERE run_id = ?", [f"made-{r}"]) == 1
