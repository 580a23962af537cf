"""Mis-prompt's percentile bootstrap over label patterns (core.benchmarks.misprompt.metrics
describes it): items reduced to pattern counts, erroneous and control items resampled apart,
clusters resampled whole."""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
from core.stats import (
    EXACT_ATOMS,
    EXACT_CELLS,
    MC_TOLERANCE,
    draw_until_stable,
    draws_for,
    interval_tails,
    inverted_cdf_intervals,
    resample,
    resample_sum_atoms,
    resample_sum_pmf,
    weighted_quantiles,
)


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


# the average's draws (issue 29): sampled, more where a cell is small, at most this many; the
# average of six labels takes many values, so 20,000 draws hold it to ±1 point between seeds
# (tests/test_bootstrap_stability.py) where a single label needed 200,000 and still moved
AVERAGE_MAX_DRAWS = 20_000
# ... and its draws grow as 1/n below this many items (its Monte-Carlo error goes as
# 1/√(n·draws)): base · 500 / n, so 20,000 up to 25 items, 12,500 at 40, the base from 500 on
AVERAGE_SMALL_N = 500
EXACT_PAIRS = 200_000  # erroneous × control atoms up to which a label's interval is exact
# erroneous × control atoms (of all six labels' sums jointly) up to which the average's interval
# is exact too (core.stats.resample_sum_atoms): every cell of a few dozen items
AVERAGE_EXACT_PAIRS = 300_000


def bootstrap_ci(
    patterns: pd.DataFrame,
    draws: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    confidence: float = 95.0,
    levels: Sequence[str] = LEVELS,
) -> pd.DataFrame:
    """Percentile bootstrap intervals for every row `f1_from_patterns` returns (of `levels`).

    Erroneous and control items are resampled separately (each a multinomial over its label
    patterns, which equals resampling items with replacement; clusters resampled whole).
    A label's F1 (or recall) depends on a resample only through (TP, known) of the erroneous
    items and (FP, known) of the controls, whose exact distributions are FFT convolutions
    (core.stats.resample_sum_pmf): its interval is read on that exact distribution — no
    seed, no Monte-Carlo error — wherever the two have at most EXACT_PAIRS atom pairs, and
    sampled above (large cells, where the sampling error is already small). The `average`
    depends on all six labels jointly and is sampled (draws_for, at most AVERAGE_MAX_DRAWS).
    Both are percentiles on the inverse distribution function (core.stats.weighted_quantiles),
    so the exact interval is the limit of the sampled one. Same seed, same intervals.
    """
    rows: list[dict] = []
    # per key group: its first row and its intervals (draws vary by group: draws_for)
    replicates: list[tuple[int, tuple[np.ndarray, np.ndarray]]] = []
    if patterns.empty or draws <= 0:
        return pd.DataFrame(
            columns=KEYS + ["category_level", "category", "metric", "ci_low", "ci_high"]
        )
    level_q = confidence / 100
    tails = interval_tails(level_q)  # as inverted_cdf_intervals reads them
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
        # the average's draws grow where a cell has few items (draws_for): each cell draws
        # for its own size, the controls for the smallest cell of every level, and a cell
        # reads the first of them — so asking fewer levels draws the same numbers
        sizes = [int(data.units(sub)[0].sum()) for _, _, sub in _cells(err, LEVELS, cat_values)]
        if has_ctrl:
            sizes.append(int(c_counts.sum()))
        g_draws = _average_draws(min([n for n in sizes if n > 0], default=0), draws)
        c_size = int(c_counts.sum()) if has_ctrl else 0
        block: list[tuple[np.ndarray, np.ndarray]] = []
        first_row = len(rows)
        c_exact = [
            _label_pmf(c_counts, c_pos, c_known, j) if has_ctrl else None
            for j in range(len(LABELS))
        ]
        c_joint = _joint_pmf(c_counts, c_pos, c_known, EXACT_ATOMS) if has_ctrl else None
        pool = _ControlPool(rng, c_counts, c_pos, c_known, g_draws) if has_ctrl else None
        for level, cat, sub in cells:
            e_counts, e_pos, e_known = data.units(sub)
            low, high = np.full(len(LABELS), np.nan), np.full(len(LABELS), np.nan)
            for j in range(len(LABELS)):
                exact = (
                    None  # too many control sums: the sampled interval
                    if has_ctrl and c_exact[j] is None
                    else _exact_label(
                        _label_pmf(e_counts, e_pos, e_known, j, _cells_for(c_exact[j])),
                        c_exact[j],
                        level == "all",
                        tails,
                    )
                )
                if exact is not None:
                    low[j], high[j] = exact
            average = (
                None  # the controls' joint sums too many: sampled
                if has_ctrl and c_joint is None
                else _exact_average(e_counts, e_pos, e_known, c_joint, level == "all", tails)
            )
            sampled = [int(j) for j in np.nonzero(np.isnan(low))[0]]
            if average is None or sampled:
                n_cell = int(e_counts.sum())
                cell_draws = _average_draws(min(n for n in (n_cell, c_size) if n > 0), draws)
                cell_draws = min(cell_draws, g_draws) if n_cell > 0 else g_draws
                values = draw_until_stable(
                    _cell_draw(
                        rng,
                        (e_counts, e_pos, e_known),
                        pool,
                        level == "all",
                        sampled,
                    ),
                    cell_draws,
                    tails,
                    MC_TOLERANCE * 100,
                    SAMPLED_MAX_DRAWS,
                )
                ends = inverted_cdf_intervals(values, level_q)
                for col, j in enumerate(sampled):
                    low[j], high[j] = float(ends[0][col]), float(ends[1][col])
                if average is None:
                    average = float(ends[0][-1]), float(ends[1][-1])
            block.append((low, high))
            block.append((np.array([average[0]]), np.array([average[1]])))
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


