"""AppTest coverage of the Mistake finding page: published tables, runs beside them, heatmap per
method (URL-synced), and the trace drill-down with gold and predicted steps."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.bbm_fixtures import RUN_ID, scripted_run

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def open_page(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    for k, v in params.items():
        at.query_params[k] = v
    at.switch_page("pages/mistake_finding.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def heatmap_spec(at) -> dict:
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    return next(c for c in charts if c["data"] and c["data"][0]["type"] == "heatmap")


def cell(spec, task, column):
    trace = spec["data"][0]
    z = trace["z"]
    if isinstance(z, dict):  # plotly may encode arrays as typed buffers
        raise AssertionError(f"unexpected heatmap z encoding: {z}")
    return z[trace["y"].index(task)][trace["x"].index(column)]


@pytest.fixture
def with_run(initialised_store):
    scripted_run()
    return initialised_store


def test_published_tables_preloaded_without_runs(initialised_store):
    at = open_page()
    spec = heatmap_spec(at)
    assert "Direct (trace)" in spec["layout"]["title"]["text"]
    trace = spec["data"][0]
    assert trace["x"] == ["GPT-4-Turbo", "GPT-4", "GPT-3.5-Turbo", "Gemini Pro", "PaLM 2 Unicorn"]
    assert trace["y"][0] == "Word sorting" and trace["y"][-1] == "Overall"
    assert cell(spec, "Word sorting", "GPT-4-Turbo") == 36.33  # Table 4 value
    captions = " ".join(c.value for c in at.caption)
    assert "Table 4" in captions and "Tyen et al." in captions
    frames = [d.value for d in at.dataframe]
    t4 = frames[0]
    assert list(t4.columns) == ["task", "model", "Direct (trace)", "Direct (step)", "CoT (step)"]
    row = t4[(t4["task"] == "Overall") & (t4["model"] == "GPT-4")].iloc[0]
    assert (row["Direct (trace)"], row["Direct (step)"], row["CoT (step)"]) == (39.8, 52.87, 43.4)
    # Table 5 and 9a/9b follow, each downloadable
    assert len(frames) >= 5
    assert len(at.get("download_button")) >= 5
    # the paper's own Overall inconsistency is shown, not hidden
    assert any("PaLM 2 Unicorn" in w.value and "17.09" in w.value for w in at.warning)


def test_runs_beside_published_and_method_selector_in_url(with_run):
    at = open_page(runs=RUN_ID, method="direct_trace")
    spec = heatmap_spec(at)
    column = f"scripted · {RUN_ID}"
    assert column in spec["data"][0]["x"]
    from core.benchmarks.bbm.queries import run_metrics

    m = run_metrics(with_run, RUN_ID)
    expected = m[
        (m["task"] == "Word sorting")
        & (m["measure"] == "mistake_location_accuracy")
        & (m["subset"] == "all")
    ]["value"].iloc[0]
    assert cell(spec, "Word sorting", column) == pytest.approx(expected)
    assert any(f"run {RUN_ID}" in c.value for c in at.caption)

    at.selectbox(key="w_method").set_value("direct_step").run()
    assert (
        at.query_params["method"] == ["direct_step"] or at.query_params["method"] == "direct_step"
    )
    spec = heatmap_spec(at)
    assert "Direct (step)" in spec["layout"]["title"]["text"]
    assert column not in spec["data"][0]["x"]  # the run used direct_trace only

    at.radio(key="w_measure").set_value("weighted_f1_answer_correctness").run()
    spec = heatmap_spec(at)
    assert "weighted F1" in spec["layout"]["title"]["text"]
    assert cell(spec, "Word sorting", "GPT-4-Turbo") == 86.68  # Table 5


def test_trace_drilldown_highlights_gold_and_prediction(with_run):
    at = open_page(runs=RUN_ID, trace_run=RUN_ID, trace="bbm_sample:3")
    html = next(m.value for m in at.markdown if "data-step" in m.value)
    steps = re.findall(
        r"<div class='bbm-step ([^']*)' data-step='(\d+)'[^>]*>(.*?)</div>", html, re.S
    )
    assert len(steps) == 5
    by_step = {int(n): (cls, body) for cls, n, body in steps}
    # gold first mistake is Thought 3; the scripted model answered "2"
    assert "bbm-gold" in by_step[3][0] and "gold mistake" in by_step[3][1]
    assert "bbm-pred" in by_step[2][0] and "predicted mistake" in by_step[2][1]
    assert "bbm-gold" not in by_step[2][0] and "bbm-pred" not in by_step[3][0]
    summary = " ".join(m.value for m in at.markdown)
    assert "Gold: **Thought 3**" in summary and "**Thought 2**" in summary and "wrong" in summary

    at.selectbox(key="w_trace").set_value("bbm_sample:2").run()
    html = next(m.value for m in at.markdown if "data-step" in m.value)
    step4 = re.search(r"<div class='bbm-step ([^']*)' data-step='4'[^>]*>(.*?)</div>", html, re.S)
    assert step4 is not None
    assert "bbm-gold" in step4.group(1) and "bbm-pred" in step4.group(1)
    assert "right" in " ".join(m.value for m in at.markdown)


def test_drilldown_without_run_shows_gold_only(initialised_store):
    at = open_page(trace_run="(no run)", trace_set="bbm-sample", trace="bbm_sample:11")
    html = next(m.value for m in at.markdown if "data-step" in m.value)
    assert html.count("bbm-gold") == 1 and "bbm-pred" not in html
    assert "data-step='6'" in html.split("bbm-gold")[1][:40]


def test_weak_model_note_beside_its_output(initialised_store):
    scripted_run(run_id="smol-run", model="SmolLM2-135M-Instruct")
    at = open_page(runs="smol-run", trace_run="smol-run")
    assert sum("Weak model: SmolLM2" in w.value for w in at.warning) >= 1
    at.multiselect(key="w_runs").set_value([]).run()  # no weak run chosen: note only in drill-down
    at.selectbox(key="w_trace_run").set_value("(no run)").run()
    assert not any("Weak model" in w.value for w in at.warning)


def test_partial_task_coverage_is_flagged(initialised_store):
    from core.cli import main as cli
    from tests.fake_openai import FakeOpenAI
    from tests.item_subsets import first_items
    from tests.test_bbm_run import responder_for, sample

    first3 = first_items(initialised_store, "bbm-sample", 3)
    with FakeOpenAI(responder=responder_for(sample())) as server:  # first 3 traces: 2 tasks
        assert (
            cli(
                [
                    "run",
                    "bbm",
                    "--items",
                    first3,
                    "--base-url",
                    server.url,
                    "--model",
                    "scripted",
                    "--method",
                    "direct_trace",
                    "--run-name",
                    "short",
                    "--quiet",
                ]
            )
            == 0
        )
    at = open_page(runs="short")
    assert any("short (2 of 5)" in c.value for c in at.caption)


def test_run_metrics_table_shows_n_intervals_and_greys_small_rows(with_run):
    at = open_page(runs=RUN_ID)
    # the heatmap's hover: a run cell's n and interval, a published cell says it has none
    trace = heatmap_spec(at)["data"][0]
    notes = trace["customdata"]
    run_col = trace["x"].index(f"scripted · {RUN_ID}")
    run_note = notes[trace["y"].index("Word sorting")][run_col]
    assert run_note.startswith("n = ") and "95% CI" in run_note and "n < 10" in run_note
    assert notes[0][trace["x"].index("GPT-4")].startswith("published")
    assert "%{customdata}" in trace["hovertemplate"]
    frames = [d.value for d in at.dataframe]
    runs = next(f for f in frames if "ci_low" in f.columns and "measure" in f.columns)
    assert {"n", "ci_low", "ci_high"} <= set(runs.columns)
    acc = runs[(runs["measure"] == "mistake_location_accuracy") & (runs["task"] != "Overall")]
    assert (acc["ci_low"] <= acc["value"] + 1e-9).all() and (
        acc["value"] <= acc["ci_high"] + 1e-9
    ).all()
    small = int((runs["n"] < 10).sum())
    assert small and any(
        f"Grey rows ({small}) rest on fewer than 10 traces" in c.value for c in at.caption
    )
