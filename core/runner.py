"""The generic resumable runner: any benchmark's Task over an item set, against any endpoint.

Design, and why:

- **Resumable by construction.** A run is identified by its name (run_id). Results are keyed
  (run, item, variant) and written by core/results.py (the one writer: a plain INSERT for new
  units, INSERT OR REPLACE for retried ones), so re-running a name completes only
  what is missing or failed (a unit counts as done when its response is ok and, for a judged
  task, its verdict is ok too). A SIGKILL loses at most the last unflushed batch.
- **One transaction per flush.** A unit's response, its verdict, its call records and its new
  cache entries land together: a response never exists without its verdict.
- **Short-lived connections.** DuckDB lets one process write at a time and a connection holds
  the file; each flush opens, writes and closes (≈20 ms), every 0.5 s or 200 units, so the app
  (another process) reads progress between flushes.
- **Flat memory.** A fixed pool of `concurrency` workers pulls units from an iterator; finished
  results wait only until the next flush (writers apply back-pressure if the database is busy).
- **Signals.** SIGTERM/SIGINT stop taking units, flush what finished, mark the run cancelled.
- **Secrets.** Run params carry endpoint names, URLs (credentials stripped) and the *names* of
  key variables; any key value that still shows up is replaced by ***.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import re
import signal
import statistics
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol

import pandas as pd
import pyarrow as pa

from core.client import CURRENT_SINK, CallFailed, CallSink, ModelClient, cache_scope
from core.endpoints import (
    Endpoint,
    EndpointError,
    add_endpoint_args,
    endpoint_from_args,
    url_secrets,
)
from core.results import Response, Result, ResultBatch, save_batch, scrub_secrets
from core.storage import DatabaseError, Store, replace_item_set


class RunError(DatabaseError):
    """A run that cannot start as asked (unknown item set, name clash, missing key...).

    A DatabaseError subclass so `python -m core` prints it as a one-line error.
    """


# -- the contract ---------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkUnit:
    """One thing to ask: an item under a variant (setting, condition or method)."""

    item_id: str
    variant: str


@dataclass
class UnitResult:
    """A unit's Response and, when judged or scored right after it, the default judging's
    Result (the generic record)."""

    response: Response
    result: Result | None = None


@dataclass
class RunContext:
    model: ModelClient
    judge: ModelClient | None
    params: dict
    run_id: str = ""
    spec: RunSpec | None = None


class Task(Protocol):
    benchmark: str
    needs_judge: bool

    def units(self, items: pd.DataFrame) -> list[WorkUnit]: ...

    async def process(self, unit: WorkUnit, item: dict, ctx: RunContext) -> UnitResult: ...


@dataclass
class RunSpec:
    run_id: str
    benchmark: str
    item_set: str
    endpoint: Endpoint
    judge: Endpoint | None = None
    setting: str | None = None
    mode: str | None = None
    template_id: str | None = None
    params: dict = field(default_factory=dict)
    limit: int | None = None
    concurrency: int | None = None
    use_cache: bool = True
    kind: str = "eval"
    sample_seed: int = 0  # seed of the stratified --limit sample (core/sampling.py)


@dataclass
class RunSummary:
    """What a run did: this session's work and the run's totals in the database."""

    run_id: str
    status: str
    planned: int
    done: int  # units complete in the database (all sessions)
    failed: int  # units whose last attempt failed (retried on re-run)
    skipped: int  # already done before this session
    processed: int  # units processed in this session
    calls: int = 0  # model + judge requests of this session (cached included)
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    latency_ms_p50: float | None = None
    latency_ms_p95: float | None = None
    elapsed_s: float = 0.0

    @property
    def units_per_s(self) -> float:
        return self.processed / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def calls_per_s(self) -> float:
        return self.calls / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def table(self) -> str:
        """The end-of-run summary printed by the CLI."""
        cost = "n/a (no prices)" if self.cost_usd is None else f"${self.cost_usd:.4f}"
        lat = (
            "n/a"
            if self.latency_ms_p50 is None
            else f"p50 {self.latency_ms_p50:.0f} ms, p95 {self.latency_ms_p95:.0f} ms"
        )
        rows = [
            ("run", self.run_id),
            ("status", self.status),
            ("done / planned", f"{self.done} / {self.planned}"),
            ("failed (re-run to retry)", str(self.failed)),
            ("skipped (already done)", str(self.skipped)),
            (
                "processed now",
                f"{self.processed} in {self.elapsed_s:.1f} s ({self.units_per_s:.1f} units/s)",
            ),
            (
                "calls now",
                f"{self.calls} ({self.cached_calls} from cache, {self.calls_per_s:.1f}/s)",
            ),
            ("tokens now", f"{self.prompt_tokens} in + {self.completion_tokens} out"),
            ("cost now", cost),
            ("latency (answered calls)", lat),
        ]
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"  {k.ljust(width)}  {v}" for k, v in rows)

    def __str__(self) -> str:
        return (
            f"run {self.run_id}: {self.status}, {self.done}/{self.planned} done, "
            f"{self.failed} failed"
        )


# -- run names and CLI flags ----------------------------------------------------------------

RUN_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:+=@-]{0,199}$")


def _slug(text: str | None) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", (text or "").lower()).strip("-")


RUN_NAME_MAX = 40
_SETTING_SHORT = {
    "zero-shot": "zs",
    "one-shot": "1s",
    "three-shot": "3s",
    "cot": "cot",
    "sft": "sft",
    "direct_trace": "dt",
    "direct_step": "ds",
    "cot_step": "cs",
    "blind": "b",
    "hinted": "h",
    "anchored": "a",
    "mislead_high": "mh",
    "mislead_low": "ml",
}
_MODEL_SUFFIXES = ("-instruct", "-chat", "-it", "-hf", "-gguf")


def _short_setting(setting: str) -> str:
    """zero-shot -> zs; ErrorBench conditions a+b -> initials joined, all five -> 'all'."""
    parts = [p for p in re.split(r"[+,]", setting) if p]
    if len(parts) >= 5:
        return "all"
    return "".join(_SETTING_SHORT.get(p, _slug(p)) for p in parts)[:8]


def default_run_name(
    benchmark: str,
    model: str,
    setting: str | None = None,
    mode: str | None = None,
    when: datetime | None = None,
) -> str:
    """bench-model-setting[-p]-MMDD-HHMMSS, at most 40 characters (e.g.
    mp-smollm2-135m-zs-1201-131502): short enough to read in a table, unique per second."""
    model_slug = _slug(model.split("/")[-1]).replace(".", "-")
    for suffix in _MODEL_SUFFIXES:
        if model_slug.endswith(suffix) and len(model_slug) > len(suffix):
            model_slug = model_slug[: -len(suffix)]
    tail = [_short_setting(setting)] if setting else []
    if mode and mode != "proactive":
        tail.append("p" if mode == "passive" else _slug(mode)[:4])
    tail.append((when or datetime.now()).strftime("%m%d-%H%M%S"))
    from core.benchmarks import BENCHMARKS

    known = BENCHMARKS.get(benchmark)
    head = (known.short if known and known.short else _slug(benchmark)[:6]) or "run"
    room = RUN_NAME_MAX - len(head) - len("-".join(tail)) - 2
    model_slug = model_slug[: max(room, 0)].strip("-.") or "model"
    name = "-".join(p for p in [head, model_slug, *tail] if p)
    return name[:RUN_NAME_MAX]


def add_run_args(parser: argparse.ArgumentParser, judge: bool = False) -> None:
    """--items --limit --concurrency --run-name --no-cache --quiet + endpoint flags."""
    parser.add_argument(
        "--items",
        required=True,
        metavar="SET",
        help="item set name (see the Import page, or `python -m core import`)",
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=None,
        metavar="N",
        help="a seeded sample of N items, stratified over the set's categories "
        "(and its error:control ratio), not the first N in file order; "
        "see core/sampling.py",
    )
    parser.add_argument(
        "--sample-seed",
        type=int,
        default=0,
        metavar="S",
        help="seed of the --limit sample (default 0); a resumed run keeps the items it planned",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=None,
        metavar="N",
        help="requests in flight (default: the endpoint's max_concurrency)",
    )
    parser.add_argument(
        "--max-retries",
        type=int,
        default=None,
        metavar="N",
        help="retries of a failed model or judge call, with backoff in between (default: the "
        "endpoint's max_retries, 5); the units still failing are retried when the run resumes",
    )
    parser.add_argument(
        "--run-name",
        default=None,
        metavar="NAME",
        help="name of the run; re-use a name to resume it (only missing or "
        "failed items are asked again). Default: "
        "short bench-model-setting-MMDD-HHMMSS (≤ 40 characters)",
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="do not answer identical requests from the cache"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_endpoint_args(parser, "model")
    if judge:
        add_endpoint_args(parser, "judge")


def spec_from_args(
    args: argparse.Namespace,
    benchmark: str,
    setting: str | None = None,
    mode: str | None = None,
    template_id: str | None = None,
    params: dict | None = None,
    kind: str = "eval",
) -> RunSpec:
    """A RunSpec from add_run_args flags. With judge flags and none given, the model judges."""
    endpoint = endpoint_from_args(args, "model")
    assert endpoint is not None
    concurrency = getattr(args, "concurrency", None)
    if concurrency is not None:
        if concurrency < 1:
            raise SystemExit("error: --concurrency must be ≥ 1")
        endpoint = replace(endpoint, max_concurrency=concurrency)
    retries = getattr(args, "max_retries", None)
    if retries is not None:
        if retries < 0:
            raise SystemExit("error: --max-retries must be ≥ 0")
        endpoint = replace(endpoint, max_retries=retries)
    judge = None
    if hasattr(args, "judge_endpoint"):
        judge = endpoint_from_args(args, "judge") or endpoint
        if judge.name == endpoint.name and judge.base_urls == endpoint.base_urls:
            judge = replace(judge, max_concurrency=endpoint.max_concurrency)
        if retries is not None:
            judge = replace(judge, max_retries=retries)
    limit = getattr(args, "limit", None)
    if limit is not None and limit < 1:
        raise SystemExit("error: --limit must be ≥ 1")
    run_id = getattr(args, "run_name", None) or default_run_name(
        benchmark, endpoint.model, setting, mode
    )
    if not RUN_NAME_RE.match(run_id):
        raise SystemExit(
            f"error: run name {run_id!r}: use letters, digits and . _ - : + = @ "
            "(no spaces), at most 200 characters"
        )
    return RunSpec(
        run_id=run_id,
        benchmark=benchmark,
        item_set=args.items,
        endpoint=endpoint,
        judge=judge,
        setting=setting,
        mode=mode,
        template_id=template_id,
        params=dict(params or {}),
        limit=limit,
        concurrency=concurrency,
        use_cache=not getattr(args, "no_cache", False),
        kind=kind,
        sample_seed=int(getattr(args, "sample_seed", 0) or 0),
    )


# -- rows -----------------------------------------------------------------------------------


def _failed_response(error: str, attempts: int = 0, messages: Any = None) -> Response:
    return Response.failed(error, attempts=attempts, messages=messages)


def _write_batch(store: Store, run_id: str, batch: ResultBatch) -> None:
    """One transaction: the batch (core/results.py writes it) and the run's updated_at."""
    save_batch(
        store,
        batch,
        also=lambda con: con.execute(
            "UPDATE runs SET updated_at = current_timestamp WHERE run_id = ?", [run_id]
        ),
    )


