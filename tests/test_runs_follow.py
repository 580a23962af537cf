"""Runs that lead to results: the Runs page follows the run just started, shows live numbers,
links finished runs to their results, grid and drill-down; run stats from the call records; the
BBM page has a start form; the Overview's run rows link too."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from urllib.parse import parse_qs

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from core.cli import build_parser
from core.services import jobs
from tests.fake_openai import FakeOpenAI, FakeProcess
from tests.test_runs_page import add_bbm_like_run

ROOT = jobs.PROJECT_ROOT


def _links(at: AppTest) -> dict[str, dict]:
    return {
        p.proto.label: {k: v[0] for k, v in parse_qs(p.proto.query_string).items()}
        for p in at.get("page_link")
    }


def test_rates_eta_and_duration_by_hand():
    assert jobs.rate_per_s(20, 10.0) == 2.0
    assert jobs.rate_per_s(5, 0.0) is None and jobs.rate_per_s(0, 3.0) is None
    assert jobs.eta_seconds(100, 40, 2.0) == 30.0
    assert jobs.eta_seconds(10, 10, None) == 0.0 and jobs.eta_seconds(10, 4, None) is None
    assert jobs.format_duration(75) == "1 min 15 s" and jobs.format_duration(3700) == "1 h 01 min"
    assert jobs.format_duration(None) == "—"


def test_run_stats_from_calls_and_responses(store):
    store.execute(
        "INSERT INTO runs (run_id, benchmark, status, n_planned, model) "
        "VALUES ('r', 'bbm', 'running', 10, 'm')"
    )
    # three flushes, 10 s apart: 2 responses each; 2 calls per response, 5+7 tokens, $0.001
    for k in range(3):
        for j in range(2):
            item = f"i{k}{j}"
            ts = f"2026-12-01 10:00:{10 * k:02d}"
            store.execute(
                "INSERT INTO responses (run_id, item_id, variant, status, attempts, "
                "created_at) VALUES ('r', ?, 'v', 'ok', 1, ?)",
                [item, ts],
            )
            for _ in range(2):
                store.execute(
                    "INSERT INTO calls (run_id, item_id, variant, role, prompt_tokens, "
                    "completion_tokens, cost_usd, created_at) VALUES "
                    "('r', ?, 'v', 'model', 5, 7, 0.001, ?)",
                    [item, ts],
                )
    stats = jobs.run_stats(store, "r")
    assert stats["calls"] == 12 and stats["tokens"] == 12 * 12
    assert stats["cost_usd"] == pytest.approx(0.012)
    # after the first flush: 4 responses in 20 s -> 0.2/s; 8 calls -> 0.4/s
    assert stats["responses_per_s"] == pytest.approx(0.2)
    assert stats["calls_per_s"] == pytest.approx(0.4)
    # done = 6 ok responses (no judge), 4 left at 0.2/s -> 20 s
    assert stats["eta_s"] == pytest.approx(20.0)


def test_start_follows_the_run_in_place_with_a_small_default_limit_and_links_it(
    initialised_store,
):
    """The Runs page's start form, one run started and followed to its end (two tests, merged:
    each paid an AppTest session and a `python -m core run` process for the same start):

    - one small default for every start form: the command asks a sample, not the whole set;
    - after Start, the selector, the URL and the sidebar name the new run (an old run was
      selected before: they used to keep it), and its progress shows right under the form;
    - once done: the links to its grid, results and drill-down, the runs table's grid link,
      and under the form its final count ("k / k responses") and numbers."""
    store = initialised_store
    with FakeProcess({"latency": 0.01}) as server:
        add_bbm_like_run(store, server.url, run_id="old-run")
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.switch_page("pages/runs.py")
        at.query_params["run"] = "old-run"
        at.run()
        assert at.selectbox(key="w_run").value == "old-run"
        assert at.number_input(key="start_limit").value == jobs.DEFAULT_LIMIT > 0
        assert f"--limit {jobs.DEFAULT_LIMIT}" in at.code[-1].value
        at.radio(key="start_bench").set_value("bbm").run()
        at.selectbox(key="start_endpoint").set_value("Custom base URL…").run()
        at.text_input(key="start_base_url").input(server.url).run()
        at.text_input(key="start_model").input("fake-model").run()
        at.button(key="start_button").click().run()
        assert not at.exception, at.exception
        new = at.session_state["runs_started"]["run_name"]
        assert new.startswith("bbm-fake-model-dt-") and len(new) <= 40
        # the selector, the URL and the sidebar all name the new run (they kept the old one)
        assert at.selectbox(key="w_run").value == new
        assert at.query_params["run"] in (new, [new])
        # right under the form (the tab the user is on), the started run and its progress
        start_tab = at.tabs[1]
        assert any(f"Run {new}" in p.proto.text for p in start_tab.get("progress")) or any(
            f"{new} is starting" in i.value for i in start_tab.info
        )
        assert _wait_final(store, new)["status"] == "done", jobs.read_log(store.path, new)
    at.run()
    assert at.selectbox(key="w_run").value == new
    links = _links(at)
    item_set = store.scalar("SELECT item_set FROM runs WHERE run_id = ?", [new])
    assert links["Responses grid"] == {"g_bench": "bbm", "g_set": item_set, "g_runs": new}
    assert links["Results — Mistake finding (BBM)"] == {"runs": new}
    assert links["Item drill-down"] == {"runs": new, "trace_run": new}
    frame = at.dataframe[0].value
    row = frame[frame["run_id"] == new].iloc[0]
    assert row["grid"] == f"./grid?g_bench=bbm&g_set={item_set}&g_runs={new}"
    start_tab = at.tabs[1]
    texts = [p.proto.text for p in start_tab.get("progress")]
    planned = jobs.DEFAULT_LIMIT
    assert any(f"Run {new}: {planned} / {planned} responses" in t for t in texts), texts
    assert {"calls", "tokens", "cost", "duration"} <= {m.label for m in start_tab.metric}


def test_live_numbers_while_running(store):
    store.execute(
        "INSERT INTO runs (run_id, benchmark, status, n_planned, model, pid) "
        "VALUES ('live', 'bbm', 'running', 4, 'm', ?)",
        [__import__("os").getpid()],
    )
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/runs.py")
    at.query_params["run"] = "live"
    at.run()
    labels = {m.label for m in at.metric}
    assert {"calls", "calls/s (last min)", "tokens", "cost", "ETA"} <= labels


def _capture_starts(monkeypatch) -> list[list[str]]:
    """Replace the detached `python -m core run …` with a recorder: the form's effect is the
    command it starts."""
    started: list[list[str]] = []

    def start(cli_args: list[str], db_path, **_kw) -> jobs.Job:
        started.append(list(cli_args))
        return jobs.Job(pid=0, run_name="captured", log_path=Path(db_path), command=cli_args)

    monkeypatch.setattr(jobs, "start_cli_run", start)
    return started


def _parsed(cli_args: list[str]) -> argparse.Namespace:
    """The command as `python -m core` reads it (a choice the CLI refuses exits here)."""
    return build_parser(cli_args).parse_args(cli_args)


def _submit(at: AppTest) -> None:
    next(b for b in at.button if b.label == "Start run").click().run()
    assert not at.exception, at.exception


def test_bbm_page_start_form_starts_a_run_of_each_method_it_offers(initialised_store, monkeypatch):
    started = _capture_starts(monkeypatch)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/mistake_finding.py")
    at.run()
    assert not at.exception
    assert any(e.label == "Start a run" for e in at.expander)
    offered = at.selectbox(key="bbm_start_method").options
    assert offered
    for method in offered:
        at.selectbox(key="bbm_start_method").set_value(method)  # submitted with the form
        _submit(at)
        args = _parsed(started[-1])
        assert (args.command, args.subcommand, args.items) == ("run", "bbm", "bbm-sample")
        assert args.method == method
    assert len(started) == len(offered)


def test_overview_run_rows_link_to_results_and_grid(store):
    with FakeProcess({"latency": 0.0}) as server:
        add_bbm_like_run(store, server.url, run_id="ov-run")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    frame = next(
        df.value
        for df in at.dataframe
        if "run_id" in df.value.columns and "grid" in df.value.columns
    )
    row = frame[frame["run_id"] == "ov-run"].iloc[0]
    assert row["grid"] == "./grid?g_bench=bbm&g_set=bbm-fake&g_runs=ov-run"
    assert row["results"] == "./mistake_finding?runs=ov-run"


def test_misprompt_runs_tab_starts_a_run_of_each_setting_and_its_judge(
    initialised_store, monkeypatch
):
    started = _capture_starts(monkeypatch)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/misprompt_results.py")
    at.query_params["view"] = "Runs"
    at.run()
    assert not at.exception
    assert any(e.label == "Start a run" for e in at.expander)
    offered = at.selectbox(key="mp_start_setting").options
    assert offered
    for setting in offered:
        at.selectbox(key="mp_start_setting").set_value(setting)  # submitted with the form
        _submit(at)
        args = _parsed(started[-1])
        assert (args.command, args.subcommand) == ("run", "misprompt")
        assert args.setting == setting
        # the judge picker's first choice: the model's own endpoint judges (no separate flag)
        assert args.judge_endpoint is None
    judge = at.selectbox(key="mp_start_judge")
    other = judge.options[1]  # a named endpoint from the endpoints file
    judge.set_value(other)
    _submit(at)
    assert _parsed(started[-1]).judge_endpoint == other


# -- issue 20, point 6: follow in place, a small default limit, live and final numbers -------


def _wait_final(store, run_id: str, timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    progress: dict = {}
    while time.monotonic() < deadline:
        progress = jobs.run_progress(store, run_id)
        if progress and progress["status"] != "running":
            break
        time.sleep(0.1)
    return progress


def test_the_mistake_finding_form_uses_the_same_default_limit(initialised_store):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/mistake_finding.py")
    at.run()
    assert at.number_input(key="bbm_start_limit").value == jobs.DEFAULT_LIMIT


def test_a_finished_run_keeps_its_summary_and_shows_its_model_in_full(store):
    long_model = "HuggingFaceTB/SmolLM2-135M-Instruct-a-long-model-id"
    with FakeOpenAI() as server:
        add_bbm_like_run(store, server.url, run_id="finished")
    store.execute("UPDATE runs SET model = ? WHERE run_id = 'finished'", [long_model])
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/runs.py")
    at.query_params["run"] = "finished"
    at.run()
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    n_calls, tokens = store.rows(
        "SELECT count(*), sum(coalesce(prompt_tokens, 0) + coalesce(completion_tokens, 0)) "
        "FROM calls WHERE run_id = 'finished'"
    )[0]
    assert n_calls > 0
    assert metrics["calls"] == f"{n_calls:,}" and metrics["tokens"] == f"{int(tokens):,}"
    assert metrics["duration"] != "—"
    assert long_model in [t.value for t in at.text]


def test_live_numbers_before_the_first_call_is_recorded(store):
    """A slow model writes nothing for a while: the tiles say how long the run has been going
    and how many responses it has, not only 0 calls and no ETA."""
    store.execute(
        "INSERT INTO runs (run_id, benchmark, status, n_planned, model, pid, created_at) "
        "VALUES ('slow', 'bbm', 'running', 4, 'm', ?, "
        "CAST(current_timestamp AS TIMESTAMP) - INTERVAL 90 SECOND)",
        [__import__("os").getpid()],
    )
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/runs.py")
    at.query_params["run"] = "slow"
    at.run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["responses"] == "0 / 4"
    assert metrics["elapsed"] not in ("—", "0 s")
    assert any("Waiting for the first response" in c.value for c in at.caption)


def test_eta_from_the_session_average_when_the_last_minute_has_one_flush(store):
    """One flush of 2 responses 30 s into the process: no last-minute rate, but an ETA."""
    pid = __import__("os").getpid()
    store.execute(
        "INSERT INTO runs (run_id, benchmark, status, n_planned, model, pid) "
        "VALUES ('one-flush', 'bbm', 'running', 6, 'm', ?)",
        [pid],
    )
    store.execute(  # one flush: one transaction, one timestamp
        "INSERT INTO responses (run_id, item_id, variant, status, attempts) "
        "VALUES ('one-flush', 'a', 'v', 'ok', 1), ('one-flush', 'b', 'v', 'ok', 1)"
    )
    stats = jobs.run_stats(store, "one-flush")
    assert stats["responses"] == 2 and stats["elapsed_s"] > 0
    assert stats["responses_per_s"] == pytest.approx(2 / stats["elapsed_s"], rel=0.2)
    assert stats["eta_s"] is not None and stats["eta_s"] > 0


# -- issue 20, point 7: a run's judgings on the Runs page ------------------------------------


def test_runs_page_lists_judgings_and_follows_a_new_one(initialised_store):
    from tests.core_cli import run_misprompt

    store = initialised_store
    with FakeProcess({"latency": 0.01}) as server:
        done = run_misprompt(
            store.path, server.url, "--items", "misprompt-sample", "--limit", "2",
            "--run-name", "mp-r",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.switch_page("pages/runs.py")
        at.query_params["run"] = "mp-r"
        at.run()
        assert not at.exception, at.exception

        def judgings() -> pd.DataFrame:
            return next(d.value for d in at.dataframe if "judge_endpoint" in d.value.columns)

        assert list(judgings()["judging"]) == ["default"]
        at.selectbox(key="jg_endpoint").set_value("Custom base URL…").run()
        at.text_input(key="jg_base_url").input(server.url).run()
        at.text_input(key="jg_model").input("judge-two").run()
        at.text_input(key="jg_name").set_value("j2").run()
        assert any("rescore --source mp-r --as j2 --judge-base-url" in c.value for c in at.code)
        at.button(key="jg_start").click().run()
        assert not at.exception, at.exception
        assert at.session_state["judging_started"] == ("mp-r", "j2")
        deadline = time.monotonic() + 90
        progress: dict = {}
        while time.monotonic() < deadline:
            progress = jobs.judging_progress(store, "mp-r", "j2")
            if progress and progress["status"] != "running":
                break
            time.sleep(0.1)
        assert progress["status"] == "done", jobs.read_log(
            store.path, jobs.judging_log_name("mp-r", "j2")
        )
    at.run()
    listed = judgings().set_index("judging")
    n = progress["planned"]
    assert n == 2 and listed.loc["j2", "status"] == "done" and listed.loc["j2", "done"] == n
    assert listed.loc["j2", "judge_model"] == "judge-two" and bool(listed.loc["j2", "current"])
    texts = [p.proto.text for p in at.get("progress")]
    assert any(f"Judging j2: {n} of {n} done, 0 failed — done" in t for t in texts), texts
    # delete it again from the page: only 'default' is left
    at.selectbox(key="jg_delete_name").set_value("j2")
    at.button(key="jg_delete").click().run()
    assert not at.exception, at.exception
    assert list(judgings()["judging"]) == ["default"]
    assert store.scalar("SELECT count(*) FROM results WHERE judging = 'j2'") == 0
