"""`python -m core rescore`: judge or score a run's stored responses again, as a new judging.

Why a stage of its own: a verdict is a function of (item, response, judge, template). Keeping
responses and judgings apart lets a researcher try a second judge, a fixed judge template or a
parser fix on answers already paid for, without a single call to the model under test.

- A benchmark judged by an LLM (registry `judge`): the judge (any endpoint, any judge template)
  labels every stored ok response.
- A benchmark scored by code: its `scorer` re-reads every stored response (no HTTP at all).
- One scored by code with an `extractor`, given a judge endpoint: the extractor model reads
  every stored answer instead, a judging of kind `judge`.

Each judging is kept under its name (`--as`; the run's own is `default`) in `judgings`, its
records in `results` under that name: nothing is overwritten. Re-running the same command
resumes (only units without an ok verdict in that judging are done again); asking an existing
name with another judge or template is refused, but a judging that did not finish may resume
with other connection settings (URL, key variable, concurrency). `--delete` removes a named
judging's records (never 'default', never while it runs). Judge requests go through the same client as
runs (bounded concurrency, retries with backoff, the call cache, the per-attempt call log).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, cast

import pandas as pd

from core.engine import bounds
from core.engine.client import CURRENT_SINK, CallSink, ModelClient, cache_scope
from core.engine.endpoints import Endpoint, EndpointError, add_endpoint_args, endpoint_from_args
from core.engine.results import DEFAULT_JUDGING, Result, ResultBatch, save_batch, scrub_secrets
from core.engine.runner import (
    RunError,
    heartbeat_due,
    install_stop_signals,
    progress_bar,
    remove_stop_signals,
    secret_values,
)
from core.registry import Benchmark, Judged, Scored
from core.registry import get as get_benchmark
from core.store import JUDGING_NAME_RE, DatabaseError, Store


@dataclass
class RescoreSpec:
    """What to re-judge and how. `judge` is None for parser-scored benchmarks."""

    run_id: str
    judging: str
    judge: Endpoint | None = None
    template_id: str | None = None
    concurrency: int | None = None
    use_cache: bool = True
    max_tokens: int | None = None
    repeat: int = 1  # which repeat of the judging this is (`--repeat K`): keys the cache
    repeats: int = 1  # K: how many times the judging is repeated
    repeat_of: str | None = None  # a repeat's first judging (repeats 2..K are `NAME@rk`)


@dataclass
class RescoreSummary:
    run_id: str
    judging: str
    status: str
    planned: int
    done: int
    failed: int
    skipped: int
    processed: int
    judge_calls: int = 0  # judge requests this session (cached included)
    model_calls: int = 0  # requests with role 'model' this session: always 0
    elapsed_s: float = 0.0

    def __str__(self) -> str:
        return (
            f"judging {self.judging} of run {self.run_id}: {self.status}, "
            f"{self.done}/{self.planned} done, {self.failed} failed, "
            f"{self.judge_calls} judge calls, {self.model_calls} model calls"
        )


# -- naming and set-up ------------------------------------------------------------------------


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-").lower()


def default_judging_name(judge_model: str | None, template_id: str | None) -> str:
    """`<judge model>-<template>` (a parser judging: `rescored-<template>`): the same command
    gets the same name, so running it again resumes instead of starting over."""
    who = _slug((judge_model or "rescored").split("/")[-1])[:40] or "judge"
    what = _slug((template_id or "").split("/")[-1])[:30]
    return f"{who}-{what}" if what else who


def _load_run(store: Store, run_id: str) -> dict[str, Any]:
    rows = store.df(
        "SELECT run_id, benchmark, kind, item_set, model, setting, mode, "
        "judge_model, template_id, params, status FROM runs WHERE run_id = ?",
        [run_id],
    )
    if rows.empty:
        known = [
            r[0] for r in store.rows("SELECT run_id FROM runs ORDER BY created_at DESC LIMIT 10")
        ]
        raise RunError(f"no run named {run_id!r}; recent runs: {', '.join(known) or 'none'}")
    row = cast("dict[str, Any]", rows.iloc[0].to_dict())
    raw = row.get("params")
    row["params"] = json.loads(raw) if isinstance(raw, str) and raw else {}
    return row


def _start_judging(
    con: Any,
    spec: RescoreSpec,
    kind: str,
    judge_model: str | None,
    params: dict[str, Any],
    n_planned: int,
) -> None:
    """Create the judgings row, or check a resumed one asks the same judge and template."""
    import os

    from core.engine.runner import pid_alive

    row = con.execute(
        "SELECT kind, judge_model, template_id, params, status, pid FROM judgings "
        "WHERE run_id = ? AND judging = ?",
        [spec.run_id, spec.judging],
    ).fetchone()
    if row is not None:
        old_kind, old_model, old_template, old_params, status, pid = row
        old = json.loads(old_params) if isinstance(old_params, str) and old_params else {}
        # a judging that did not finish (failed, cancelled, its process gone) may resume with
        # other connection settings (a corrected URL, key variable or concurrency): they do not
        # change a verdict; the judge model, template and max tokens do, and stay refused
        reconnect = status != "done" and not (
            status == "running" and pid and int(pid) != os.getpid() and pid_alive(pid)
        )
        wanted = {
            "kind": kind,
            "judge model": judge_model,
            "template": spec.template_id,
            "judge URLs": params.get("judge", {}).get("base_urls") if params.get("judge") else None,
        }
        have = {
            "kind": old_kind,
            "judge model": old_model,
            "template": old_template,
            "judge URLs": (old.get("judge") or {}).get("base_urls"),
        }
        if reconnect:
            del wanted["judge URLs"], have["judge URLs"]
        if "max_tokens" in old:  # judgings older than this check did not record it
            # the verdicts depend on it (a reply cut at the limit parses differently)
            wanted["judge max tokens"] = params.get("max_tokens")
            have["judge max tokens"] = old.get("max_tokens")
        clash = [
            f"{k}: stored {have[k]!r}, now {wanted[k]!r}"
            for k in wanted
            if (have[k] or None) != (wanted[k] or None)
        ]
        if clash:
            raise RunError(
                f"judging {spec.judging!r} of run {spec.run_id!r} exists with another "
                "set-up (" + "; ".join(clash) + "); nothing was changed. Resume it "
                "with the same flags, or name a new one with --as NAME."
            )
        if status == "running" and pid and int(pid) != os.getpid() and pid_alive(pid):
            # two sessions would both judge every missing verdict (twice the judge calls)
            raise RunError(
                f"judging {spec.judging!r} of run {spec.run_id!r} is being run by process "
                f"{pid}; wait for it, or stop it (kill -TERM {pid}) and run this again to "
                "resume; nothing was changed"
            )
        if reconnect and (old.get("judge") or {}) != (params.get("judge") or {}):
            # record the connection now used; the earlier ones stay in the params' history
            earlier = [*old.get("earlier_judges", []), old.get("judge")]
            params = {**params, "earlier_judges": [j for j in earlier if j]}
        else:
            params = {**params, "earlier_judges": old.get("earlier_judges", [])}
        if not params["earlier_judges"]:
            del params["earlier_judges"]
        con.execute(
            "UPDATE judgings SET status = 'running', pid = ?, n_planned = ?, params = ?, "
            "judge_endpoint = ?, updated_at = current_timestamp "
            "WHERE run_id = ? AND judging = ?",
            [
                os.getpid(),
                n_planned,
                json.dumps(params),
                spec.judge.name if spec.judge else None,
                spec.run_id,
                spec.judging,
            ],
        )
        return
    con.execute(
        "INSERT INTO judgings (run_id, judging, kind, judge_model, judge_endpoint, "
        "template_id, params, status, n_planned, pid) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?)",
        [
            spec.run_id,
            spec.judging,
            kind,
            judge_model,
            spec.judge.name if spec.judge else None,
            spec.template_id,
            json.dumps(params),
            n_planned,
            os.getpid(),
        ],
    )


def _stored_responses(con: Any, run: dict[str, Any]) -> pd.DataFrame:
    """Every ok response of the run with its item's fields (what a judge or scorer reads);
    not a response without text (a run imported from verdicts alone has no answers to judge)."""
    return con.execute(
        "SELECT x.item_id, x.variant, x.epoch AS _epoch, x.response, "
        "x.scores AS response_scores, i.* EXCLUDE (item_set, item_id) "
        "FROM responses x JOIN items i ON i.item_set = ? AND i.item_id = x.item_id "
        "WHERE x.run_id = ? AND x.status = 'ok' AND x.response IS NOT NULL "
        "ORDER BY x.epoch, x.item_id, x.variant",
        [run["item_set"], run["run_id"]],
    ).df()


def _done_units(con: Any, spec: RescoreSpec) -> set[tuple[str, str, int]]:
    return {
        (str(a), str(b), int(e))
        for a, b, e in con.execute(
            "SELECT item_id, variant, epoch FROM results WHERE run_id = ? AND judging = ? "
            "AND status <> 'failed'",
            [spec.run_id, spec.judging],
        ).fetchall()
    }


def _row_dict(row: pd.Series) -> dict[str, Any]:
    out = {}
    for key, value in row.items():
        out[str(key)] = None if isinstance(value, float) and value != value else value
    return out


def _write(store: Store, spec: RescoreSpec, batch: ResultBatch) -> None:
    """One transaction: the batch (core/engine/results.py writes it) and the judging's
    updated_at (on a lake at most every HEARTBEAT_S: see heartbeat_due)."""
    touch = heartbeat_due(store, ("judging", f"{spec.run_id}/{spec.judging}"))
    save_batch(
        store,
        batch,
        also=(
            (
                lambda con: con.execute(
                    "UPDATE judgings SET updated_at = current_timestamp WHERE run_id = ? "
                    "AND judging = ?",
                    [spec.run_id, spec.judging],
                )
            )
            if touch
            else None
        ),
    )


# -- the engine, step by step -----------------------------------------------------------------


def _open_judge(store: Store, spec: RescoreSpec, llm: bool, label: str) -> ModelClient | None:
    """The judge's client for an LLM-judged benchmark (checked before anything is written);
    None for a benchmark scored by code, which makes no request at all. `label`: the
    benchmark's name as people read it."""
    if llm and spec.judge is None:
        raise RunError(
            f"a {label} judging needs a judge: --judge-endpoint NAME or "
            "--judge-base-url URL --judge-model ID"
        )
    if not llm or spec.judge is None:
        return None
    client = ModelClient(spec.judge, store, use_cache=spec.use_cache)
    try:
        client.check()
    except EndpointError as exc:
        raise RunError(str(exc)) from None
    return client


