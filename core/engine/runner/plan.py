"""Planning a run: load (and sample) its items, find what is done, write or check the run row."""

from __future__ import annotations

import json
import os
import sys
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd
import pyarrow as pa

from core.engine.client import ModelClient
from core.engine.endpoints import (
    EndpointError,
)
from core.engine.results import scrub_secrets
from core.engine.runner.checks import pid_alive
from core.engine.runner.spec import RunError, RunSpec, check_resume
from core.engine.task import Task, WorkUnit
from core.store import Store


def _states_sql(needs_judge: bool) -> str:
    """Per written unit and epoch of a run: is it done (response ok, and judged when judged)?"""
    done = (
        "r.status = 'ok' AND coalesce(v.status <> 'failed', false)"
        if needs_judge
        else "r.status = 'ok'"
    )
    return (
        "SELECT r.item_id, r.variant, r.epoch, " + done + " AS done FROM responses r "
        "LEFT JOIN results v ON v.run_id = r.run_id AND v.judging = 'default' "
        "AND v.item_id = r.item_id AND v.variant = r.variant AND v.epoch = r.epoch "
        "WHERE r.run_id = ?"
    )


def _load_items(con: Any, spec: RunSpec) -> pd.DataFrame:
    found = con.execute(
        "SELECT benchmark FROM item_sets WHERE name = ?", [spec.item_set]
    ).fetchall()
    if not found:
        names = [
            r[0]
            for r in con.execute(
                "SELECT name FROM item_sets WHERE benchmark = ? ORDER BY name", [spec.benchmark]
            ).fetchall()
        ]
        raise RunError(
            f"item set {spec.item_set!r} does not exist; {spec.benchmark} sets: "
            f"{', '.join(names) or 'none (import one first)'}"
        )
    if found[0][0] != spec.benchmark:
        raise RunError(
            f"item set {spec.item_set!r} holds {found[0][0]} items, not {spec.benchmark}"
        )
    sql = "SELECT * EXCLUDE (item_set) FROM items WHERE item_set = ? ORDER BY rowid"
    frame = con.execute(sql, [spec.item_set]).df()
    if not spec.limit:
        return frame
    return _limited(con, spec, frame)


def _limited(con: Any, spec: RunSpec, frame: pd.DataFrame) -> pd.DataFrame:
    """The --limit items: a resumed run's stored plan (runs.params.sample.item_ids, so it asks
    exactly the same items), else a new stratified sample whose plan is put in spec.params."""
    limit = int(spec.limit or 0)
    row = con.execute("SELECT params FROM runs WHERE run_id = ?", [spec.run_id]).fetchone()
    old = (
        json.loads(row[0]) if row and isinstance(row[0], str) else (row[0] if row else None)
    ) or {}
    if row is not None and "sample" not in old and old.get("limit"):
        # a run from before stratified sampling: it planned the first N items (file order)
        spec.params["limit_order"] = "file"
        return frame.head(int(old["limit"]))
    planned = old.get("sample")
    if planned and (int(planned.get("n", -1)), int(planned.get("seed", -1))) != (
        limit,
        spec.sample_seed,
    ):
        # another --limit: only a larger sample of the same seed that holds every planned item
        # extends the run (samples are nested); anything else would ask other items
        from core.engine.sampling import plan_sample

        sample, plan = plan_sample(frame, spec.benchmark, limit, spec.sample_seed)
        stored_ids = {str(i) for i in planned.get("item_ids") or []}
        if limit > int(planned.get("n", 0)) and stored_ids <= set(plan.item_ids):
            spec.params["sample"] = plan.as_params()
            return sample.reset_index(drop=True)
        raise RunError(
            f"run {spec.run_id!r} planned a sample of {planned.get('n')} items "
            f"with seed {planned.get('seed')}; resume it with --limit "
            f"{planned.get('n')} --sample-seed {planned.get('seed')} (or a larger "
            "--limit, which extends the sample), or pick another --run-name"
        )
    if planned:
        ids = [str(i) for i in planned.get("item_ids") or []]
        by_id = frame.set_index(frame["item_id"].astype(str), drop=False)
        missing = [i for i in ids if i not in by_id.index]
        if missing:
            raise RunError(
                f"run {spec.run_id!r} planned items that are no longer in item set "
                f"{spec.item_set!r} (e.g. {missing[0]!r})"
            )
        spec.params["sample"] = planned
        return by_id.loc[ids].reset_index(drop=True)
    from core.engine.sampling import plan_sample

    sample, plan = plan_sample(frame, spec.benchmark, limit, spec.sample_seed)
    for note in plan.warnings:  # a sample too small for the strata: say which are left out
        print(f"warning: {note}", file=sys.stderr)
    spec.params["sample"] = plan.as_params()
    return sample.reset_index(drop=True)


