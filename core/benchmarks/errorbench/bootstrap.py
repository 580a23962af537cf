"""Paired bootstrap over passages: is the Count-F1 gain bigger than the span-F0.5 gain?

For one model, the passages answered under both conditions are resampled with replacement
(the same draw for both conditions: that is what makes it paired); each draw recomputes the
micro Count-F1 and span F0.5 of both conditions and records
(ΔCount-F1 − ΔSpan-F0.5), Δ = condition_b − condition_a. 95% percentile interval.
Vectorised: the draws become a (draws × passages) multiplicity matrix and one matrix product
sums every TP/FP/FN at once. `paired_bootstrap_loop` is the plain-Python reference the bench
compares against (same draws, same numbers).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from core.benchmarks.errorbench.metrics import f_vec
from core.stats import MC_MAX_DRAWS, MC_TOLERANCE, draw_until_stable

DRAWS = 10_000
SEED = 0
BOOTSTRAP_COLUMNS = [
    "model",
    "delta_count_f1",
    "delta_overlap_f05",
    "difference",
    "ci_low",
    "ci_high",
    "passages",
    "draws",
    "seed",
]


@dataclass
class PairedArrays:
    """Per passage (rows aligned): TP/FP/FN for count and span under conditions a and b."""

    model: str
    item_ids: list[str]
    counts: np.ndarray  # shape (P, 12): [a_count tp fp fn, a_span tp fp fn, b_count…, b_span…]


@dataclass
class BootstrapResult:
    model: str
    passages: int
    delta_count_f1: float
    delta_span_f05: float
    difference: float
    ci_low: float
    ci_high: float
    draws: int
    seed: int
    span: str


def paired_arrays(
    flat: pd.DataFrame, model: str, a: str = "blind", b: str = "anchored", span: str = "overlap"
) -> PairedArrays:
    """From a flattened score frame (see metrics.flatten) for one model label."""
    rows = flat[(flat["model_label"] == model) & flat["ok"]]
    cols = ["count_tp", "count_fp", "count_fn", f"{span}_tp", f"{span}_fp", f"{span}_fn"]
    left = rows[rows["condition"] == a].drop_duplicates("item_id").set_index("item_id")[cols]
    right = rows[rows["condition"] == b].drop_duplicates("item_id").set_index("item_id")[cols]
    both = left.add_suffix("_a").join(right.add_suffix("_b"), how="inner").sort_index()
    return PairedArrays(model, both.index.tolist(), both.to_numpy(dtype=float))


def _stats(sums: np.ndarray) -> np.ndarray:
    """sums (..., 12) → ΔCount-F1, ΔSpan-F0.5 as (..., 2)."""
    cf_a = f_vec(sums[..., 0], sums[..., 1], sums[..., 2], 1.0)
    sf_a = f_vec(sums[..., 3], sums[..., 4], sums[..., 5], 0.5)
    cf_b = f_vec(sums[..., 6], sums[..., 7], sums[..., 8], 1.0)
    sf_b = f_vec(sums[..., 9], sums[..., 10], sums[..., 11], 0.5)
    return np.stack([cf_b - cf_a, sf_b - sf_a], axis=-1)


def draw_indices(n_passages: int, draws: int = DRAWS, seed: int = SEED) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n_passages, size=(draws, n_passages))


def paired_bootstrap(
    arrays: PairedArrays,
    draws: int = DRAWS,
    seed: int = SEED,
    span: str = "overlap",
    indices: np.ndarray | None = None,
) -> BootstrapResult:
    p = len(arrays.item_ids)
    if p == 0:
        nan = float("nan")
        return BootstrapResult(arrays.model, 0, nan, nan, nan, nan, nan, draws, seed, span)
    point = _stats(arrays.counts.sum(axis=0))

    def diffs(idx: np.ndarray) -> np.ndarray:
        # multiplicity[d, i] = how often passage i is in draw d
        flat_idx = (idx + (np.arange(idx.shape[0]) * p)[:, None]).ravel()
        mult = np.bincount(flat_idx, minlength=idx.shape[0] * p).reshape(idx.shape[0], p)
        stats = _stats(mult.astype(np.float64) @ arrays.counts)
        return stats[:, 0] - stats[:, 1]

    if indices is not None:  # the given draws only (the loop reference's)
        diff = diffs(indices)
    else:
        # issue 29: at 10,000 draws a dozen passages moved an end 1.4 points between seeds;
        # draw more (batch 0 = draw_indices(p, draws, seed)) until each end's Monte-Carlo
        # error is within 0.005 (core.stats.draw_until_stable)
        diff = draw_until_stable(
            lambda batch, size: diffs(
                draw_indices(p, size, seed)
                if batch == 0
                else np.random.default_rng([seed, batch]).integers(0, p, size=(size, p))
            ),
            draws,
            (0.025, 0.975),
            MC_TOLERANCE,
            max(draws, min(MC_MAX_DRAWS, 20_000_000 // p)),  # ≤ 20 M indices in all
        )[:, 0]
    low, high = np.percentile(diff, [2.5, 97.5])
    return BootstrapResult(
        arrays.model,
        p,
        float(point[0]),
        float(point[1]),
        float(point[0] - point[1]),
        float(low),
        float(high),
        len(diff),
        seed,
        span,
    )


def paired_bootstrap_loop(
    arrays: PairedArrays,
    draws: int = DRAWS,
    seed: int = SEED,
    span: str = "overlap",
    indices: np.ndarray | None = None,
) -> BootstrapResult:
    """The same computation one draw and one passage at a time (reference and bench baseline)."""
    rows = arrays.counts.tolist()
    p = len(rows)
    idx = draw_indices(p, draws, seed) if indices is None else indices

    def f(tp: float, fp: float, fn: float, beta: float) -> float:
        prec = tp / (tp + fp) if tp + fp else 1.0
        rec = tp / (tp + fn) if tp + fn else 1.0
        b2 = beta * beta
        return (1 + b2) * prec * rec / (b2 * prec + rec) if prec + rec else 0.0

    def stat(sums: list[float]) -> tuple[float, float]:
        s = sums
        return (
            f(s[6], s[7], s[8], 1.0) - f(s[0], s[1], s[2], 1.0),
            f(s[9], s[10], s[11], 0.5) - f(s[3], s[4], s[5], 0.5),
        )

    diffs = []
    for draw in idx.tolist():
        sums = [0.0] * 12
        for i in draw:
            row = rows[i]
            for k in range(12):
                sums[k] += row[k]
        dc, ds = stat(sums)
        diffs.append(dc - ds)
    diffs.sort()
    low, high = np.percentile(np.array(diffs), [2.5, 97.5])
    totals = [sum(r[k] for r in rows) for k in range(12)]
    dc, ds = stat(totals)
    return BootstrapResult(
        arrays.model, p, dc, ds, dc - ds, float(low), float(high), len(diffs), seed, span
    )


def bootstrap_table(
    flat: pd.DataFrame,
    a: str = "blind",
    b: str = "anchored",
    span: str = "overlap",
    draws: int = DRAWS,
    seed: int = SEED,
) -> pd.DataFrame:
    """One row per model: the CLI's --bootstrap output (span = the matching used)."""
    from core.benchmarks.errorbench.metrics import model_labels

    if flat.empty:
        return pd.DataFrame(columns=BOOTSTRAP_COLUMNS)
    flat = flat.assign(model_label=model_labels(flat))
    rows = []
    for model in flat["model_label"].drop_duplicates():
        res = paired_bootstrap(paired_arrays(flat, model, a, b, span), draws, seed, span)
        d = asdict(res)
        d[f"delta_{span}_f05"] = d.pop("delta_span_f05")
        rows.append(d)
    cols = [
        "model",
        "delta_count_f1",
        f"delta_{span}_f05",
        "difference",
        "ci_low",
        "ci_high",
        "passages",
        "draws",
        "seed",
    ]
    return pd.DataFrame(rows)[cols]