@dataclass
class _Plan:
    """The stored responses to judge, read in one short connection."""

    stored: pd.DataFrame  # every ok response of the run, with its item's fields
    todo: list[pd.Series]  # those without an ok verdict in this judging yet
    retried: set[tuple[str, str, int]]  # units (with epoch) with a failed verdict (replaced)
    known_keys: set[str]  # the judge's call-cache keys

    @property
    def skipped(self) -> int:
        return len(self.stored) - len(self.todo)


def _plan(
    store: Store,
    spec: RescoreSpec,
    run: dict[str, Any],
    kind: str,
    judge_model: str | None,
    params: dict[str, Any],
    client: ModelClient | None,
) -> _Plan:
    """Stored responses, the judgings row (created or checked), what is done, failed and
    cached, all in one transaction."""

    def prepare(con: Any) -> tuple[pd.DataFrame, set[tuple[str, str, int]], set, set[str]]:
        stored = _stored_responses(con, run)
        _start_judging(con, spec, kind, judge_model, params, len(stored))
        keys: set[str] = set()
        if client is not None and spec.use_cache:
            scope = cache_scope(client.endpoint)
            keys = {
                r[0]
                for r in con.execute(
                    "SELECT key FROM call_cache WHERE starts_with(key, ?)", [scope + ":"]
                ).fetchall()
            }
        failed = {
            (str(a), str(b), int(e))
            for a, b, e in con.execute(
                "SELECT item_id, variant, epoch FROM results WHERE run_id = ? AND judging = ? "
                "AND status = 'failed'",
                [spec.run_id, spec.judging],
            ).fetchall()
        }
        return stored, _done_units(con, spec), failed, keys

    stored, done_before, failed, keys = store.transaction(prepare)
    todo = [
        r
        for _, r in stored.iterrows()
        if (str(r["item_id"]), str(r["variant"]), int(r["_epoch"])) not in done_before
    ]
    return _Plan(stored, todo, failed, keys)


