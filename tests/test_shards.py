"""`run ... --shard K/N`: a deterministic, stratified split of a run's items; every shard writes
the same run; a ledger row per shard; a SIGKILLed shard resumes; the run is done when every
shard is. On a file and on a lake."""

from __future__ import annotations

import random
import signal
import time

import pandas as pd
import pytest

from core.engine.runner.checks import parse_shard
from core.engine.runner.shards import shard_of_items, shard_table
from core.services.store_check import check_store
from core.store import Store
from tests.core_cli import run_core
from tests.echo_task import create_item_set
from tests.fake_openai import FakeProcess
from tests.test_runner import counts, echo_in_process, prompts, start_echo_run, wait_for_rows


@pytest.fixture
def store(backend) -> Store:
    return Store.open(backend)


@pytest.mark.parametrize("bad", ["0/4", "5/4", "1/0", "1/1001", "two/4", "2", "-1/3", ""])
def test_a_shard_outside_its_bounds_is_refused(bad):
    with pytest.raises(SystemExit, match="--shard"):
        parse_shard(bad)
    assert parse_shard(" 2 / 4 ") == (2, 4) and parse_shard("1000/1000") == (1000, 1000)


def _misprompt_items() -> pd.DataFrame:
    """Three uneven categories of erroneous items and a block of controls."""
    rows = []
    for cat, n in (("a", 23), ("b", 7), ("c", 11)):
        rows += [
            {"item_id": f"{cat}{i}", "primary_category": cat, "is_error": True} for i in range(n)
        ]
    rows += [{"item_id": f"ctl{i}", "primary_category": "a", "is_error": False} for i in range(9)]
    return pd.DataFrame(rows)


def test_the_split_is_deterministic_balanced_and_keeps_every_stratum():
    items = _misprompt_items()
    split = shard_of_items(items, "misprompt", 4)
    assert set(split) == set(items["item_id"]) and set(split.values()) == {1, 2, 3, 4}
    sizes = pd.Series(split).value_counts()
    assert sizes.max() - sizes.min() <= 1
    # each stratum (a category of errors, the controls) spread evenly over the shards
    stratum = items["primary_category"].where(items["is_error"], "controls")
    table = pd.crosstab(stratum.values, items["item_id"].map(split).values)
    assert ((table.max(axis=1) - table.min(axis=1)) <= 1).all(), table
    # the same on any machine: whatever order the rows come in
    shuffled = items.sample(frac=1.0, random_state=random.Random(7).randint(0, 99))
    assert shard_of_items(shuffled, "misprompt", 4) == split


def test_shards_write_one_run_which_is_done_when_every_shard_is(store, backend):
    create_item_set(store, "s", "echo", prompts(30))
    with FakeProcess() as server:
        for k in (1, 2):
            code, _, err = echo_in_process(backend, server.url, "sh", "--shard", f"{k}/3")
            assert code == 0, err
            assert store.scalar("SELECT status FROM runs WHERE run_id = 'sh'") == "interrupted"
        done = run_core("runs", "sh", "--shards")
        assert done.returncode == 0, done.stderr
        assert "1/3" in done.stdout and "2/3" in done.stdout and "3/3" not in done.stdout
        # another split of the same run is refused, and so is a resume without --shard
        code, _, err = echo_in_process(backend, server.url, "sh", "--shard", "1/2")
        assert code != 0 and "shards: stored 3, now 2" in err
        code, _, err = echo_in_process(backend, server.url, "sh")
        assert code != 0 and "shards: stored 3, now (none)" in err
        code, _, err = echo_in_process(backend, server.url, "sh", "--shard", "3/3")
        assert code == 0, err
    assert store.scalar("SELECT status FROM runs WHERE run_id = 'sh'") == "done"
    c = counts(store, "sh")
    assert c["responses"] == c["distinct"] == c["ok"] == 30
    ledger = shard_table(store, "sh")
    assert list(ledger["status"]) == ["done"] * 3
    assert sorted(ledger["done"]) == ["10/10 (100%)"] * 3
    assert store.scalar("SELECT n_planned FROM runs WHERE run_id = 'sh'") == 30


def test_a_sigkilled_shard_resumes_and_nothing_is_lost_or_doubled(store, backend, tmp_path):
    n = 400
    create_item_set(store, "s", "echo", prompts(n))
    items = store.df("SELECT item_id FROM items WHERE item_set = 's'")
    first = [i for i, k in shard_of_items(items, "echo", 2).items() if k == 1]
    with FakeProcess({"latency": 0.05}) as server:
        extra = ("--concurrency", "4", "--quiet")
        killed = start_echo_run(backend, server.url, "kk", "--shard", "1/2", *extra)
        other = start_echo_run(backend, server.url, "kk", "--shard", "2/2", *extra)
        wait_for_rows(store, "kk", 1, killed)
        mine = "SELECT count(*) FROM responses WHERE run_id = 'kk' AND list_contains(?, item_id)"
        while store.scalar(mine, [first]) < 15:  # shard 1's own rows, flushed
            assert killed.poll() is None, killed.communicate()
            time.sleep(0.05)
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=30)
        assert store.scalar(mine, [first]) < len(first)  # killed mid-way
        _, err = other.communicate(timeout=600)
        assert other.returncode == 0, err
        ledger = shard_table(store, "kk")
        assert list(ledger["status"]) == ["stopped", "done"]  # its process is gone
        assert store.scalar("SELECT status FROM runs WHERE run_id = 'kk'") == "running"
        code, _, err = echo_in_process(backend, server.url, "kk", "--shard", "1/2", *extra)
        assert code == 0, err
    assert store.scalar("SELECT status FROM runs WHERE run_id = 'kk'") == "done"
    c = counts(store, "kk")
    assert c["responses"] == c["distinct"] == c["ok"] == n
    assert list(shard_table(store, "kk")["status"]) == ["done", "done"]
    assert check_store(store) == []
    # a backup into a new file carries the ledger too
    backup = tmp_path / "backup.duckdb"
    done = run_core("store", "copy", "--from", backend, "--to", str(backup))
    assert done.returncode == 0, done.stderr
    assert shard_table(Store.open(backup, create=False), "kk")["status"].tolist() == ["done"] * 2