def _circuit_notes(*clients: ModelClient | None) -> list[str]:
    """Each endpoint that stopped answering (refused connections in a row), said once."""
    return list(
        dict.fromkeys(
            note for c in clients if c is not None for note in [c.circuit_message()] if note
        )
    )


def unsaved_error(spec: RunSpec, exc: BaseException, n_unsaved: int) -> RunError:
    """The run's last flush failed for good: one line with the cause and how to resume."""
    return RunError(
        f"run {spec.run_id!r} stopped (status interrupted): {n_unsaved} finished "
        f"item(s) could not be saved ({exc}). They will be asked again: re-run with "
        f"--run-name {spec.run_id} to resume"
    )


# -- secrets --------------------------------------------------------------------------------


def _secret_values(*endpoints: Endpoint | None) -> list[str]:
    values = []
    for endpoint in endpoints:
        if endpoint is not None and endpoint.api_key_env:
            value = os.environ.get(endpoint.api_key_env)
            if value:
                values.append(value)
        if endpoint is not None:  # credentials inside URLs (?api-key=…, user:pass@)
            values.extend(v for url in endpoint.base_urls for v in url_secrets(url))
    return values


# -- the run --------------------------------------------------------------------------------


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OSError, ValueError):
        return False
    # a zombie (killed child not yet reaped) is not running
    try:
        with open(f"/proc/{int(pid)}/stat", encoding="ascii") as handle:
            return handle.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return True