def extractor_of(bench: Benchmark) -> Callable[[], Any] | None:
    """A code-scored benchmark's LLM reader of its answers (`Scored.extractor`), else None."""
    return bench.scoring.extractor if isinstance(bench.scoring, Scored) else None


def _judge_fn(run: dict[str, Any], llm: bool) -> Callable[..., Any]:
    """The function that makes one result record: the benchmark's LLM judge (async, the
    registry's `judge`) or its scorer of stored responses (plain; the registry's `scorer`)."""
    bench = get_benchmark(run["benchmark"])
    scoring = bench.scoring
    if llm:
        judge = scoring.judge if isinstance(scoring, Judged) else scoring.extractor
        if judge is None:
            raise RunError(f"{bench.label} has no LLM judge to re-judge its responses with")
        return judge()
    if not isinstance(scoring, Scored):
        raise RunError(f"{bench.label} has no scorer to re-score its responses with")
    return scoring.scorer()


class _Session:
    """One rescore session: its counters, its pending batch and the workers' one step."""

    def __init__(
        self,
        store: Store,
        spec: RescoreSpec,
        run: dict[str, Any],
        plan: _Plan,
        client: ModelClient | None,
        judge_model: str | None,
        secrets: list[str],
    ) -> None:
        self.store, self.spec, self.run, self.plan = store, spec, run, plan
        self.client, self.judge_model, self.secrets = client, judge_model, secrets
        self.fn = _judge_fn(run, client is not None)
        self.pending = ResultBatch(spec.judging, secrets)
        self.lock = asyncio.Lock()
        self.processed = self.failed = self.judge_calls = self.model_calls = 0
        self.stop = False
        self.bar: Any = None

    async def flush(self) -> None:
        """Write what finished so far (the batch is swapped under the lock, written outside)."""
        async with self.lock:
            batch, self.pending = self.pending, ResultBatch(self.spec.judging, self.secrets)
        await asyncio.to_thread(_write, self.store, self.spec, batch)

    async def verdict(self, item: dict[str, Any]) -> Result:
        """The judge's or the scorer's record (a scorer bug fails this unit only)."""
        if self.client is not None:
            spec = self.spec
            result: Result = await self.fn(
                self.client,
                item,
                item.get("response") or "",
                template=spec.template_id,
                **({"max_tokens": spec.max_tokens} if spec.max_tokens else {}),
            )
            return result
        stored = {"response": item.get("response"), "scores": item.get("response_scores")}
        try:
            scored: Result = self.fn(item, stored, self.run)
            return scored
        except Exception as exc:  # noqa: BLE001 - recorded on the unit, run goes on
            return Result.failed(f"{type(exc).__name__}: {exc}")

    async def one(self, row: pd.Series) -> None:
        item = _row_dict(row)
        epoch = int(item.pop("_epoch", 1) or 1)
        key = (self.spec.run_id, str(item["item_id"]), str(item["variant"]))
        retried = (key[1], key[2], epoch) in self.plan.retried
        sink = CallSink(refresh=retried, sample=self.spec.repeat, sample_role="judge")
        token = CURRENT_SINK.set(sink)
        try:
            verdict = await self.verdict(item)
        finally:
            CURRENT_SINK.reset(token)
        async with self.lock:
            self.pending.add_result(
                key, verdict, retried=retried, judge_model=self.judge_model, epoch=epoch
            )
            for call in sink.calls:
                self.pending.add_call(key, call, epoch)
                if call.get("role") == "model":
                    self.model_calls += 1
                elif call.get("status") == "ok":
                    self.judge_calls += 1
            if sink.cache_rows:
                self.pending.add_cache_rows(sink.cache_rows)
        self.processed += 1
        if not verdict.done:
            self.failed += 1
        if self.bar is not None:
            self.bar.update(1)

    async def worker(self, queue: Any) -> None:
        """Take responses until none is left or a signal stops the session; flush every 200
        verdicts or 0.5 s."""
        last = time.perf_counter()
        for row in queue:
            if self.stop:
                return
            await self.one(row)
            if len(self.pending) >= 200 or time.perf_counter() - last > 0.5:
                last = time.perf_counter()
                await self.flush()


