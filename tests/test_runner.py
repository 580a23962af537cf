"""The runner: resumable, exactly one row per unit, failures retried, kills survived, no secrets."""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from core.engine.endpoints import Endpoint
from core.engine.results import Response, Result
from core.engine.runner import (
    RunError,
    RunSpec,
    UnitResult,
    WorkUnit,
    add_run_args,
    execute_run,
    spec_from_args,
)
from core.store import Store
from tests.core_cli import run_core
from tests.echo_task import EchoTask, create_item_set
from tests.fake_openai import FakeOpenAI, FakeProcess

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def db_path(backend) -> str:
    """Every guarantee here (one row per unit, resume, retry only failures, refuse changed
    parameters, survive SIGKILL, no secrets) is tested on a DuckDB file and on a DuckLake."""
    return backend


@pytest.fixture
def store(backend) -> Store:
    return Store.open(backend)


def prompts(n: int) -> list[str]:
    return [f"prompt number {i}" for i in range(n)]


def spec_for(server_url: str, run_id: str = "r1", item_set: str = "s", **kw) -> RunSpec:
    ep = Endpoint(
        "fake",
        (server_url,),
        "fake-model",
        max_concurrency=kw.pop("conc", 8),
        timeout_s=kw.pop("timeout_s", 5.0),
        api_key_env=kw.pop("api_key_env", None),
    )
    return RunSpec(
        run_id=run_id, benchmark="echo", item_set=item_set, endpoint=ep, setting="echo", **kw
    )


def counts(store: Store, run_id: str = "r1") -> dict:
    return {
        "responses": store.scalar("SELECT count(*) FROM responses WHERE run_id = ?", [run_id]),
        "distinct": store.scalar(
            "SELECT count(DISTINCT (item_id, variant)) FROM responses WHERE run_id = ?", [run_id]
        ),
        "ok": store.scalar(
            "SELECT count(*) FROM responses WHERE run_id = ? AND status = 'ok'", [run_id]
        ),
        "verdicts": store.scalar("SELECT count(*) FROM results WHERE run_id = ?", [run_id]),
        "verdicts_ok": store.scalar(
            "SELECT count(*) FROM results WHERE run_id = ? AND status = 'ok'", [run_id]
        ),
        "orphan_ok": store.scalar(
            "SELECT count(*) FROM responses r ANTI JOIN results v USING (run_id, item_id, "
            "variant) WHERE r.run_id = ? AND r.status = 'ok'",
            [run_id],
        ),
    }


def test_a_run_writes_one_response_and_one_verdict_per_item(store):
    create_item_set(store, "s", "echo", prompts(30))
    with FakeOpenAI() as server:
        url = server.url
        summary = execute_run(
            store, spec_for(server.url, params={"temperature": 0.0}), EchoTask(), progress=False
        )
        assert len(server.chat_requests) == 60
        judged = [r["body"] for r in server.chat_requests if r["body"].get("response_format")]
    assert len(judged) == 30
    assert (summary.status, summary.planned, summary.done, summary.failed) == ("done", 30, 30, 0)
    assert (summary.processed, summary.calls, summary.skipped) == (30, 60, 0)
    assert counts(store) == {
        "responses": 30,
        "distinct": 30,
        "ok": 30,
        "verdicts": 30,
        "verdicts_ok": 30,
        "orphan_ok": 0,
    }
    row = store.df("SELECT * FROM responses WHERE run_id = 'r1' AND item_id = 'i00003'").iloc[0]
    assert row["response"] == "echo: prompt number 2" and row["messages"].startswith("[")
    run = store.df("SELECT * FROM runs").iloc[0]
    assert (run["status"], run["n_planned"], run["pid"]) == ("done", 30, os.getpid())
    assert (run["model"], run["setting"], run["judge_model"]) == (
        "fake-model",
        "echo",
        "fake-model",
    )
    calls = store.df(
        "SELECT role, count(*) AS n, sum(prompt_tokens) AS pt FROM calls "
        "WHERE run_id = 'r1' GROUP BY role ORDER BY role"
    )
    assert calls["n"].tolist() == [30, 30]
    # tokens recorded per call add up to the summary's
    assert int(calls["pt"].sum()) == summary.prompt_tokens

    # the same requests under another run name are answered from the cache
    # (the server is stopped: any request would fail)
    again = execute_run(store, spec_for(url, run_id="r2"), EchoTask(), progress=False)
    assert (again.calls, again.cached_calls, again.done) == (60, 60, 30)


