"""Prediction-powered inference (PPI, PPI++): a cheap judge's verdicts on a whole run corrected by
people's labels on part of it (issue 18, point 4). Pure numpy/scipy, no store, no Streamlit.

Angelopoulos, Bates, Fannjiang, Jordan & Zrnic (2023), "Prediction-powered inference", Science
382:669; Angelopoulos, Duchi & Zrnic (2023), "PPI++: efficient prediction-powered inference",
arXiv:2311.01453. The closed forms are those of `ppi_py.ppi_mean_pointestimate` / `ppi_mean_ci`
(package `ppi-python`, not a runtime dependency: it pulls numba and gdown for five lines of
arithmetic; tests/test_ppi.py checks this module against it and against a hand computation).

For a mean θ = E[Y] (Y = a person's 0/1 label of a response), with people's labels Y_i and the
judge's Ŷ_i on n responses and the judge's Ŷ_j alone on N others:

    θ̂_λ = λ·mean(Ŷ_unlabelled) + mean(Y − λ·Ŷ)                (λ = 1: PPI; λ = 0: people alone)
    se² = λ²·var(Ŷ_unlabelled)/N + var(Y − λ·Ŷ)/n               (variances with ddof 0)

and the interval θ̂ ± z·se. PPI++ picks λ = cov(Y, Ŷ) / ((1 + n/N)·var(Ŷ over all n + N)),
clipped to [0, 1] — the λ that minimises se² (estimated from the same data, as ppi_py does), so
the interval is never much wider than people's labels alone would give, however bad the judge.

F1 (2·TP / (2·TP + FP + FN), the truth being the item's `is_error`): with e = is_error known for
every item, TP + FN = #errors, so F1 = 2t / (t + f + π) with t = E[Y·e], f = E[Y·(1−e)] and π =
E[e] the share of erroneous items (known: read from every item of the run). (t, f) is a
2-vector mean, estimated by PPI++ coordinate by coordinate (its own λ each); its covariance is
Σ = Λ·cov(Ŷ_unlabelled)·Λ/N + cov(Y − ΛŶ)/n, and the F1 interval comes from the delta method,
se² = ∇F1ᵀ Σ ∇F1 (∇F1 = (2(f+π), −2t) / (t+f+π)²). The delta method is the standard closed form
for a smooth function of means; at small n a bootstrap of the same estimate would be
the alternative (tests compare the two on a simulated run).

Effective sample size: the number of people's labels alone that would give an interval of the
same width, n_eff = n · se²_people / se²_PPI, where se²_people = var(Y)/n is the classical
(people only) standard error on the same n labels (for F1, both through the same gradient).
n_eff > n means the judge's verdicts on the unlabelled responses are worth extra labels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

LEVEL = 0.95


@dataclass(frozen=True)
class PPIEstimate:
    """A prediction-powered estimate with its interval and what it rests on.

    `n` people-labelled responses, `n_unlabelled` judged only; `lam` the PPI++ weight of the
    judge (0 = people alone, 1 = plain PPI); `classical` the estimate from people's labels alone
    (same n); `n_effective` the n of people's labels alone that gives the same interval width
    (NaN when people's labels do not vary: no classical interval to compare with)."""

    estimate: float
    ci_low: float
    ci_high: float
    se: float
    lam: float
    n: int
    n_unlabelled: int
    classical: float
    n_effective: float


def _z(level: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - (1 - level) / 2))


def _as_2d(x: npt.ArrayLike) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    return a.reshape(-1, 1) if a.ndim == 1 else a


