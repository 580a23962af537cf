"""Consistency checks of the published Mis-prompt tables, recomputed from the CSV."""

from __future__ import annotations

import pandas as pd
import pytest

from core.benchmarks.misprompt import consistency as mc
from core.benchmarks.misprompt.published import read_misprompt_f1
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.services.published import PUBLISHED_DIR


@pytest.fixture(scope="module")
def pub() -> pd.DataFrame:
    return read_misprompt_f1(PUBLISHED_DIR / "misprompt_f1.csv")


def test_table10_avg_row_is_flagged_as_repeat_of_table9_and_as_wrong(pub):
    checks = mc.all_checks(pub)
    repeat = checks[checks["check"].str.contains("repeats")]
    assert set(repeat["source"]) == {"misprompt:T10"}
    assert "misprompt:T9" in repeat["check"].iloc[0]
    t10 = checks[
        (checks["check"] == "Avg row = mean over models") & (checks["source"] == "misprompt:T10")
    ]
    # independent recomputation: mean over the 13 model rows of Table 10
    models = pub[(pub["source"] == "misprompt:T10") & (pub["model"] != "Avg")]
    assert models["model"].nunique() == 13
    means = models.groupby("metric")["f1"].mean().round(2)
    for _, row in t10.iterrows():
        assert row["recomputed"] == pytest.approx(means[row["metric"]])
        published = pub[
            (pub["source"] == "misprompt:T10")
            & (pub["model"] == "Avg")
            & (pub["metric"] == row["metric"])
        ]["f1"].iloc[0]
        assert row["published"] == published
    assert t10["mismatch"].all()
    # Tables 3, 7, 8, 9 Avg rows agree with their models' mean
    other = checks[
        (checks["check"] == "Avg row = mean over models") & (checks["source"] != "misprompt:T10")
    ]
    assert len(other) == 4 * 7 and not other["mismatch"].any()


def test_table4_vs_gpt4o_rows_lists_both_numbers(pub):
    checks = mc.table4_vs_primary_tables(pub)
    assert len(checks) == 4 * 7
    for _, row in checks.iterrows():
        t4 = pub[
            (pub["source"] == "misprompt:T4")
            & (pub["category"] == row["category"])
            & (pub["metric"] == row["metric"])
        ]["f1"].iloc[0]
        other = pub[
            (pub["source"].isin(["misprompt:T7", "misprompt:T8", "misprompt:T9", "misprompt:T10"]))
            & (pub["model"] == "GPT-4o")
            & (pub["category"] == row["category"])
            & (pub["metric"] == row["metric"])
        ]["f1"].iloc[0]
        assert (row["published"], row["recomputed"]) == (t4, other)
        assert row["mismatch"] == (abs(t4 - other) > 0.01 + 1e-9)
    assert checks["mismatch"].sum() > 0


def test_average_column_recomputed_for_every_row(pub):
    checks = mc.average_column(pub)
    n_rows = len(pub[pub["metric"] == "average"])
    assert len(checks) == n_rows
    wide = pub.pivot_table(
        index=["source", "model", "setting", "category"], columns="metric", values="f1"
    )
    recomputed = wide[list(JUDGE_LABELS)].mean(axis=1).round(2)
    expected_mismatches = int(((wide["average"] - recomputed).abs() > 0.01 + 1e-9).sum())
    assert int(checks["mismatch"].sum()) == expected_mismatches


def test_tolerance_is_one_unit_in_the_last_digit():
    rows = []
    for model, values in {"A": 10.0, "B": 20.0}.items():
        for metric in JUDGE_LABELS:
            rows.append(
                dict(
                    source="misprompt:T99",
                    model=model,
                    setting="zero-shot",
                    category_level="all",
                    category="All",
                    metric=metric,
                    f1=values,
                )
            )
        rows.append(
            dict(
                source="misprompt:T99",
                model=model,
                setting="zero-shot",
                category_level="all",
                category="All",
                metric="average",
                f1=values,
            )
        )
    for metric, value in [("detection", 15.01), ("guidance", 15.02)]:
        rows.append(
            dict(
                source="misprompt:T99",
                model="Avg",
                setting="zero-shot",
                category_level="all",
                category="All",
                metric=metric,
                f1=value,
            )
        )
    checks = mc.avg_rows(pd.DataFrame(rows)).set_index("metric")
    assert not checks.loc["detection", "mismatch"]  # 0.01 off: within tolerance
    assert checks.loc["guidance", "mismatch"]  # 0.02 off: a mismatch


def test_judge_vs_human_mean_absolute_difference(pub):
    diff = mc.judge_vs_human(pub)
    judge = pub[pub["source"] == "misprompt:T6"].set_index(["model", "setting", "metric"])["f1"]
    human = pub[pub["source"] == "misprompt:T12"].set_index(["model", "setting", "metric"])["f1"]
    both = pd.concat([judge.rename("j"), human.rename("h")], axis=1, join="inner")
    assert len(diff) == len(both) == 406
    mad = mc.mean_abs_difference(diff)
    assert mad["with_average"] == pytest.approx((both["h"] - both["j"]).abs().mean(), abs=1e-6)
    labels = both[both.index.get_level_values("metric").isin(JUDGE_LABELS)]
    assert mad["six_labels"] == pytest.approx((labels["h"] - labels["j"]).abs().mean(), abs=1e-6)
    assert mad["paper"] == 5.59
    # ours over all seven columns reproduces the paper's number at its precision
    assert round(mad["with_average"], 2) == mad["paper"]


def test_consistency_from_store(initialised_store):
    checks = mc.consistency_checks(initialised_store)
    assert list(checks.columns) == mc.FINDING_COLUMNS
    summary = mc.summary(checks)
    assert {"cells", "mismatches"} <= set(summary.columns)
    assert summary["mismatches"].sum() == checks["mismatch"].sum()
