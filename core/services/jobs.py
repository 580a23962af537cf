"""Runs as background jobs: start `python -m core run …` detached, read progress, cancel.

Why a subprocess and not a thread in the app: DuckDB allows one writing process at a time and
a run writes for minutes. The app never writes during a run; it starts a CLI process (the same
code path as the command line), which flushes in short transactions, and polls the database
for progress. Cancelling sends SIGTERM; the runner flushes what finished and marks the run
cancelled. A run killed harder (SIGKILL, reboot) shows as "interrupted" and resumes by name.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd

from core.engine.endpoints import (
    SECRET_URLS_ENV_VAR,
    check_key_env_name,
    hide_url_secrets,
    looks_like_key,
    redact_url,
)
from core.registry import BENCHMARKS as REGISTRY
from core.store import (
    PROJECT_ROOT,
    DatabaseReadOnly,
    Store,
    is_writable,
    parse_location,
    readonly_message,
)

LOG_DIR_NAME = "run-logs"
# Items a run started from a page asks by default (every start form uses it): a first run on
# the local model should finish in minutes, not ask every item of the set (0 = all items).
DEFAULT_LIMIT = 3


@dataclass
class Job:
    pid: int
    run_name: str
    log_path: Path
    command: list[str]
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)

    def wait(self, timeout: float | None = None) -> int | None:
        """The child's exit code once it ended (None when it has not within `timeout`).

        A run's status turns `done` before its process writes its last log line and exits:
        whoever reads the whole log waits for this, not for the status."""
        if self.process is None:
            return None
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None


def log_path_for(db_path: str | os.PathLike[str], run_id: str) -> Path:
    """Logs live next to the database (each database has its own runs); a DuckLake's on this
    machine, under data/lakes/<its digest> (`db_path` is a store's `location`)."""
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in run_id)
    return parse_location(str(db_path)).local_dir / LOG_DIR_NAME / f"{safe}.log"


def _name_for(cli_args: list[str]) -> str:
    """The default run name the command would pick, fixed now so the app can follow it: the
    benchmark's variant (its first run field, as the registry says) and mode."""
    from core.engine.endpoints import add_endpoint_args, endpoint_from_args
    from core.engine.runner import default_run_name

    benchmark = cli_args[1] if len(cli_args) > 1 and cli_args[0] == "run" else "run"
    fields = REGISTRY[benchmark].run_fields if benchmark in REGISTRY else ()
    parser = argparse.ArgumentParser(add_help=False)
    add_endpoint_args(parser, "model")
    for run_field in fields:
        parser.add_argument(
            run_field.flag,
            dest=run_field.key,
            action="store_true" if run_field.kind == "flag" else "store",
        )
    known, _ = parser.parse_known_args(cli_args)
    endpoint = endpoint_from_args(known, "model")
    variant = getattr(known, fields[0].key) if fields and fields[0].kind != "flag" else None
    if variant and fields[0].kind == "multi":
        variant = variant.replace(",", "+")
    return default_run_name(
        benchmark,
        endpoint.model if endpoint else "model",
        variant,
        "passive" if getattr(known, "passive", False) else None,
    )


def _shown_arg(arg: str, flag: str) -> str:
    """An argument as the log shows it: URL credentials and a key pasted as a variable name
    replaced by *** (the log is read in the app and kept next to the database)."""
    if flag.endswith("api-key-env") and looks_like_key(arg):
        return "***"
    return redact_url(arg) if "://" in arg else arg


def start_cli_run(
    cli_args: list[str],
    db_path: str | os.PathLike[str],
    *,
    module: str = "core",
    env: dict[str, str] | None = None,
) -> Job:
    """Start `python -m core <cli_args> --db DB [--run-name NAME]` detached from the caller.

    The child runs in its own session (a Streamlit rerun or a closed browser tab does not stop
    it); stdout and stderr go to a log file next to the database. `module` exists for tests.
    """
    args = list(cli_args)
    if "--run-name" in args:
        run_name = args[args.index("--run-name") + 1]
    else:
        run_name = _name_for(args)
        args += ["--run-name", run_name]
    return _start_detached(args, db_path, run_name, run_name, module=module, env=env)


def judging_log_name(run_id: str, judging: str) -> str:
    """The log name of a judging started from the app (beside its run's log)."""
    return f"{run_id}@judging@{judging}"