def _states_sql(needs_judge: bool) -> str:
    """Per written unit of a run: is it done (response ok, and judged when judged)?"""
    done = (
        "r.status = 'ok' AND coalesce(v.status <> 'failed', false)"
        if needs_judge
        else "r.status = 'ok'"
    )
    return (
        "SELECT r.item_id, r.variant, " + done + " AS done FROM responses r "
        "LEFT JOIN results v ON v.run_id = r.run_id AND v.judging = 'default' "
        "AND v.item_id = r.item_id AND v.variant = r.variant WHERE r.run_id = ?"
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
        from core.sampling import plan_sample

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
    from core.sampling import plan_sample

    sample, plan = plan_sample(frame, spec.benchmark, limit, spec.sample_seed)
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
    return scrub_secrets(params, secrets)


# Run params that say how a run is executed, not what it measures: they may change on resume.
_EXECUTION_PARAMS = {
    "limit",
    "concurrency",
    "use_cache",
    "needs_judge",
    "endpoint",
    "judge",
    "item_set_version",
    # the --limit plan: a resume asks its stored item ids (see _limited)
    "sample",
    "limit_order",
}


def _item_set_version(con: Any, item_set: str) -> str | None:
    """When the item set was (re-)imported: a re-import replaces the items under the name."""
    row = con.execute(
        "SELECT CAST(created_at AS VARCHAR) FROM item_sets WHERE name = ?", [item_set]
    ).fetchone()
    return row[0] if row else None


def _show(value: Any) -> str:
    if value is None:
        return "(none)"
    return repr(value) if isinstance(value, str) else json.dumps(value, default=str)


def _urls(endpoint: Any) -> list[str] | None:
    return sorted(endpoint.get("base_urls") or []) if isinstance(endpoint, dict) else None


def check_resume(stored: dict, spec: RunSpec, params: dict) -> list[str]:
    """What differs between a stored run (its runs row as a dict) and the same name asked
    again with `spec` and `params` (as _run_params makes them, plus item_set_version).

    Why: resuming adds results to the stored ones, so a run whose model, URLs, templates,
    generation parameters or items changed would mix two settings under one name. Only how
    the run is executed (concurrency, limit, cache, key variable, timeouts) may change.
    Returns one "what: stored X, now Y" line per difference; [] means resume.
    """
    old = stored.get("params") or {}
    if isinstance(old, str):
        try:
            old = json.loads(old)
        except ValueError:
            old = {}
    if not isinstance(old, dict):
        old = {}
    needs_judge = bool(params.get("needs_judge"))
    judge = spec.judge if needs_judge else None
    out: list[str] = []

    def compare(what: str, before: Any, now: Any) -> None:
        if (before if before != "" else None) != (now if now != "" else None):
            out.append(f"{what}: stored {_show(before)}, now {_show(now)}")

    compare("benchmark", stored.get("benchmark"), spec.benchmark)
    compare("item set", stored.get("item_set"), spec.item_set)
    if old.get("item_set_version") is not None:  # runs older than this check lack it
        compare(
            "item set version (imported at)",
            old.get("item_set_version"),
            params.get("item_set_version"),
        )
    compare("model", stored.get("model"), spec.endpoint.model)
    if "endpoint" in old:
        compare("endpoint URLs", _urls(old.get("endpoint")), _urls(params.get("endpoint")))
    compare("judge model", stored.get("judge_model"), judge.model if judge else None)
    if needs_judge and old.get("judge") is not None:
        compare("judge URLs", _urls(old.get("judge")), _urls(params.get("judge")))
    compare("setting", stored.get("setting"), spec.setting)
    compare("mode", stored.get("mode"), spec.mode)
    compare("template", stored.get("template_id"), spec.template_id)
    for key in sorted((set(old) | set(params)) - _EXECUTION_PARAMS):
        compare(key, old.get(key), params.get(key))
    return out


def _start_run_row(con: Any, spec: RunSpec, task: Task, n_planned: int, params: dict) -> None:
    """Create the runs row, or check a resumed run matches what is asked (same set-up)."""
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
    params = {**params, "item_set_version": _item_set_version(con, spec.item_set)}
    if row is not None:
        stored = dict(zip(columns, row))
        status, pid = stored["status"], stored["pid"]
        differences = check_resume(stored, spec, params)
        if differences:
            raise RunError(
                f"run {spec.run_id!r} already exists with other settings: "
                + "; ".join(differences)
                + ". Resume it with the same flags, or "
                "pick another --run-name."
            )
        if status == "running" and pid and int(pid) != os.getpid() and pid_alive(pid):
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


def _set_status(store: Store, run_id: str, status: str) -> None:
    store.execute(
        "UPDATE runs SET status = ?, updated_at = current_timestamp WHERE run_id = ?",
        [status, run_id],
    )


class _Runner:
    """State of one execute_run session (see the module docstring for the design)."""

    def __init__(
        self,
        store: Store,
        spec: RunSpec,
        task: Task,
        progress: bool,
        flush_interval_s: float,
        flush_units: int,
        secrets: Sequence[str] = (),
    ) -> None:
        self.store, self.spec, self.task = store, spec, task
        self.progress = progress
        self.flush_interval_s = flush_interval_s
        self.flush_units = flush_units
        self.secrets = list(secrets)  # scrubbed from every row written (ResultBatch)
        self.pending = self._new_batch()
        self.stopping = False
        self.closing = False
        self.retried: set[tuple[str, str]] = set()  # units with a row already (re-asked)
        self.write_errors = 0
        self.last_flush_s = 0.0
        self.processed = 0
        self.failed_now = 0
        self.calls = 0
        self.cached_calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cost: float | None = None
        self.latencies: list[float] = []  # bounded sample (reservoir) for p50/p95
        self._lat_seen = 0
        self.flush_wanted: asyncio.Event | None = None
        self.flushed: asyncio.Event | None = None
        self.judge_model = (spec.judge or spec.endpoint).model if task.needs_judge else None

    def _new_batch(self) -> ResultBatch:
        return ResultBatch(secrets=self.secrets)

    # -- accounting ---------------------------------------------------------------------
    def _account(self, sink: CallSink) -> None:
        for call in sink.calls:
            if call["status"] != "ok":
                continue
            self.calls += 1
            self.cached_calls += bool(call["cached"])
            self.prompt_tokens += int(call["prompt_tokens"] or 0)
            self.completion_tokens += int(call["completion_tokens"] or 0)
            if call["cost_usd"] is not None:
                self.cost = (self.cost or 0.0) + float(call["cost_usd"])
            if not call["cached"] and call["latency_ms"] is not None:
                self._lat_seen += 1
                if len(self.latencies) < 5000:
                    self.latencies.append(call["latency_ms"])
                else:  # reservoir sampling keeps memory flat
                    j = int(time.perf_counter_ns() % self._lat_seen)
                    if j < 5000:
                        self.latencies[j] = call["latency_ms"]

    def _add(self, unit: WorkUnit, result: UnitResult, sink: CallSink) -> None:
        """Queue a finished unit's rows: response, default result, call records, cache."""
        key = (self.spec.run_id, str(unit.item_id), str(unit.variant))
        response = result.response
        response_ok = response.status == "ok"
        if not response_ok:
            self.failed_now += 1
        verdict = result.result
        if verdict is None and self.task.needs_judge and response_ok:
            verdict = Result.failed("the task returned no verdict")
        if verdict is not None and not verdict.done and response_ok:
            self.failed_now += 1
        old = (key[1], key[2]) in self.retried
        pending = self.pending
        pending.add_response(key, response, retried=old)
        if verdict is not None:
            pending.add_result(key, verdict, retried=old, judge_model=self.judge_model)
        elif old:
            pending.drop_result(key)
        for call in sink.calls:
            pending.add_call(key, call)
        if sink.cache_rows:
            pending.add_cache_rows(sink.cache_rows)
        self._account(sink)

    # -- flushing -----------------------------------------------------------------------
    async def flush(self) -> None:
        """Write what finished so far; on a database error keep it for the next try."""
        if self.pending.empty:
            return
        batch, self.pending = self.pending, self._new_batch()
        started = time.perf_counter()
        try:
            await asyncio.to_thread(_write_batch, self.store, self.spec.run_id, batch)
        except DatabaseError as exc:
            batch.absorb(self.pending)
            self.pending = batch
            self.write_errors += 1
            print(f"warning: could not save results yet ({exc}); will retry", file=sys.stderr)
            if self.closing:
                raise
            return
        finally:
            self.last_flush_s = time.perf_counter() - started
        assert self.flushed is not None
        self.flushed.set()

    def next_interval(self) -> float:
        """Flush at least every flush_interval_s, but spend at most ~1/8 of the time writing
        (a DuckDB open + write + close costs 0.1-0.3 s on a busy 2-core machine)."""
        return min(5.0, max(self.flush_interval_s, 8 * self.last_flush_s))

    async def flusher(self) -> None:
        """Flush on the timer, or sooner when a batch is full; one last flush on close."""
        assert self.flush_wanted is not None
        while not self.closing:
            try:
                await asyncio.wait_for(self.flush_wanted.wait(), self.next_interval())
            except TimeoutError:
                pass
            self.flush_wanted.clear()
            await self.flush()
        await self.flush()

    # -- work ---------------------------------------------------------------------------
    async def worker(
        self, units: Iterator[WorkUnit], items: _ItemRows, ctx: RunContext, bar: Any
    ) -> None:
        """Take units until none is left or the run stops; each unit's rows join `pending`."""
        assert self.flush_wanted is not None and self.flushed is not None
        for unit in units:
            if self.stopping:
                return
            while len(self.pending) >= 4 * self.flush_units:  # back-pressure: DB is busy
                self.flushed.clear()
                self.flush_wanted.set()
                await self.flushed.wait()
            sink = CallSink(refresh=(str(unit.item_id), str(unit.variant)) in self.retried)
            token = CURRENT_SINK.set(sink)
            try:
                result = await self._process(unit, items, ctx)
            finally:
                CURRENT_SINK.reset(token)
            self._add(unit, result, sink)
            self.processed += 1
            if bar is not None:
                bar.update(1)
                if self.failed_now:
                    bar.set_postfix_str(f"failed {self.failed_now}", refresh=False)
            if len(self.pending) >= self.flush_units:
                self.flush_wanted.set()

    async def _process(self, unit: WorkUnit, items: _ItemRows, ctx: RunContext) -> UnitResult:
        """The task's result for one unit; anything going wrong fails this unit only (it is
        recorded with its error and retried on re-run), never the run."""
        try:
            item = items.get(str(unit.item_id))
            if item is None:
                return UnitResult(_failed_response(f"item {unit.item_id!r} not in set"))
            result = await self.task.process(unit, item, ctx)
        except asyncio.CancelledError:
            raise
        except CallFailed as exc:
            return UnitResult(_failed_response(str(exc), exc.attempts))
        except Exception as exc:  # noqa: BLE001 - recorded, retried on re-run
            return UnitResult(_failed_response(f"{type(exc).__name__}: {exc}"))
        if not isinstance(result, UnitResult):
            what = type(result).__name__
            return UnitResult(_failed_response(f"task returned {what}, not UnitResult"))
        if not isinstance(result.response, Response) or not isinstance(
            result.result, (Result, type(None))
        ):
            what = f"{type(result.response).__name__}/{type(result.result).__name__}"
            return UnitResult(_failed_response(f"task returned {what}, not Response/Result | None"))
        return result


# -- execute_run, step by step ---------------------------------------------------------------


@dataclass
class _Plan:
    """What a session has to do, read from the database before the first request."""

    units: list[WorkUnit]  # every unit of the run (planned)
    todo: list[WorkUnit]  # not done yet: asked in this session
    retried: set[tuple[str, str]]  # units of todo with a row already (they replace it)
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


def _plan(store: Store, spec: RunSpec, task: Task, params: dict, scopes: set[str]) -> _Plan:
    """Items, units, the runs row, each unit's state and the known cache keys, in one short
    connection (each open costs milliseconds, and the app reads between our writes)."""
    needs_judge = bool(task.needs_judge)

    def prepare(con: Any) -> tuple[pd.DataFrame, list[WorkUnit], dict, dict[str, set[str]]]:
        items_df = _load_items(con, spec)
        for key in ("sample", "limit_order"):  # the --limit plan, stored for an exact resume
            if key in spec.params:
                params[key] = spec.params[key]
        units = list(task.units(items_df))
        _start_run_row(con, spec, task, len(units), params)
        states = {
            (str(a), str(b)): bool(ok)
            for a, b, ok in con.execute(_states_sql(needs_judge), [spec.run_id]).fetchall()
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
        return items_df, units, states, keys

    items_df, units, states, known_keys = store.transaction(prepare)
    # what the task wants said about these items before any request (Mis-prompt: no controls)
    for note in getattr(task, "warnings", lambda _items: [])(items_df):
        print(f"warning: {note}", file=sys.stderr)
    todo = [u for u in units if not states.get((str(u.item_id), str(u.variant)), False)]
    retried = {(str(u.item_id), str(u.variant)) for u in todo} & set(states)
    return _Plan(units, todo, retried, _ItemRows(items_df), known_keys)


def progress_bar(total: int, initial: int, unit: str, desc: str) -> Any:
    """tqdm on stderr; redrawn less often into a log file (a background job) than a terminal.
    Shared by runs and `rescore`."""
    from tqdm import tqdm

    interactive = sys.stderr.isatty()
    return tqdm(
        total=total,
        initial=initial,
        unit=unit,
        dynamic_ncols=True,
        desc=desc,
        file=sys.stderr,
        smoothing=0.1,
        mininterval=0.1 if interactive else 2.0,
    )


def install_stop_signals(on_stop: Callable[[str], None]) -> list[int]:
    """SIGTERM/SIGINT call on_stop(signal name) instead of killing the process, so a run or a
    rescore stops taking work and flushes what finished. Main thread only (elsewhere asyncio
    cannot install handlers); returns the signals installed, for remove_stop_signals."""
    loop = asyncio.get_running_loop()
    installed: list[int] = []
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, on_stop, sig.name)
                installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
    return installed


def remove_stop_signals(installed: list[int]) -> None:
    loop = asyncio.get_running_loop()
    for sig in installed:
        loop.remove_signal_handler(sig)


def _install_signals(runner: _Runner, worker_tasks: list[asyncio.Task]) -> list[int]:
    """SIGTERM/SIGINT stop taking units and cancel the workers; what finished is still
    flushed and the run marked cancelled."""

    def stop(signame: str) -> None:
        if not runner.stopping:
            print(
                f"\n{signame}: stopping; finished items are saved, re-run to resume",
                file=sys.stderr,
            )
        runner.stopping = True
        for t in worker_tasks:
            t.cancel()

    return install_stop_signals(stop)


async def _work(
    runner: _Runner,
    plan: _Plan,
    ctx: RunContext,
    bar: Any,
    concurrency: int,
    worker_tasks: list[asyncio.Task],
) -> None:
    """A fixed pool of workers over the plan's units while the flusher writes; then the last
    flush. Raises the first worker error, or RunError when the last flush cannot be saved."""
    assert runner.flush_wanted is not None
    flusher = asyncio.ensure_future(runner.flusher())
    iterator = iter(plan.todo)
    try:
        worker_tasks.extend(
            asyncio.ensure_future(runner.worker(iterator, plan.items, ctx, bar))
            for _ in range(min(concurrency, max(1, len(plan.todo))))
        )
        results = await asyncio.gather(*worker_tasks, return_exceptions=True)
        errors = [
            r
            for r in results
            if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError)
        ]
        runner.closing = True
        runner.flush_wanted.set()
        try:
            await flusher  # the last flush; raises if the database stays unavailable
        except DatabaseError as exc:
            raise unsaved_error(runner.spec, exc, len(runner.pending)) from None
        if errors:
            raise errors[0]
    finally:
        if not flusher.done():
            flusher.cancel()


