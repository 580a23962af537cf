"""Issue 28, point 4: a run's planning reads outside the lake's exclusive writers' turn.

Every write transaction on a lake waits for the lake's turn (core/store/lake.py), and planning
used to read everything in it (the items, the run's written units, the cache keys): four shards
starting at once queued behind each other's reads. Now the reads are one snapshot before the
turn, and the write transaction holds only the runs row and the shard's ledger row; an item set
re-imported in between is read again in the turn (its version moved)."""

from __future__ import annotations

import re
from typing import Any

from core.engine.runner.plan import _plan
from core.store import Store
from tests.echo_task import EchoTask, create_item_set
from tests.test_runner import spec_for

READS = re.compile(r"\bFROM\s+(items|responses|results|call_cache)\b", re.IGNORECASE)


class _Recording:
    """A connection that notes the SQL run through it."""

    def __init__(self, con: Any, seen: list[str]) -> None:
        self._con, self._seen = con, seen

    def execute(self, sql: str, *args: Any) -> Any:
        self._seen.append(sql)
        return self._con.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


def _recorded(store: Store, before: Any = None) -> list[str]:
    """Record what the store's write transactions run; `before()` runs first (another
    process's write landing between planning's reads and its write)."""
    seen: list[str] = []
    real = store.transaction

    def transaction(fn: Any, **kw: Any) -> Any:
        if before is not None:
            before()
        return real(lambda con: fn(_Recording(con, seen)), **kw)

    store.transaction = transaction  # type: ignore[method-assign]
    return seen


def test_a_shards_plan_writes_only_the_run_and_ledger_rows_in_the_turn(lake):
    store = Store.open(lake.url)
    create_item_set(store, "s", "echo", [f"p{i}" for i in range(40)])
    seen = _recorded(store)
    spec = spec_for("http://127.0.0.1:9/v1", run_id="sharded", shard=(2, 4))
    plan = _plan(store, spec, EchoTask(needs_judge=False), {}, {"scope"})
    assert len(plan.units) == 10 and len(plan.todo) == 10  # the shard's quarter
    assert seen and not [sql for sql in seen if READS.search(sql)], seen
    ledger = store.rows("SELECT shard, shards, n_planned FROM run_shards WHERE run_id = 'sharded'")
    assert ledger == [(2, 4, 10)]
    assert store.scalar("SELECT n_planned FROM runs WHERE run_id = 'sharded'") == 40


def test_an_item_set_reimported_while_planning_is_read_again(lake):
    store = Store.open(lake.url)
    create_item_set(store, "s", "echo", [f"old {i}" for i in range(8)])
    other = Store.open(lake.url)  # as another process would

    def reimport() -> None:
        create_item_set(other, "s", "echo", [f"new {i}" for i in range(12)])

    _recorded(store, before=reimport)
    spec = spec_for("http://127.0.0.1:9/v1", run_id="r")
    plan = _plan(store, spec, EchoTask(needs_judge=False), {}, set())
    assert len(plan.units) == 12
    last = plan.items.get("i00012")
    assert last is not None and last["prompt"] == "new 11"
    assert store.scalar("SELECT n_planned FROM runs WHERE run_id = 'r'") == 12