async def _work(session: _Session, concurrency: int) -> None:
    """The workers over the plan, then the last flush; raises the first worker error."""
    queue = iter(session.plan.todo)
    n = min(concurrency, max(1, len(session.plan.todo)))
    results = await asyncio.gather(
        *(session.worker(queue) for _ in range(n)), return_exceptions=True
    )
    await session.flush()
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        raise errors[0]


def _finish(store: Store, spec: RescoreSpec, stopped: bool) -> tuple[str, int, int]:
    """The judging's final status and its ok/failed counts over all sessions."""

    def finish(con: Any) -> tuple[str, int, int]:
        n_ok, n_bad = con.execute(
            "SELECT count(*) FILTER (WHERE status <> 'failed'), "
            "count(*) FILTER (WHERE status = 'failed') "
            "FROM results WHERE run_id = ? AND judging = ?",
            [spec.run_id, spec.judging],
        ).fetchone()
        final = "cancelled" if stopped else ("failed" if n_bad else "done")
        con.execute(
            "UPDATE judgings SET status = ?, updated_at = current_timestamp "
            "WHERE run_id = ? AND judging = ?",
            [final, spec.run_id, spec.judging],
        )
        return final, int(n_ok), int(n_bad)

    return store.transaction(finish)


async def _rescore(store: Store, spec: RescoreSpec, progress: bool) -> RescoreSummary:
    """Open the judge, plan, judge with a progress bar and signal handlers, finish."""
    started = time.perf_counter()
    run = _load_run(store, spec.run_id)
    bench = get_benchmark(run["benchmark"])
    # a parser-scored benchmark with an extractor reads its answers with an LLM when a
    # judge endpoint is given: a judging of kind judge (issue 29)
    llm = bench.judged_by_model or (extractor_of(bench) is not None and spec.judge is not None)
    client = _open_judge(store, spec, llm, bench.label)
    secrets = secret_values(spec.judge)
    kind = "judge" if llm else "parser"
    judge_model = spec.judge.model if (llm and spec.judge) else f"parser:{bench.name}"
    params: dict[str, Any] = scrub_secrets(
        {
            "judge": spec.judge.public_dict() if (llm and spec.judge) else None,
            "max_tokens": spec.max_tokens,
            "concurrency": spec.concurrency,
            "use_cache": spec.use_cache,
            "source_run": spec.run_id,
            **_repeat_params(spec),
        },
        secrets,
    )
    plan = _plan(store, spec, run, kind, judge_model, params, client)
    if client is not None:
        client.enable_bulk_cache(plan.known_keys)
    session = _Session(store, spec, run, plan, client, judge_model, secrets)
    if progress:
        session.bar = progress_bar(
            len(plan.stored), plan.skipped, "response", f"{spec.run_id[:30]}/{spec.judging[:20]}"
        )
    concurrency = max(1, spec.concurrency or (spec.judge.max_concurrency if spec.judge else 1))
    installed = install_stop_signals(lambda _name: setattr(session, "stop", True))
    try:
        await _work(session, concurrency)
    finally:
        remove_stop_signals(installed)
        if session.bar is not None:
            session.bar.close()
        if client is not None:
            try:
                await client.aclose()
            except Exception:  # noqa: BLE001 - closing sockets must not hide the result
                pass
    status, n_done, n_failed = _finish(store, spec, session.stop)
    return RescoreSummary(
        run_id=spec.run_id,
        judging=spec.judging,
        status=status,
        planned=len(plan.stored),
        done=n_done,
        failed=n_failed,
        skipped=plan.skipped,
        processed=session.processed,
        judge_calls=session.judge_calls,
        model_calls=session.model_calls,
        elapsed_s=time.perf_counter() - started,
    )