def _finish(
    store: Store, spec: RunSpec, plan: _Plan, needs_judge: bool, stopped: bool
) -> tuple[str, int, int]:
    """The run's final status and its done/failed counts over all sessions, from the
    database (the truth after resumes), in one short connection."""

    def finish(con: Any) -> tuple[str, int, int]:
        rows = con.execute(_states_sql(needs_judge), [spec.run_id]).fetchall()
        wanted = {(str(u.item_id), str(u.variant)) for u in plan.units}
        n_done = sum(1 for a, b, ok in rows if ok and (str(a), str(b)) in wanted)
        n_failed = sum(1 for a, b, ok in rows if not ok and (str(a), str(b)) in wanted)
        final = "cancelled" if stopped else ("failed" if n_failed else "done")
        con.execute(
            "UPDATE runs SET status = ?, updated_at = current_timestamp WHERE run_id = ?",
            [final, spec.run_id],
        )
        return final, n_done, n_failed

    return store.transaction(finish)


def _summary(
    runner: _Runner, plan: _Plan, status: str, done: int, failed: int, elapsed_s: float
) -> RunSummary:
    """This session's counters next to the run's totals (latency percentiles from the
    bounded sample the runner kept)."""
    lat = sorted(runner.latencies)
    return RunSummary(
        run_id=runner.spec.run_id,
        status=status,
        planned=len(plan.units),
        done=done,
        failed=failed,
        skipped=plan.skipped,
        processed=runner.processed,
        calls=runner.calls,
        cached_calls=runner.cached_calls,
        prompt_tokens=runner.prompt_tokens,
        completion_tokens=runner.completion_tokens,
        cost_usd=runner.cost,
        latency_ms_p50=statistics.median(lat) if lat else None,
        latency_ms_p95=lat[min(len(lat) - 1, int(0.95 * len(lat)))] if lat else None,
        elapsed_s=elapsed_s,
    )