class _ItemRows:
    """Item dicts made when their units start, not all at once (memory), from a compact Arrow
    copy converted a block at a time (cheap per row; NULL stays None, whereas pandas turns a
    NULL string into NaN, which is truthy and would leak into prompts)."""

    BLOCK = 256

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame: pd.DataFrame | None = frame
        self.position = {str(i): n for n, i in enumerate(frame["item_id"])}
        self.blocks: OrderedDict[int, list[dict]] = OrderedDict()
        try:
            self.table: pa.Table | None = pa.Table.from_pandas(frame, preserve_index=False)
            self.frame = None  # the compact copy is enough
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
            self.table = None

    def get(self, item_id: str) -> dict | None:
        n = self.position.get(item_id)
        if n is None:
            return None
        if self.table is None:
            assert self.frame is not None
            row = self.frame.iloc[n].to_dict()
            return {k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}
        block = n // self.BLOCK
        rows = self.blocks.get(block)
        if rows is None:
            rows = self.table.slice(block * self.BLOCK, self.BLOCK).to_pylist()
            self.blocks[block] = rows
            while len(self.blocks) > 4:  # units run roughly in order: keep a few blocks
                self.blocks.popitem(last=False)
        return dict(rows[n - block * self.BLOCK])


def _run_params(spec: RunSpec, task: Task, secrets: list[str]) -> dict:
    params = dict(spec.params)
    params.update(
        {
            "limit": spec.limit,
            "concurrency": spec.concurrency,
            "use_cache": spec.use_cache,
            "needs_judge": bool(task.needs_judge),
            "endpoint": spec.endpoint.public_dict(),
            "judge": spec.judge.public_dict() if spec.judge is not None else None,
        }
    )
    if spec.epochs > 1:  # a run of one epoch keeps the params it always had
        params["epochs"] = spec.epochs
    if spec.shard is not None:  # N must match between shards (K is each shard's own)
        params["shards"] = spec.shard[1]
    return scrub_secrets(params, secrets)


# Run params that say how a run is executed, not what it measures: they may change on resume.
def _item_set_version(con: Any, item_set: str) -> str | None:
    """When the item set was (re-)imported: a re-import replaces the items under the name."""
    row = con.execute(
        "SELECT CAST(created_at AS VARCHAR) FROM item_sets WHERE name = ?", [item_set]
    ).fetchone()
    return row[0] if row else None


def _session_times(con: Any, run_id: str) -> dict[str, float]:
    """`active_s_before` (the seconds earlier sessions were active: each from its start to its
    last write, a killed one up to its last heartbeat) and `session_started_at` (epoch seconds,
    this session) — so a resumed run's duration is its active time, not the idle gap between
    attempts (jobs.active_seconds). A run from before these keys counts its first sessions
    from its creation."""
    now = con.execute("SELECT epoch(CAST(current_timestamp AS TIMESTAMP))").fetchone()[0]
    row = con.execute(
        "SELECT epoch(created_at), epoch(updated_at), "
        "TRY_CAST(json_extract(params, '$.active_s_before') AS DOUBLE), "
        "TRY_CAST(json_extract(params, '$.session_started_at') AS DOUBLE) "
        "FROM runs WHERE run_id = ?",
        [run_id],
    ).fetchone()
    if row is None:
        return {"active_s_before": 0.0, "session_started_at": float(now)}
    created, updated, before, started = row
    last = max(float(updated or 0) - float(started if started is not None else created or 0), 0.0)
    return {"active_s_before": float(before or 0.0) + last, "session_started_at": float(now)}