def _repeat_params(spec: RescoreSpec) -> dict[str, Any]:
    """What a repeated judging records: the first its K, each repeat its number and its first
    (how `runs --self-agreement` finds them); nothing for a judging done once."""
    if spec.repeat > 1:
        return {"repeat": spec.repeat, "repeat_of": spec.repeat_of}
    return {"repeats": spec.repeats} if spec.repeats > 1 else {}


def rescore_repeated(
    store: Store, spec: RescoreSpec, repeats: int, progress: bool = True
) -> list[RescoreSummary]:
    """Judge every response `repeats` times: judgings `NAME@rK` … `NAME@r2`, then `NAME`
    itself last, so the first repeat stays the run's current judging (the latest finished
    one). Each repeat's judge calls have a cache key of their own (the repeat number), so a
    repeat is asked, never answered from an earlier repeat's cache entry."""
    from core.services.repeats import repeat_name

    summaries = []
    for k in range(repeats, 0, -1):
        one = replace(
            spec,
            judging=repeat_name(spec.judging, k),
            repeat=k,
            repeats=repeats,
            repeat_of=spec.judging if k > 1 else None,
        )
        summary = rescore(store, one, progress)
        summaries.append(summary)
        if summary.status == "cancelled":  # SIGTERM/SIGINT stop the command, not one repeat
            if k > 1:
                print(
                    f"stopped: the repeats after this one were not started ({k - 1} left); "
                    "run the same command to resume them",
                    file=sys.stderr,
                )
            break
    return summaries


