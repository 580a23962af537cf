"""The generic resumable runner: any benchmark's Task over an item set, against any endpoint.

Design, and why:

- **Resumable by construction.** A run is identified by its name (run_id). Results are keyed
  (run, item, variant) and written by core/engine/results.py (the one writer: a plain INSERT for new
  units, delete-and-insert for retried ones and on a DuckLake), so re-running a name completes only
  what is missing or failed (a unit counts as done when its response is ok and, for a judged
  task, its verdict is ok too). A SIGKILL loses at most the last unflushed batch.
- **One transaction per flush.** A unit's response, its verdict, its call records and its new
  cache entries land together: a response never exists without its verdict. A run that took
  every unit writes its last batch with its final status, in the finish's transaction.
- **Short-lived connections.** DuckDB lets one process write at a time and a connection holds
  the file; each flush opens, writes and closes, so the app (another process) reads progress
  between flushes. A flush costs 30-150 ms of CPU whatever its size (attaching, committing, the
  checkpoint when the file is let go; more as the file grows), so a fast run flushes less often
  as it goes: every 0.5 s at first, then at most 1/32 of the time writing (at most every 5 s,
  the Runs page's refresh is 2 s), or as soon as 2,000 units wait (see `next_interval`).
- **Flat memory.** A fixed pool of `concurrency` workers pulls units from an iterator; finished
  results wait only until the next flush (writers apply back-pressure if the database is busy).
- **Signals.** SIGTERM/SIGINT stop taking units, flush what finished, mark the run cancelled.
- **Secrets.** Run params carry endpoint names, URLs (credentials stripped) and the *names* of
  key variables; any key value that still shows up is replaced by ***.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from core.engine.client import CURRENT_SINK, CallFailed, CallSink, ModelClient, cache_scope
from core.engine.results import Response, Result, ResultBatch, save_batch
from core.engine.runner.plan import (
    _ItemRows,
    _open_clients,
    _Plan,
    _plan,
    _run_params,
    _states_sql,
    unit_key,
)
from core.engine.runner.report import RunSummary, _report, unsaved_error
from core.engine.runner.spec import RunError, RunSpec, secret_values
from core.engine.task import RunContext, Task, UnitResult, WorkUnit
from core.store import DatabaseError, Store

# -- rows -----------------------------------------------------------------------------------


def _failed_response(error: str, attempts: int = 0, messages: Any = None) -> Response:
    return Response.failed(error, attempts=attempts, messages=messages)


def _write_batch(
    store: Store, run_id: str, batch: ResultBatch, shard: tuple[int, int] | None = None
) -> None:
    """One transaction: the batch (core/engine/results.py writes it) and the run's updated_at
    (its heartbeat; on a lake at most every HEARTBEAT_S, see `heartbeat_due`); a shard's ledger
    row gets its done count (`shard` = (K, units done)) with it."""
    touch = heartbeat_due(store, ("run", run_id))

    def also(con: Any) -> None:
        if touch:
            con.execute("UPDATE runs SET updated_at = current_timestamp WHERE run_id = ?", [run_id])
        if ledger:
            from core.engine.runner.shards import progress_shard

            assert shard is not None
            progress_shard(con, run_id, shard[0], shard[1])

    # a shard's ledger row: at every flush on a file, with the heartbeat on a lake
    ledger = shard is not None and (touch or not store.is_lake)
    # the keys of this run's own judging (and shard): other runs' flushes need not wait
    domain = f"run:{run_id}:default:{shard[0] if shard is not None else 0}"
    save_batch(store, batch, also=also if touch or ledger else None, domain=domain)


HEARTBEAT_S = 10.0
WRITE_SHARE = 32  # a flush may take 1/WRITE_SHARE of the time between flushes (see next_interval)
MAX_FLUSH_INTERVAL_S = 5.0
FLUSH_UNITS = 2000  # a batch this big is flushed without waiting for the timer
_LAST_BEAT: dict[tuple[str, str, str], float] = {}


def heartbeat_due(store: Store, key: tuple[str, str]) -> bool:
    """Whether this flush also touches its run's (or judging's) updated_at. Always on a file.
    On a DuckLake an UPDATE deletes a row, and DuckLake refuses to commit an insert into a
    table another transaction deleted from meanwhile: every writer touching `runs` at every
    flush made 30-45 % of four machines' commits conflict (measured with three processes).
    Inserts never conflict, so there the heartbeat is kept to one every HEARTBEAT_S."""
    if not store.is_lake:
        return True
    now = time.monotonic()
    full = (store.location, *key)
    if now - _LAST_BEAT.get(full, -HEARTBEAT_S) < HEARTBEAT_S:
        return False
    _LAST_BEAT[full] = now
    return True


# -- the run --------------------------------------------------------------------------------


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
        # the last batch waits for _finish, which writes it with the run's final status in
        # one transaction, when every unit was taken and no worker failed (see _work)
        self.last_with_finish = False
        self.retried: set[tuple[str, str, int]] = set()  # units with a row already (re-asked)
        self.done_before = 0  # units of the plan done before this session (a shard's ledger)
        self.write_errors = 0
        self.last_flush_s = 0.0
        self.started = time.perf_counter()
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
        epoch = int(unit.epoch)
        old = unit_key(unit) in self.retried
        pending = self.pending
        pending.add_response(key, response, retried=old, epoch=epoch)
        if verdict is not None:
            pending.add_result(key, verdict, retried=old, judge_model=self.judge_model, epoch=epoch)
        elif old:
            pending.drop_result(key, epoch)
        for call in sink.calls:
            pending.add_call(key, call, epoch)
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
            ledger = None
            if self.spec.shard is not None:  # done in this shard: before + now (approximate
                # until the last flush: units still pending count already)
                ledger = (self.spec.shard[0], self.done_before + self.processed - self.failed_now)
            await asyncio.to_thread(_write_batch, self.store, self.spec.run_id, batch, ledger)
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
        """Seconds until the next timed flush: flush_interval_s, stretched so that writing takes
        at most 1/WRITE_SHARE of the time (a flush's fixed cost, not its rows, is most of it:
        bench/bench_runner_vs_openai.py), capped at MAX_FLUSH_INTERVAL_S, and never more than
        1/8 of the run's age, so a run's first results show up (and are safe) within a second
        or two."""
        stretched = min(
            WRITE_SHARE * self.last_flush_s,
            (time.perf_counter() - self.started) / 8,
            MAX_FLUSH_INTERVAL_S,
        )
        return max(self.flush_interval_s, stretched)

    async def flusher(self) -> None:
        """Flush on the timer, or sooner when a batch is full; one last flush on close, unless
        the last batch goes with the finish (`last_with_finish`)."""
        assert self.flush_wanted is not None
        while not self.closing:
            try:
                await asyncio.wait_for(self.flush_wanted.wait(), self.next_interval())
            except TimeoutError:
                pass
            self.flush_wanted.clear()
            if self.closing and self.last_with_finish:
                break
            await self.flush()
        if not self.last_with_finish:
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
            sink = CallSink(refresh=unit_key(unit) in self.retried, sample=int(unit.epoch))
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
    flush (or, when every unit was taken, the last batch left for _finish). Raises the first
    worker error, or RunError when the last flush cannot be saved."""
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
        # a run that took every unit writes its last batch with its final status (_finish):
        # one commit, and on a lake one exclusive turn, fewer at the end of every run; a
        # stopped run or a failed worker flushes it here, as before
        runner.last_with_finish = not errors and not runner.stopping
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
    store: Store,
    spec: RunSpec,
    plan: _Plan,
    needs_judge: bool,
    stopped: bool,
    last: ResultBatch | None = None,
) -> tuple[str, int, int]:
    """The run's final status and its done/failed counts over all sessions, from the
    database (the truth after resumes), in one short transaction; `last`, the run's last
    batch, is written in the same one (measured: the last flush and the finish each waited
    for the lake's turn, one shard after another; docs/performance.md › Shards)."""

    final_shown = [""]  # a shard reports its own status; the run's is in the database

    def finish(con: Any) -> tuple[str, int, int]:
        final_shown[0] = ""  # (run again when its commit lost)
        rows = con.execute(_states_sql(needs_judge), [spec.run_id]).fetchall()
        wanted = plan.units  # answers `key in` without making every unit
        n_done = sum(1 for a, b, e, ok in rows if ok and (str(a), str(b), int(e)) in wanted)
        n_failed = sum(1 for a, b, e, ok in rows if not ok and (str(a), str(b), int(e)) in wanted)
        final = "cancelled" if stopped else ("failed" if n_failed else "done")
        if spec.shard is not None:  # the run is done when every shard is
            from core.engine.runner.shards import finish_shard

            shard_status = final
            final = finish_shard(con, spec.run_id, spec.shard, final, n_done)
            if final != "done":
                final_shown[0] = shard_status
        con.execute(
            "UPDATE runs SET status = ?, updated_at = current_timestamp WHERE run_id = ?",
            [final, spec.run_id],
        )
        return final_shown[0] or final, n_done, n_failed

    if last is None or last.empty:
        return store.transaction(finish)
    done = save_batch(store, last, also=finish)  # the batch, then the status: one transaction
    assert done is not None
    return done


