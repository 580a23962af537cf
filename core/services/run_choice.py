"""Which runs a page may pick on its own, and deleting a run.

Why: a run that never got an answer (every connection refused) or that failed was picked by
default — Compare opened on "runs pc-smol2 and pc-smol share no answered items", a results
page kept a 0-answer run selected. Pages pick by default only runs with an answer that did not
fail (failed runs with answers only when nothing else answered); the user can still choose
any run. And such runs can be deleted (`python -m core runs --delete RUN --yes`, the Runs
page) or hidden on the Runs page.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from core.store import DatabaseError, Store
from core.store.schema import cache_tables


def answered_runs(store: Store, run_ids: Sequence[str]) -> dict[str, tuple[int, str]]:
    """Per run with at least one answered (ok) response: (its ok responses, its status)."""
    if not run_ids:
        return {}
    marks = ", ".join("?" for _ in run_ids)
    rows = store.rows(
        f"SELECT r.run_id, count(*), any_value(coalesce(r.status, '')) FROM runs r "
        f"JOIN responses x ON x.run_id = r.run_id AND x.status = 'ok' "
        f"WHERE r.run_id IN ({marks}) GROUP BY r.run_id",
        list(run_ids),
    )
    return {str(run): (int(n), str(status)) for run, n, status in rows}


def default_runs(store: Store, run_ids: Sequence[str], k: int = 1) -> list[str]:
    """Up to k of `run_ids` (in their order) a page may select without being asked: runs with
    an answer that did not fail; if there are none, runs with an answer; never an empty run."""
    answered = answered_runs(store, run_ids)
    good = [r for r in run_ids if r in answered and answered[r][1] != "failed"]
    if not good:
        good = [r for r in run_ids if r in answered]
    return good[:k]


def default_run(store: Store, run_ids: Sequence[str]) -> str | None:
    """The one run a page selects without being asked (None: no run has an answer)."""
    picked = default_runs(store, run_ids, 1)
    return picked[0] if picked else None


_RUN_TABLES = ("responses", "results", "judgings", "calls")


def run_footprint(store: Store, run_id: str) -> dict[str, Any]:
    """What deleting `run_id` would remove (rows per table), its status and what keeps it."""
    with store.connect() as con:
        row = con.execute("SELECT status, pid FROM runs WHERE run_id = ?", [run_id]).fetchone()
        if row is None:
            return {}

        def count(sql: str, params: list[str]) -> int:
            found = con.execute(sql, params).fetchone()
            return int(found[0]) if found else 0

        counts = {
            table: count(f"SELECT count(*) FROM {table} WHERE run_id = ?", [run_id])
            for table in _RUN_TABLES
        }
        labels = count(
            "SELECT (SELECT count(*) FROM human_labels WHERE run_id = ?) + "
            "(SELECT count(*) FROM audit_samples WHERE run_id = ?)",
            [run_id, run_id],
        )
    return {"status": row[0], "pid": row[1], "rows": counts, "audit_rows": labels}


def delete_run(store: Store, run_id: str) -> str:
    """Delete a run whole — its row, responses, every judging's records, its call log and its
    cached counts (the call cache stays: it is keyed by request, not by run) — in one
    transaction. Refused while its process runs and when people labelled it in an audit
    (their work would lose its run). Returns what was deleted."""
    from core.engine.runner import pid_alive

    found = run_footprint(store, run_id)
    if not found:
        raise DatabaseError(f"no run {run_id!r} (`python -m core runs` lists them)")
    pid = found["pid"]
    if found["status"] == "running" and pid and int(pid) != os.getpid() and pid_alive(pid):
        raise DatabaseError(
            f"run {run_id!r} is being run by process {pid}; cancel it first "
            f"(`python -m core runs --cancel {run_id}`)"
        )
    if found["audit_rows"]:
        raise DatabaseError(
            f"run {run_id!r} is in a judge audit ({found['audit_rows']} sampled or labelled "
            "rows): people's labels would lose their run; it is kept"
        )

    def delete(con: Any) -> None:
        for table in _RUN_TABLES:
            con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
        for cache, key in cache_tables():  # the benchmarks' derived rows of the run
            con.execute(f"DELETE FROM {cache} WHERE {key} = ?", [run_id])
        con.execute("DELETE FROM runs WHERE run_id = ?", [run_id])

    store.transaction(delete)
    rows = found["rows"]
    return (
        f"deleted run {run_id} ({found['status']}): {rows['responses']} responses, "
        f"{rows['results']} results, {rows['judgings']} named judgings, {rows['calls']} call "
        "records"
    )