def rescore(store: Store, spec: RescoreSpec, progress: bool = True) -> RescoreSummary:
    """Judge or score every stored ok response of spec.run_id as judging spec.judging."""
    if spec.judging == DEFAULT_JUDGING:
        raise RunError("'default' is the run's own judging; name a new one with --as NAME")
    if not JUDGING_NAME_RE.match(spec.judging):
        raise RunError(
            f"judging name {spec.judging!r}: use letters, digits and . _ - : + = @ "
            "(no spaces), at most 80 characters"
        )
    return asyncio.run(_rescore(store, spec, progress))


def delete_judging(store: Store, run_id: str, judging: str) -> str:
    """Delete one named judging of a run: its `judgings` row and its result records, nothing
    else (the run, its responses, its own 'default' judging, the call log and the call cache
    stay). Refused for 'default' and while a process is judging it. Returns what was done."""
    import os

    from core.engine.runner import pid_alive

    if judging == DEFAULT_JUDGING:
        raise RunError("'default' is the run's own judging; it is deleted only with its run")

    def delete(con: Any) -> int:
        row = con.execute(
            "SELECT status, pid FROM judgings WHERE run_id = ? AND judging = ?",
            [run_id, judging],
        ).fetchone()
        if row is None:
            known = [
                r[0]
                for r in con.execute(
                    "SELECT judging FROM judgings WHERE run_id = ? ORDER BY created_at",
                    [run_id],
                ).fetchall()
            ]
            raise RunError(
                f"run {run_id!r} has no judging {judging!r}; its judgings: "
                f"{', '.join(known) or 'none beside default'}"
            )
        status, pid = row
        if status == "running" and pid and int(pid) != os.getpid() and pid_alive(pid):
            raise RunError(
                f"judging {judging!r} of run {run_id!r} is being run by process {pid}; stop "
                f"it first (kill -TERM {pid}); nothing was deleted"
            )
        n = con.execute(
            "SELECT count(*) FROM results WHERE run_id = ? AND judging = ?", [run_id, judging]
        ).fetchone()[0]
        con.execute("DELETE FROM results WHERE run_id = ? AND judging = ?", [run_id, judging])
        con.execute("DELETE FROM judgings WHERE run_id = ? AND judging = ?", [run_id, judging])
        return int(n)

    n = store.transaction(delete)
    return f"deleted judging {judging} of run {run_id} ({n} result records)"


