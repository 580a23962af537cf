"""Mis-prompt's percentile bootstrap over label patterns (core.benchmarks.misprompt.metrics
describes it): items reduced to pattern counts, erroneous and control items resampled apart,
clusters resampled whole."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.benchmarks.misprompt.f1 import (
    DEFAULT_BOOTSTRAP,
    KEYS,
    LABELS,
    LEVELS,
    METRICS,
    RECALL_SUFFIX,
)
from core.stats import draws_for, percentile_intervals, resample_counts


def _label_codes(patterns: pd.DataFrame) -> np.ndarray:
    """One integer per row for its six labels (base 3: false 0, true 1, missing 2), so rows of
    the same labels can be merged with numpy instead of a pandas groupby per group (a groupby
    per run and category cost ~10 ms each: 40 runs took ~10 s of CPU)."""
    codes = np.zeros(len(patterns), dtype=np.int64)
    for j, label in enumerate(LABELS):
        v = patterns[label].astype("boolean")
        digit = np.where(v.isna().to_numpy(), 2, v.fillna(False).to_numpy(dtype=bool).astype(int))
        codes += digit.astype(np.int64) * 3**j
    return codes


def _code_matrix(codes: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(counts, positive[m×6], known[m×6]) over the distinct label patterns of rows with these
    `codes` and counts `n`, in the order each pattern first appears (as a groupby(sort=False)
    gives them: the same draws, the same intervals).

    Rows of the same labels from different categories are merged first: the draw cost grows
    with the number of patterns (≤ 3^6), never with the number of items or categories.
    """
    uniq, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    sums = np.zeros(len(uniq), dtype=np.int64)
    np.add.at(sums, inverse.ravel(), n)
    ordered = uniq[order]
    digits = (ordered[:, None] // (3 ** np.arange(len(LABELS)))[None, :]) % 3
    return sums[order], (digits == 1).astype(float), (digits != 2).astype(float)


@dataclass(frozen=True)
class _Rows:
    """A pattern frame as arrays, made once per bootstrap (see _label_codes)."""

    frame: pd.DataFrame
    codes: np.ndarray
    n: np.ndarray
    clustered: np.ndarray

    @classmethod
    def of(cls, patterns: pd.DataFrame) -> _Rows:
        frame = patterns.reset_index(drop=True)
        clustered = (
            frame["cluster"].notna().to_numpy()
            if "cluster" in frame
            else np.zeros(len(frame), dtype=bool)
        )
        return cls(frame, _label_codes(frame), frame["n"].to_numpy(dtype=np.int64), clustered)

    def units(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The resampling units of rows `idx`: label patterns of items without a group, then
        one unit per group (_with_clusters)."""
        free = idx[~self.clustered[idx]]
        counts, pos, known = _code_matrix(self.codes[free], self.n[free])
        grouped = idx[self.clustered[idx]]
        if len(grouped):
            return _with_clusters(self.frame.loc[grouped], counts, pos, known)
        return counts, pos, known


def _with_clusters(
    rows: pd.DataFrame, counts: np.ndarray, pos: np.ndarray, known: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Add one unit per cluster (items of one `group`, count 1, holding its items' positive and
    known sums) to the pattern units: resampling them all is a cluster bootstrap in which an
    item without a group is a cluster of its own (its pattern unit counts such items)."""
    vals = rows[list(LABELS)].astype("boolean")
    n = rows["n"].to_numpy(dtype=float)[:, None]
    c_pos = pd.DataFrame(vals.fillna(False).to_numpy(dtype=bool) * n).groupby(
        rows["cluster"].to_numpy(), sort=True
    )
    c_known = pd.DataFrame(vals.notna().to_numpy(dtype=bool) * n).groupby(
        rows["cluster"].to_numpy(), sort=True
    )
    cp, ck = c_pos.sum().to_numpy(), c_known.sum().to_numpy()
    return (
        np.concatenate([counts, np.ones(len(cp), dtype=np.int64)]),
        np.vstack([pos, cp]) if len(pos) else cp,
        np.vstack([known, ck]) if len(known) else ck,
    )


def bootstrap_ci(
    patterns: pd.DataFrame,
    draws: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    confidence: float = 95.0,
    levels: Sequence[str] = LEVELS,
) -> pd.DataFrame:
    """Percentile bootstrap intervals for every row `f1_from_patterns` returns (of `levels`).

    Erroneous and control items are resampled separately (each a multinomial draw over its
    label patterns, which equals resampling items with replacement). One control draw per
    replicate serves all categories of a key group. Same seed, same intervals.
    """
    rows: list[dict] = []
    # per key group: its first row and its intervals (draws vary by group: draws_for)
    replicates: list[tuple[int, tuple[np.ndarray, np.ndarray]]] = []
    if patterns.empty or draws <= 0:
        return pd.DataFrame(
            columns=KEYS + ["category_level", "category", "metric", "ci_low", "ci_high"]
        )
    rng = np.random.default_rng(seed)
    data = _Rows.of(patterns)
    is_err = data.frame["is_error"].astype(bool).to_numpy()
    cat_values = {
        col: data.frame[col].to_numpy(dtype=object)
        for col in ("primary_category", "secondary_category")
    }
    for key, group in data.frame.groupby(KEYS, dropna=False, sort=True):
        idx = group.index.to_numpy()
        err, ctrl = idx[is_err[idx]], idx[~is_err[idx]]
        c_counts, c_pos, c_known = data.units(ctrl)
        has_ctrl = bool(c_counts.sum() > 0) and bool((c_known.T @ c_counts > 0).all())
        cells = _cells(err, levels, cat_values)
        # more draws where a cell has few items (issue 29: intervals that hold between seeds):
        # each cell draws for its own size (draws_for), the controls for the smallest cell of
        # every level, and a cell reads the first of them — so asking fewer levels draws the
        # same numbers, and a big cell beside a tiny one is not drawn 200,000 times
        sizes = [int(data.units(sub)[0].sum()) for _, _, sub in _cells(err, LEVELS, cat_values)]
        if has_ctrl:
            sizes.append(int(c_counts.sum()))
        g_draws = draws_for(min([n for n in sizes if n > 0], default=0), draws)
        c_size = int(c_counts.sum()) if has_ctrl else 0
        block: list[tuple[np.ndarray, np.ndarray]] = []
        first_row = len(rows)
        if has_ctrl:
            c_draw = resample_counts(rng, c_counts, g_draws)
            fp_all = c_draw @ c_pos  # draws × 6
            ctrl_known = c_draw @ c_known
            with np.errstate(divide="ignore", invalid="ignore"):
                rate = fp_all / ctrl_known
        for level, cat, sub in cells:
            if True:
                e_counts, e_pos, e_known = data.units(sub)
                n_cell = int(e_counts.sum())
                cell_draws = draws_for(min(n for n in (n_cell, c_size) if n > 0), draws)
                cell_draws = min(cell_draws, g_draws) if n_cell > 0 else g_draws
                e_draw = resample_counts(rng, e_counts, cell_draws)
                tp = e_draw @ e_pos
                n_err = e_draw @ e_known
                fn = n_err - tp
                with np.errstate(divide="ignore", invalid="ignore"):
                    if has_ctrl:
                        fp = fp_all[:cell_draws] if level == "all" else rate[:cell_draws] * n_err
                        values = 200.0 * tp / (2 * tp + fp + fn)
                    else:
                        values = 100.0 * tp / n_err
                block.append(percentile_intervals(values, confidence / 100))
                block.append(percentile_intervals(values.mean(axis=1)[:, None], confidence / 100))
                suffix = "" if has_ctrl else RECALL_SUFFIX
                for metric in METRICS:
                    rows.append(
                        dict(zip(KEYS, key))
                        | {"category_level": level, "category": cat, "metric": metric + suffix}
                    )
        if block:  # the group's intervals, in row order
            low = np.concatenate([b[0] for b in block])
            high = np.concatenate([b[1] for b in block])
            replicates.append((first_row, (low, high)))
    out = pd.DataFrame(rows)
    out["ci_low"], out["ci_high"] = np.nan, np.nan
    for start, (low, high) in replicates:
        out.loc[start : start + len(low) - 1, "ci_low"] = low
        out.loc[start : start + len(low) - 1, "ci_high"] = high
    return out


def _cells(
    err: np.ndarray, levels: Sequence[str], cat_values: dict[str, np.ndarray]
) -> list[tuple[str, str, np.ndarray]]:
    """(level, category, erroneous rows) of every cell of one key group, in table order."""
    cells: list[tuple[str, str, np.ndarray]] = []
    for level in [lv for lv in LEVELS if lv in levels]:
        if level == "all":
            cells.append((level, "All", err))
            continue
        col = "primary_category" if level == "primary" else "secondary_category"
        values_of = cat_values[col][err]
        present = ~pd.isna(values_of)
        # as groupby(col, sort=True): sorted categories, rows without one left out
        for c in sorted(set(values_of[present])):
            cells.append((level, c, err[present & (values_of == c)]))
    return cells


def with_ci(
    table: pd.DataFrame,
    patterns: pd.DataFrame,
    draws: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    levels: Sequence[str] = LEVELS,
) -> pd.DataFrame:
    ci = bootstrap_ci(patterns, draws=draws, seed=seed, levels=levels)
    on = KEYS + ["category_level", "category", "metric"]
    if ci.empty:
        out = table.copy()
        out["ci_low"] = np.nan
        out["ci_high"] = np.nan
        return out
    return table.merge(ci, on=on, how="left")
