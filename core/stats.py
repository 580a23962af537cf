"""Intervals every metrics row carries (issue 18): pure numpy/scipy, no store, no Streamlit.

One place so that every benchmark's `metrics` says the same thing the same way: a proportion
gets a Wilson score interval (honest near 0 and 1 and at small n, where the normal
approximation gives intervals outside [0, 1]); statistics that are not a proportion of
independent items (F1, F0.5, clustered items) get a bootstrap over items (or clusters) in the
benchmark's own code. tests/test_stats.py checks Wilson against statsmodels.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

LEVEL = 0.95
MIN_N = 10  # below this many items a cell is greyed out on the pages ("too few to read")


def wilson(
    k: npt.ArrayLike, n: npt.ArrayLike, level: float = LEVEL
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for k successes in n trials, as proportions in [0, 1].

    Vectorised over k and n; n = 0 gives NaN (no interval without items)."""
    from scipy.stats import norm

    k_arr = np.asarray(k, dtype=float)
    n_arr = np.asarray(n, dtype=float)
    z = float(norm.ppf(1 - (1 - level) / 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k_arr / n_arr
        denom = 1 + z**2 / n_arr
        centre = (p + z**2 / (2 * n_arr)) / denom
        half = z * np.sqrt(p * (1 - p) / n_arr + z**2 / (4 * n_arr**2)) / denom
    low = np.where(n_arr > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
    high = np.where(n_arr > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    return low, high


def wilson_percent(
    k: npt.ArrayLike, n: npt.ArrayLike, level: float = LEVEL
) -> tuple[np.ndarray, np.ndarray]:
    """`wilson` in percent (the unit every metrics table uses)."""
    low, high = wilson(k, n, level)
    return low * 100, high * 100
