"""Issue 31, point 3: a resumed run's duration is its active time (its sessions' spans), not
the idle gap between a failed attempt and its resume ("6 min 17 s" for 10 s of work)."""

from __future__ import annotations

import time

from core.engine.runner import execute_run
from core.services import jobs
from core.store import Store
from tests.echo_task import EchoTask, create_item_set
from tests.fake_openai import FakeOpenAI
from tests.test_runner import prompts, spec_for

GAP_S = 2.0  # the idle time between the two sessions, which the duration must not count


def test_a_resumed_runs_duration_is_its_active_time_not_the_gap(store: Store):
    create_item_set(store, "s", "echo", prompts(6))
    with FakeOpenAI(latency=0.05) as server:
        start = time.monotonic()
        first = execute_run(store, spec_for(server.url, limit=3), EchoTask(), progress=False)
        session_1 = time.monotonic() - start
        time.sleep(GAP_S)  # the gap itself is what is measured against, not a wait for an event
        start = time.monotonic()
        second = execute_run(store, spec_for(server.url, limit=6), EchoTask(), progress=False)
        session_2 = time.monotonic() - start
        time.sleep(GAP_S)
        start = time.monotonic()  # a third session finds nothing to ask: only its own moment
        again = execute_run(store, spec_for(server.url, limit=6), EchoTask(), progress=False)
        session_3 = time.monotonic() - start
    assert (first.status, second.status, again.status) == ("done", "done", "done")
    assert store.scalar("SELECT count(*) FROM responses WHERE run_id = 'r1'") == 6
    stats = jobs.run_stats(store, "r1")
    wall = store.scalar(
        "SELECT epoch(updated_at) - epoch(created_at) FROM runs WHERE run_id = 'r1'"
    )
    assert wall >= 2 * GAP_S  # first start to last write spans the gaps …
    active = session_1 + session_2 + session_3
    assert 0 < stats["duration_s"] <= active + 0.2  # … the active time does not


def test_active_seconds_of_a_run_from_before_sessions_were_kept():
    assert jobs.active_seconds(377.0, None, None, None) == 377.0
    assert jobs.active_seconds(None, None, None, None) is None
    assert jobs.active_seconds(377.0, 1000.0, 4.0, 994.0) == 10.0
