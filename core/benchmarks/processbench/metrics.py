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
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.stats import LEVEL, draws_for, percentile_interval, wilson_percent

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


def bootstrap_f1(
    groups: list[tuple[np.ndarray, np.ndarray]],
    reps: int = BOOTSTRAP,
    seed: int = SEED,
    average: bool = False,
) -> tuple[float, float]:
    """Percentile interval of the F1 over items resampled within each group.

    `groups`: per split, (is_error, match) boolean arrays of its items. Pooled F1 (all groups'
    items together) unless `average`, then the mean of the groups' F1s."""
    rng = np.random.default_rng(seed)
    per_group = []
    # more replicates where a split is small (issue 29: intervals that hold between seeds)
    reps = draws_for(min((len(g[0]) for g in groups), default=0), reps)
    for is_error, match in groups:
        n = len(is_error)
        idx = rng.integers(0, n, size=(reps, n))
        err = is_error[idx]
        hit = match[idx]
        per_group.append(
            ((hit & err).sum(axis=1), err.sum(axis=1), (hit & ~err).sum(axis=1), (~err).sum(axis=1))
        )
    if average:
        stats = np.mean([_f1_arrays(*g) for g in per_group], axis=0)
    else:
        stats = _f1_arrays(*(sum(g[k] for g in per_group) for k in range(4)))
    stats = stats[~np.isnan(stats)]
    if not len(stats):
        return float("nan"), float("nan")
    return percentile_interval(stats, LEVEL)  # on the mid-distribution function (core.stats)


def _row(part: pd.DataFrame, split: str, groups: list[tuple[np.ndarray, np.ndarray]]) -> dict:
    is_error = part["label"].to_numpy() != -1
    match = part["match"].to_numpy(dtype=bool)
    n_err, n_cor = int(is_error.sum()), int((~is_error).sum())
    k_err, k_cor = int((match & is_error).sum()), int((match & ~is_error).sum())
    (e_lo, c_lo), (e_hi, c_hi) = wilson_percent([k_err, k_cor], [n_err, n_cor])
    error_acc = 100 * k_err / n_err if n_err else float("nan")
    correct_acc = 100 * k_cor / n_cor if n_cor else float("nan")
    f1 = harmonic_f1(error_acc, correct_acc)
    low, high = bootstrap_f1(groups) if not np.isnan(f1) else (float("nan"), float("nan"))
    status = part["parse_status"]
    return {
        "split": split,
        "n": len(part),
        "n_error": n_err,
        "n_correct": n_cor,
        "error_acc": error_acc,
        "error_ci_low": float(e_lo),
        "error_ci_high": float(e_hi),
        "correct_acc": correct_acc,
        "correct_ci_low": float(c_lo),
        "correct_ci_high": float(c_hi),
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

    `items` columns: split, label, match (bool), parse_status, status ('ok' or 'failed');
    failed rows are dropped."""
    scored = items[items["status"] != "failed"]
    if scored.empty:
        return pd.DataFrame(columns=ROW_COLUMNS)
    rows = []
    groups = {}
    for split in split_order(list(scored["split"].unique())):
        part = scored[scored["split"] == split]
        groups[split] = (part["label"].to_numpy() != -1, part["match"].to_numpy(dtype=bool))
        rows.append(_row(part, split, [groups[split]]))
    rows.append(_row(scored, OVERALL, list(groups.values())))
    split_f1 = [r["f1"] for r in rows[:-1]]
    avg: dict[str, object] = {k: float("nan") for k in rows[-1]}
    avg.update(split=AVERAGE, n=len(scored), n_error=rows[-1]["n_error"])
    avg["n_correct"] = rows[-1]["n_correct"]
    avg_f1 = float(np.mean(split_f1)) if not np.isnan(split_f1).any() else float("nan")
    avg["f1"] = avg_f1
    if not np.isnan(avg_f1):
        avg["ci_low"], avg["ci_high"] = bootstrap_f1(list(groups.values()), average=True)
    for col in ("unparsable", "out_of_range", "truncated"):
        avg[col] = rows[-1][col]
    rows.append(avg)
    return pd.DataFrame(rows)