def _start_run_row(
    con: Any, spec: RunSpec, task: Task, n_planned: int, params: dict, version: str | None
) -> None:
    """Create the runs row, or check a resumed run matches what is asked (same set-up);
    `version`: the item set's, as read in this transaction."""
    judge = spec.judge if task.needs_judge else None
    columns = (
        "benchmark",
        "item_set",
        "model",
        "setting",
        "mode",
        "judge_model",
        "template_id",
        "params",
        "status",
        "pid",
    )
    row = con.execute(
        f"SELECT {', '.join(columns)} FROM runs WHERE run_id = ?", [spec.run_id]
    ).fetchone()
    params = {**params, "item_set_version": version}
    params.update(_session_times(con, spec.run_id))
    if row is not None:
        stored = dict(zip(columns, row))
        # what the run has answered and judged: with none, other URLs may be asked (they
        # cannot mix two servers' answers under one name)
        stored["answered"], stored["judged"] = con.execute(
            "SELECT (SELECT count(*) FROM responses WHERE run_id = ? AND status = 'ok'), "
            "(SELECT count(*) FROM results WHERE run_id = ? AND judging = 'default' "
            "AND status = 'ok')",
            [spec.run_id, spec.run_id],
        ).fetchone()
        status, pid = stored["status"], stored["pid"]
        differences = check_resume(stored, spec, params)
        if differences:
            raise RunError(
                f"run {spec.run_id!r} already exists with other settings: "
                + "; ".join(differences)
                + ". Resume it with the same flags, or "
                "pick another --run-name."
            )
        if (
            spec.shard is None  # a shard joins a run other shards run (the ledger checks)
            and status == "running"
            and pid
            and int(pid) != os.getpid()
            and pid_alive(pid)
        ):
            raise RunError(
                f"run {spec.run_id!r} is being run by process {pid}; cancel it "
                f"(`python -m core runs --cancel {spec.run_id}`) or wait"
            )
        con.execute(
            "UPDATE runs SET status = 'running', pid = ?, n_planned = ?, "
            "params = ?, endpoint = ?, judge_endpoint = ?, template_id = "
            "coalesce(?, template_id), weak_model = ?, "
            "updated_at = current_timestamp WHERE run_id = ?",
            [
                os.getpid(),
                n_planned,
                json.dumps(params),
                spec.endpoint.name,
                judge.name if judge else None,
                spec.template_id,
                bool(spec.endpoint.weak),
                spec.run_id,
            ],
        )
        return
    con.execute(
        "INSERT INTO runs (run_id, benchmark, kind, item_set, model, endpoint, setting, "
        "mode, judge_model, judge_endpoint, template_id, params, weak_model, status, "
        "n_planned, pid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?)",
        [
            spec.run_id,
            spec.benchmark,
            spec.kind,
            spec.item_set,
            spec.endpoint.model,
            spec.endpoint.name,
            spec.setting,
            spec.mode,
            judge.model if judge else None,
            judge.name if judge else None,
            spec.template_id,
            json.dumps(params),
            bool(spec.endpoint.weak),
            n_planned,
            os.getpid(),
        ],
    )


# -- execute_run, step by step ---------------------------------------------------------------


UnitKey = tuple[str, str, int]  # (item, variant, epoch): unit_key


class Units:
    """A run's units, epoch after epoch, made one at a time as the run asks them — never a list
    of all of them: `--epochs K` over a large item set held K × items units (and their keys)
    before the first request. Holds the task's units of one epoch; `skip` leaves out units
    already done (the todo of a resumed run), `n_skipped` of them."""

    def __init__(
        self,
        base: list[WorkUnit],
        epochs: int,
        skip: dict[UnitKey, bool] | None = None,
        n_skipped: int = 0,
    ) -> None:
        self.base, self.epochs = base, max(1, epochs)
        self._skip = skip or {}
        self._n = len(base) * self.epochs - n_skipped
        self._pairs = {(str(u.item_id), str(u.variant)) for u in base}

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[WorkUnit]:
        skip = self._skip
        for epoch in range(1, self.epochs + 1):
            for unit in self.base:
                if skip and skip.get((str(unit.item_id), str(unit.variant), epoch), False):
                    continue
                yield (
                    unit
                    if (self.epochs == 1 or unit.epoch == epoch)
                    else replace(unit, epoch=epoch)
                )

    def __contains__(self, key: object) -> bool:
        """Is (item, variant, epoch) one of these units (done ones included)?"""
        if not isinstance(key, tuple) or len(key) != 3:
            return False
        item, variant, epoch = key
        return (item, variant) in self._pairs and 1 <= int(epoch) <= self.epochs

    def todo(self, states: dict[UnitKey, bool]) -> Units:
        """These units without the done ones (states: unit key -> done, as _states_sql)."""
        done = sum(1 for key, ok in states.items() if ok and key in self)
        return Units(self.base, self.epochs, states, done)


@dataclass
class _Plan:
    """What a session has to do, read from the database before the first request."""

    units: Units  # every unit of the run (planned), each epoch its own unit; made lazily
    todo: Units  # not done yet: asked in this session
    retried: set[tuple[str, str, int]]  # units of todo with a row already (they replace it)
    items: _ItemRows
    known_keys: dict[str, set[str]]  # call-cache keys per cache scope

    @property
    def skipped(self) -> int:
        return len(self.units) - len(self.todo)


