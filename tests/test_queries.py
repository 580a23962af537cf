"""Data access for the Overview and Mis-prompt pages: published + runs side by side."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score

from core.benchmarks.misprompt import queries
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.services import overview
from tests.misprompt_fixtures import insert_human_labels, insert_run, random_verdicts

# run labels name the model, judge, judge template and mode
PRO_LABEL = "run-pro · m-1 (judge test-judge, judge template unknown, proactive)"


@pytest.fixture
def with_runs(initialised_store):
    a = random_verdicts(56, 56, seed=1)
    insert_run(initialised_store, "run-pro", a, model="m-1", setting="zero-shot", item_set="s")
    b = a.copy()
    b["detection"] = ~b["detection"]
    b.loc[0, ["correction_accurate", "correction_attempt"]] = [True, False]
    insert_run(
        initialised_store,
        "run-pas",
        b,
        model="m-1",
        setting="zero-shot",
        mode="passive",
        item_set="s",
        weak=True,
    )
    return initialised_store, a, b


def test_runs_appear_beside_published_in_every_view(with_runs):
    store, a, _ = with_runs
    combined = queries.combined_f1(store)
    label = PRO_LABEL
    for view in (
        queries.view_primary(combined, "detection"),
        queries.view_secondary(combined, "detection"),
        queries.view_settings(combined, "detection"),
    ):
        assert label in set(view["row_label"])
        assert (view["origin"] == "published").any()
    primary = queries.view_primary(combined, "detection")
    assert set(primary[primary["origin"] == "published"]["source"]) == set(queries.PRIMARY_TABLES)
    settings = queries.view_settings(combined, "detection")
    got = settings[settings["row_label"] == label]["f1"].iloc[0]
    assert got == pytest.approx(100 * f1_score(a["is_error"], a["detection"]))
    secondary = queries.view_secondary(combined, "guidance")
    assert set(secondary[secondary["origin"] == "published"]["source"]) == {"misprompt:T11"}


def test_views_follow_the_chosen_label(with_runs):
    store, _, _ = with_runs
    combined = queries.combined_f1(store)
    det = queries.view_primary(combined, "detection")
    gui = queries.view_primary(combined, "guidance")
    assert set(det["metric"]) == {"detection"} and set(gui["metric"]) == {"guidance"}
    assert not np.allclose(det["f1"].to_numpy(), gui["f1"].to_numpy())


def test_judge_vs_human_view_includes_runs_with_human_labels(with_runs):
    store, a, _ = with_runs
    rows = [
        {"item_id": i, "annotator": "x", "label": lb, "value": True}
        for i in a["item_id"][::4]
        for lb in JUDGE_LABELS
    ]  # erroneous and controls
    insert_human_labels(store, "run-pro", pd.DataFrame(rows))
    combined = queries.combined_f1(store)
    pair = queries.view_judge_vs_human(combined, "detection")
    assert PRO_LABEL in set(pair["row_label"])
    published = pair[pair["origin"] == "published"]
    t6 = combined[(combined["source"] == "misprompt:T6") & (combined["metric"] == "detection")]
    assert len(published) == len(t6)  # every Table 6 cell has its Table 12 twin
    assert np.allclose(published["difference"], (published["human"] - published["judge"]).round(2))
    diff, mad = queries.judge_human_published(store)
    assert len(diff) == 406 and mad["paper"] == 5.59


def test_filters_and_wide_table(with_runs):
    store, _, _ = with_runs
    combined = queries.combined_f1(store)
    f = queries.view_filter(
        combined, sources=("misprompt:T6",), settings=("cot",), metrics=("average",)
    )
    assert set(f["source"]) == {"misprompt:T6"} and set(f["setting"]) == {"cot"}
    assert len(f) == 13
    wide = queries.view_by_model_category(queries.view_filter(combined, level="primary"))
    assert {"detection", "average"} <= set(wide.columns)
    assert PRO_LABEL in set(wide["row_label"])


def test_drilldown_detail_compare_and_export(with_runs):
    store, a, b = with_runs
    items = queries.run_items(store, "run-pro")
    assert len(items) == len(a)
    assert set(items["kind"]) == {"erroneous", "control"}
    controls = queries.run_items(store, "run-pro", kind="control")
    assert (controls["kind"] == "control").all() and len(controls) == 56
    incons = queries.run_items(store, "run-pas", only_inconsistent=True)
    assert a.loc[0, "item_id"] in set(incons["item_id"]) and incons["inconsistent"].all()
    true_det = queries.run_items(store, "run-pro", label="detection", label_value=True)
    assert len(true_det) == int(a["detection"].sum())
    cat = queries.run_items(store, "run-pro", category="Language Errors")
    assert set(cat["primary_category"]) == {"Language Errors"}
    item_id = str(a.loc[3, "item_id"])
    detail = queries.run_item_detail(store, "run-pro", item_id)
    assert detail is not None
    assert detail["prompt"] == "Prompt of " + item_id
    assert detail["gold"].startswith("Ground truth")
    assert detail["rationales"]["guidance"] == "because guidance"
    assert detail["raw"] and detail["detection"] == bool(a.loc[3, "detection"])
    rates, differing, n_diff = queries.compare_runs(store, "run-pro", "run-pas")
    assert n_diff == len(a)  # detection flipped on every item
    err = rates[(rates["kind"] == "erroneous") & (rates["label"] == "detection")]
    pro = err[err["run"] == "run-pro"]["rate"].iloc[0]
    pas = err[err["run"] == "run-pas"]["rate"].iloc[0]
    assert pro + pas == pytest.approx(100.0)
    assert differing["labels_differing"].str.contains("detection").all()
    export = queries.run_export(store, "run-pro")
    assert len(export) == len(a) and {"response", "detection", "rationales"} <= set(export.columns)


def test_overview_queries(with_runs):
    store, _, _ = with_runs
    counts = dict(zip(*overview.table_counts(store)[["table_name", "rows"]].to_numpy().T))
    assert counts["runs"] == 2 and counts["published_misprompt"] > 1000
    sources = overview.published_sources(store)
    assert "misprompt:T6" in set(sources["source"])
    assert sources[sources["source"] == "misprompt:T12"]["evaluator"].iloc[0] == "human"
    runs = queries.misprompt_runs(store)
    assert set(runs["run_id"]) == {"run-pro", "run-pas"}
    assert runs.set_index("run_id").loc["run-pas", "weak_model"]
    assert runs.set_index("run_id")["inconsistent"]["run-pas"] >= 1
    assert "s" in set(overview.item_sets(store)["item_set"])
    assert len(overview.runs_overview(store)) == 2