def _report(summary: RunSummary, progress: bool, *clients: ModelClient | None) -> None:
    """What the person at the terminal needs: endpoints that stopped answering, the summary
    table and how to retry or resume."""
    for note in _circuit_notes(*clients):
        print(f"error: {note}", file=sys.stderr)
    if not progress:
        return
    print(summary.table(), file=sys.stderr)
    if summary.status == "failed":
        print(
            f"  {summary.failed} item(s) failed; re-run with --run-name {summary.run_id} "
            "to retry them",
            file=sys.stderr,
        )
    elif summary.status == "cancelled":
        print(f"  resume with --run-name {summary.run_id}", file=sys.stderr)


async def _close(
    store: Store,
    spec: RunSpec,
    model: ModelClient,
    bar: Any,
    installed: list[int],
    early_status: str | None,
) -> None:
    """Undo what the run set up, whatever happened: signal handlers, progress bar, sockets
    (closing the model's client closes every pooled client of this loop); a run stopped by an
    exception gets `early_status` (failed, or interrupted when results could not be saved)."""
    remove_stop_signals(installed)
    if bar is not None:
        bar.close()
    try:
        await model.aclose()
    except Exception:  # noqa: BLE001 - closing sockets must not hide the run's outcome
        pass
    if early_status is not None:
        try:
            _set_status(store, spec.run_id, early_status)
        except DatabaseError:
            pass