def start_cli_rescore(
    cli_args: list[str],
    db_path: str | os.PathLike[str],
    *,
    module: str = "core",
    env: dict[str, str] | None = None,
) -> Job:
    """Start `python -m core rescore --source RUN --as NAME … --db DB` detached, as runs are
    (one writer at a time; the app polls the judging's row and records). `run_name` of the
    Job is the judging's name; its log is judging_log_name(run, judging)."""
    args = list(cli_args)
    if not args or args[0] != "rescore" or "--source" not in args or "--as" not in args:
        raise ValueError("a judging started from the app names its run and itself")
    run_id = args[args.index("--source") + 1]
    judging = args[args.index("--as") + 1]
    return _start_detached(
        args, db_path, judging, judging_log_name(run_id, judging), module=module, env=env
    )


def _start_detached(
    cli_args: list[str],
    db_path: str | os.PathLike[str],
    name: str,
    log_name: str,
    *,
    module: str,
    env: dict[str, str] | None,
) -> Job:
    """The child process of a run or a judging: own session, log next to the database, URL
    secrets through its environment."""
    args = list(cli_args)
    run_name = name
    # a key inside a base URL (?code=…, user:pass@) must not show in the child's command line,
    # which every local user can read: it goes through the child's environment instead
    args, hidden = hide_url_secrets(args)
    location = parse_location(str(db_path))
    db = location.text
    if location.path is not None and location.path.exists() and not is_writable(location.path):
        raise DatabaseReadOnly(readonly_message(location.path))  # a run writes; so does its log
    command = [sys.executable, "-m", module, *args, "--db", db]
    log_path = log_path_for(db, log_name)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    child_env = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"}
    child_env.pop(SECRET_URLS_ENV_VAR, None)
    if hidden:
        child_env[SECRET_URLS_ENV_VAR] = json.dumps(hidden)
    with open(log_path, "ab") as log:
        shown = [_shown_arg(a, args[n - 1] if n else "") for n, a in enumerate(args)]
        log.write(f"$ python -m {module} {' '.join(shown)}\n".encode())
        log.flush()
        proc = subprocess.Popen(
            command,
            cwd=PROJECT_ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=child_env,
        )
    # reap the child when it ends so it does not linger as a zombie of the app's process
    threading.Thread(target=proc.wait, daemon=True).start()
    return Job(pid=proc.pid, run_name=run_name, log_path=log_path, command=command, process=proc)


def read_log(db_path: str | os.PathLike[str], run_id: str, max_chars: int = 4000) -> str | None:
    """The tail of a run's log (progress bar frames collapsed to the last one per line)."""
    path = log_path_for(db_path, run_id)
    if not path.exists():
        return None
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - 4 * max_chars))
        text = handle.read().decode("utf-8", errors="replace")
    lines = [line.split("\r")[-1] for line in text.splitlines()]
    return "\n".join(lines)[-max_chars:]


# -- progress -------------------------------------------------------------------------------

_PROGRESS_SQL = """
WITH units AS (
    SELECT r.run_id,
           count(*) FILTER (WHERE r.status = 'ok' AND (NOT coalesce(TRY_CAST(json_extract(
               runs.params, '$.needs_judge') AS BOOLEAN), false) OR v.status <> 'failed')) AS done,
           count(*) AS written
    FROM responses r
    JOIN runs USING (run_id)
    LEFT JOIN results v ON v.run_id = r.run_id AND v.judging = 'default'
                        AND v.item_id = r.item_id AND v.variant = r.variant
                        AND v.epoch = r.epoch
    {where_units}
    GROUP BY r.run_id
)
SELECT runs.run_id, runs.benchmark, runs.kind, runs.status, runs.pid, runs.n_planned AS planned,
       coalesce(units.done, 0) AS done, coalesce(units.written, 0) - coalesce(units.done, 0)
       AS failed, runs.model, runs.endpoint, runs.setting, runs.mode, runs.judge_model,
       runs.item_set, runs.weak_model, runs.created_at, runs.updated_at,
       json_extract_string(runs.params, '$.judge_template') AS judge_template
FROM runs LEFT JOIN units USING (run_id)
{where_runs}
ORDER BY runs.created_at DESC
"""


def _effective_status(status: str | None, pid: Any) -> str:
    from core.engine.runner import pid_alive

    if status == "running" and not pid_alive(pid if pd.notna(pid) else None):
        return "interrupted"
    return status or "pending"


