"""Scores of mistake finding (SPEC §3; the paper's Tables 4, 5 and 9).

Mistake-location accuracy: a trace is right when the predicted location equals the gold one
exactly — the number of the first wrong step, or "no mistake" for a trace without one. Split into
`traces_with_mistake` (Table 9b) and `traces_without_mistake` (Table 9a). `Overall` (Table 4's
last block) is the unweighted mean of the task accuracies, which is how the paper's Overall
column comes out (e.g. GPT-4 direct_trace: mean(35.0, 62.29, 40.67, 44.0, 17.06) = 39.80).

Answer-correctness weighted F1 (Table 5): the gold label is whether the trace's final answer is
correct (`answer == target`, the paper's correct_ans); the prediction is "incorrect" when the
model reports a mistake anywhere and "correct" otherwise. F1 is computed with each of the two
labels as the positive class and averaged, weighted by how often each label occurs in the gold
(sklearn's `average='weighted'`). Predicting "incorrect" for every trace of an 85/15 set gives 78,
the paper's stated baseline.

Answers that cannot be scored are counted apart: `unparsable_answers` (nothing readable),
`ambiguous_answers` (claims read that do not resolve to one answer: a hedge, a contradiction;
never guessed, core/benchmarks/bbm/parse.py) and `out_of_range_answers` (a step number that is 0 or beyond the trace's last step), both in % of
the scored traces; `partly_parsed_answers` for the step methods.

Every run row carries `n` (the traces it rests on) and a 95% interval `ci_low`, `ci_high`
(percent): Wilson for the shares, a percentile bootstrap over traces for weighted F1, Wilson on
Kish's effective n for Overall (docs/statistics.md). Traces imported with a `group` (the source
they share) are clustered: the shares get Wilson on the cluster-robust effective n, weighted F1
a bootstrap over groups.

Choices the paper leaves open (shown in the UI and docs/benchmarks.md): an answer we cannot parse counts as
wrong for accuracy and as "no mistake reported" for F1 (the paper: "otherwise, we assume the
model prediction is that the trace is correct"); a response that failed (no answer after retries)
is left out of every score and counted separately.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

import numpy as np
import pandas as pd

from core.stats import (
    bootstrap_sums,
    cluster_sums,
    cluster_wilson,
    draws_for,
    item_clusters,
    kish_n,
    n_items,
    wilson_percent,
)

OUTPUT_COLUMNS = ["source", "model", "task", "method", "subset", "measure", "value"]
# issue 18: every row with its n (traces the value rests on) and 95% interval, in percent:
# Wilson for the shares (accuracy, unparsable, ...), a bootstrap over traces for weighted F1,
# and for Overall (a mean of task accuracies) Wilson on Kish's effective n
STAT_COLUMNS = ["n", "ci_low", "ci_high"]
DRAWS = 2000
SEED = 0
ACCURACY = "mistake_location_accuracy"
WEIGHTED_F1 = "weighted_f1_answer_correctness"
UNPARSABLE = "unparsable_answers"  # no step number and no "No" could be read
AMBIGUOUS = "ambiguous_answers"  # claims read that do not resolve to one answer (issue 29)
OUT_OF_RANGE = "out_of_range_answers"  # a step number outside 1..n (0 or beyond the last step)
PARTIAL = "partly_parsed_answers"  # step methods: some step answers unreadable, still scored
# share of a run's scored answers (unparsable + ambiguous + out of range) from which the pages warn
UNPARSED_WARN_SHARE = 0.20
SUBSETS = ("all", "traces_with_mistake", "traces_without_mistake")
OVERALL = "Overall"
SCORED_STATUSES = ("ok", "partial")


def f1_binary(tp: int, fp: int, fn: int) -> float:
    """F1 = 2TP / (2TP + FP + FN); 0 when there is nothing to find and nothing was found."""
    denom = 2 * tp + fp + fn
    return 2 * tp / denom if denom else 0.0


def weighted_f1(y_true: Sequence[object], y_pred: Sequence[object]) -> float:
    """Per-label F1 averaged with the gold support as weights (sklearn average='weighted')."""
    if len(y_true) != len(y_pred):
        raise ValueError("y_true and y_pred differ in length")
    if not len(y_true):
        return float("nan")
    labels = sorted(set(y_true) | set(y_pred), key=repr)
    total = 0.0
    weight_sum = 0
    for label in labels:
        tp = sum(t == label and p == label for t, p in zip(y_true, y_pred))
        fp = sum(t != label and p == label for t, p in zip(y_true, y_pred))
        fn = sum(t == label and p != label for t, p in zip(y_true, y_pred))
        support = tp + fn
        total += support * f1_binary(tp, fp, fn)
        weight_sum += support
    return total / weight_sum if weight_sum else 0.0


def weighted_f1_of_sums(sums: np.ndarray) -> np.ndarray:
    """`weighted_f1` (0–1) from summed confusion cells, vectorised over rows: columns = traces
    (gold correct, predicted correct), (correct, incorrect), (incorrect, correct), (incorrect,
    incorrect). What the bootstrap recomputes for every draw."""
    cc, ci, ic, ii = (sums[:, k] for k in range(4))

    def f1(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
        denom = 2 * tp + fp + fn
        return np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1), 0.0)

    support_c, support_i = cc + ci, ic + ii
    total = support_c + support_i
    weighted = support_c * f1(cc, ic, ci) + support_i * f1(ii, ci, ic)
    return np.where(total > 0, weighted / np.where(total > 0, total, 1), np.nan)


def _confusion(y_true: Sequence[str], y_pred: Sequence[str]) -> np.ndarray:
    """Per trace, one-hot over the four (gold, predicted) cells of `weighted_f1_of_sums`."""
    t = np.array([v == "correct" for v in y_true])
    p = np.array([v == "correct" for v in y_pred])
    return np.column_stack([t & p, t & ~p, ~t & p, ~t & ~p]).astype(float)


def location_correct(gold_index: int | None, pred_index: int | None, parse_status: str) -> bool:
    """Exact match of the first-mistake location; "no mistake" matches "no mistake"."""
    if parse_status not in SCORED_STATUSES:
        return False
    return _norm(gold_index) == _norm(pred_index)


def _norm(value: Any) -> int | None:
    if value is None:
        return None
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return int(value)


def score_traces(frame: pd.DataFrame) -> pd.DataFrame:
    """Adds `location_correct`, `has_mistake`, `pred_mistake` to a per-trace frame.

    Needs columns gold_index, pred_index, parse_status (pred_step optional: a step number
    outside the trace still means the model reported a mistake).
    """
    out = frame.copy()
    out["has_mistake"] = [_norm(g) is not None for g in out["gold_index"]]
    out["location_correct"] = [
        location_correct(g, p, s)
        for g, p, s in zip(out["gold_index"], out["pred_index"], out["parse_status"])
    ]
    steps = out["pred_step"] if "pred_step" in out else out["pred_index"]
    out["pred_mistake"] = [_norm(s) is not None for s in steps]
    return out


def _rows_for_group(
    source: str, model: str, task: str, method: str, group: pd.DataFrame
) -> list[dict]:
    rows = []
    for subset in SUBSETS:
        if subset == "all":
            part = group
        elif subset == "traces_with_mistake":
            part = group[group["has_mistake"]]
        else:
            part = group[~group["has_mistake"]]
        if len(part):
            k = int(part["location_correct"].sum())
            clusters = _clusters(part)
            stats = (
                _share_stats(k, len(part))
                if clusters is None
                else _clustered_share(part["location_correct"], clusters, _items(part))
            )
            rows.append(
                dict(
                    source=source,
                    model=model,
                    task=task,
                    method=method,
                    subset=subset,
                    measure=ACCURACY,
                    value=100.0 * part["location_correct"].mean(),
                )
                | stats
            )
    y_true = ["correct" if c else "incorrect" for c in group["answer_correct"]]
    y_pred = ["incorrect" if m else "correct" for m in group["pred_mistake"]]
    clusters = _clusters(group)
    sums, counts = cluster_sums(_confusion(y_true, y_pred), clusters)
    low, high = bootstrap_sums(
        sums, counts, weighted_f1_of_sums, draws_for(int(np.sum(counts)), DRAWS), SEED
    )
    rows.append(
        dict(
            source=source,
            model=model,
            task=task,
            method=method,
            subset="all",
            measure=WEIGHTED_F1,
            value=100.0 * weighted_f1(y_true, y_pred),
            n=_n(group),
            ci_low=100.0 * low,
            ci_high=100.0 * high,
        )
    )
    for measure, status in (
        (UNPARSABLE, "unparsable"),
        (AMBIGUOUS, "ambiguous"),
        (OUT_OF_RANGE, "out_of_range"),
        (PARTIAL, "partial"),
    ):
        hit = group["parse_status"] == status
        stats = (
            _share_stats(int(hit.sum()), len(group))
            if clusters is None
            else _clustered_share(hit, clusters, _items(group))
        )
        rows.append(
            dict(
                source=source,
                model=model,
                task=task,
                method=method,
                subset="all",
                measure=measure,
                value=100.0 * (group["parse_status"] == status).mean(),
            )
            | stats
        )
    return rows


def _clusters(part: pd.DataFrame) -> np.ndarray | None:
    """The traces' `group` (an optional import field: the source they share) and, for a run
    asked K times, each trace's K answers (core.stats.item_clusters); None when neither: then
    every trace is independent."""
    groups = (
        part["cluster"].to_numpy(dtype=object)
        if "cluster" in part and part["cluster"].notna().any()
        else None
    )
    return item_clusters(groups, part["item_id"].to_numpy() if "item_id" in part else None)


def _items(part: pd.DataFrame) -> np.ndarray | None:
    return part["item_id"].to_numpy() if "item_id" in part else None


def _n(part: pd.DataFrame) -> int:
    """Traces a row rests on: distinct items (a run asked K times holds K answers each)."""
    return n_items(part["item_id"].to_numpy() if "item_id" in part else None, len(part))


def _clustered_share(
    hits: pd.Series, clusters: np.ndarray, items: np.ndarray | None = None
) -> dict:
    """n and the 95% interval (percent) of a share whose traces come in groups: Wilson on the
    effective n from the cluster-robust SE (core.stats.cluster_wilson)."""
    low, high = cluster_wilson(hits.to_numpy(dtype=float), clusters)
    return {"n": n_items(items, len(hits)), "ci_low": 100.0 * low, "ci_high": 100.0 * high}


def _share_stats(k: int, n: int) -> dict:
    """n and the Wilson 95% interval (percent) of a share k / n."""
    low, high = wilson_percent(k, n)
    return {"n": n, "ci_low": float(low), "ci_high": float(high)}


def metrics_from_traces(traces: pd.DataFrame) -> pd.DataFrame:
    """Long metrics from per-trace results.

    `traces` columns: source, model, task, method, status, gold_index, pred_index, parse_status,
    answer_correct. Failed responses (status != 'ok') are excluded.
    """
    columns = OUTPUT_COLUMNS + STAT_COLUMNS
    if traces.empty:
        return pd.DataFrame(columns=columns)
    scored = score_traces(traces[traces["status"] == "ok"])
    rows: list[dict] = []
    keys = ["source", "model", "task", "method"]
    for key, group in scored.groupby(keys, sort=False):
        source, model, task, method = cast(tuple[str, str, str, str], key)
        rows.extend(_rows_for_group(source, model, task, method, group))
    out = pd.DataFrame(rows, columns=columns)
    out = pd.concat([out, overall_rows(out)], ignore_index=True)
    out["n"] = out["n"].astype("Int64")
    return out


def overall_rows(metrics: pd.DataFrame) -> pd.DataFrame:
    """Table 4's `Overall`: the mean of the task accuracies (every subset), per source/model/method.

    With the tasks' `n`: n = their traces, and a Wilson interval on Kish's effective sample
    size of a mean of task shares (T² / Σ 1/n_t: all traces when the tasks are of one size).
    A bootstrap stratified by task would collapse to a point when every task's share is 0 or
    100%, as it is with one trace per task."""
    acc = metrics[(metrics["measure"] == ACCURACY) & (metrics["task"] != OVERALL)]
    with_n = "n" in metrics
    columns = OUTPUT_COLUMNS + (STAT_COLUMNS if with_n else [])
    if acc.empty:
        return pd.DataFrame(columns=columns)
    grouped = acc.groupby(["source", "model", "method", "subset"], sort=False)["value"].mean()
    out = grouped.reset_index()
    out["task"] = OVERALL
    out["measure"] = ACCURACY
    if with_n:
        stats = []
        for _, part in acc.groupby(["source", "model", "method", "subset"], sort=False):
            n = part["n"].to_numpy(dtype=float)
            n_eff = kish_n(n)
            low, high = wilson_percent(part["value"].mean() / 100.0 * n_eff, n_eff)
            stats.append({"n": int(n.sum()), "ci_low": float(low), "ci_high": float(high)})
        out = pd.concat([out, pd.DataFrame(stats, index=out.index)], axis=1)
    return out[columns]


def published_metrics(published: pd.DataFrame) -> pd.DataFrame:
    """The published_bbm table in the metrics columns (values unchanged), with its `note`
    (`subsampled` = the paper's * cells) kept last."""
    cols = OUTPUT_COLUMNS + (["note"] if "note" in published else [])
    return published[cols].reset_index(drop=True)


def order_tasks(tasks: Iterable[str]) -> list[str]:
    from core.benchmarks.bbm.items import TASK_ORDER

    tasks = list(dict.fromkeys(tasks))
    known = [t for t in TASK_ORDER + [OVERALL] if t in tasks]
    return known + sorted(t for t in tasks if t not in known)


def overall_check(published: pd.DataFrame, tolerance: float = 0.006) -> pd.DataFrame:
    """Table 4's printed Overall against the mean of its five task cells, per model and method.

    The paper's Overall is that mean in 11 of 12 cells; PaLM 2 Unicorn direct_trace prints 17.09
    where its task cells average 13.86. The page shows such mismatches instead of hiding them.
    """
    t4 = published[(published["table_id"].astype(str) == "4") & (published["measure"] == ACCURACY)]
    tasks = t4[t4["task"] != OVERALL]
    printed = t4[t4["task"] == OVERALL].set_index(["model", "method"])["value"]
    rows = []
    for key, group in tasks.groupby(["model", "method"], sort=False):
        model, method = cast(tuple[str, str], key)
        if (model, method) not in printed.index:
            continue
        mean = float(group["value"].mean())
        shown = float(printed[(model, method)])
        rows.append(
            {
                "model": model,
                "method": method,
                "n_tasks": int(group["task"].nunique()),
                "printed_overall": shown,
                "mean_of_tasks": round(mean, 3),
                "consistent": abs(mean - shown) <= tolerance,
            }
        )
    return pd.DataFrame(
        rows,
        columns=["model", "method", "n_tasks", "printed_overall", "mean_of_tasks", "consistent"],
    )