# -- CLI ----------------------------------------------------------------------------------------


def configure(
    parser: argparse.ArgumentParser,
    words: tuple[str, ...],  # noqa: ARG001 - core.cli calls each command's configure(parser, words)
) -> None:
    parser.description = (
        "Judge (a benchmark judged by an LLM) or score (one scored by code) every stored "
        "response of a run again, as a new judging kept beside the run's own ('default'); the model under test is never "
        "asked. Re-run the same command to resume. Results show a run's latest finished "
        "judging unless --judging NAME picks one (metrics, export, the pages)."
    )
    parser.add_argument("--source", required=True, metavar="RUN", help="the run to re-judge")
    parser.add_argument(
        "--as",
        dest="judging",
        default=None,
        metavar="NAME",
        help="name of this judging (default: <judge model>-<template>)",
    )
    parser.add_argument(
        "--judge-template",
        default=None,
        metavar="ID",
        help="judge template id, <benchmark>/<name>.v<N> (the full id; default: the "
        "benchmark's current default template)",
    )
    parser.add_argument(
        "--judge-max-tokens",
        type=bounds.whole("--judge-max-tokens", 1, bounds.MAX_TOKENS),
        default=None,
        metavar="N",
    )
    parser.add_argument(
        "--concurrency",
        type=bounds.whole("--concurrency", 1, bounds.MAX_CONCURRENCY),
        default=None,
        metavar="N",
        help="judge requests in flight (default: the endpoint's)",
    )
    parser.add_argument(
        "--max-retries",
        type=bounds.whole("--max-retries", 0, bounds.MAX_RETRIES),
        default=None,
        metavar="N",
        help="retries of a failed judge call (default: the endpoint's max_retries, 5)",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="do not answer identical judge requests from the cache",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--repeat",
        type=bounds.whole("--repeat", 1, bounds.MAX_REPEATS),
        default=1,
        metavar="K",
        help="judge every response K times (an LLM judge only), as judgings NAME, NAME@r2 … "
        "NAME@rK, each asked afresh (the call cache is keyed by the repeat); then print the "
        "judge's self-agreement per label (Fleiss' kappa, share of unanimous verdicts; again "
        "with `python -m core runs --self-agreement RUN --judging NAME`)",
    )
    parser.add_argument(
        "--delete",
        action="store_true",
        help="delete the judging named by --as (its records only; not 'default', not while "
        "it runs) instead of judging",
    )
    parser.add_argument(
        "--models-file",
        default=None,
        metavar="PATH",
        help="endpoints file (default: $EHW_MODELS_FILE or data/models.toml)",
    )
    add_endpoint_args(parser, "judge")