def list_runs(
    store: Store, benchmark: str | None = None, kind: str | None = "eval"
) -> pd.DataFrame:
    """Every run with its progress; status 'interrupted' = marked running but its process is gone."""
    clauses, params = [], []
    if benchmark:
        clauses.append("runs.benchmark = ?")
        params.append(benchmark)
    if kind:
        clauses.append("coalesce(runs.kind, 'eval') = ?")
        params.append(kind)
    where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
    sql = _PROGRESS_SQL.format(where_units=where, where_runs=where)
    frame = store.df(sql, params * 2)
    if len(frame):
        frame["status"] = [_effective_status(s, p) for s, p in zip(frame["status"], frame["pid"])]
        planned = frame["planned"].fillna(0).astype(float)
        frame["progress"] = (frame["done"] / planned.where(planned > 0)).fillna(0.0).clip(0, 1)
    else:
        frame["progress"] = pd.Series(dtype=float)
    return frame


def run_progress(store: Store, run_id: str) -> dict:
    """planned, done, failed, status (+ pid, model, updated_at) of one run; {} if unknown."""
    frame = store.df(
        _PROGRESS_SQL.format(
            where_units="WHERE runs.run_id = ?", where_runs="WHERE runs.run_id = ?"
        ),
        [run_id, run_id],
    )
    if frame.empty:
        return {}
    row = frame.iloc[0]
    return {
        "run_id": run_id,
        "planned": int(row["planned"] or 0),
        "done": int(row["done"]),
        "failed": int(row["failed"]),
        "status": _effective_status(row["status"], row["pid"]),
        "pid": None if pd.isna(row["pid"]) else int(row["pid"]),
        "model": row["model"],
        "benchmark": row["benchmark"],
        "updated_at": row["updated_at"],
    }


RATE_WINDOW_S = 60

_RATE_SQL = """
WITH t AS (SELECT created_at FROM {table} WHERE run_id = ?),
     last AS (SELECT max(created_at) AS t1 FROM t),
     first AS (SELECT min(created_at) AS t0 FROM t, last
               WHERE created_at >= t1 - INTERVAL {window} SECOND)
SELECT (SELECT count(*) FROM t) AS n,
       (SELECT count(*) FROM t, first WHERE created_at > t0) AS n_after_first,
       (SELECT epoch(t1) - epoch(t0) FROM first, last) AS span_s
"""


def rate_per_s(n_after_first: int, span_s: float | None) -> float | None:
    """Rows per second over a window. Rows are stamped per flush (one transaction time), so
    count the rows written after the window's first flush over the time since it; None with a
    single flush."""
    if not span_s or span_s <= 0 or not n_after_first:
        return None
    return n_after_first / span_s


def eta_seconds(planned: int, done: int, rate: float | None) -> float | None:
    """Seconds left at the recent rate (None when there is no rate yet, 0 when done)."""
    remaining = max(int(planned or 0) - int(done or 0), 0)
    if remaining == 0:
        return 0.0
    return remaining / rate if rate else None


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def run_stats(store: Store, run_id: str) -> dict[str, Any]:
    """What a watched run has cost and how fast it goes: calls, calls/s (last minute), tokens and
    cost (from `calls`), responses/s (last minute, from `responses`) and the ETA at that rate."""
    with store.connect() as con:
        calls = con.execute(
            _RATE_SQL.format(table="calls", window=RATE_WINDOW_S), [run_id]
        ).fetchall()[0]
        resp = con.execute(
            _RATE_SQL.format(table="responses", window=RATE_WINDOW_S), [run_id]
        ).fetchall()[0]
        tokens, cost = con.execute(
            "SELECT coalesce(sum(coalesce(prompt_tokens, 0) + coalesce(completion_tokens, 0)), 0),"
            " sum(cost_usd) FROM calls WHERE run_id = ?",
            [run_id],
        ).fetchall()[0]
        wall = con.execute(
            "SELECT epoch(updated_at) - epoch(created_at), "
            "epoch(CAST(current_timestamp AS TIMESTAMP)) - epoch(created_at), "
            "epoch(updated_at), "
            "TRY_CAST(json_extract(params, '$.active_s_before') AS DOUBLE), "
            "TRY_CAST(json_extract(params, '$.session_started_at') AS DOUBLE) "
            "FROM runs WHERE run_id = ?",
            [run_id],
        ).fetchall()
    progress = run_progress(store, run_id)
    resp_rate = rate_per_s(resp[1], resp[2])
    elapsed = _session_elapsed(progress, wall[0][1] if wall else None)
    done = progress.get("done", 0) if progress else 0
    if resp_rate is None and elapsed and progress and progress["status"] == "running":
        # units are written when they finish: a slow model flushes rarely, so the last-minute
        # rate has fewer than two flushes for a long time; the session's average says more
        answered_now = store.scalar(
            "SELECT count(*) FROM responses WHERE run_id = ? AND created_at >= "
            "CAST(current_timestamp AS TIMESTAMP) - to_microseconds(CAST(? AS BIGINT))",
            [run_id, int(elapsed * 1e6)],
        )
        resp_rate = int(answered_now) / elapsed if answered_now else None
    return {
        "calls": int(calls[0]),
        "calls_per_s": rate_per_s(calls[1], calls[2]),
        "tokens": int(tokens or 0),
        "cost_usd": None if cost is None else float(cost),
        "responses": int(resp[0]),
        "responses_per_s": resp_rate,
        "done": done,
        "planned": progress.get("planned", 0) if progress else 0,
        "elapsed_s": elapsed,
        "duration_s": active_seconds(*wall[0][0:1], *wall[0][2:]) if wall else None,
        "eta_s": eta_seconds(progress.get("planned", 0), done, resp_rate) if progress else None,
    }


