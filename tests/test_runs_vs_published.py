"""Runs never pass for published numbers: separate panels, F1 and recall apart, n and interval
on every run cell, n<10 marked, judge and template in run labels, mode in metrics output;
Table 2's total as a consistency row. Numbers are checked against sklearn and pandas."""

from __future__ import annotations

import csv
import io
import json

import pandas as pd
import pytest
from sklearn.metrics import f1_score, recall_score
from streamlit.testing.v1 import AppTest

from core.benchmarks.misprompt import charts, consistency, queries
from core.benchmarks.misprompt import compare as mpc
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.services import compare as pp
from core.services.published import PUBLISHED_DIR
from tests.conftest import ROOT
from tests.misprompt_fixtures import insert_run, random_verdicts

APP = str(ROOT / "app.py")
PAGE = "pages/misprompt_results.py"


def _set_template(store, run_id: str, template: str) -> None:
    store.execute(
        "UPDATE runs SET params = ? WHERE run_id = ?",
        [json.dumps({"judge_template": template}), run_id],
    )


@pytest.fixture
def two_runs(initialised_store):
    """'f1-run': 84 erroneous + 84 controls judged by SmolLM2 with misprompt/judge.v1; 'recall-run': the
    same erroneous items only (no controls), judged with misprompt/judge.v2, passive."""
    store = initialised_store
    frame = random_verdicts(84, 84, seed=5)
    insert_run(store, "f1-run", frame, model="tiny", judge_model="SmolLM2")
    _set_template(store, "f1-run", "misprompt/judge.v1")
    errors = random_verdicts(84, 0, seed=6)
    insert_run(store, "recall-run", errors, model="tiny", judge_model="judge-x", mode="passive")
    _set_template(store, "recall-run", "misprompt/judge.v2")
    return store, frame, errors


# -- the run figure ---------------------------------------------------------------------------


def test_run_heatmap_marks_low_n_and_carries_n_and_interval() -> None:
    frame = pd.DataFrame(
        {
            "row_label": ["r (judge j, misprompt/judge.v2, proactive)"] * 2,
            "category": ["A", "B"],
            "f1": [61.234, 40.0],
            "ci_low": [50.0, 10.0],
            "ci_high": [70.0, 80.0],
            "n_error": [25, 4],
            "n_control": [30, 30],
        }
    )
    fig = charts.run_heatmap(frame, x="category", title="t", x_title="Category", min_n=10)
    main, low = fig.data
    assert list(main.z[0]) == [61.23, None] and list(low.z[0]) == [None, 0.0]
    assert list(low.text[0]) == ["", "40.0 (n<10)"]
    assert tuple(main.customdata[0][0]) == (61.23, 50.0, 70.0, 25, 30)
    assert tuple(low.customdata[0][1]) == (40.0, 10.0, 80.0, 4, 30)
    for trace in (main, low):
        assert "95% CI" in trace.hovertemplate and "n = %{customdata[3]}" in trace.hovertemplate
    assert "n&lt;10" in low.hovertemplate
    assert (
        main.colorscale
        != charts.heatmap(
            frame, x="category", y="row_label", z="f1", title="p", x_title="", y_title=""
        )
        .data[0]
        .colorscale
    )
    recall = charts.run_heatmap(frame, x="category", title="t", x_title="c", recall=True)
    assert recall.data[0].colorbar.title.text == "Recall % (runs)"
    assert recall.data[0].colorscale != main.colorscale
    # every cell ≥ 10: no grey trace at all
    assert (
        len(
            charts.run_heatmap(
                frame.assign(n_error=[10, 11]), x="category", title="t", x_title="c"
            ).data
        )
        == 1
    )


# -- run cells against sklearn ----------------------------------------------------------------


def test_run_cells_f1_recall_n_and_labels(two_runs) -> None:
    store, frame, errors = two_runs
    cells = queries.run_cells(store, ("f1-run", "recall-run"), draws=200)
    overall = cells[(cells["category_level"] == "all") & (cells["evaluator"] == "judge")]
    f1_rows = overall[overall["source"] == "f1-run"].set_index("metric")
    for label in JUDGE_LABELS:
        expected = 100 * f1_score(frame["is_error"], frame[label])
        assert f1_rows.loc[label, "f1"] == pytest.approx(expected)
        assert f1_rows["ci_low"][label] <= f1_rows["f1"][label] <= f1_rows["ci_high"][label]
    assert set(f1_rows["n_error"]) == {84} and set(f1_rows["n_control"]) == {84}
    rec_rows = overall[overall["source"] == "recall-run"].set_index("metric")
    assert all(m.endswith("_recall") for m in rec_rows.index)
    for label in JUDGE_LABELS:
        assert rec_rows.loc[label + "_recall", "f1"] == pytest.approx(
            100 * recall_score(errors["is_error"], errors[label])
        )
    # n per category = erroneous items of that category; low_n below 10
    secondary = cells[(cells["source"] == "f1-run") & (cells["category_level"] == "secondary")]
    counts = frame[frame["is_error"]].groupby("secondary_category").size()
    for row in secondary.itertuples():
        assert row.n_error == counts[row.category]
        assert row.low_n == (counts[row.category] < queries.MIN_CELL_N)
    assert secondary["low_n"].all()  # 84 / 14 = 6 items each
    primary = cells[(cells["source"] == "f1-run") & (cells["category_level"] == "primary")]
    assert not primary["low_n"].any()
    labels = dict(zip(cells["source"], cells["row_label"]))
    assert labels["f1-run"] == "f1-run · tiny (judge SmolLM2, misprompt/judge.v1, proactive)"
    assert labels["recall-run"] == (
        "recall-run · tiny (judge judge-x, misprompt/judge.v2, passive) — recall, no controls"
    )