def test_concurrency_is_bounded(store):
    create_item_set(store, "s", "echo", prompts(40))
    with FakeOpenAI(latency=0.05) as server:
        execute_run(store, spec_for(server.url, conc=5), EchoTask(), progress=False)
        assert 3 <= server.max_in_flight <= 5


def test_a_run_queries_its_store_on_one_duckdb_thread_and_gives_the_threads_back(store):
    """A run's queries are tiny: DuckDB spreading each over its worker threads cost more CPU
    than the query (bench/bench_shards.py); the process's setting comes back after the run."""
    create_item_set(store, "s", "echo", prompts(6))

    def threads() -> int:
        return int(store.scalar("SELECT current_setting('threads')"))

    before = threads()
    seen: list[int] = []

    class Probe(EchoTask):
        async def process(self, unit: WorkUnit, item: dict, ctx: Any) -> UnitResult:
            seen.append(threads())  # the same process's DuckDB instance the run writes with
            return await super().process(unit, item, ctx)

    with FakeOpenAI() as server:
        summary = execute_run(store, spec_for(server.url), Probe(needs_judge=False), progress=False)
    assert summary.done == 6 and set(seen) == {1}
    assert threads() == before


def test_failed_units_are_recorded_and_only_they_are_retried(store):
    create_item_set(store, "s", "echo", prompts(20))
    bad = {"prompt number 3", "prompt number 7"}

    broken = [True]

    def fault(body):
        if not broken[0]:
            return None
        text = body["messages"][-1]["content"]
        if text in bad:
            return {"status": 400, "message": "scripted bad request"}
        if "prompt number 11" in text and body.get("response_format"):
            return {"content": "this is not JSON"}  # the judge answers garbage
        return None

    server = FakeOpenAI(fault_fn=fault).start()  # one server: the cache is per endpoint URL
    first = execute_run(store, spec_for(server.url), EchoTask(), progress=False)
    assert (first.status, first.done, first.failed) == ("failed", 17, 3)
    failed = store.df(
        "SELECT r.item_id, r.status, r.error, v.status AS v_status, v.error AS "
        "v_error FROM responses r LEFT JOIN results v USING (run_id, item_id, "
        "variant) WHERE r.run_id = 'r1' AND (r.status <> 'ok' OR v.status <> "
        "'ok') ORDER BY r.item_id"
    )
    assert failed["item_id"].tolist() == ["i00004", "i00008", "i00012"]
    assert "HTTP 400" in failed["error"][0] and failed["v_status"].isna()[0]
    assert failed["v_status"][2] == "failed" and "unparsable" in failed["v_error"][2]
    assert store.scalar("SELECT status FROM runs WHERE run_id = 'r1'") == "failed"

    broken[0] = False
    server.requests.clear()
    second = execute_run(store, spec_for(server.url), EchoTask(), progress=False)
    asked = [r["body"]["messages"][-1]["content"] for r in server.chat_requests]
    server.stop()
    # only the three failed units are asked again, and afresh: item 11's garbled judge answer
    # must not come back from the cache
    assert sorted(a for a in asked if a.startswith("prompt")) == sorted(bad | {"prompt number 11"})
    assert len(asked) == 6
    assert (second.status, second.done, second.failed, second.skipped) == ("done", 20, 0, 17)
    assert second.cached_calls == 0
    assert counts(store) == {
        "responses": 20,
        "distinct": 20,
        "ok": 20,
        "verdicts": 20,
        "verdicts_ok": 20,
        "orphan_ok": 0,
    }


def test_retries_transient_faults_inside_a_run(store):
    create_item_set(store, "s", "echo", prompts(10))
    faults: list[dict[str, Any] | None] = [
        {"status": 429, "retry_after": 0.05},
        {"status": 503},
        {"drop": True},
        {"malformed": True},
    ]
    with FakeOpenAI(faults=faults) as server:
        summary = execute_run(store, spec_for(server.url), EchoTask(), progress=False)
        assert len(server.chat_requests) == 24
    assert summary.status == "done" and summary.done == 10
    errors = store.df("SELECT http_status, error FROM calls WHERE status = 'error'")
    assert len(errors) == 4 and sorted(errors["http_status"].dropna().astype(int)) == [429, 503]


class Exploding:
    benchmark = "echo"
    needs_judge = False

    def units(self, items):
        return [WorkUnit(i, "x") for i in items["item_id"]]

    async def process(self, unit, item, ctx):
        if unit.item_id == "i00002":
            raise KeyError("missing field")
        return UnitResult(Response(text="fine"))