def active_seconds(
    since_created: float | None,
    updated: float | None,
    before: float | None,
    session_started: float | None,
) -> float | None:
    """A run's active time: its earlier sessions' spans plus this (or the last) session's,
    from its start to the run's last write — not the idle gap between a failed attempt and
    its resume ("6 min 17 s" for 10 s of work). A run recorded before sessions were kept:
    creation to last write."""
    if session_started is None or updated is None:
        return None if since_created is None else max(float(since_created), 0.0)
    return float(before or 0.0) + max(float(updated) - float(session_started), 0.0)


def _session_elapsed(progress: dict, since_created: float | None) -> float | None:
    """Seconds since this run's process started (a resumed run: this session), else since the
    run was created; None for a run that is not running."""
    if not progress or progress.get("status") != "running":
        return None
    pid = progress.get("pid")
    started = process_started_at(pid) if pid else None
    if started is not None:
        return max((datetime.now() - started).total_seconds(), 0.0)
    return None if since_created is None else max(float(since_created), 0.0)


def process_started_at(pid: int) -> datetime | None:
    """When process `pid` started (local time), from /proc; None where /proc cannot say."""
    try:
        with open(f"/proc/{int(pid)}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(") ", 1)[-1].split()
        with open("/proc/stat", encoding="ascii") as handle:
            boot = next(int(line.split()[1]) for line in handle if line.startswith("btime "))
    except (OSError, ValueError, StopIteration, IndexError):
        return None
    ticks = int(fields[19])  # field 22 of stat: start time in clock ticks after boot
    return datetime.fromtimestamp(boot + ticks / os.sysconf("SC_CLK_TCK"))


def _looks_like_our_run(pid: int, last_write: Any) -> bool:
    """Guard against pid reuse: the process holding the run's pid must have started before the
    run last wrote its row (every runner writes it when it starts and after each batch); a
    process that took the pid over after the run died started later. Without /proc (macOS),
    the recorded pid is trusted."""
    started = process_started_at(pid)
    if started is None or last_write is None or pd.isna(last_write):
        return started is None
    return started <= pd.Timestamp(last_write).to_pydatetime() + timedelta(seconds=2)


def cancel_run(store: Store, run_id: str) -> str:
    """Ask a running run to stop (SIGTERM). Returns what happened, for the UI/CLI to show."""
    progress = run_progress(store, run_id)
    if not progress:
        return f"no run named {run_id!r}"
    status, pid = progress["status"], progress["pid"]
    if status == "running" and pid and _looks_like_our_run(pid, progress["updated_at"]):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        else:
            return (
                f"asked run {run_id} (process {pid}) to stop; finished items are kept and "
                "it can be resumed"
            )
    if status in ("running", "interrupted"):
        store.execute(
            "UPDATE runs SET status = 'cancelled', updated_at = current_timestamp WHERE run_id = ?",
            [run_id],
        )
        return f"run {run_id} was not running any more; marked cancelled"
    return f"run {run_id} is {status}; nothing to cancel"