class _ControlPool:
    """The controls' resamples (FP and FP rate per label) shared by a key group's cells: the
    first `size` drawn when the group starts (as every cell's first batch reads them), more
    appended when a cell's draws grow (core.stats.draw_until_stable), so the controls are
    drawn once for all cells rather than once per cell."""

    def __init__(
        self,
        rng: np.random.Generator,
        counts: np.ndarray,
        pos: np.ndarray,
        known: np.ndarray,
        size: int,
    ) -> None:
        self.rng, self.counts, self.pos, self.known = rng, counts, pos, known
        self.fp = np.zeros((0, pos.shape[1]))
        self.rate = np.zeros((0, pos.shape[1]))
        self._grow(size)

    def _grow(self, size: int) -> None:
        c_draw = resample(self.rng, self.counts, size)
        fp = c_draw @ self.pos
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = fp / (c_draw @ self.known)
        self.fp, self.rate = np.vstack([self.fp, fp]), np.vstack([self.rate, rate])

    def take(self, start: int, size: int) -> tuple[np.ndarray, np.ndarray]:
        if start + size > len(self.fp):
            self._grow(start + size - len(self.fp))
        return self.fp[start : start + size], self.rate[start : start + size]


def _cell_draw(
    rng: np.random.Generator,
    err: tuple[np.ndarray, np.ndarray, np.ndarray],
    pool: _ControlPool | None,
    level_all: bool,
    labels: list[int],
) -> Callable[[int, int], np.ndarray]:
    """draw(batch, size) for core.stats.draw_until_stable: `size` resamples of a cell, the F1s
    (recalls without controls) of the labels `labels` and the average as columns; the
    controls' resamples are read from the group's pool, the next `size` of them each batch."""
    e_counts, e_pos, e_known = err
    offset = 0

    def draw(batch: int, size: int) -> np.ndarray:
        nonlocal offset
        e_draw = resample(rng, e_counts, size)
        tp = e_draw @ e_pos
        n_err = e_draw @ e_known
        fn = n_err - tp
        with np.errstate(divide="ignore", invalid="ignore"):
            if pool is None:
                values = 100.0 * tp / n_err
            else:
                fp_all, rate = pool.take(0 if batch == 0 else offset, size)
                fp = fp_all if level_all else rate * n_err
                values = 200.0 * tp / (2 * tp + fp + fn)
        offset += size
        return np.column_stack([values[:, labels], values.mean(axis=1)])

    return draw


# a sampled cell's draws grow (core.stats.draw_until_stable) until each end's Monte-Carlo
# error is within 0.5 point, up to this many
SAMPLED_MAX_DRAWS = 160_000


def _average_draws(n: int, base: int) -> int:
    return draws_for(n, base, AVERAGE_MAX_DRAWS, AVERAGE_SMALL_N)


def _label_pmf(
    counts: np.ndarray, pos: np.ndarray, known: np.ndarray, j: int, max_cells: int = EXACT_CELLS
) -> tuple[np.ndarray, np.ndarray] | None:
    """Exact distribution of (positives, known) of label j over a resample of these units
    (None when more than `max_cells` sums are possible: core.stats.resample_sum_pmf)."""
    if not len(counts) or int(counts.sum()) == 0:
        return None
    units = np.column_stack([pos[:, j], known[:, j]]).round().astype(np.int64)
    return resample_sum_pmf(units, counts, max_cells)


