"""Shards: one run split over several processes or machines (`run ... --shard K/N`), all writing
the same run in one store (a lake, or a file several processes of one machine share).

Why this split: each shard must get the same items on every machine and at every resume (so no
item is asked twice or never), and a shard of a stratified `--limit` sample should keep the
sample's design (each shard a small copy of it), so a shard's partial numbers mean something.
Items are ordered by their stratum (core/engine/sampling.py's strata for the benchmark), then by
a SHA-256 of their id (not Python's salted hash: the same on every machine), and dealt round-robin
to the N shards; every stratum is spread evenly and the shards' sizes differ by at most one.

The ledger (`run_shards`, core/store/shards.py) holds a row per shard: host, pid, started,
finished, done/planned and status. The run is done when every shard is.
"""

from __future__ import annotations

import hashlib
import os
import socket
from collections.abc import Sequence
from typing import Any

import pandas as pd

from core.engine.runner.checks import pid_alive
from core.store.shards import SHARD_TABLE, ensure_shard_table, has_shard_table


def _digest(item_id: str) -> str:
    return hashlib.sha256(item_id.encode()).hexdigest()


def shard_of_items(frame: pd.DataFrame, benchmark: str, shards: int) -> dict[str, int]:
    """Every item's shard (1..shards): by stratum, then SHA-256 of the id, dealt round-robin."""
    from core.engine.sampling import _key, strata_of, stratum_frame

    framed = stratum_frame(frame, benchmark)
    cols = [c for c in strata_of(benchmark) if c in framed.columns]
    ids = [str(i) for i in frame["item_id"]]
    strata = (
        [_key(r) for r in framed[cols].itertuples(index=False, name=None)]
        if cols
        else [""] * len(ids)
    )
    order = sorted(range(len(ids)), key=lambda n: (strata[n], _digest(ids[n]), ids[n]))
    return {ids[n]: position % shards + 1 for position, n in enumerate(order)}


def host() -> str:
    return socket.gethostname()


def start_shard(
    con: Any, run_id: str, shard: tuple[int, int], n_planned: int, n_done: int, lake: bool
) -> None:
    """Write (or take over) the shard's ledger row, in the plan's transaction. A shard being run
    by a live process on this machine is refused; one on another machine cannot be checked and
    is taken over (its units are keyed: a unit asked twice is written once)."""
    from core.engine.runner.spec import RunError

    ensure_shard_table(con, lake)
    k, n = shard
    others = con.execute(
        f"SELECT DISTINCT shards FROM {SHARD_TABLE} WHERE run_id = ? AND shards <> ?",
        [run_id, n],
    ).fetchall()
    if others:
        raise RunError(
            f"run {run_id!r} is split into {others[0][0]} shards; resume a shard with "
            f"--shard K/{others[0][0]}"
        )
    row = con.execute(
        f"SELECT host, pid, status FROM {SHARD_TABLE} WHERE run_id = ? AND shard = ?",
        [run_id, k],
    ).fetchone()
    me = host()
    if row is not None:
        their_host, pid, status = row
        if (
            status == "running"
            and their_host == me
            and pid
            and int(pid) != os.getpid()
            and pid_alive(int(pid))
        ):
            raise RunError(
                f"shard {k}/{n} of run {run_id!r} is being run by process {pid} on this "
                "machine; wait for it or stop it"
            )
        con.execute(
            f"UPDATE {SHARD_TABLE} SET host = ?, pid = ?, status = 'running', n_planned = ?, "
            "n_done = ?, started_at = current_timestamp, finished_at = NULL, "
            "updated_at = current_timestamp WHERE run_id = ? AND shard = ?",
            [me, os.getpid(), n_planned, n_done, run_id, k],
        )
        return
    con.execute(
        f"INSERT INTO {SHARD_TABLE} (run_id, shard, shards, host, pid, status, n_planned, "
        "n_done) VALUES (?, ?, ?, ?, ?, 'running', ?, ?)",
        [run_id, k, n, me, os.getpid(), n_planned, n_done],
    )


def progress_shard(con: Any, run_id: str, shard: int, n_done: int) -> None:
    """A flush's ledger update: done so far, and the shard's heartbeat."""
    con.execute(
        f"UPDATE {SHARD_TABLE} SET n_done = ?, updated_at = current_timestamp "
        "WHERE run_id = ? AND shard = ?",
        [n_done, run_id, shard],
    )


def finish_shard(con: Any, run_id: str, shard: tuple[int, int], status: str, n_done: int) -> str:
    """Close the shard's ledger row and return the run's status: done when every shard is done,
    running while another shard runs, else this shard's failed/cancelled, or interrupted (some
    shard has not finished: run it, on any machine)."""
    k, n = shard
    con.execute(
        f"UPDATE {SHARD_TABLE} SET status = ?, n_done = ?, finished_at = current_timestamp, "
        "updated_at = current_timestamp WHERE run_id = ? AND shard = ?",
        [status, n_done, run_id, k],
    )
    rows = con.execute(
        f"SELECT shard, status FROM {SHARD_TABLE} WHERE run_id = ?", [run_id]
    ).fetchall()
    states = {int(s): str(st) for s, st in rows}
    if all(states.get(i) == "done" for i in range(1, n + 1)):
        return "done"
    if any(st == "running" for s, st in states.items() if s != k):
        return "running"
    return status if status in ("failed", "cancelled") else "interrupted"


def shard_rows(store: Any, run_id: str) -> pd.DataFrame:
    """The run's ledger (empty when it was never split), for `runs RUN --shards` and the page."""
    columns: Sequence[str] = (
        "shard",
        "shards",
        "status",
        "n_done",
        "n_planned",
        "host",
        "pid",
        "started_at",
        "finished_at",
        "updated_at",
    )
    with store.connect() as con:
        if not has_shard_table(con):
            return pd.DataFrame(columns=list(columns))
        return con.execute(
            f"SELECT {', '.join(columns)} FROM {SHARD_TABLE} WHERE run_id = ? ORDER BY shard",
            [run_id],
        ).df()


def shard_table(store: Any, run_id: str) -> pd.DataFrame:
    """The ledger as people read it: a shard marked running whose process on this machine is
    gone shows as `stopped` (SIGKILL, a crash: resume it, on any machine); one on another
    machine shows as running, with when it was last heard of (`updated_at`)."""

    frame = shard_rows(store, run_id)
    if frame.empty:
        return frame
    me = host()
    states = []
    for status, where, pid in zip(frame["status"], frame["host"], frame["pid"]):
        gone = status == "running" and where == me and not pid_alive(_int(pid))
        states.append("stopped" if gone else status)
    return pd.DataFrame(
        {
            "shard": [f"{int(k)}/{int(n)}" for k, n in zip(frame["shard"], frame["shards"])],
            "status": states,
            "done": [
                f"{_int(d)}/{_int(p)}" + (f" ({100 * _int(d) / _int(p):.0f}%)" if _int(p) else "")
                for d, p in zip(frame["n_done"], frame["n_planned"])
            ],
            "host": frame["host"],
            "pid": [_int(p) for p in frame["pid"]],
            "started": frame["started_at"].astype(str),
            "finished": [("" if pd.isna(f) else str(f)) for f in frame["finished_at"]],
            "last heard of": frame["updated_at"].astype(str),
        }
    )


def _int(value: Any) -> int:
    try:
        return 0 if value is None or pd.isna(value) else int(value)
    except (TypeError, ValueError):
        return 0
