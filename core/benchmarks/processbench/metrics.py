"""ProcessBench's numbers (the paper's Table 3 and run_eval.py), per split and overall.

- `error_acc`: % of erroneous solutions (label ≠ -1) whose predicted index equals the label;
- `correct_acc`: % of correct solutions (label = -1) predicted -1;
- `f1`: their harmonic mean, 2·a·b / (a + b) (0 when both are 0), the paper's definition.

Rows: one per split, `overall` (every item pooled) and `average` (the paper's "Avg. F1": the
mean of the split F1s; its accuracies are left empty as the paper gives none). An answer that
cannot be read (unparsable, out of range, truncated) counts as wrong, as in the paper (no
prediction never matches); their shares are columns of their own. Failed responses (no answer
after retries) are left out of every number.

Intervals (95 %): the accuracies carry Wilson intervals (core.stats.wilson_percent):
`error_ci_low/high`, `correct_ci_low/high`. `ci_low/ci_high` are the F1's: a percentile
bootstrap over items (BOOTSTRAP replicates, more for a small split: core.stats.draws_for; fixed seed, items resampled within their split, so
each split keeps its size; the erroneous/correct mix varies as in a new sample; a replicate
without an erroneous or without a correct solution has no F1 and is dropped).

Repeats (`run --epochs K`, issue 29): an item's K answers are one cluster, never K independent
samples. The accuracies are the means over all answers; `n`, `n_error` and `n_correct` count
items; the accuracies' intervals are Wilson on the cluster-robust effective n
(core.stats.cluster_wilson) and the F1's bootstrap resamples items with all their answers
(core.stats.cluster_sums), as BBM and ErrorBench do.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.stats import (
    LEVEL,
    cluster_sums,
    cluster_wilson,
    draws_for,
    item_clusters,
    n_items,
    percentile_interval,
    resample_counts,
    wilson_percent,
)

OVERALL = "overall"
AVERAGE = "average"
BOOTSTRAP = 1000
SEED = 0
COLUMNS = [
    "source",
    "model",
    "mode",
    "split",
    "n",
    "n_error",
    "n_correct",
    "error_acc",
    "error_ci_low",
    "error_ci_high",
    "correct_acc",
    "correct_ci_low",
    "correct_ci_high",
    "f1",
    "ci_low",
    "ci_high",
    "unparsable",
    "out_of_range",
    "truncated",
    "judging",
    "judging_template",
]
# what metrics_from_items computes (the rest: the source's, added by queries.py)
ROW_COLUMNS = [
    c for c in COLUMNS if c not in ("source", "model", "mode", "judging", "judging_template")
]


def harmonic_f1(error_acc: float, correct_acc: float) -> float:
    """2ab / (a + b): the paper's F1 of the two accuracies (0 when both are 0; NaN when either
    is missing)."""
    if np.isnan(error_acc) or np.isnan(correct_acc):
        return float("nan")
    total = error_acc + correct_acc
    return 2 * error_acc * correct_acc / total if total else 0.0


def _f1_arrays(
    e_hits: np.ndarray, e_n: np.ndarray, c_hits: np.ndarray, c_n: np.ndarray
) -> np.ndarray:
    """Vectorised harmonic_f1 over bootstrap replicates (percent): NaN where a replicate has no
    erroneous or no correct solution (its F1 is undefined, not 0)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        a = 100 * e_hits / e_n
        b = 100 * c_hits / c_n
        total = a + b
        f1 = np.where(total > 0, 2 * a * b / np.where(total > 0, total, 1), 0.0)
        return np.where(np.isnan(a) | np.isnan(b), np.nan, f1)


Group = tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, np.ndarray | None]


def _units(group: Group) -> tuple[np.ndarray, np.ndarray]:
    """(units × 4 sums, counts) of one split for the bootstrap: the sums are (error hits,
    erroneous, correct hits, correct) per unit; a unit is an item with all its answers when
    items repeat (epochs), else the distinct answer kinds counted (an item bootstrap)."""
    is_error, match = group[0].astype(bool), group[1].astype(bool)
    ids = group[2] if len(group) > 2 else None
    vals = np.column_stack([match & is_error, is_error, match & ~is_error, ~is_error])
    return cluster_sums(vals.astype(float), item_clusters(None, ids))


def bootstrap_f1(
    groups: list[Group],
    reps: int = BOOTSTRAP,
    seed: int = SEED,
    average: bool = False,
) -> tuple[float, float]:
    """Percentile interval of the F1 over items resampled within each group.

    `groups`: per split, (is_error, match[, item_ids]) arrays of its answers; with item ids, an
    item's answers (a run of K epochs) are resampled together (a cluster bootstrap). Pooled F1
    (all groups' items together) unless `average`, then the mean of the groups' F1s."""
    rng = np.random.default_rng(seed)
    units = [_units(g) for g in groups]
    # more replicates where a split is small (issue 29: intervals that hold between seeds)
    reps = draws_for(min((int(c.sum()) for _, c in units), default=0), reps)
    per_group = [resample_counts(rng, counts, reps) @ sums for sums, counts in units]
    if average:
        stats = np.mean([_f1_arrays(*g.T) for g in per_group], axis=0)
    else:
        stats = _f1_arrays(*sum(per_group).T)
    stats = stats[~np.isnan(stats)]
    if not len(stats):
        return float("nan"), float("nan")
    return percentile_interval(stats, LEVEL)  # on the mid-distribution function (core.stats)