def run_item_set(store: Store, run_id: str) -> str | None:
    return store.scalar("SELECT item_set FROM runs WHERE run_id = ?", [run_id])


# -- the Runs page's form -------------------------------------------------------------------


def benchmarks() -> dict[str, str]:
    """Name -> description of the registered benchmarks, read now (not at import, so a
    benchmark registered later is offered too)."""
    return {b.name: b.description for b in REGISTRY.values()}


def item_sets(store: Store, benchmark: str) -> pd.DataFrame:
    """Item sets of one benchmark (name, n_items, origin), for the start-a-run form."""
    return store.df(
        "SELECT name, n_items, origin, created_at FROM item_sets WHERE benchmark = ? ORDER BY name",
        [benchmark],
    )


def planned_composition(
    store: Store, item_set: str, limit: int | None = None, seed: int = 0
) -> dict[str, int]:
    """Items per stratum (its first `sample_strata` column, or primary category / 'control'
    for a benchmark with controls) that a run of this set
    with --limit/--sample-seed will ask: what the form shows before a run starts."""
    from core.engine.sampling import plan_sample, stratum_frame

    items = store.df(
        "SELECT * EXCLUDE (item_set) FROM items WHERE item_set = ? ORDER BY rowid", [item_set]
    )
    if items.empty:
        return {}
    benchmark = str(items["benchmark"].iloc[0])
    if limit:
        items, _plan = plan_sample(items, benchmark, int(limit), int(seed))
    framed = stratum_frame(items, benchmark)
    bench = REGISTRY[benchmark]
    col = "_stratum" if bench.has_controls else bench.sample_strata[0]
    counts = framed[col].astype(str).value_counts()
    return {str(k): int(v) for k, v in sorted(counts.items())}


def build_cli_args(
    benchmark: str,
    item_set: str,
    *,
    endpoint: str | None = None,
    base_url: str | None = None,
    model: str | None = None,
    api_key_env: str | None = None,
    judge_endpoint: str | None = None,
    fields: dict[str, Any] | None = None,
    limit: int | None = None,
    concurrency: int | None = None,
    run_name: str | None = None,
    sample_seed: int | None = None,
    **field_values: Any,
) -> list[str]:
    """The `python -m core run …` words for a form's choices (the UI shows them, too).

    The benchmark's own choices are its registry run fields, given in `fields` or as keywords
    named after their flags (`setting=`, `passive=`, `conditions=`, `method=`, `template=`...).
    """
    if benchmark not in REGISTRY:
        raise ValueError(f"unknown benchmark {benchmark!r}")
    bench = REGISTRY[benchmark]
    values = {**(fields or {}), **field_values}
    known = {f.key for f in bench.run_fields}
    unknown = sorted(k for k, v in values.items() if k not in known and v not in (None, False))
    if unknown:
        raise ValueError(f"{bench.label} runs have no option {', '.join(unknown)}")
    if not item_set:
        raise ValueError("choose an item set (import one on the Import page)")
    args = ["run", benchmark, "--items", item_set]
    if base_url:
        if not model:
            raise ValueError("a base URL needs a model id")
        args += ["--base-url", base_url.strip(), "--model", model.strip()]
        if api_key_env:  # a pasted key is refused here, before the page shows the command
            args += [
                "--api-key-env",
                check_key_env_name(api_key_env.strip(), "the API key variable field") or "",
            ]
    elif endpoint:
        args += ["--endpoint", endpoint]
    for run_field in bench.run_fields:
        args += run_field.cli_args(values.get(run_field.key))
    if judge_endpoint and bench.judged_by_model:
        args += ["--judge-endpoint", judge_endpoint]
    if limit:
        args += ["--limit", str(int(limit))]
        if sample_seed:  # 0 is the default seed of the stratified sample
            args += ["--sample-seed", str(int(sample_seed))]
    if concurrency:
        args += ["--concurrency", str(int(concurrency))]
    if run_name and run_name.strip():
        args += ["--run-name", run_name.strip()]
    return args


# -- judgings of a run (`python -m core rescore` from the app) ------------------------------