async def _execute(
    store: Store,
    spec: RunSpec,
    task: Task,
    progress: bool,
    flush_interval_s: float,
    flush_units: int,
) -> RunSummary:
    """Open clients, plan, work with a progress bar and signal handlers, finish, report."""
    started = time.perf_counter()
    needs_judge = bool(task.needs_judge)
    if needs_judge and spec.judge is None:
        spec = replace(spec, judge=spec.endpoint)
    secrets = _secret_values(spec.endpoint, spec.judge)
    model, judge_client = _open_clients(store, spec, needs_judge)
    params = _run_params(spec, task, secrets)
    scopes = {cache_scope(c.endpoint) for c in (model, judge_client) if c is not None}
    plan = _plan(store, spec, task, params, scopes)
    for client in (model, judge_client):
        if client is not None:
            client.enable_bulk_cache(plan.known_keys.get(cache_scope(client.endpoint)))
    runner = _Runner(store, spec, task, progress, flush_interval_s, flush_units, secrets)
    runner.retried = plan.retried
    runner.flush_wanted = asyncio.Event()
    runner.flushed = asyncio.Event()
    ctx = RunContext(
        model=model, judge=judge_client, params=dict(spec.params), run_id=spec.run_id, spec=spec
    )
    bar = (
        progress_bar(len(plan.units), plan.skipped, "item", spec.run_id[:40]) if progress else None
    )
    worker_tasks: list[asyncio.Task] = []
    installed = _install_signals(runner, worker_tasks)
    concurrency = max(1, spec.concurrency or spec.endpoint.max_concurrency)
    # Everything alive now (modules, items, plan) lives until the run ends: move it out of the
    # collector's way so each full collection only walks what the run allocates.
    gc.freeze()
    status = "failed"
    finished = False
    try:
        try:
            await _work(runner, plan, ctx, bar, concurrency, worker_tasks)
        except RunError:
            status = "interrupted"  # the last flush could not be saved
            raise
        status, done, failed = await asyncio.to_thread(
            _finish, store, spec, plan, needs_judge, runner.stopping
        )
        finished = True
    finally:
        gc.unfreeze()
        await _close(store, spec, model, bar, installed, None if finished else status)
    summary = _summary(runner, plan, status, done, failed, time.perf_counter() - started)
    _report(summary, progress, model, judge_client)
    return summary


