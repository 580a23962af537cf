"""The judge's F1 beside the F1 from people's labels, paired on the items people labelled."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from core.registry import BENCHMARKS, Judged
from core.services.audit.agreement import majority_labels
from core.services.audit.labels import audit_labels
from core.services.audit.labelsets import _benchmark_of_audit, _judged, _label_columns, label_set
from core.store import Store

WHOLE_RUN = "judge · whole run"
MAJORITY = "majority"


def _judge_on(pair: str) -> str:
    """The source name of the judge's row paired with `pair` (an annotator or the majority)."""
    return (
        f"judge · items labelled by {pair}"
        if pair != MAJORITY
        else "judge · items labelled by ≥2 annotators"
    )


def _human(pair: str) -> str:
    """The source name of the people's row of `pair`."""
    return f"human · {pair}"


def complete_labels(labels: pd.DataFrame, *, names: Sequence[str]) -> pd.DataFrame:
    """One row per (response, annotator) with all the labels of `names` (partially labelled
    items dropped: a person's F1 and the judge's must rest on the same items and labels)."""
    keys = ["run_id", "item_id", "variant"]
    if labels.empty:
        return pd.DataFrame(columns=[*keys, "annotator", *names])
    wide = (
        labels.set_index([*keys, "annotator", "label"])["value"]
        .unstack("label")
        .reindex(columns=list(names))
        .reset_index()
    )
    wide.columns.name = None
    return wide.dropna(subset=list(names)).reset_index(drop=True)


def f1_comparison(store: Store, audit: str) -> pd.DataFrame:
    """Per run: the judge's F1 on the whole run (context), then pairs on identical items —
    the judge and each annotator on exactly the items that annotator fully labelled, and the
    judge and the annotators' majority on the items two or more of them labelled — like the
    paper's Table 12 (human) beside Table 6 (judge). `pair` names the pair a row belongs to
    (empty for the whole-run row); `n` is the number of items of the row.

    F1 is the benchmark's own (its registry `label_metrics`, the same code as its results
    pages); a benchmark without one gets no rows."""
    benchmark = _benchmark_of_audit(store, audit)
    names = label_set(benchmark).names if benchmark is not None else ()
    columns = [
        "run_id",
        "model",
        "setting",
        "mode",
        "pair",
        "source",
        "n",
        "metric",
        *names,
        "average",
    ]
    scoring = BENCHMARKS[benchmark].scoring if benchmark is not None else None
    metrics_ref = scoring.label_metrics if isinstance(scoring, Judged) else None
    if metrics_ref is None:
        return pd.DataFrame(columns=columns)
    keys = ["run_id", "item_id", "variant"]
    item_cols = ["is_error", "primary_category", "secondary_category"]
    base = f"""
        SELECT v.run_id, v.item_id, v.variant, coalesce(i.is_error, true) AS is_error,
               i.primary_category, i.secondary_category{_label_columns(names)}
        FROM {_judged(names)} JOIN runs r ON r.run_id = v.run_id
        LEFT JOIN items i ON i.item_set = r.item_set AND i.item_id = v.item_id"""
    sampled = store.df(
        base
        + """
        JOIN audit_samples a ON a.run_id = v.run_id AND a.item_id = v.item_id
             AND a.variant = v.variant AND a.audit = ?""",
        [audit],
    )
    if sampled.empty:
        return pd.DataFrame(columns=columns)
    runs = sorted(sampled["run_id"].unique())
    whole = store.df(
        base + f" WHERE v.status = 'ok' AND v.run_id IN ({', '.join('?' for _ in runs)})",
        list(runs),
    )
    head = store.df(
        f"""SELECT run_id, coalesce(model, endpoint, '') AS model,
                               coalesce(setting, '') AS setting, mode FROM runs
                        WHERE run_id IN ({", ".join("?" for _ in runs)})""",
        list(runs),
    )
    head = head.set_index("run_id")
    parts = [whole.assign(evaluator=WHOLE_RUN)]
    pair_of = {WHOLE_RUN: ""}
    item_info = sampled[keys + item_cols]
    complete = complete_labels(audit_labels(store, audit), names=names)

    def add_pair(pair: str, human: pd.DataFrame) -> None:
        on = human[keys].drop_duplicates()
        parts.append(sampled.merge(on, on=keys).assign(evaluator=_judge_on(pair)))
        parts.append(
            human[keys + list(names)].merge(item_info, on=keys).assign(evaluator=_human(pair))
        )
        pair_of[_judge_on(pair)] = pair_of[_human(pair)] = pair

    for name, mine in complete.groupby("annotator", sort=True):
        add_pair(str(name), mine)
    per_item = complete.groupby(keys)["annotator"].transform("size")
    multi = complete[per_item >= 2]
    if not multi.empty:
        long = multi.melt(
            id_vars=[*keys, "annotator"],
            value_vars=list(names),
            var_name="label",
            value_name="value",
        )
        votes = majority_labels(long).set_index([*keys, "label"])["value"]
        add_pair(MAJORITY, votes.unstack("label").reset_index())
    rows = pd.concat(parts, ignore_index=True)
    for label in names:
        rows[label] = rows[label].astype("boolean")
    rows["is_error"] = rows["is_error"].fillna(True).astype(bool)
    rows = rows.join(head[["model", "setting"]], on="run_id")
    counts = rows.groupby(["run_id", "evaluator"]).size().rename("n").reset_index()
    f1 = metrics_ref()(rows).merge(
        counts.rename(columns={"evaluator": "source"}), on=["run_id", "source"]
    )
    f1 = f1.join(head, on="run_id")
    f1["pair"] = f1["source"].map(pair_of)
    f1["_o"] = [
        (0 if p == "" else 2 if p == MAJORITY else 1, p, not s.startswith("judge"))
        for p, s in zip(f1["pair"], f1["source"])
    ]
    f1 = f1.sort_values(["run_id", "_o"]).reset_index(drop=True)
    return f1[columns]


def mean_abs_difference(f1: pd.DataFrame, *, names: Sequence[str]) -> pd.DataFrame:
    """Per run and pair: mean |human F1 − judge F1| over the labels of `names`, both on the same
    items (the paper reports 5.59 points between its annotators and the judge)."""
    rows = []
    paired = f1[f1["pair"].fillna("") != ""]
    for (run_id, pair), group in paired.groupby(["run_id", "pair"], sort=True):
        judge = group[group["source"] == _judge_on(str(pair))]
        human = group[group["source"] == _human(str(pair))]
        if judge.empty or human.empty:
            continue
        j, h = judge.iloc[0], human.iloc[0]
        diffs = [abs(h[l] - j[l]) for l in names if not (pd.isna(h[l]) or pd.isna(j[l]))]
        rows.append(
            {
                "run_id": run_id,
                "model": j["model"],
                "pair": pair,
                "n": int(h["n"]),
                "mean_abs_diff_points": float(np.mean(diffs)) if diffs else float("nan"),
            }
        )
    return pd.DataFrame(rows, columns=["run_id", "model", "pair", "n", "mean_abs_diff_points"])