def _open_clients(
    store: Store, spec: RunSpec, needs_judge: bool
) -> tuple[ModelClient, ModelClient | None]:
    """The model's and (for a judged task) the judge's client, checked before anything is
    written, so a missing key or bad URL fails the run at once with one line."""
    model = ModelClient(spec.endpoint, store, use_cache=spec.use_cache)
    judge = (
        ModelClient(spec.judge, store, use_cache=spec.use_cache)
        if needs_judge and spec.judge is not None
        else None
    )
    try:
        model.check()
        if judge is not None:
            judge.check()
    except EndpointError as exc:
        raise RunError(str(exc)) from None
    return model, judge


@dataclass
class _Read:
    """What planning reads (no write): the items, the run's units, each written unit's state
    and the known cache keys, with the item set's version they were read at."""

    items: pd.DataFrame
    units: Units
    states: dict[UnitKey, bool]
    keys: dict[str, set[str]]
    version: str | None


def _plan(store: Store, spec: RunSpec, task: Task, params: dict, scopes: set[str]) -> _Plan:
    """Items, units, each unit's state and the known cache keys, read in one snapshot; then
    the runs row (and a shard's ledger row) in one short write transaction.

    Why two steps: a write transaction takes the lake's exclusive writers' turn (every other
    writer waits: core/store/lake.py), and the reads are most of planning (the items, the
    run's written units, the cache keys: ~0.3 s of catalog round trips, measured), so four
    shards starting at once queued ~1 s behind each other's planning. Reading first is safe:
    the units of a run (or shard) are only written by the process that holds its runs row
    (or ledger row), which the write step checks, and keyed writes keep a unit asked twice
    once; an item set re-imported in between is noticed (its version) and read again."""
    needs_judge = bool(task.needs_judge)

    def read(con: Any) -> _Read:
        version = _item_set_version(con, spec.item_set)
        items_df = _load_items(con, spec)
        units = Units(list(task.units(items_df)), spec.epochs)  # one epoch's; the rest lazily
        states = {
            (str(a), str(b), int(e)): bool(ok)
            for a, b, e, ok in con.execute(_states_sql(needs_judge), [spec.run_id]).fetchall()
        }
        keys: dict[str, set[str]] = {}
        if spec.use_cache:
            for scope in scopes:
                keys[scope] = {
                    r[0]
                    for r in con.execute(
                        "SELECT key FROM call_cache WHERE starts_with(key, ?)", [scope + ":"]
                    ).fetchall()
                }
        return _Read(items_df, units, states, keys, version)

    def mine(found: _Read) -> Units:
        """The units this session plans: the run's, or its shard's."""
        if spec.shard is None:
            return found.units
        from core.engine.runner.shards import shard_of_items

        k, n = spec.shard
        shards = shard_of_items(found.items, spec.benchmark, n)
        return Units([u for u in found.units.base if shards.get(str(u.item_id)) == k], spec.epochs)

    with store.connect() as con:  # one snapshot for all the reads
        con.execute("BEGIN TRANSACTION")
        try:
            found = read(con)
        finally:
            con.execute("ROLLBACK")
    units = mine(found)

    def write(con: Any) -> None:
        nonlocal found, units
        if _item_set_version(con, spec.item_set) != found.version:  # re-imported meanwhile
            found = read(con)  # (reads the version again, in this transaction)
            units = mine(found)
        for key in ("sample", "limit_order"):  # the --limit plan, stored for an exact resume
            if key in spec.params:
                params[key] = spec.params[key]
        _start_run_row(con, spec, task, len(found.units), params, found.version)
        if spec.shard is not None:  # the shard's ledger row
            from core.engine.runner.shards import start_shard

            n_done = sum(1 for key, ok in found.states.items() if ok and key in units)
            start_shard(con, spec.run_id, spec.shard, len(units), n_done, store.is_lake)

    store.transaction(write)
    items_df, states = found.items, found.states
    # what the task wants said about these items before any request (e.g. no control items)
    for note in getattr(task, "warnings", lambda _items: [])(items_df):
        print(f"warning: {note}", file=sys.stderr)
    todo = units.todo(states)
    retried = {key for key, ok in states.items() if not ok and key in units}
    return _Plan(units, todo, retried, _ItemRows(items_df), found.keys)


def unit_key(unit: WorkUnit) -> tuple[str, str, int]:
    """(item, variant, epoch): what is done or not, per epoch."""
    return (str(unit.item_id), str(unit.variant), int(unit.epoch))