def execute_run(
    store: Store,
    spec: RunSpec,
    task: Task,
    progress: bool = True,
    *,
    flush_interval_s: float = 0.5,
    flush_units: int = 200,
) -> RunSummary:
    """Run (or resume) spec with task; blocks until done, failed or cancelled."""
    return asyncio.run(_execute(store, spec, task, progress, flush_interval_s, flush_units))


# -- a tiny task for tests and benchmarks ----------------------------------------------------

ECHO_JUDGE_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "echo_verdict",
        "schema": {
            "type": "object",
            "properties": {"detection": {"type": "boolean"}, "rationale": {"type": "string"}},
            "required": ["detection", "rationale"],
        },
    },
}


@dataclass
class EchoTask:
    """One model call per item (its prompt), then one judge call with a JSON schema.

    Exercises everything a real benchmark does (two roles, verdict rows, failures) without
    benchmark logic; used by the runner's tests, the jobs test and bench/bench_runner.py.
    """

    benchmark: str = "echo"
    needs_judge: bool = True
    variant: str = "echo"
    max_tokens: int = 64

    def units(self, items: pd.DataFrame) -> list[WorkUnit]:
        return [WorkUnit(str(i), self.variant) for i in items["item_id"]]

    async def process(self, unit: WorkUnit, item: dict, ctx: RunContext) -> UnitResult:
        messages = [{"role": "user", "content": str(item.get("prompt") or "")}]
        try:
            answer = await ctx.model.chat(messages, max_tokens=self.max_tokens)
        except CallFailed as exc:
            return UnitResult(_failed_response(str(exc), exc.attempts, messages))
        response = Response.answered(messages, answer, scores={"length": len(answer.text)})
        if not self.needs_judge or ctx.judge is None:
            return UnitResult(response)
        judge_messages = [
            {"role": "system", "content": "Does the answer repeat the question?"},
            {"role": "user", "content": f"Q: {messages[0]['content']}\nA: {answer.text}"},
        ]
        try:
            verdict_call = await ctx.judge.chat(
                judge_messages, max_tokens=64, response_format=ECHO_JUDGE_SCHEMA, role="judge"
            )
        except CallFailed as exc:
            return UnitResult(response, Result.failed(str(exc)))
        try:
            parsed = json.loads(verdict_call.text)
            detected = bool(parsed["detection"])
            verdict = Result(
                status="ok",
                answer="D" if detected else "∅",
                labels={"detection": detected},
                explanation=str(parsed.get("rationale", "")),
                parse_note="schema",
            )
        except (ValueError, KeyError, TypeError) as exc:
            verdict = Result.failed(f"unparsable judge output: {exc}")
        verdict.raw = verdict_call.text
        verdict.prompt_tokens = verdict_call.prompt_tokens
        verdict.completion_tokens = verdict_call.completion_tokens
        verdict.latency_ms = verdict_call.latency_ms
        verdict.cost_usd = verdict_call.cost_usd
        return UnitResult(response, verdict)


