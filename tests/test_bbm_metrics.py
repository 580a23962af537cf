"""Mistake-location accuracy, the Table 5 weighted F1, Overall, and published values."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pandas as pd
import pytest
from sklearn.metrics import f1_score

from core.benchmarks.bbm import published
from core.benchmarks.bbm.metrics import (
    ACCURACY,
    OVERALL,
    UNPARSABLE,
    WEIGHTED_F1,
    metrics_from_traces,
    overall_check,
    overall_rows,
    weighted_f1,
)
from core.cli import main as cli

ROOT = Path(__file__).resolve().parent.parent
CSV = ROOT.parent / "shared" / "published" / "bigbench_mistake_accuracy.csv"


def frame(rows):
    cols = ["task", "gold_index", "pred_index", "parse_status", "answer_correct", "status"]
    f = pd.DataFrame(rows, columns=cols)
    f.insert(0, "source", "run1")
    f.insert(1, "model", "m")
    f.insert(3, "method", "direct_trace")
    return f


def value(metrics, task, measure, subset="all"):
    hit = metrics[
        (metrics["task"] == task) & (metrics["measure"] == measure) & (metrics["subset"] == subset)
    ]
    assert len(hit) == 1, (task, measure, subset)
    return float(hit["value"].iloc[0])


def test_weighted_f1_hand_computed():
    # label C: TP 1, FP 1, FN 1 -> 0.5 ; label I: TP 2, FP 1, FN 1 -> 4/6 ; weights 2 and 3
    y_true = ["C", "C", "I", "I", "I"]
    y_pred = ["C", "I", "I", "I", "C"]
    assert weighted_f1(y_true, y_pred) == pytest.approx((2 * 0.5 + 3 * 4 / 6) / 5)
    assert weighted_f1(y_true, y_pred) == pytest.approx(0.6)


def test_weighted_f1_baseline_is_the_papers_78():
    # "the naive baseline of predicting all traces as incorrect achieves a weighted F1 of 78"
    y_true = ["incorrect"] * 255 + ["correct"] * 45
    y_pred = ["incorrect"] * 300
    assert round(100 * weighted_f1(y_true, y_pred)) == 78


def test_weighted_f1_matches_sklearn_on_random_cases():
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(1, 40)
        y_true = [rng.choice(["correct", "incorrect"]) for _ in range(n)]
        y_pred = [rng.choice(["correct", "incorrect"]) for _ in range(n)]
        expected = f1_score(y_true, y_pred, average="weighted", zero_division=0)
        assert weighted_f1(y_true, y_pred) == pytest.approx(expected)


def test_accuracy_split_and_f1_hand_computed():
    rows = [
        # task, gold, pred, parse, answer_correct, status
        ("Word sorting", None, None, "ok", True, "ok"),  # right (no mistake, said No)
        ("Word sorting", 2, 2, "ok", False, "ok"),  # right
        ("Word sorting", 1, 0, "ok", False, "ok"),  # wrong step
        ("Word sorting", None, 3, "ok", True, "ok"),  # wrong: claims a mistake
        ("Word sorting", 1, None, "unparsable", False, "ok"),  # unreadable -> wrong
        ("Word sorting", 0, 0, "ok", False, "failed"),  # failed -> left out
        ("Dyck languages", 0, 0, "partial", False, "ok"),  # partly parsed step answers: scored
        ("Dyck languages", None, None, "ok", True, "ok"),
    ]
    m = metrics_from_traces(frame(rows))
    assert value(m, "Word sorting", ACCURACY) == pytest.approx(100 * 2 / 5)
    assert value(m, "Word sorting", ACCURACY, "traces_with_mistake") == pytest.approx(100 / 3)
    assert value(m, "Word sorting", ACCURACY, "traces_without_mistake") == pytest.approx(50)
    assert value(m, "Word sorting", UNPARSABLE) == pytest.approx(20)
    # F1: gold answer-correctness vs "reported a mistake" (unparsable -> no mistake reported)
    y_true = ["c", "i", "i", "c", "i"]
    y_pred = ["c", "i", "i", "i", "c"]
    assert value(m, "Word sorting", WEIGHTED_F1) == pytest.approx(
        100 * f1_score(y_true, y_pred, average="weighted")
    )
    assert value(m, "Dyck languages", ACCURACY) == 100
    # Overall = mean of the task accuracies
    assert value(m, OVERALL, ACCURACY) == pytest.approx((40 + 100) / 2)
    assert list(m.columns) == [
        *("source", "model", "task", "method", "subset", "measure", "value"),
        *("n", "ci_low", "ci_high"),
    ]


def test_overall_definition_reproduces_the_papers_table4():
    """Overall = mean of the task accuracies reproduces 11 of Table 4's 12 Overall cells; the
    twelfth (PaLM 2 Unicorn, direct_trace: printed 17.09, tasks average 13.86) is the paper's
    own inconsistency, which overall_check reports."""
    pub = published.read_bbm()
    t4 = pub[pub["table_id"] == "4"]
    tasks = t4[t4["task"] != OVERALL]
    mine = overall_rows(tasks[["source", "model", "task", "method", "subset", "measure", "value"]])
    theirs = t4[t4["task"] == OVERALL].set_index(["model", "method"])["value"]
    assert len(mine) == len(theirs) == 12
    off = [
        (model, method)
        for model, method, value in zip(mine["model"], mine["method"], mine["value"])
        if abs(value - theirs[(model, method)]) > 0.006
    ]
    assert off == [("PaLM 2 Unicorn", "direct_trace")]
    check = overall_check(pub)
    assert len(check) == 12 and check["n_tasks"].eq(5).all()
    bad = check[~check["consistent"]]
    assert list(zip(bad["model"], bad["method"])) == off
    assert bad["mean_of_tasks"].iloc[0] == pytest.approx(
        (11.67 + 18.0 + 6.67 + 22.0 + 10.98) / 5, abs=1e-3
    )


@pytest.mark.skipif(not CSV.exists(), reason="shared published CSV not present")
def test_published_metrics_match_the_csv_exactly(initialised_store, capsys):
    assert cli(["metrics", "bbm", "--source", "published"]) == 0
    out = pd.read_csv(io.StringIO(capsys.readouterr().out), keep_default_na=False)
    # mode: BBM asks the model to find the mistake (passive), a column like metrics misprompt's
    assert list(out.columns) == [
        "source",
        "mode",
        "model",
        "task",
        "method",
        "subset",
        "measure",
        "value",
        "n",
        "ci_low",
        "ci_high",
        "judging",
        "note",
    ]
    assert set(out["mode"]) == {"passive"}
    # the paper's tables give no n per cell: n and the interval are empty
    assert (out[["n", "ci_low", "ci_high"]] == "").all().all()
    assert set(out["judging"]) == {"published"}
    out = out.drop(columns=["mode", "n", "ci_low", "ci_high", "judging"])
    raw = pd.read_csv(CSV, dtype={"table": str}, keep_default_na=False)
    expected = sorted(
        zip(
            "bigbench_mistake:T" + raw["table"],
            raw["model"],
            raw["task"],
            raw["method"],
            raw["subset"],
            raw["measure"],
            raw["value_percent"].astype(float),
            raw["note"],
        )
    )
    got = sorted(out.itertuples(index=False, name=None))
    assert got == expected


def test_metrics_json_and_unknown_source(initialised_store, capsys):
    assert cli(["metrics", "bbm", "--source", "published", "--format", "json"]) == 0
    import json

    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 252 and rows[0].keys() == {
        "source",
        "mode",
        "model",
        "task",
        "method",
        "subset",
        "measure",
        "value",
        "n",
        "ci_low",
        "ci_high",
        "judging",
        "note",
    }
    assert rows[0]["n"] is None and rows[0]["ci_low"] is None  # null, never NaN
    assert cli(["metrics", "bbm", "--source", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown source 'nope'" in err and "published" in err


# -- n and intervals (issue 18) ----------------------------------------------------------------


def _random_traces(seed: int, per_task: dict[str, int]) -> pd.DataFrame:
    rng = random.Random(seed)
    rows = []
    for task, n in per_task.items():
        for _ in range(n):
            gold = rng.choice([None, 0, 1, 2, 3])
            pred = gold if rng.random() < 0.45 else rng.choice([None, 0, 1, 2, 3])
            status = rng.choice(["ok"] * 8 + ["unparsable", "out_of_range"])
            rows.append((task, gold, pred, status, gold is None, "ok"))
    return frame(rows)


def _row(m: pd.DataFrame, task: str, measure: str, subset: str = "all") -> pd.Series:
    return m[(m["task"] == task) & (m["measure"] == measure) & (m["subset"] == subset)].iloc[0]


def test_shares_carry_n_and_the_statsmodels_wilson_interval():
    from statsmodels.stats.proportion import proportion_confint

    traces = _random_traces(1, {"Word sorting": 37, "Dyck languages": 8})
    m = metrics_from_traces(traces)
    scored = traces[traces["task"] == "Word sorting"]
    for measure, subset in (
        (ACCURACY, "all"),
        (ACCURACY, "traces_with_mistake"),
        (UNPARSABLE, "all"),
    ):
        row = _row(m, "Word sorting", measure, subset)
        part = scored if subset == "all" else scored[scored["gold_index"].notna()]
        k = round(row["value"] / 100 * len(part))
        assert row["n"] == len(part)
        low, high = proportion_confint(k, len(part), alpha=0.05, method="wilson")
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((100 * low, 100 * high), abs=1e-9)


def test_weighted_f1_interval_agrees_with_a_plain_loop_over_sklearn():
    import numpy as np

    traces = _random_traces(2, {"Logical deduction": 120})
    m = metrics_from_traces(traces)
    row = _row(m, "Logical deduction", WEIGHTED_F1)
    ok = traces.assign(pred_mistake=traces["pred_index"].notna())
    y_true = ["correct" if c else "incorrect" for c in ok["answer_correct"]]
    y_pred = ["incorrect" if p else "correct" for p in ok["pred_mistake"]]
    rng = np.random.default_rng(9)
    values = []
    for _ in range(1500):  # resample traces one draw at a time, F1 by sklearn
        idx = rng.integers(0, len(y_true), len(y_true))
        values.append(
            100
            * f1_score(
                [y_true[i] for i in idx],
                [y_pred[i] for i in idx],
                average="weighted",
                zero_division=0,
            )
        )
    ref = np.percentile(values, [2.5, 97.5])
    assert row["n"] == 120
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(tuple(ref), abs=2.0)


def test_overall_interval_is_wilson_on_the_traces_when_tasks_are_of_one_size():
    from statsmodels.stats.proportion import proportion_confint

    traces = _random_traces(3, {"Word sorting": 20, "Dyck languages": 20, "Logical deduction": 20})
    m = metrics_from_traces(traces)
    row = _row(m, OVERALL, ACCURACY)
    k = round(
        sum(
            _row(m, t, ACCURACY)["value"] / 100 * 20
            for t in ("Word sorting", "Dyck languages", "Logical deduction")
        )
    )
    low, high = proportion_confint(k, 60, alpha=0.05, method="wilson")
    assert row["n"] == 60
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((100 * low, 100 * high), abs=1e-9)
    # unequal tasks: Kish's n = T² / Σ 1/n_t, fewer than the traces
    uneven = metrics_from_traces(_random_traces(4, {"Word sorting": 50, "Dyck languages": 5}))
    n_eff = 4 / (1 / 50 + 1 / 5)
    p = _row(uneven, OVERALL, ACCURACY)["value"] / 100
    low, high = proportion_confint(p * n_eff, n_eff, alpha=0.05, method="wilson")
    got = _row(uneven, OVERALL, ACCURACY)
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((100 * low, 100 * high), abs=1e-9)


def test_grouped_traces_get_cluster_robust_and_cluster_bootstrap_intervals():
    import numpy as np
    import statsmodels.api as sm
    from statsmodels.stats.proportion import proportion_confint

    rng = np.random.default_rng(8)
    rows = []
    for _group in range(30):  # 30 groups of 6 traces: a group is mostly right or mostly wrong
        skill = rng.uniform(0, 1)
        for _ in range(6):
            gold = int(rng.integers(0, 4))
            pred = gold if rng.random() < skill else (gold + 1) % 4
            rows.append(("Word sorting", gold, pred, "ok", bool(rng.random() < 0.3), "ok"))
    traces = frame(rows)
    traces["cluster"] = [f"g{i // 6}" for i in range(len(traces))]
    grouped = _row(metrics_from_traces(traces), "Word sorting", ACCURACY)
    plain = _row(metrics_from_traces(traces.drop(columns="cluster")), "Word sorting", ACCURACY)
    # the reference: Wilson on n / deff, deff from statsmodels' cluster-robust OLS
    y = np.array([gold == pred for _, gold, pred, *_ in rows], dtype=float)
    x = np.ones(len(y))
    ids = np.arange(len(y)) // 6
    robust = sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": ids}).bse[0]
    deff = max(1.0, (robust / sm.OLS(y, x).fit().bse[0]) ** 2)
    low, high = proportion_confint(y.mean() * len(y) / deff, len(y) / deff, method="wilson")
    assert grouped["n"] == 180
    assert (grouped["ci_low"], grouped["ci_high"]) == pytest.approx((100 * low, 100 * high))
    assert grouped["ci_high"] - grouped["ci_low"] > 1.3 * (plain["ci_high"] - plain["ci_low"])
    assert grouped["value"] == plain["value"]


def test_ambiguous_answers_are_their_own_status_counted_next_to_unparsable():
    """Issue 29: an answer whose claims do not resolve is `ambiguous` — stored as the result's
    status, scored as wrong (never a guess), and counted in its own metrics row."""
    from core.benchmarks.bbm.metrics import AMBIGUOUS
    from core.benchmarks.bbm.record import to_result
    from core.benchmarks.bbm.task import trace_scores

    s = trace_scores("direct_trace", list("abcdef"), 1, ["It could be thought 2 or thought 5."])
    assert s["parse_status"] == "ambiguous" and s["predicted_index"] is None
    assert not s["location_correct"]
    result = to_result(s)
    assert (result.status, result.answer) == ("ambiguous", "?")
    # step methods: a step answer that hedges is ambiguous, the trace partly parsed
    s = trace_scores("direct_step", list("abc"), None, ["Yes", "Maybe.", "Yes"])
    assert s["step_answers"] == ["yes", "ambiguous", "yes"] and s["parse_status"] == "partial"
    s = trace_scores("direct_step", list("ab"), None, ["Maybe.", "hmm"])
    assert s["parse_status"] == "ambiguous"
    rows = [
        ("Word sorting", 1, None, "ambiguous", False, "ok"),
        ("Word sorting", 1, None, "unparsable", False, "ok"),
        ("Word sorting", 1, 1, "ok", False, "ok"),
        ("Word sorting", None, None, "ok", True, "ok"),
    ]
    m = metrics_from_traces(frame(rows))
    assert value(m, "Word sorting", AMBIGUOUS) == pytest.approx(25)
    assert value(m, "Word sorting", UNPARSABLE) == pytest.approx(25)
    assert value(m, "Word sorting", ACCURACY) == pytest.approx(50)