def _accuracy_interval(
    match: np.ndarray, ids: np.ndarray | None, k: int, n: int
) -> tuple[float, float]:
    """Wilson (percent) for k of n answers right; with repeated items, on the cluster-robust
    effective n (core.stats.cluster_wilson)."""
    clusters = item_clusters(None, ids)
    if clusters is None or not n:
        w_lo, w_hi = wilson_percent(k, n)
        return float(w_lo), float(w_hi)
    lo, hi = cluster_wilson(match.astype(float), clusters)
    return 100 * lo, 100 * hi


def _item_ids(part: pd.DataFrame) -> np.ndarray | None:
    return part["item_id"].to_numpy(dtype=object) if "item_id" in part else None


def _row(part: pd.DataFrame, split: str, groups: list[Group]) -> dict:
    is_error = part["label"].to_numpy() != -1
    match = part["match"].to_numpy(dtype=bool)
    ids = _item_ids(part)
    n_err, n_cor = int(is_error.sum()), int((~is_error).sum())
    k_err, k_cor = int((match & is_error).sum()), int((match & ~is_error).sum())
    e_lo, e_hi = _accuracy_interval(
        match[is_error], None if ids is None else ids[is_error], k_err, n_err
    )
    c_lo, c_hi = _accuracy_interval(
        match[~is_error], None if ids is None else ids[~is_error], k_cor, n_cor
    )
    error_acc = 100 * k_err / n_err if n_err else float("nan")
    correct_acc = 100 * k_cor / n_cor if n_cor else float("nan")
    f1 = harmonic_f1(error_acc, correct_acc)
    low, high = bootstrap_f1(groups) if not np.isnan(f1) else (float("nan"), float("nan"))
    status = part["parse_status"]
    return {
        "split": split,
        "n": n_items(ids, len(part)),
        "n_error": n_items(None if ids is None else ids[is_error], n_err),
        "n_correct": n_items(None if ids is None else ids[~is_error], n_cor),
        "error_acc": error_acc,
        "error_ci_low": e_lo,
        "error_ci_high": e_hi,
        "correct_acc": correct_acc,
        "correct_ci_low": c_lo,
        "correct_ci_high": c_hi,
        "f1": f1,
        "ci_low": low,
        "ci_high": high,
        "unparsable": 100 * float((status == "unparsable").mean()),
        "out_of_range": 100 * float((status == "out_of_range").mean()),
        "truncated": 100 * float((status == "truncated").mean()),
    }


def split_order(splits: list[str]) -> list[str]:
    """The release's split order first, then any other split alphabetically."""
    from core.benchmarks.processbench.items import SPLITS

    known = [s for s in SPLITS if s in splits]
    return known + sorted(s for s in set(splits) if s not in known)


def metrics_from_items(items: pd.DataFrame) -> pd.DataFrame:
    """Rows per split, `overall` and `average` from per-item results.

    `items` columns: split, label, match (bool), parse_status, status ('ok' or 'failed'), and
    optionally item_id (a run of K epochs holds K rows per item: clustered); failed rows are
    dropped."""
    scored = items[items["status"] != "failed"]
    if scored.empty:
        return pd.DataFrame(columns=ROW_COLUMNS)
    rows = []
    groups: dict[str, Group] = {}
    for split in split_order(list(scored["split"].unique())):
        part = scored[scored["split"] == split]
        groups[split] = (
            part["label"].to_numpy() != -1,
            part["match"].to_numpy(dtype=bool),
            _item_ids(part),
        )
        rows.append(_row(part, split, [groups[split]]))
    rows.append(_row(scored, OVERALL, list(groups.values())))
    split_f1 = [r["f1"] for r in rows[:-1]]
    avg: dict[str, object] = {k: float("nan") for k in rows[-1]}
    avg.update(split=AVERAGE, n=rows[-1]["n"], n_error=rows[-1]["n_error"])
    avg["n_correct"] = rows[-1]["n_correct"]
    avg_f1 = float(np.mean(split_f1)) if not np.isnan(split_f1).any() else float("nan")
    avg["f1"] = avg_f1
    if not np.isnan(avg_f1):
        avg["ci_low"], avg["ci_high"] = bootstrap_f1(list(groups.values()), average=True)
    for col in ("unparsable", "out_of_range", "truncated"):
        avg[col] = rows[-1][col]
    rows.append(avg)
    return pd.DataFrame(rows)
