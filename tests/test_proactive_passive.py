"""Proactive vs passive: detection F1 per SPEC §1 from verdicts (checked against sklearn and by
hand), published Table 3 / Table 4 values, names never merged, and the page (AppTest)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from sklearn.metrics import f1_score
from streamlit.testing.v1 import AppTest

from core.benchmarks.bbm.compare import bbm_label
from core.benchmarks.misprompt import compare as mpc
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.services import compare as pp
from tests.bbm_fixtures import RUN_ID, scripted_run
from tests.misprompt_fixtures import insert_verdicts

APP = str(Path(__file__).resolve().parent.parent / "app.py")
ROOT = Path(__file__).resolve().parent.parent
SHARED_PUB = ROOT.parent / "shared" / "published"


def add_misprompt_run(
    store, run_id: str, mode: str, detect_err: int, detect_ctrl: int, model: str = "scripted"
) -> None:
    """A judged Mis-prompt run over the sample: the first `detect_err` erroneous items and the
    first `detect_ctrl` control items get detection = true."""
    items = store.df(
        "SELECT item_id, is_error FROM items WHERE item_set = 'misprompt-sample' ORDER BY item_id"
    )
    err = items[items["is_error"]]["item_id"].tolist()
    ctrl = items[~items["is_error"]]["item_id"].tolist()
    flagged = set(err[:detect_err]) | set(ctrl[:detect_ctrl])

    def write(con):
        con.execute(
            "INSERT INTO runs (run_id, benchmark, item_set, model, setting, mode, status) "
            "VALUES (?, 'misprompt', 'misprompt-sample', ?, 'zero-shot', ?, 'done')",
            [run_id, model, mode],
        )
        for item_id in err + ctrl:
            con.execute(
                "INSERT INTO responses (run_id, item_id, variant, status) "
                "VALUES (?, ?, 'zero-shot', 'ok')",
                [run_id, item_id],
            )
        verdicts = pd.DataFrame(
            {"run_id": run_id, "item_id": err + ctrl, "variant": "zero-shot", "status": "ok"}
        )
        for label in JUDGE_LABELS:
            verdicts[label] = False
        verdicts["detection"] = verdicts["item_id"].isin(flagged)
        insert_verdicts(con, verdicts)

    store.transaction(write)


def test_detection_f1_matches_hand_and_sklearn():
    # TP 2, FN 1, FP 1 (one control flagged), one control not flagged
    is_error = [True, True, True, False, False]
    detection = [True, True, False, True, False]
    assert mpc.detection_f1(is_error, detection) == pytest.approx(100 * 4 / 6)
    assert mpc.detection_f1(is_error, detection) == pytest.approx(
        100 * f1_score(is_error, detection)
    )
    assert mpc.detection_f1(is_error, [True, None, False, True, False]) == pytest.approx(
        100 * 2 / 4
    )
    assert math.isnan(mpc.detection_f1([False], [False]))


@pytest.fixture
def both_sides(initialised_store):
    store = initialised_store
    n_err = store.scalar(
        "SELECT count(*) FROM items WHERE item_set = 'misprompt-sample' AND is_error"
    )
    n_ctrl = store.scalar(
        "SELECT count(*) FROM items WHERE item_set = 'misprompt-sample' AND NOT is_error"
    )
    assert n_err >= 40 and n_ctrl >= 12
    add_misprompt_run(store, "mp-pro", "proactive", detect_err=20, detect_ctrl=5)
    add_misprompt_run(store, "mp-pas", "passive", detect_err=40, detect_ctrl=12)
    scripted_run()
    return store, n_err


def test_long_and_wide_tables(both_sides):
    store, n_err = both_sides
    long = pp.long_table(store)
    runs = long[long["kind"] == "run"].set_index("source")
    # SPEC §1 by hand: F1 = 2TP / (2TP + FP + FN)
    assert runs.loc["mp-pro", "value"] == pytest.approx(100 * 40 / (40 + 5 + (n_err - 20)))
    assert runs.loc["mp-pas", "value"] == pytest.approx(100 * 80 / (80 + 12 + (n_err - 40)))
    assert runs.loc["mp-pro", "measure_label"] == mpc.PROACTIVE
    assert runs.loc["mp-pas", "measure_label"] == mpc.PASSIVE
    from core.benchmarks.bbm.queries import run_metrics

    m = run_metrics(store, RUN_ID)
    overall = m[
        (m["task"] == "Overall")
        & (m["subset"] == "all")
        & (m["measure"] == "mistake_location_accuracy")
    ]["value"].iloc[0]
    assert runs.loc[RUN_ID, "value"] == pytest.approx(overall)

    wide = pp.wide_table(long).set_index("model")
    assert wide[f"{mpc.PROACTIVE} [runs]"]["scripted"] == runs["value"]["mp-pro"]
    assert wide[f"{mpc.PASSIVE} [runs]"]["scripted"] == runs["value"]["mp-pas"]
    assert wide.loc["scripted", f"{bbm_label('direct_trace')} [runs]"] == pytest.approx(overall)
    # published names are kept apart: blanks where a paper has no such model
    assert wide.loc["GPT-4o", f"{mpc.PROACTIVE} [published]"] == 43.54
    assert pd.isna(wide[f"{bbm_label('direct_trace')} [published]"]["GPT-4o"])
    assert wide.loc["GPT-4", f"{bbm_label('direct_step')} [published]"] == 52.87
    assert pd.isna(wide[f"{mpc.PROACTIVE} [published]"]["GPT-4"])
    assert "Gemini Pro" in wide.index and "Gemini-1.5" in wide.index
    # a side is a row's mode: PCBench's published models have values both ways
    pcbench = long[long["measure_label"].str.startswith("PCBench") & (long["kind"] == "published")]
    assert sorted(pp.name_overlap(long)["both"]) == sorted({"scripted", *pcbench["model"]})


@pytest.mark.skipif(not (SHARED_PUB / "misprompt_f1.csv").exists(), reason="no shared CSVs")
def test_published_values_are_the_csvs(initialised_store):
    pub = pp.published_rows(initialised_store)
    mis = pd.read_csv(SHARED_PUB / "misprompt_f1.csv")
    mis = mis[(mis["table"] == 3) & (mis["metric"] == "detection") & (mis["model"] != "Avg")]
    got = pub[pub["measure_label"] == mpc.PROACTIVE].set_index("model")["value"]
    assert got.to_dict() == mis.set_index("model")["f1_percent"].to_dict()
    bbm = pd.read_csv(SHARED_PUB / "bigbench_mistake_accuracy.csv", dtype={"table": str})
    bbm = bbm[(bbm["table"] == "4") & (bbm["task"] == "Overall")]
    bbm_rows = pub[pub["measure_label"].str.startswith("BBM")]
    assert sorted(zip(bbm_rows["model"], bbm_rows["measure_label"], bbm_rows["value"])) == sorted(
        zip(bbm["model"], [bbm_label(m) for m in bbm["method"]], bbm["value_percent"])
    )


def test_page(both_sides):
    store, n_err = both_sides
    at = AppTest.from_file(APP, default_timeout=90)
    at.switch_page("pages/proactive_passive.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    wide = at.dataframe[0].value.set_index("model")  # shown as text, 1 decimal (issue 31)
    assert float(wide[f"{mpc.PROACTIVE} [runs]"]["scripted"]) == pytest.approx(
        100 * 40 / (40 + 5 + (n_err - 20)), abs=0.05
    )
    assert wide.loc["GPT-4", f"{mpc.PROACTIVE} [published]"] == "–"
    notes = " ".join(i.value for i in at.info)
    assert "never merged" in notes and "scripted" in notes
    captions = " ".join(c.value for c in at.caption)
    assert "Table 3" in captions and "Table 4" in captions and "mp-pro" in captions
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert charts and {t["name"] for t in charts[0]["data"]} >= {mpc.PROACTIVE, mpc.PASSIVE}
    assert any(c["data"][0]["type"] == "scatter" for c in charts)  # scripted has both sides
    # only runs: published columns disappear, URL keeps the choice
    at.radio(key="w_pp_kind").set_value("runs").run()
    assert not at.exception
    wide = at.dataframe[0].value
    assert list(wide["model"]) == ["scripted"]
    assert at.query_params["pp_kind"] in ("runs", ["runs"])


def test_every_run_value_carries_its_n_and_interval(both_sides):
    """issue 31: run values had no n or interval. Mis-prompt detection F1 with its bootstrap
    interval over the run's erroneous items, BBM accuracy with its own, as the benchmarks'
    metrics commands print them."""
    store, n_err = both_sides
    long = pp.long_table(store)
    runs = long[long["kind"] == "run"].set_index("source")
    for run in ("mp-pro", "mp-pas", RUN_ID):
        row = runs.loc[run]
        assert row["n"] > 0 and row["ci_low"] <= row["value"] <= row["ci_high"], (run, row)
    assert runs.loc["mp-pro", "n"] == n_err
    from core.benchmarks.bbm.queries import run_metrics

    m = run_metrics(store, RUN_ID)
    overall = m[(m["task"] == "Overall") & (m["subset"] == "all")].iloc[0]
    assert runs.loc[RUN_ID, "ci_low"] == pytest.approx(overall["ci_low"])
    at = AppTest.from_file(APP, default_timeout=90)
    at.switch_page("pages/proactive_passive.py")
    at.run()
    every = at.dataframe[-1].value
    assert {"n", "ci_low", "ci_high"} <= set(every.columns)


def _add_unanswered_run(store, run_id: str, status: str, answered: int) -> None:
    """A later proactive run of `scripted`: `answered` erroneous and as many control items
    answered (and flagged), every other response failed (connection refused), status `status`."""
    items = store.df(
        "SELECT item_id, is_error FROM items WHERE item_set = 'misprompt-sample' ORDER BY item_id"
    )
    ids = items["item_id"].tolist()
    ok = items[items["is_error"]]["item_id"].tolist()[:answered]
    ok += items[~items["is_error"]]["item_id"].tolist()[:answered]  # controls: F1, not recall

    def write(con):
        con.execute(
            "INSERT INTO runs (run_id, benchmark, item_set, model, setting, mode, status, "
            "created_at) VALUES (?, 'misprompt', 'misprompt-sample', 'scripted', 'zero-shot', "
            "'proactive', ?, now() + INTERVAL 1 HOUR)",
            [run_id, status],
        )
        for item_id in ids:
            con.execute(
                "INSERT INTO responses (run_id, item_id, variant, status, error) "
                "VALUES (?, ?, 'zero-shot', ?, ?)",
                [run_id, item_id, *(("ok", None) if item_id in ok else ("failed", "refused"))],
            )
        if ok:
            verdicts = pd.DataFrame(
                {"run_id": run_id, "item_id": ok, "variant": "zero-shot", "status": "ok"}
            )
            for label in JUDGE_LABELS:
                verdicts[label] = False
            verdicts["detection"] = True
            insert_verdicts(con, verdicts)

    store.transaction(write)


def test_failed_and_empty_runs_are_never_picked_and_can_be_shown(both_sides):
    """issue 31, point 2: the per-model table held the LATEST run of a model, so a later run
    that failed (or never got an answer) replaced the answered one. It holds the latest
    answered run; failed and empty runs are hidden by default, shown on request."""
    store, n_err = both_sides
    _add_unanswered_run(store, "mp-failed", "failed", answered=3)
    _add_unanswered_run(store, "mp-empty", "done", answered=0)
    good = 100 * 40 / (40 + 5 + (n_err - 20))
    long = pp.long_table(store)
    wide = pp.wide_table(long).set_index("model")
    assert wide.loc["scripted", f"{mpc.PROACTIVE} [runs]"] == pytest.approx(good)
    states = long[long["kind"] == "run"].set_index("source")["run_state"]
    assert states["mp-pro"] == pp.ANSWERED and states["mp-failed"] == pp.FAILED
    assert "mp-empty" not in states or states["mp-empty"] == pp.EMPTY

    at = AppTest.from_file(APP, default_timeout=90)
    at.switch_page("pages/proactive_passive.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    shown = at.dataframe[0].value.set_index("model").to_dict("index")
    assert float(shown["scripted"][f"{mpc.PROACTIVE} [runs]"]) == pytest.approx(good, abs=0.05)
    every = at.dataframe[-1].value
    assert "mp-failed" not in set(every["source"])  # hidden by default
    assert "mp-failed" in " ".join(c.value for c in at.caption)  # ... and said so
    at.radio(key="w_pp_runs").set_value("all runs").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "mp-failed" in set(at.dataframe[-1].value["source"])
    assert at.query_params["pp_runs"] in ("all runs", ["all runs"])
    # shown, a failed run still does not replace the answered one in the per-model table
    shown = at.dataframe[0].value.set_index("model").to_dict("index")
    assert float(shown["scripted"][f"{mpc.PROACTIVE} [runs]"]) == pytest.approx(good, abs=0.05)