def test_a_task_bug_fails_one_unit_not_the_run(store):
    create_item_set(store, "s", "echo", prompts(3))
    summary = execute_run(store, spec_for("http://127.0.0.1:9/v1"), Exploding(), progress=False)
    assert (summary.done, summary.failed) == (2, 1)
    error = store.scalar("SELECT error FROM responses WHERE item_id = 'i00002'")
    assert error == "KeyError: 'missing field'"


class DictReturning:
    benchmark = "echo"
    needs_judge = False

    def units(self, items):
        return [WorkUnit(i, "x") for i in items["item_id"]]

    async def process(self, unit, item, ctx):
        if unit.item_id == "i00001":
            return UnitResult({"response": "a plain dict", "status": "ok"})  # type: ignore[arg-type]
        return UnitResult(Response(text="typed"))


def test_a_task_returning_a_dict_fails_that_unit_with_a_clear_error(store):
    """Tasks hand back Response/Result: a plain dict is no longer taken as columns."""
    create_item_set(store, "s", "echo", prompts(2))
    spec = spec_for("http://127.0.0.1:9/v1")
    summary = execute_run(store, spec, DictReturning(), progress=False)
    assert (summary.done, summary.failed) == (1, 1)
    rows = store.rows("SELECT item_id, status, response, error FROM responses ORDER BY item_id")
    assert rows[1] == ("i00002", "ok", "typed", None)
    assert rows[0][:3] == ("i00001", "failed", None)
    assert rows[0][3] == "task returned dict/NoneType, not Response/Result | None"


def test_limit_and_refusals(store):
    create_item_set(store, "s", "echo", prompts(10))
    with FakeOpenAI() as server:
        summary = execute_run(store, spec_for(server.url, limit=4), EchoTask(), progress=False)
        assert summary.planned == 4 and counts(store)["responses"] == 4
        with pytest.raises(
            RunError,
            match="already exists with other settings: setting: stored .echo., now .other.",
        ):
            other = spec_for(server.url)
            other.setting = "other"
            execute_run(store, other, EchoTask(), progress=False)
        with pytest.raises(RunError, match="item set 'nope' does not exist; echo sets: s"):
            execute_run(store, spec_for(server.url, item_set="nope"), EchoTask(), progress=False)
        create_item_set(store, "m", "misprompt", ["q"])
        with pytest.raises(RunError, match="holds misprompt items"):
            execute_run(
                store, spec_for(server.url, item_set="m", run_id="r9"), EchoTask(), progress=False
            )
        with pytest.raises(RunError, match="EHW_UNSET_KEY, which is not set"):
            execute_run(
                store,
                spec_for(server.url, run_id="r2", api_key_env="EHW_UNSET_KEY"),
                EchoTask(),
                progress=False,
            )
        assert len(server.chat_requests) == 8  # only the first run asked anything


def test_spec_from_args_defaults():
    parser = argparse.ArgumentParser()
    add_run_args(parser, judge=True)
    args = parser.parse_args(
        [
            "--items",
            "s",
            "--base-url",
            "http://h:1/v1",
            "--model",
            "org/My-Model",
            "--concurrency",
            "32",
        ]
    )
    spec = spec_from_args(args, "misprompt", setting="zero-shot", mode="passive")
    assert re.fullmatch(r"mp-my-model-zs-p-\d{4}-\d{6}", spec.run_id)
    assert spec.endpoint.max_concurrency == 32 and spec.judge == spec.endpoint
    assert spec.use_cache and spec.item_set == "s"
    args = parser.parse_args(
        [
            "--items",
            "s",
            "--run-name",
            "mine",
            "--no-cache",
            "--judge-base-url",
            "http://j:2/v1",
            "--judge-model",
            "judge",
        ]
    )
    spec = spec_from_args(args, "misprompt")
    assert (spec.run_id, spec.use_cache, spec.endpoint.name) == ("mine", False, "local")
    assert spec.judge is not None and spec.judge.model == "judge"
    with pytest.raises(SystemExit, match="run name"):
        spec_from_args(parser.parse_args(["--items", "s", "--run-name", "has space"]), "x")


# -- subprocess runs: kill, cancel, secrets ------------------------------------------------


