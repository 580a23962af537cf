"""Runs that lead to results: the Runs page follows the run just started, shows live numbers,
links finished runs to their results, grid and drill-down; run stats from the call records; the
BBM page has a start form; the Overview's run rows link too."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from streamlit.testing.v1 import AppTest

from core.cli import build_parser
from core.services import jobs
from tests.fake_openai import FakeProcess
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


def test_runs_page_follows_the_run_just_started_and_links_it(initialised_store):
    store = initialised_store
    with FakeProcess({"latency": 0.01}) as server:
        add_bbm_like_run(store, server.url, run_id="old-run")
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.switch_page("pages/runs.py")
        at.query_params["run"] = "old-run"
        at.run()
        assert at.selectbox(key="w_run").value == "old-run"
        at.radio(key="start_bench").set_value("bbm").run()
        at.selectbox(key="start_endpoint").set_value("Custom base URL…").run()
        at.text_input(key="start_base_url").input(server.url).run()
        at.text_input(key="start_model").input("fake-model").run()
        at.number_input(key="start_limit").set_value(2).run()
        at.button(key="start_button").click().run()
        assert not at.exception, at.exception
        new = at.session_state["runs_started"]["run_name"]
        assert new.startswith("bbm-fake-model-dt-") and len(new) <= 40
        # the selector, the URL and the sidebar all name the new run (they kept the old one)
        assert at.selectbox(key="w_run").value == new
        assert at.query_params["run"] in (new, [new])
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            progress = jobs.run_progress(store, new)
            if progress and progress["status"] != "running":
                break
            time.sleep(0.3)
        assert progress["status"] == "done", jobs.read_log(store.path, new)
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