# -- the page ---------------------------------------------------------------------------------


def _page(view: str | None = None, **params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page(PAGE)
    if view:
        at.query_params["view"] = view
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _specs(at: AppTest) -> list[dict]:
    """Figure specs with titles on one line (charts break long titles at ' — ' for phones)."""
    return [_one_line(json.loads(c.proto.spec)) for c in at.get("plotly_chart")]


def _one_line(spec: dict) -> dict:
    title = spec["layout"].get("title", {})
    if "text" in title:
        title["text"] = title["text"].replace("<br>", " — ")
    return spec


def test_categories_view_keeps_runs_apart_f1_apart_from_recall(two_runs) -> None:
    store, frame, _errors = two_runs
    at = _page(label="detection")
    specs = {s["layout"]["title"]["text"]: s for s in _specs(at)}
    published = [s for t, s in specs.items() if t.startswith("Published (paper)")]
    assert published and all(
        not any("judge" in y for y in s["data"][0].get("y", [])) for s in published
    )
    f1_fig = next(
        s
        for t, s in specs.items()
        if t.startswith("Runs in this database — by primary category — F1")
    )
    recall_fig = next(
        s
        for t, s in specs.items()
        if t.startswith("Runs in this database — by primary category — recall")
    )
    assert f1_fig["data"][0]["y"] == [
        "f1-run · tiny (judge SmolLM2, misprompt/judge.v1, proactive)"
    ]
    assert recall_fig["data"][0]["y"] == [
        "recall-run · tiny (judge judge-x, misprompt/judge.v2, passive) — recall, no controls"
    ]
    assert f1_fig["data"][0]["colorscale"] != recall_fig["data"][0]["colorscale"]
    assert f1_fig["data"][0]["colorscale"] != published[0]["data"][0]["colorscale"]
    # the hover of a run cell: value, interval, n — the value is sklearn's F1 for the category
    cell = f1_fig["data"][0]["customdata"][0]
    xs = f1_fig["data"][0]["x"]
    for category, (value, lo, hi, n_err, n_ctrl) in zip(xs, cell):
        sub = frame[frame["is_error"] & (frame["primary_category"] == category)]
        assert n_err == len(sub) and n_ctrl == 84 and lo <= value <= hi
    assert "judge: SmolLM2, misprompt/judge.v1" in " ".join(c.value for c in at.caption)
    assert any("recall, not F1" in i.value for i in at.info)
    # secondary cells (the other category level, ?level=secondary) hold 6 items each: all
    # grey, marked n<10 in text, hover and caption
    at = _page(label="detection", level="secondary")
    specs = {s["layout"]["title"]["text"]: s for s in _specs(at)}
    sec = next(
        s
        for t, s in specs.items()
        if t.startswith("Runs in this database — by secondary category — F1")
    )
    assert len(sec["data"]) == 2 and sec["data"][1]["name"] == "n<10"
    assert all(t.endswith("(n<10)") for row in sec["data"][1]["text"] for t in row if t)
    captions = " ".join(c.value for c in at.caption)
    assert "fewer than 10 erroneous items (n<10)" in captions
    assert "judge: SmolLM2, misprompt/judge.v1" in captions
    assert any("recall, not F1" in i.value for i in at.info)


def test_tables_view_run_rows_carry_n_interval_and_judge(two_runs) -> None:
    store, frame, _errors = two_runs
    at = _page(
        "Tables",
        t_layout="one row per cell (long)",
        t_level="all",
        t_eval="judge",
        label="detection",
    )
    long = next(d.value for d in at.dataframe if "f1" in d.value.columns)
    runs = long[long["origin"] == "run"]
    assert {"ci_low", "ci_high", "n_error", "n_control", "judge_template", "mode", "low_n"} <= set(
        long.columns
    )
    det = runs[(runs["source"] == "f1-run") & (runs["metric"] == "detection")].iloc[0]
    assert det["f1"] == pytest.approx(100 * f1_score(frame["is_error"], frame["detection"]))
    assert det["ci_low"] <= det["f1"] <= det["ci_high"] and det["n_error"] == 84
    assert det["judge_template"] == "misprompt/judge.v1" and det["judge_model"] == "SmolLM2"
    assert long[long["origin"] == "published"]["ci_low"].isna().all()
    wide_at = _page("Tables", t_level="all", t_eval="judge", label="detection")
    wide = next(
        d.value
        for d in wide_at.dataframe
        if "detection" in d.value.columns or "detection_recall" in d.value.columns
    )
    row = wide[wide["source"] == "f1-run"].iloc[0]
    assert row["n_error"] == 84 and row["detection_ci_low"] <= row["detection"]


# -- metrics output: mode ---------------------------------------------------------------------


def test_metrics_outputs_have_a_mode_column(two_runs, capsys) -> None:
    from core.cli import main as cli

    store, _frame, _errors = two_runs
    assert cli(["metrics", "misprompt", "--source", "recall-run", "--bootstrap", "0"]) == 0
    run = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(run.columns[:4]) == ["source", "model", "setting", "mode"]
    assert set(run["mode"]) == {"passive"}
    assert cli(["metrics", "misprompt", "--source", "misprompt:T3", "--format", "json"]) == 0
    published = json.loads(capsys.readouterr().out)
    assert published and {r["mode"] for r in published} == {"proactive"}

    from tests.bbm_fixtures import RUN_ID, scripted_run

    scripted_run()
    capsys.readouterr()
    assert cli(["metrics", "bbm", "--source", RUN_ID]) == 0
    bbm = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(bbm) and set(bbm["mode"]) == {"passive"}

    from tests.fake_openai import FakeOpenAI
    from tests.item_subsets import first_items
    from tests.test_errorbench_run import responder

    with FakeOpenAI(responder=responder) as server:
        assert (
            cli(
                [
                    "run",
                    "errorbench",
                    "--items",
                    first_items(store, "errorbench-sample", 2),
                    "--conditions",
                    "blind",
                    "--base-url",
                    server.url,
                    "--model",
                    "scripted",
                    "--run-name",
                    "eb-mode",
                    "--quiet",
                ]
            )
            == 0
        )
    capsys.readouterr()
    assert cli(["metrics", "errorbench", "--source", "eb-mode", "--no-errant"]) == 0
    eb = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(eb) and set(eb["mode"]) == {"passive"}


# -- Table 2's total --------------------------------------------------------------------------


def test_table2_total_is_a_check_row(initialised_store) -> None:
    with open(PUBLISHED_DIR / "misprompt_dataset_counts.csv", newline="") as handle:
        cells = sum(int(r["instances"]) for r in csv.DictReader(handle))
    assert cells == 14696
    checks = consistency.consistency_checks(initialised_store)
    rows = checks[checks["check"] == "Table 2 total = sum of its cells"]
    assert len(rows) == 1
    row = rows.iloc[0]
    assert (row["source"], row["published"], row["recomputed"]) == (
        "misprompt:T2",
        14969.0,
        float(cells),
    )
    assert row["difference"] == 14969 - cells and bool(row["mismatch"])
    assert "14,969" in row["note"] and "14,696" in row["note"]
    at = _page("Consistency")
    summary = at.dataframe[0].value.set_index("check")
    assert summary.loc["Table 2 total = sum of its cells", "mismatches"] == 1
    shown = next(d.value for d in at.dataframe if "note" in d.value.columns)
    assert "misprompt:T2" in set(shown["source"])  # in the default view (mismatches)


# -- proactive vs passive ---------------------------------------------------------------------


def test_proactive_passive_names_the_judge_and_keeps_recall_apart(two_runs) -> None:
    store, frame, errors = two_runs
    long = pp.long_table(store)
    runs = long[long["kind"] == "run"].set_index("source")
    assert runs.loc["f1-run", "judge"] == "SmolLM2 (misprompt/judge.v1)"
    assert runs.loc["f1-run", "measure_label"] == mpc.PROACTIVE and not runs.loc["f1-run", "recall"]
    assert runs.loc["f1-run", "value"] == pytest.approx(
        100 * f1_score(frame["is_error"], frame["detection"])
    )
    assert runs.loc["recall-run", "measure_label"] == mpc.PASSIVE_RECALL
    assert runs.loc["recall-run", "value"] == pytest.approx(
        100 * recall_score(errors["is_error"], errors["detection"])
    )
    assert runs.loc["recall-run", "mode"] == "passive"
    pub = long[long["kind"] == "published"]
    assert set(pub[pub["measure_label"] == mpc.PROACTIVE]["judge"]) == {mpc.PAPER_JUDGE}

    at = AppTest.from_file(APP, default_timeout=90)
    at.switch_page("pages/proactive_passive.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    captions = " ".join(c.value for c in at.caption)
    assert "GPT-judge" not in captions and "SmolLM2 (misprompt/judge.v1)" in captions
    specs = _specs(at)
    bars = next(s for s in specs if s["layout"]["title"]["text"].startswith("Proactive"))
    assert mpc.PASSIVE_RECALL not in {t["name"] for t in bars["data"]}
    recall_fig = next(s for s in specs if "RECALL" in s["layout"]["title"]["text"])
    assert {t["name"] for t in recall_fig["data"]} == {mpc.PASSIVE_RECALL}
    assert "judge: %{customdata[1]}" in recall_fig["data"][0]["hovertemplate"]
    wide = at.dataframe[0].value
    assert f"{mpc.PASSIVE_RECALL} [runs]" in wide.columns