def start_echo_run(
    db: Path | str, url: str, run_name: str, *extra: str, env: dict | None = None
) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.echo_task",
            "--db",
            str(db),
            "--items",
            "s",
            "--base-url",
            url,
            "--model",
            "fake-model",
            "--run-name",
            run_name,
            *extra,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def echo_in_process(
    db: Path | str, url: str, run_name: str, *extra: str, env: dict | None = None
) -> tuple[int, str, str]:
    """The same command as start_echo_run, run in this process: (exit code, stdout, stderr),
    with `env` set for the run only. Where the kill or the signal is not the point (a resume,
    a run whose output is read), a child proves nothing more and costs ~1.3 s of CPU for its
    imports (core prints; it has no logging handlers that could write past the capture)."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from tests.core_cli import _restore_environ
    from tests.echo_task import _echo_main

    argv = ["--db", str(db), "--items", "s", "--base-url", url, "--model", "fake-model"]
    saved = dict(os.environ)
    os.environ.update(env or {})
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = _echo_main([*argv, "--run-name", run_name, *extra])
    finally:
        _restore_environ(saved)
    return code, out.getvalue(), err.getvalue()


def wait_for_rows(
    store: Store, run_id: str, at_least: int, proc: subprocess.Popen, timeout: float = 60
) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        n = store.scalar("SELECT count(*) FROM responses WHERE run_id = ?", [run_id]) or 0
        if n >= at_least:
            return n
        time.sleep(0.2)
    raise AssertionError("the run wrote nothing in time")


def test_sigkill_mid_run_then_resume_loses_nothing_and_duplicates_nothing(store, db_path):
    n = 300
    create_item_set(store, "s", "echo", prompts(n))
    with FakeProcess({"latency": 0.05}) as server:
        proc = start_echo_run(db_path, server.url, "killed", "--concurrency", "8", "--quiet")
        wait_for_rows(store, "killed", 40, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        mid = counts(store, "killed")
        assert 40 <= mid["responses"] < n
        assert mid["responses"] == mid["distinct"] == mid["verdicts"]
        assert mid["orphan_ok"] == 0  # never a response without its verdict
        assert store.scalar("SELECT status FROM runs WHERE run_id = 'killed'") == "running"
        from core.services.jobs import run_progress

        assert run_progress(store, "killed")["status"] == "interrupted"

        # (the resume may go faster: concurrency is how a run is executed, not what it measures)
        code, out, err = echo_in_process(
            db_path, server.url, "killed", "--concurrency", "32", "--quiet"
        )
        assert code == 0, err
    assert counts(store, "killed") == {
        "responses": n,
        "distinct": n,
        "ok": n,
        "verdicts": n,
        "verdicts_ok": n,
        "orphan_ok": 0,
    }
    assert store.scalar("SELECT status FROM runs WHERE run_id = 'killed'") == "done"
    # units saved before the kill were not asked again: each item has one ok model call,
    # except those in flight or unflushed at the kill (asked twice, at most one batch)
    per_item = store.df(
        "SELECT item_id, count(*) AS n FROM calls WHERE run_id = 'killed' AND "
        "role = 'model' AND status = 'ok' GROUP BY item_id"
    )
    assert len(per_item) == n and per_item["n"].max() == 1
    assert f"{n}/{n} done" in out


def test_sigterm_cancels_cleanly_and_resumes(store, db_path):
    n = 200
    create_item_set(store, "s", "echo", prompts(n))
    with FakeProcess({"latency": 0.05}) as server:
        proc = start_echo_run(db_path, server.url, "stopped", "--concurrency", "4")
        wait_for_rows(store, "stopped", 10, proc)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0
        assert "SIGTERM: stopping" in err and "resume with --run-name stopped" in err
        mid = counts(store, "stopped")
        assert store.scalar("SELECT status FROM runs WHERE run_id = 'stopped'") == "cancelled"
        assert mid["responses"] < n and mid["orphan_ok"] == 0
        code, out, err = echo_in_process(
            db_path, server.url, "stopped", "--concurrency", "32", "--quiet"
        )
    assert code == 0, err
    assert f"{n}/{n} done" in out and counts(store, "stopped")["verdicts_ok"] == n


def test_api_key_never_reaches_database_logs_or_exports(store, db_path, tmp_path, request):
    secret = "sk-live-DO-NOT-STORE-8c1f2e"
    create_item_set(store, "s", "echo", prompts(12))
    script = {
        "faults": [
            {"status": 500, "message": f"upstream said key={secret}"},
            {"status": 400, "message": f"invalid key {secret}"},
        ],
        "latency": 0.01,
    }
    env = {"EHW_SECRET_FOR_TEST": secret}
    with FakeProcess(script) as server:
        _code, out, err = echo_in_process(
            db_path,
            server.url,
            "secret-run",
            "--api-key-env",
            "EHW_SECRET_FOR_TEST",
            "--judge-base-url",
            server.url,
            "--judge-model",
            "fake-model",
            "--judge-api-key-env",
            "EHW_SECRET_FOR_TEST",
            env=env,
        )
    logs = out + err
    assert "secret-run" in logs  # the run happened and printed its summary
    errors = store.df("SELECT error FROM calls WHERE run_id = 'secret-run' AND error IS NOT NULL")[
        "error"
    ].tolist()
    assert len(errors) == 2 and all("***" in e for e in errors)  # the server echoed it
    assert secret not in logs
    # every text column of every table
    tables = [r[0] for r in store.rows("SELECT table_name FROM information_schema.tables")]
    for table in tables:
        cols = [
            r[0]
            for r in store.rows(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]
            )
        ]
        if cols:
            concat = " || ".join(f"coalesce(CAST({c} AS VARCHAR), '')" for c in cols)
            hits = store.scalar(
                f"SELECT count(*) FROM {table} WHERE contains({concat}, ?)", [secret]
            )
            assert hits == 0, f"key found in table {table}"
    params = store.scalar("SELECT params FROM runs WHERE run_id = 'secret-run'")
    assert "EHW_SECRET_FOR_TEST" in params  # the variable's name is kept, not its value
    if store.is_lake:  # the catalog's dump and every data file in the bucket
        lake = request.getfixturevalue("lake")
        assert secret not in lake.catalog_dump()
        for key, data in lake.objects().items():
            assert secret.encode() not in data, key
    else:  # the file bytes (after a checkpoint) and any WAL
        store.execute("CHECKPOINT")
        path = Path(db_path)
        for part in path.parent.glob(path.name + "*"):
            assert secret.encode() not in part.read_bytes()
    for path in _exports(db_path, tmp_path, "secret-run"):
        assert secret not in path.read_text(encoding="utf-8", errors="replace")


def _exports(db_path: Path | str, tmp_path: Path, run_id: str) -> list[Path]:
    """The run exported as JSONL and as CSV by `python -m core export`."""
    paths = []
    for fmt in ("jsonl", "csv"):
        out = tmp_path / f"export.{fmt}"
        args = ["export", "--db", str(db_path), "--source", run_id, "--format", fmt]
        result = run_core(*args, "--out", str(out))
        assert result.returncode == 0 and out.exists(), result.stderr
        assert run_id in out.read_text(encoding="utf-8")  # the export holds the run's rows
        paths.append(out)
    return paths


def test_a_batch_meeting_an_existing_row_replaces_it(store):
    """Plain INSERT for new units; if a row exists after all, the batch is written with
    replace, still one row per unit (and its verdict replaced with it)."""
    from core.engine.results import ResultBatch
    from core.engine.runner.execute import _write_batch

    store.execute("INSERT INTO runs (run_id, benchmark) VALUES ('r', 'echo')")

    def batch(text: str) -> ResultBatch:
        pending = ResultBatch()
        key = ("r", "i1", "v")
        messages = [{"role": "user", "content": "q"}]
        pending.add_response(key, Response(messages=messages, text=text))
        pending.add_result(key, Result(labels={"detection": text == "second"}))
        return pending

    _write_batch(store, "r", batch("first"))
    _write_batch(store, "r", batch("second"))
    rows = store.rows(
        "SELECT r.response, v.detection FROM responses r JOIN misprompt_verdicts v "
        "USING (run_id, item_id, variant)"
    )
    assert rows == [("second", True)]


def test_the_last_batch_is_written_with_the_runs_status_in_one_transaction(store):
    """A run that takes every unit writes its last batch in _finish's transaction: on a lake
    each write transaction waits for the writers' turn, and the last flush and the finish,
    one after the other, were two turns at the end of every shard (docs/performance.md ›
    Shards, sixth round). Counted by the store's change counter (one per committed write
    transaction, on both backends): planning's write and the finish, nothing between when no
    timed flush came (flush interval 60 s, batch limit above the run's size)."""
    create_item_set(store, "s", "echo", prompts(12))
    before = store.data_version()
    with FakeOpenAI() as server:
        summary = execute_run(
            store,
            spec_for(server.url),
            EchoTask(),
            progress=False,
            flush_interval_s=60.0,
            flush_units=1000,
        )
    assert (summary.status, summary.done, summary.failed) == ("done", 12, 0)
    assert store.data_version() - before == 2  # the runs row, then the batch with the status
    assert counts(store)["ok"] == 12 and counts(store)["verdicts_ok"] == 12
    assert store.scalar("SELECT status FROM runs WHERE run_id = 'r1'") == "done"
    assert store.scalar("SELECT count(*) FROM calls WHERE run_id = 'r1'") == 24