def main(args: argparse.Namespace) -> int:
    store = Store.open(args.db, create=False)  # rescores a stored run: never a new file
    run = _load_run(store, args.source)
    if args.delete:
        if not args.judging:
            print("error: --delete needs the judging's name: --as NAME", file=sys.stderr)
            return 2
        try:
            print(delete_judging(store, args.source, args.judging))
        except DatabaseError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        return 0
    bench = get_benchmark(run["benchmark"])
    repeats = 1 if args.repeat is None else int(args.repeat)
    if not 1 <= repeats <= bounds.MAX_REPEATS:  # the flag's type refuses these already
        print(f"error: --repeat must be between 1 and {bounds.MAX_REPEATS}", file=sys.stderr)
        return 2
    if repeats > 1 and not bench.judged_by_model:
        print(
            "error: --repeat K > 1 is only for a benchmark judged by an LLM "
            f"({bench.label} is scored by code: the same response always scores the same)",
            file=sys.stderr,
        )
        return 2
    judge = (
        endpoint_from_args(args, "judge") if bench.judged_by_model or extractor_of(bench) else None
    )
    if bench.judged_by_model and judge is None:
        print(
            f"error: a {bench.label} judging needs a judge: --judge-endpoint NAME, or "
            "--judge-base-url URL --judge-model ID [--judge-api-key-env VAR]",
            file=sys.stderr,
        )
        return 2
    if judge is not None and args.concurrency:
        if args.concurrency < 1:
            print("error: --concurrency must be ≥ 1", file=sys.stderr)
            return 2
        judge = replace(judge, max_concurrency=args.concurrency)
    if judge is not None and args.max_retries is not None:
        if args.max_retries < 0:
            print("error: --max-retries must be ≥ 0", file=sys.stderr)
            return 2
        judge = replace(judge, max_retries=args.max_retries)
    try:
        template = _template_id(bench.name, args.judge_template)
    except ValueError as exc:  # a template id not among the valid ones: one line, no traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if judge is not None and not bench.judged_by_model:  # an extractor reads the answers
        template = args.judge_template or f"{bench.name}/extract.v1"
    name = args.judging or default_judging_name(judge.model if judge else None, template)
    spec = RescoreSpec(
        run_id=args.source,
        judging=name,
        judge=judge,
        template_id=template,
        concurrency=args.concurrency,
        use_cache=not args.no_cache,
        max_tokens=args.judge_max_tokens,
    )
    return _judge_and_report(store, spec, repeats, progress=not args.quiet)


def _judge_and_report(store: Store, spec: RescoreSpec, repeats: int, progress: bool) -> int:
    """Run the judging (K times with --repeat K) and print its summary; the exit status."""
    try:
        if repeats > 1:
            summaries = rescore_repeated(store, spec, repeats, progress=progress)
        else:
            summaries = [rescore(store, spec, progress=progress)]
    except DatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for summary in summaries:
        print(summary)
    if repeats > 1:
        return _report_repeats(store, spec, summaries)
    summary = summaries[0]
    if summary.status == "failed":
        print(
            f"  {summary.failed} response(s) not judged; run the same command to retry them",
            file=sys.stderr,
        )
    return 0 if summary.status in ("done", "cancelled") else 1


def _template_id(benchmark: str, asked: str | None) -> str | None:
    """The judge template id stored with the judging (an LLM-judged benchmark), or the
    scorer's."""
    bench = get_benchmark(benchmark)
    if not isinstance(bench.scoring, Judged):
        return asked or f"{benchmark}/scorer"  # (an extractor's judging: its judge model)
    template_id: str | None = bench.scoring.template()(asked)  # None: the default
    return template_id


def _report_repeats(store: Store, spec: RescoreSpec, summaries: list[RescoreSummary]) -> int:
    """After `--repeat K`: the judge's self-agreement per label, or how to finish the repeats."""
    from core.services.repeats import format_table, run_self_agreement

    unfinished = [s for s in summaries if s.status != "done"]
    if unfinished:
        print(
            f"  {len(unfinished)} repeat(s) not finished; run the same command to resume them",
            file=sys.stderr,
        )
        return 0 if all(s.status == "cancelled" for s in unfinished) else 1
    print(f"self-agreement of judging {spec.judging} over {len(summaries)} repeats:")
    print(format_table(run_self_agreement(store, spec.run_id, spec.judging)))
    return 0