def create_item_set(store: Store, name: str, benchmark: str, prompts: list[str]) -> None:
    """Test/bench helper: an item set of plain prompts (item ids i0001, i0002, ...)."""
    frame = pd.DataFrame(
        {
            "item_set": name,
            "item_id": [f"i{i:05d}" for i in range(1, len(prompts) + 1)],
            "benchmark": benchmark,
            "prompt": prompts,
        }
    )

    store.transaction(lambda con: replace_item_set(con, name, benchmark, frame, origin="test"))


def _echo_main(argv: list[str] | None = None) -> int:
    """`python -m core.runner --items SET …`: the EchoTask from a command line (tests only)."""
    from core.cli import add_db_arg

    parser = argparse.ArgumentParser(
        prog="python -m core.runner", description="run the test-only EchoTask"
    )
    add_run_args(parser, judge=True)
    add_db_arg(parser)
    parser.add_argument("--no-judge", action="store_true")
    args = parser.parse_args(argv)
    store = Store.open(args.db)
    spec = spec_from_args(args, "echo", setting="echo")
    try:
        summary = execute_run(
            store, spec, EchoTask(needs_judge=not args.no_judge), progress=not args.quiet
        )
    except DatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(summary)
    return 0 if summary.status in ("done", "cancelled") else 1


if __name__ == "__main__":
    sys.exit(_echo_main())
