"""core.stats against independent references: statsmodels for Wilson and the cluster-robust
SE, a plain one-draw-at-a-time loop for the vectorised (cluster) bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from core.stats import (
    bootstrap_sums,
    cluster_se_mean,
    cluster_sums,
    cluster_wilson,
    percentile_interval,
    percentile_intervals,
    resample_counts,
    wilson,
    wilson_percent,
)


@pytest.mark.parametrize(("k", "n"), [(0, 1), (0, 7), (3, 7), (7, 7), (50, 100), (1, 1000)])
def test_wilson_matches_statsmodels(k: int, n: int) -> None:
    low, high = wilson(k, n)
    ref_low, ref_high = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert float(low) == pytest.approx(ref_low, abs=1e-12)
    assert float(high) == pytest.approx(ref_high, abs=1e-12)


def test_wilson_is_vectorised_and_nan_without_items() -> None:
    low, high = wilson_percent([1, 0, 5], [4, 0, 5])
    ref_low, ref_high = proportion_confint(1, 4, alpha=0.05, method="wilson")
    assert low[0] == pytest.approx(ref_low * 100)
    assert high[0] == pytest.approx(ref_high * 100)
    assert np.isnan(low[1]) and np.isnan(high[1])
    assert high[2] == pytest.approx(100.0)


# -- clustered items -------------------------------------------------------------------------


def _clustered_outcomes(seed: int, clusters: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """0/1 outcomes with a cluster effect (items of one cluster share a success rate)."""
    rng = np.random.default_rng(seed)
    ids = np.repeat(np.arange(clusters), rng.integers(1, size + 1, clusters))
    rate = rng.beta(2, 3, clusters)[ids]
    return (rng.random(len(ids)) < rate).astype(float), ids


@pytest.mark.parametrize(("seed", "clusters", "size"), [(0, 8, 5), (1, 30, 12), (2, 200, 3)])
def test_cluster_se_mean_matches_statsmodels_cluster_robust_ols(seed, clusters, size) -> None:
    import statsmodels.api as sm

    y, ids = _clustered_outcomes(seed, clusters, size)
    fit = sm.OLS(y, np.ones(len(y))).fit(cov_type="cluster", cov_kwds={"groups": ids})
    assert cluster_se_mean(y, ids) == pytest.approx(float(fit.bse[0]), rel=1e-10)
    # string ids, and a missing id = an item on its own
    labels = np.array([f"essay-{i}" for i in ids], dtype=object)
    assert cluster_se_mean(y, labels) == pytest.approx(float(fit.bse[0]), rel=1e-10)


def test_cluster_se_mean_treats_missing_ids_as_singletons() -> None:
    import statsmodels.api as sm

    y, ids = _clustered_outcomes(3, 20, 4)
    raw = np.array([None if i % 3 == 0 else f"g{i}" for i in ids], dtype=object)
    singles = np.array(
        [f"own-{k}" if raw[k] is None else raw[k] for k in range(len(raw))], dtype=object
    )
    groups = np.unique(singles, return_inverse=True)[1]
    fit = sm.OLS(y, np.ones(len(y))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    assert cluster_se_mean(y, raw) == pytest.approx(float(fit.bse[0]), rel=1e-10)


def test_cluster_wilson_is_wilson_on_the_effective_n_from_statsmodels() -> None:
    import statsmodels.api as sm

    y, ids = _clustered_outcomes(4, 25, 10)
    x = np.ones(len(y))
    robust = sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": ids}).bse[0]
    plain = sm.OLS(y, x).fit().bse[0]
    deff = max(1.0, (robust / plain) ** 2)
    n_eff = len(y) / deff
    ref = proportion_confint(y.mean() * n_eff, n_eff, alpha=0.05, method="wilson")
    assert deff > 1.5  # the cluster effect is there
    assert cluster_wilson(y, ids) == pytest.approx(ref, abs=1e-12)
    # every item its own cluster: the plain Wilson interval
    own = np.arange(len(y))
    assert cluster_wilson(y, own) == pytest.approx(
        proportion_confint(int(y.sum()), len(y), alpha=0.05, method="wilson"), abs=1e-12
    )
    # all successes: no spread to measure deff from, the plain interval
    assert cluster_wilson(np.ones(12), np.repeat([0, 1, 2], 4)) == pytest.approx(
        proportion_confint(12, 12, alpha=0.05, method="wilson"), abs=1e-12
    )


# -- the vectorised bootstrap against a plain loop -------------------------------------------


def _f1(tp: float, fp: float, fn: float) -> float:
    return 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else float("nan")


def _loop_interval(
    truth: list[bool], pred: list[bool], groups: list[int] | None, draws: int, seed: int
) -> tuple[float, float]:
    """The textbook bootstrap, one draw at a time: resample items (or whole groups) with
    replacement, recount TP/FP/FN item by item, F1, then the 2.5 and 97.5 percentiles."""
    rng = np.random.default_rng(seed)
    units: list[list[int]] = (
        [[i] for i in range(len(truth))]
        if groups is None
        else [[i for i, g in enumerate(groups) if g == key] for key in sorted(set(groups))]
    )
    values = []
    for _ in range(draws):
        tp = fp = fn = 0
        for u in rng.integers(0, len(units), len(units)):
            for i in units[u]:
                tp += truth[i] and pred[i]
                fp += (not truth[i]) and pred[i]
                fn += truth[i] and not pred[i]
        values.append(_f1(tp, fp, fn))
    return tuple(np.percentile([v for v in values if v == v], [2.5, 97.5]))


def _f1_of_sums(s: np.ndarray) -> np.ndarray:
    return 2 * s[:, 0] / (2 * s[:, 0] + s[:, 1] + s[:, 2])


@pytest.mark.parametrize("clustered", [False, True])
def test_bootstrap_sums_agrees_with_a_plain_loop(clustered: bool) -> None:
    rng = np.random.default_rng(5)
    groups = np.repeat(np.arange(40), 6)
    truth = rng.random(len(groups)) < 0.6
    # predictions share a per-group tendency: clustering matters
    pred = rng.random(len(groups)) < np.where(rng.random(40) < 0.5, 0.8, 0.3)[groups]
    counts = np.column_stack([truth & pred, ~truth & pred, truth & ~pred]).astype(float)
    sums, units = cluster_sums(counts, groups if clustered else None)
    ours = bootstrap_sums(sums, units, _f1_of_sums, draws=20_000, seed=1)
    ref = _loop_interval(
        truth.tolist(), pred.tolist(), groups.tolist() if clustered else None, 4000, 2
    )
    # two Monte Carlo estimates of the same percentiles: they agree to ~0.01 of F1
    assert ours == pytest.approx(ref, abs=0.012)
    assert bootstrap_sums(sums, units, _f1_of_sums, draws=500, seed=3) == bootstrap_sums(
        sums, units, _f1_of_sums, draws=500, seed=3
    )


def test_cluster_bootstrap_is_wider_when_groups_move_together() -> None:
    rng = np.random.default_rng(6)
    groups = np.repeat(np.arange(30), 8)
    truth = np.ones(len(groups), dtype=bool)
    pred = (rng.random(30) < 0.5)[groups]  # a group is all found or all missed
    counts = np.column_stack([truth & pred, ~truth & pred, truth & ~pred]).astype(float)
    plain = bootstrap_sums(*cluster_sums(counts, None), _f1_of_sums, draws=4000)
    grouped = bootstrap_sums(*cluster_sums(counts, groups), _f1_of_sums, draws=4000)
    assert grouped[1] - grouped[0] > 2 * (plain[1] - plain[0])


def test_resample_counts_is_a_multinomial_over_units() -> None:
    counts = np.array([5, 0, 3, 12])
    draws = resample_counts(np.random.default_rng(0), counts, 40_000)
    assert (draws.sum(axis=1) == counts.sum()).all()
    assert (draws[:, 1] == 0).all()
    # multinomial(20, counts/20): mean and variance of each cell
    p = counts / counts.sum()
    assert draws.mean(axis=0) == pytest.approx(20 * p, abs=0.05)
    assert draws.var(axis=0) == pytest.approx(20 * p * (1 - p), rel=0.05, abs=0.01)


def test_percentile_intervals_equal_one_call_per_column_bit_for_bit() -> None:
    """The Mis-prompt page's run cells take every interval from one call: the numbers must be
    those of percentile_interval per column, exactly, non-finite replicates included."""
    rng = np.random.default_rng(3)
    values = rng.normal(50, 10, size=(500, 40))
    values[[3, 70], 5] = np.inf  # some replicates undefined: left out of that column
    values[:, 9] = np.nan  # none defined: NaN
    values[17, 30] = np.nan
    low, high = percentile_intervals(values, 0.95)
    for j in range(values.shape[1]):
        lo, hi = percentile_interval(values[:, j], 0.95)
        np.testing.assert_array_equal([low[j], high[j]], [lo, hi])
    assert np.isnan(low[9]) and np.isnan(high[9])