def ppi_lambda(y: npt.ArrayLike, yhat: npt.ArrayLike, yhat_unlabelled: npt.ArrayLike) -> np.ndarray:
    """PPI++'s variance-minimising λ per column, clipped to [0, 1] (ppi_py's `_calc_lam_glm`
    with optim_mode 'element', the identity Hessian of a mean): cov(Y, Ŷ) over the labelled
    (ddof 0) / ((1 + n/N) · var(Ŷ) over labelled and unlabelled together (ddof 1))."""
    y2, h2, u2 = _as_2d(y), _as_2d(yhat), _as_2d(yhat_unlabelled)
    n, big_n = len(y2), len(u2)
    if n == 0 or big_n == 0:
        return np.zeros(y2.shape[1])
    cov = ((y2 - y2.mean(0)) * (h2 - h2.mean(0))).mean(0)
    both = np.concatenate([h2, u2], axis=0)
    var = both.var(0, ddof=1) if len(both) > 1 else np.zeros(y2.shape[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = cov / ((1 + n / big_n) * var)
    return np.clip(np.nan_to_num(lam, nan=0.0, posinf=1.0, neginf=0.0), 0.0, 1.0)


def _mean_and_cov(
    y: np.ndarray, yhat: np.ndarray, yhat_unlabelled: np.ndarray, lam: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """PPI point estimate of a d-vector mean and its covariance (ddof 0, as ppi_py)."""
    n, big_n = len(y), len(yhat_unlabelled)
    rect = y - lam * yhat
    est = rect.mean(0)
    cov = np.cov(rect, rowvar=False, ddof=0).reshape(y.shape[1], y.shape[1]) / n
    if big_n:
        est = est + (lam * yhat_unlabelled).mean(0)
        imputed = np.cov(lam * yhat_unlabelled, rowvar=False, ddof=0)
        cov = cov + imputed.reshape(y.shape[1], y.shape[1]) / big_n
    return est, cov


def _nan_estimate(n: int, big_n: int) -> PPIEstimate:
    nan = float("nan")
    return PPIEstimate(nan, nan, nan, nan, nan, n, big_n, nan, nan)


def ppi_mean(
    y: npt.ArrayLike,
    yhat: npt.ArrayLike,
    yhat_unlabelled: npt.ArrayLike,
    *,
    level: float = LEVEL,
    lam: float | None = None,
) -> PPIEstimate:
    """PPI (lam=1) or PPI++ (lam=None: tuned) estimate of E[Y] with its normal interval,
    clipped to [0, 1] for the 0/1 labels it is used on (NaN with no labelled response)."""
    y2, h2, u2 = _as_2d(y), _as_2d(yhat), _as_2d(yhat_unlabelled)
    n, big_n = len(y2), len(u2)
    if n == 0 or len(h2) != n:
        if len(h2) != n:
            raise ValueError("people's labels and the judge's must cover the same responses")
        return _nan_estimate(n, big_n)
    lam_v = ppi_lambda(y2, h2, u2) if lam is None else np.full(1, float(lam))
    if big_n == 0:
        lam_v = np.zeros(1)  # everything labelled: the judge adds nothing
    est, cov = _mean_and_cov(y2, h2, u2, lam_v)
    se = math.sqrt(max(float(cov[0, 0]), 0.0))
    z = _z(level)
    classical_var = float(y2[:, 0].var()) / n
    return PPIEstimate(
        estimate=float(est[0]),
        ci_low=max(0.0, float(est[0]) - z * se),
        ci_high=min(1.0, float(est[0]) + z * se),
        se=se,
        lam=float(lam_v[0]),
        n=n,
        n_unlabelled=big_n,
        classical=float(y2[:, 0].mean()),
        n_effective=_effective_n(n, classical_var, se * se),
    )


def _effective_n(n: int, classical_var: float, ppi_var: float) -> float:
    """n · se²_people / se²_PPI (NaN when either variance is 0: no width to compare)."""
    if classical_var <= 0 or ppi_var <= 0:
        return float("nan")
    return n * classical_var / ppi_var


def f1_from_rates(t: float, f: float, pi: float) -> float:
    """F1 = 2·TP / (2·TP + FP + FN) from the rates t = TP/N, f = FP/N and π = errors/N."""
    denom = t + f + pi
    return 2 * t / denom if denom > 0 else float("nan")


def ppi_f1(
    y: npt.ArrayLike,
    yhat: npt.ArrayLike,
    truth: npt.ArrayLike,
    yhat_unlabelled: npt.ArrayLike,
    truth_unlabelled: npt.ArrayLike,
    *,
    level: float = LEVEL,
    lam: float | None = None,
) -> PPIEstimate:
    """PPI++ estimate of F1 (truth = is_error) with a delta-method interval (module docstring).

    `y`, `yhat`, `truth`: people's label, the judge's and is_error on the n labelled responses;
    `yhat_unlabelled`, `truth_unlabelled` on the N others. NaN without labelled responses or
    without an erroneous item (F1 undefined)."""
    y1, h1, e1 = (np.asarray(a, dtype=float).ravel() for a in (y, yhat, truth))
    u1, eu = (np.asarray(a, dtype=float).ravel() for a in (yhat_unlabelled, truth_unlabelled))
    n, big_n = len(y1), len(u1)
    if len(h1) != n or len(e1) != n or len(eu) != big_n:
        raise ValueError("labels, judge verdicts and truth must cover the same responses")
    pi = float(np.concatenate([e1, eu]).mean()) if n + big_n else 0.0
    if n == 0 or pi == 0:
        return _nan_estimate(n, big_n)
    y2 = np.column_stack([y1 * e1, y1 * (1 - e1)])
    h2 = np.column_stack([h1 * e1, h1 * (1 - e1)])
    u2 = np.column_stack([u1 * eu, u1 * (1 - eu)])
    if big_n == 0:
        lam_v = np.zeros(2)
    elif lam is None:
        lam_v = ppi_lambda(y2, h2, u2)
    else:
        lam_v = np.full(2, float(lam))
    est, cov = _mean_and_cov(y2, h2, u2, lam_v)
    t, f = float(est[0]), float(est[1])
    value = f1_from_rates(t, f, pi)
    denom = (t + f + pi) ** 2
    grad = np.array([2 * (f + pi), -2 * t]) / denom
    var = float(grad @ cov @ grad)
    se = math.sqrt(max(var, 0.0))
    z = _z(level)
    classical_cov = np.cov(y2, rowvar=False, ddof=0).reshape(2, 2) / n
    classical = f1_from_rates(float(y2[:, 0].mean()), float(y2[:, 1].mean()), pi)
    return PPIEstimate(
        estimate=value,
        ci_low=max(0.0, value - z * se),
        ci_high=min(1.0, value + z * se),
        se=se,
        lam=float(lam_v.mean()),
        n=n,
        n_unlabelled=big_n,
        classical=classical,
        n_effective=_effective_n(n, float(grad @ classical_cov @ grad), var),
    )


# -- issue 29: a bootstrap of the whole F1 estimator, and how few labels is too few ------------

MIN_LABELLED = 30  # below this many people's labels the pages warn: the intervals are rough
BOOT_DRAWS = 4000
BOOT_SEED = 0


def ppi_f1_bootstrap(
    y: npt.ArrayLike,
    yhat: npt.ArrayLike,
    truth: npt.ArrayLike,
    yhat_unlabelled: npt.ArrayLike,
    truth_unlabelled: npt.ArrayLike,
    *,
    level: float = LEVEL,
    lam: float | None = None,
    draws: int = BOOT_DRAWS,
    seed: int = BOOT_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the whole PPI++ F1 estimator (`ppi_f1`): the labelled
    responses (person, judge, is_error) and the unlabelled ones (judge, is_error) resampled
    apart, and in every draw λ re-tuned, π re-read and F1 recomputed — what the delta method
    approximates, without its normal approximation (at n = 27 labels the two differed by
    several points: issue 29). Every quantity of `ppi_f1` depends on the responses only
    through the counts of their ≤ 8 labelled and ≤ 4 unlabelled patterns, so a draw is a
    multinomial over those (core.stats.resample_counts), vectorised over the draws.
    (NaN, NaN) where `ppi_f1` is NaN. Same seed, same interval."""
    from core.stats import (
        MC_TOLERANCE,
        draw_until_stable,
        draws_for,
        interval_tails,
        inverted_cdf_intervals,
        resample_counts,
    )

    y1, h1, e1 = (np.asarray(a, dtype=float).ravel() for a in (y, yhat, truth))
    u1, eu = (np.asarray(a, dtype=float).ravel() for a in (yhat_unlabelled, truth_unlabelled))
    n, big_n = len(y1), len(u1)
    if n == 0 or not math.isfinite(ppi_f1(y1, h1, e1, u1, eu, lam=lam).estimate):
        return float("nan"), float("nan")
    lab = np.column_stack([y1, h1, e1])
    lab_units, lab_counts = np.unique(lab, axis=0, return_counts=True)
    rng = np.random.default_rng(seed)
    if big_n:
        unl_units, unl_counts = np.unique(np.column_stack([u1, eu]), axis=0, return_counts=True)
    else:
        unl_units, unl_counts = np.zeros((0, 2)), np.zeros(0, dtype=np.int64)

    def draw(_batch: int, size: int) -> np.ndarray:
        w = resample_counts(rng, lab_counts, size)  # size × labelled patterns
        v = resample_counts(rng, unl_counts, size) if big_n else np.zeros((size, 0))
        return _f1_of_counts(w, lab_units, v, unl_units, lam)

    # issue 29: at n = 10 labels the ends moved ~3 points between seeds (an atom of F1 = 0 of
    # ~2.5 % read on the mid-distribution function, which interpolates by its sampled mass);
    # read on the inverse distribution function and drawn until each end's Monte-Carlo error
    # is within 0.005 (core.stats.draw_until_stable)
    values = draw_until_stable(draw, draws_for(n, draws), interval_tails(level), MC_TOLERANCE)
    low, high = inverted_cdf_intervals(values, level)
    return float(low[0]), float(high[0])


def _f1_of_counts(
    w: np.ndarray, lab: np.ndarray, v: np.ndarray, unl: np.ndarray, lam: float | None
) -> np.ndarray:
    """`ppi_f1(...).estimate` for each row of pattern counts (w: labelled, v: unlabelled)."""
    n = w.sum(1)
    big_n = v.sum(1)
    y, h, e = lab[:, 0], lab[:, 1], lab[:, 2]
    u, eu = unl[:, 0], unl[:, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        pi = (w @ e + v @ eu) / (n + big_n)
        est = []
        for ye, he, ue in ((y * e, h * e, u * eu), (y * (1 - e), h * (1 - e), u * (1 - eu))):
            my, mh = (w @ ye) / n, (w @ he) / n
            mu = (v @ ue) / big_n if len(ue) else np.zeros(len(n))
            if lam is None:
                cov = (w @ (ye * he)) / n - my * mh
                both = (w @ he + v @ ue) / (n + big_n)
                ss = w @ (he**2) + v @ (ue**2) - (n + big_n) * both**2
                var = ss / (n + big_n - 1)
                lam_c = cov / ((1 + n / big_n) * var)
                lam_c = np.clip(np.nan_to_num(lam_c, nan=0.0, posinf=1.0, neginf=0.0), 0, 1)
            else:
                lam_c = np.full(len(n), float(lam))
            lam_c = np.where(big_n > 0, lam_c, 0.0)
            est.append(my - lam_c * mh + lam_c * np.nan_to_num(mu))
        t, f = est
        denom = t + f + pi
        return np.where(denom > 0, 2 * t / denom, np.nan)