RUN_THREADS = 1  # DuckDB threads while a run works (see _one_thread)


@contextlib.contextmanager
def _one_thread(store: Store) -> Iterator[None]:
    """The process's DuckDB instance runs each query on its calling thread while a run works,
    then gets its thread count back. A run's queries are tiny (a flush of a few hundred rows,
    its planning reads), and DuckDB spreading each over its worker threads cost more CPU than
    the query: measured on a lake, a 600-call shard used ~1.0 s less CPU of ~3.9 s with one
    thread (bench/bench_shards.py: four shards on one machine are CPU-bound). The setting is
    the instance's (every cursor of it), so it is put back for whatever the process does
    next (the app's larger reads use every core)."""
    try:
        with store.connect() as con:
            before = con.execute("SELECT current_setting('threads')").fetchone()
            con.execute(f"SET threads = {RUN_THREADS}")
    except DatabaseError:
        yield  # a store that cannot be opened now fails the run's first write instead
        return
    try:
        yield
    finally:
        if before is not None:
            try:
                with store.connect() as con:
                    con.execute(f"SET threads = {int(before[0])}")
            except DatabaseError:
                pass


def _after_run(task: Task, store: Store, run_id: str) -> None:
    """The task's optional `after_run` hook (see core.engine.task.Task); never fails a run."""
    hook = getattr(task, "after_run", None)
    if callable(hook):
        try:
            hook(store, run_id)
        except Exception:  # noqa: BLE001 - a cache the page can rebuild must not fail a run
            pass


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
    secrets = secret_values(spec.endpoint, spec.judge)
    model, judge_client = _open_clients(store, spec, needs_judge)
    params = _run_params(spec, task, secrets)
    scopes = {cache_scope(c.endpoint) for c in (model, judge_client) if c is not None}
    plan = _plan(store, spec, task, params, scopes)
    for client in (model, judge_client):
        if client is not None:
            client.enable_bulk_cache(plan.known_keys.get(cache_scope(client.endpoint)))
    runner = _Runner(store, spec, task, progress, flush_interval_s, flush_units, secrets)
    runner.retried = plan.retried
    runner.done_before = plan.skipped
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
        last = runner.pending if runner.last_with_finish else None
        try:
            status, done, failed = await asyncio.to_thread(
                _finish, store, spec, plan, needs_judge, runner.stopping, last
            )
        except DatabaseError as exc:
            if last is None or last.empty:
                raise
            status = "interrupted"  # the last batch could not be saved
            raise unsaved_error(spec, exc, len(last)) from None
        finished = True
        await asyncio.to_thread(_after_run, task, store, spec.run_id)
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
    flush_units: int = FLUSH_UNITS,
) -> RunSummary:
    """Run (or resume) spec with task; blocks until done, failed or cancelled."""
    with _one_thread(store):
        return asyncio.run(_execute(store, spec, task, progress, flush_interval_s, flush_units))
