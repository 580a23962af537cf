"""Consistency checks of the published Mis-prompt tables: recompute what the paper derived.

The paper's tables disagree in places (SPEC §1). Rather than hide that, the product recomputes:
- every `Avg` row (model = 'Avg', the mean over the 13 models) of Tables 3, 7–10;
- every `average` column value (the mean of the six label F1s) of every row;
- Table 10's Avg row against Table 9's (the paper repeats Table 9's);
- Table 4 (GPT-4o by primary category) against the GPT-4o rows of Tables 7–10;
- Table 3 against the zero-shot rows of Table 6 (the same cells, printed twice);
- Table 2's stated total (14,969, in its Total row and the text) against the sum of its 14
  cells (14,696);
and compares the human evaluation (Table 12) with the judge's (Table 6) cell by cell.

A recomputed value is rounded to 2 decimals like the tables; a difference above TOLERANCE
(0.01, i.e. more than one unit in the last printed digit) is a mismatch.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.store import Store

TOLERANCE = 0.01 + 1e-9
PAPER_MEAN_ABS_DIFF = 5.59
PAPER_TABLE2_TOTAL = 14969  # Table 2's Total row and §3's text: "a total of 14,969 entries"
FINDING_COLUMNS = [
    "check",
    "source",
    "model",
    "setting",
    "category",
    "metric",
    "published",
    "recomputed",
    "difference",
    "mismatch",
    "note",
]


def _finding(frame: pd.DataFrame, check: str, note: str = "") -> pd.DataFrame:
    out = frame.copy()
    out["check"] = check
    out["recomputed"] = out["recomputed"].astype(float).round(2)
    out["difference"] = (out["published"] - out["recomputed"]).round(2)
    out["mismatch"] = out["difference"].abs() > TOLERANCE
    out["note"] = note
    for col in FINDING_COLUMNS:
        if col not in out:
            out[col] = ""
    return out[FINDING_COLUMNS].reset_index(drop=True)


def avg_rows(pub: pd.DataFrame) -> pd.DataFrame:
    """Every published Avg row against the mean of the other models' rows of its table."""
    avg = pub[pub["model"] == "Avg"]
    models = pub[pub["model"] != "Avg"]
    keys = ["source", "setting", "category", "metric"]
    means = (
        models.groupby(keys, dropna=False)
        .agg(recomputed=("f1", "mean"), n_models=("model", "nunique"))
        .reset_index()
    )
    merged = avg.rename(columns={"f1": "published"}).merge(means, on=keys, how="left")
    out = _finding(merged, "Avg row = mean over models")
    out["note"] = merged["n_models"].map(lambda n: f"mean over {n} models")
    return out


def average_column(pub: pd.DataFrame) -> pd.DataFrame:
    """Every published `average` value against the mean of the six label values of its row."""
    keys = ["source", "model", "setting", "category_level", "category"]
    labels = pub[pub["metric"].isin(JUDGE_LABELS)]
    means = (
        labels.groupby(keys, dropna=False)
        .agg(recomputed=("f1", "mean"), n_labels=("f1", "size"))
        .reset_index()
    )
    avg = pub[pub["metric"] == "average"].rename(columns={"f1": "published"})
    merged = avg.merge(means, on=keys, how="left")
    merged = merged[merged["n_labels"] == len(JUDGE_LABELS)]
    return _finding(merged, "Avg column = mean of six labels")


def repeated_avg_rows(pub: pd.DataFrame) -> pd.DataFrame:
    """Avg rows of two different per-category tables that are identical cell for cell."""
    avg = pub[(pub["model"] == "Avg") & (pub["category_level"] == "primary")]
    found = []
    sources = sorted(avg["source"].unique(), key=lambda s: int(s.split("T")[-1]))
    for i, a in enumerate(sources):
        for b in sources[i + 1 :]:
            va = avg[avg["source"] == a].set_index("metric")["f1"]
            vb = avg[avg["source"] == b].set_index("metric")["f1"]
            common = va.index.intersection(vb.index)
            if len(common) and (va[common] == vb[common]).all():
                frame = pd.DataFrame(
                    {
                        "source": b,
                        "model": "Avg",
                        "setting": "zero-shot",
                        "category": avg[avg["source"] == b]["category"].iloc[0],
                        "metric": list(common),
                        "published": vb[common].to_numpy(),
                        "recomputed": va[common].to_numpy(),
                    }
                )
                out = _finding(
                    frame,
                    f"Avg row of {b} repeats {a}",
                    f"identical to the Avg row of {a} in all {len(common)} cells",
                )
                out["mismatch"] = True
                found.append(out)
    return pd.concat(found, ignore_index=True) if found else pd.DataFrame(columns=FINDING_COLUMNS)


def table4_vs_primary_tables(pub: pd.DataFrame) -> pd.DataFrame:
    """Table 4 (GPT-4o × primary category) against GPT-4o's rows of Tables 7–10."""
    t4 = pub[pub["source"] == "misprompt:T4"]
    per_cat = pub[
        pub["source"].isin([f"misprompt:T{t}" for t in (7, 8, 9, 10)]) & (pub["model"] == "GPT-4o")
    ]
    merged = t4.rename(columns={"f1": "published"}).merge(
        per_cat[["category", "metric", "f1", "source"]].rename(
            columns={"f1": "recomputed", "source": "other"}
        ),
        on=["category", "metric"],
        how="inner",
    )
    out = _finding(merged, "Table 4 vs Tables 7–10 (GPT-4o)")
    out["note"] = "published = Table 4, recomputed = " + merged["other"].str.replace(
        "misprompt:T", "Table ", regex=False
    )
    return out