def _joint_pmf(
    counts: np.ndarray, pos: np.ndarray, known: np.ndarray, max_atoms: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """Exact joint distribution of the six labels' (positives, known) sums over a resample of
    these units (atoms × 12: positives then knowns; core.stats.resample_sum_atoms), None when
    it has more than `max_atoms` distinct sums."""
    if not len(counts) or int(counts.sum()) == 0:
        return None
    units = np.column_stack([pos, known]).round().astype(np.int64)
    return resample_sum_atoms(units, counts, max_atoms)


def _exact_average(
    e_counts: np.ndarray,
    e_pos: np.ndarray,
    e_known: np.ndarray,
    ctrl: tuple[np.ndarray, np.ndarray] | None,
    level_all: bool,
    qs: tuple[float, float],
) -> tuple[float, float] | None:
    """The `average` row's interval read on its exact bootstrap distribution: the mean of the
    six labels' F1s (recalls without controls) over every joint (TP, known) outcome of the
    erroneous items against every joint (FP, known) outcome of the controls, resampled
    independently, with the sampled path's arithmetic (a draw with a label undefined has no
    average, as there). None when the pairs exceed AVERAGE_EXACT_PAIRS (then sample)."""
    k = len(LABELS)
    budget = AVERAGE_EXACT_PAIRS // (1 if ctrl is None else len(ctrl[1]))
    if budget < 1:
        return None
    err = (
        (np.zeros((1, 2 * k)), np.ones(1))
        if not len(e_counts) or int(e_counts.sum()) == 0
        else _joint_pmf(e_counts, e_pos, e_known, min(budget, EXACT_ATOMS))
    )
    if err is None:
        return None
    e_atoms, e_p = err
    tp, n_err = e_atoms[:, None, :k], e_atoms[:, None, k:]
    with np.errstate(divide="ignore", invalid="ignore"):
        if ctrl is None:
            values, weights = (100.0 * tp / n_err)[:, 0, :], e_p
        else:
            c_atoms, c_p = ctrl
            fp_all, c_known = c_atoms[None, :, :k], c_atoms[None, :, k:]
            fn = n_err - tp
            fp = fp_all if level_all else fp_all / c_known * n_err
            values = (200.0 * tp / (2 * tp + fp + fn)).reshape(-1, k)
            weights = np.outer(e_p, c_p).ravel()
            keep = weights > 1e-13  # as _exact_label: cannot move an end
            values, weights = values[keep], weights[keep]
        average = values.mean(axis=1)
    low, high = weighted_quantiles(average, weights, qs)
    return float(low), float(high)


def _cells_for(ctrl: tuple[np.ndarray, np.ndarray] | None) -> int:
    """The erroneous side's grid worth convolving beside `ctrl`'s atoms: a grid holds more
    cells than atoms (~8× at a few dozen items: sums out of reach or below round-off), so a
    grid beyond 8 · EXACT_PAIRS / atoms cannot give a pair count within EXACT_PAIRS."""
    return EXACT_CELLS if ctrl is None else min(EXACT_CELLS, 8 * EXACT_PAIRS // len(ctrl[1]))


def _exact_label(
    err: tuple[np.ndarray, np.ndarray] | None,
    ctrl: tuple[np.ndarray, np.ndarray] | None,
    level_all: bool,
    qs: tuple[float, float],
) -> tuple[float, float] | None:
    """A label's interval read on the exact bootstrap distribution of its F1 (or recall
    without controls): every (TP, known) of the erroneous items against every (FP, known) of
    the controls, the two resampled independently, with the arithmetic of the sampled path
    (so the same values, bit for bit). None when either side is not exact or there are more
    than EXACT_PAIRS pairs."""
    if err is None:
        return None
    (e_atoms, e_p) = err
    tp, n_err = e_atoms[:, 0][:, None], e_atoms[:, 1][:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        if ctrl is None:
            values, weights = 100.0 * tp / n_err, e_p[:, None]
        else:
            (c_atoms, c_p) = ctrl
            if len(e_p) * len(c_p) > EXACT_PAIRS:
                return None
            fp_all, c_known = c_atoms[:, 0][None, :], c_atoms[:, 1][None, :]
            fn = n_err - tp
            fp = fp_all if level_all else fp_all / c_known * n_err
            values = 200.0 * tp / (2 * tp + fp + fn)
            weights = np.outer(e_p, c_p)
            # pairs below 1e-13 (≤ 2e-8 of probability in all) cannot move an interval end
            keep = weights > 1e-13
            values, weights = values[keep], weights[keep]
    low, high = weighted_quantiles(values, weights, qs)
    return float(low), float(high)


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