_JUDGINGS_SQL = """
SELECT * FROM (
SELECT a.judging, a.kind, a.judge_model, a.judge_endpoint, a.template_id, a.status,
       CASE WHEN a.judging = 'default' THEN runs.pid ELSE j.pid END AS pid,
       CASE WHEN a.judging = 'default' THEN runs.n_planned ELSE j.n_planned END AS planned,
       count(r.item_id) FILTER (WHERE r.status <> 'failed') AS done,
       count(r.item_id) FILTER (WHERE r.status = 'failed') AS failed,
       json_extract_string(j.params, '$.judge.base_urls') AS judge_urls,
       json_extract_string(j.params, '$.judge.api_key_env') AS key_env,
       a.judging = c.judging AS current, a.created_at, a.updated_at
FROM all_judgings a
JOIN runs USING (run_id)
LEFT JOIN judgings j ON j.run_id = a.run_id AND j.judging = a.judging
LEFT JOIN results r ON r.run_id = a.run_id AND r.judging = a.judging
LEFT JOIN current_judgings c ON c.run_id = a.run_id
WHERE a.run_id = ? {and_judging}
GROUP BY ALL
) ORDER BY judging <> 'default', created_at
"""


def list_judgings(store: Store, run_id: str) -> pd.DataFrame:
    """A run's judgings ('default' first): judge endpoint and model, template, status
    ('interrupted' when its process is gone), planned/done/failed records, judge URLs (no
    credentials are stored) and whether results show it."""
    frame = store.df(_JUDGINGS_SQL.format(and_judging=""), [run_id])
    if len(frame):
        frame["status"] = [_effective_status(s, p) for s, p in zip(frame["status"], frame["pid"])]
    return frame


def judging_progress(store: Store, run_id: str, judging: str) -> dict:
    """status, planned, done, failed of one judging; {} before its process wrote its row."""
    frame = store.df(_JUDGINGS_SQL.format(and_judging="AND a.judging = ?"), [run_id, judging])
    if frame.empty:
        return {}
    row = frame.iloc[0]
    return {
        "run_id": run_id,
        "judging": judging,
        "status": _effective_status(row["status"], row["pid"]),
        "planned": int(row["planned"]) if pd.notna(row["planned"]) else 0,
        "done": int(row["done"]),
        "failed": int(row["failed"]),
        "judge_model": row["judge_model"],
        "template_id": row["template_id"],
    }


def judging_running(store: Store) -> bool:
    """Whether any named judging is being run by a live process (the Runs page refreshes)."""
    from core.engine.runner import pid_alive

    rows = store.rows("SELECT pid FROM judgings WHERE status = 'running'")
    return any(pid_alive(pid) for (pid,) in rows if pid)


def delete_judging(store: Store, run_id: str, judging: str) -> str:
    """Delete a named judging (core.services.rescore.delete_judging; refusals raise)."""
    from core.services.rescore import delete_judging as delete

    return delete(store, run_id, judging)


def build_rescore_args(
    run_id: str,
    judging: str,
    *,
    judged_by_model: bool,
    judge_endpoint: str | None = None,
    base_url: str | None = None,
    model: str | None = None,
    api_key_env: str | None = None,
    template: str | None = None,
    concurrency: int | None = None,
) -> list[str]:
    """The `python -m core rescore …` words for the judging form (the page shows them)."""
    from core.store import JUDGING_NAME_RE

    name = (judging or "").strip()
    if not name:
        raise ValueError("name the judging")
    if name == "default":
        raise ValueError("'default' is the run's own judging; choose another name")
    if not JUDGING_NAME_RE.match(name):
        raise ValueError(
            f"judging name {name!r}: letters, digits and . _ - : + = @ (no spaces), at most 80"
        )
    args = ["rescore", "--source", run_id, "--as", name]
    if judged_by_model:
        if base_url and base_url.strip():
            if not model or not model.strip():
                raise ValueError("a judge base URL needs a judge model id")
            args += ["--judge-base-url", base_url.strip(), "--judge-model", model.strip()]
            if api_key_env and api_key_env.strip():
                args += [
                    "--judge-api-key-env",
                    check_key_env_name(api_key_env.strip(), "the API key variable field") or "",
                ]
        elif judge_endpoint:
            args += ["--judge-endpoint", judge_endpoint]
        else:
            raise ValueError("choose a judge endpoint or give a base URL")
        if template:
            args += ["--judge-template", template]
    if concurrency:
        args += ["--concurrency", str(int(concurrency))]
    return args