def table3_vs_table6(pub: pd.DataFrame) -> pd.DataFrame:
    """Table 3 repeats the zero-shot rows of Table 6: they should agree."""
    t3 = pub[pub["source"] == "misprompt:T3"]
    t6 = pub[(pub["source"] == "misprompt:T6") & (pub["setting"] == "zero-shot")]
    merged = t3.rename(columns={"f1": "published"}).merge(
        t6[["model", "metric", "f1"]].rename(columns={"f1": "recomputed"}),
        on=["model", "metric"],
        how="inner",
    )
    out = _finding(merged, "Table 3 vs Table 6 zero-shot")
    out["note"] = "published = Table 3, recomputed = Table 6"
    return out


def table2_total(counts: pd.DataFrame | None, stated: int = PAPER_TABLE2_TOTAL) -> pd.DataFrame:
    """Table 2's stated total against the sum of its secondary-category cells (one row)."""
    if counts is None or counts.empty:
        return pd.DataFrame(columns=FINDING_COLUMNS)
    cells = int(counts["instances"].sum())
    frame = pd.DataFrame(
        [
            {
                "source": "misprompt:T2",
                "model": "",
                "setting": "",
                "category": "All",
                "metric": "instances",
                "published": float(stated),
                "recomputed": float(cells),
            }
        ]
    )
    return _finding(
        frame,
        "Table 2 total = sum of its cells",
        f"the Total row and the text say {stated:,}; the {len(counts)} cells sum "
        f"to {cells:,} (two digits swapped?)",
    )


def all_checks(pub: pd.DataFrame, counts: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every check's rows (mismatch flag set where the numbers disagree); `counts` = Table 2's
    cells (published_counts) for the total check."""
    parts = [
        avg_rows(pub),
        average_column(pub),
        repeated_avg_rows(pub),
        table4_vs_primary_tables(pub),
        table3_vs_table6(pub),
        table2_total(counts),
    ]
    found = [p for p in parts if len(p)]
    if not found:  # no published tables loaded: no finding (pd.concat refuses an empty list)
        return pd.DataFrame(columns=FINDING_COLUMNS)
    return pd.concat(found, ignore_index=True)


def summary(checks: pd.DataFrame) -> pd.DataFrame:
    """Cells compared and mismatches per check."""
    return (
        checks.groupby("check", sort=False)
        .agg(
            cells=("mismatch", "size"),
            mismatches=("mismatch", "sum"),
            max_abs_difference=(
                "difference",
                lambda d: float(np.nanmax(np.abs(d))) if len(d) else 0.0,
            ),
        )
        .reset_index()
    )


def judge_vs_human(
    pub: pd.DataFrame, judge_source: str = "misprompt:T6", human_source: str = "misprompt:T12"
) -> pd.DataFrame:
    """Per (model, setting, metric): judge F1, human F1 and human − judge."""
    j = pub[(pub["source"] == judge_source) & (pub["evaluator"] == "judge")]
    h = pub[(pub["source"] == human_source) & (pub["evaluator"] == "human")]
    merged = (
        j[["model", "setting", "metric", "f1"]]
        .rename(columns={"f1": "judge"})
        .merge(
            h[["model", "setting", "metric", "f1"]].rename(columns={"f1": "human"}),
            on=["model", "setting", "metric"],
            how="inner",
        )
    )
    merged["difference"] = (merged["human"] - merged["judge"]).round(2)
    return merged


def mean_abs_difference(diff: pd.DataFrame) -> dict[str, float]:
    """Mean |human − judge| over the six label cells, and over all seven (with the average)."""
    labels = diff[diff["metric"].isin(JUDGE_LABELS)]
    return {
        "six_labels": float(labels["difference"].abs().mean()) if len(labels) else float("nan"),
        "with_average": float(diff["difference"].abs().mean()) if len(diff) else float("nan"),
        "average_only": float(diff.loc[diff["metric"] == "average", "difference"].abs().mean())
        if (diff["metric"] == "average").any()
        else float("nan"),
        "cells": int(len(labels)),
        "paper": PAPER_MEAN_ABS_DIFF,
    }


def published_frame(store: Store) -> pd.DataFrame:
    return store.df(
        "SELECT source, evaluator, model, setting, category_level, category, metric, f1 "
        "FROM published_misprompt ORDER BY position"
    )


def consistency_checks(store: Store) -> pd.DataFrame:
    counts = store.df(
        "SELECT primary_category, secondary_category, instances "
        "FROM published_counts WHERE coalesce(paper, 'misprompt') = 'misprompt' ORDER BY position"
    )
    return all_checks(published_frame(store), counts)


AVG_CHECK = "Avg row = mean over models"


def avg_row_mismatches(
    checks: pd.DataFrame, metric: str, setting: str = "zero-shot"
) -> pd.DataFrame:
    """The published Avg cells of one label that disagree with the mean of their table's model
    rows (the Consistency view's check): category, published, recomputed. The heatmaps mark
    these cells, so a reader of the paper's Avg row sees what the Consistency tab found."""
    rows = checks[
        (checks["check"] == AVG_CHECK)
        & checks["mismatch"].astype(bool)
        & (checks["metric"] == metric)
        & (checks["setting"] == setting)
    ]
    return rows[["category", "published", "recomputed"]].reset_index(drop=True)
