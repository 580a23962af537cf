"""Intervals every metrics row carries (issue 18): pure numpy/scipy, no store, no Streamlit.

One place so that every benchmark's `metrics` says the same thing the same way: a proportion
gets a Wilson score interval (honest near 0 and 1 and at small n, where the normal
approximation gives intervals outside [0, 1]); statistics that are not a proportion of
independent items (F1, F0.5) get a percentile bootstrap over items, and over clusters when items
share a source (`bootstrap_sums`: the statistic is a function of sums over items, so a draw is
a vector of multiplicities and one matrix product); a proportion over clustered items gets a
cluster-robust standard error (`cluster_se_mean`) turned into a Wilson interval on the
effective sample size (`cluster_wilson`). The benchmarks say which statistic and which sums.
tests/test_stats.py checks Wilson and the cluster-robust SE against statsmodels and the
vectorised bootstrap against a plain loop. docs/statistics.md explains each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

LEVEL = 0.95
MIN_N = 10  # below this many items a cell is greyed out on the pages ("too few to read")
# issue 29: a bootstrap over few items has atoms (F1 takes few values), and at 1,000 draws the
# side of an atom a percentile falls on is Monte-Carlo noise (a cell of ~10 items moved its
# lower end from 15.1 to 0.0 between seeds). Cells of fewer than SMALL_N units get more draws,
# up to MAX_DRAWS; the cost stays flat, as a draw over few units is cheap.
SMALL_N = 2000
MAX_DRAWS = 200_000


def draws_for(n: int, base: int, cap: int = MAX_DRAWS, small_n: int = SMALL_N) -> int:
    """Bootstrap draws for a statistic over `n` units: `base` from `small_n` units on, more
    below (base · small_n / n, at most `cap`), so intervals hold to ±1 point between seeds
    (tests/test_bootstrap_stability.py)."""
    if n <= 0 or base <= 0:
        return base
    return int(min(max(cap, base), max(base, -(-base * small_n // n))))


EXACT_CELLS = 250_000  # grid cells up to which `resample_sum_pmf` convolves (≈ 10 ms)
_TINY = 1e-14  # FFT round-off: a grid cell below this probability is taken as empty


def _units_kept(units: npt.ArrayLike, counts: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, int]:
    """(units as integer rows, their counts, the resample's size), units of count 0 left out."""
    vals = np.asarray(units, dtype=np.int64)
    if vals.ndim == 1:
        vals = vals[:, None]
    cnt = np.asarray(counts, dtype=np.int64)
    keep = cnt > 0
    return vals[keep], cnt[keep], int(cnt[keep].sum())


def resample_sum_pmf(
    units: npt.ArrayLike, counts: npt.ArrayLike, max_cells: int = EXACT_CELLS
) -> tuple[np.ndarray, np.ndarray] | None:
    """The exact distribution of the column sums of a bootstrap resample: sum(counts) units
    drawn with replacement, unit k (an integer vector, a row of `units`) holding counts[k] of
    them — what `resample_counts(...) @ units` samples. The sum of N i.i.d. draws from the
    units' empirical distribution is its N-fold convolution, computed as one FFT power on the
    grid of possible sums. Returns (atoms × d sums, probabilities summing to 1), or None when
    that grid has more than `max_cells` cells (then sample). No seed: the same every time."""
    vals, cnt, total = _units_kept(units, counts)
    if total == 0:
        return np.zeros((1, vals.shape[1])), np.ones(1)
    low = vals.min(axis=0)
    span = vals.max(axis=0) - low
    shape = tuple(int(total * s + 1) for s in span)
    if int(np.prod(shape)) > max_cells:
        return None
    one = np.zeros(tuple(int(s + 1) for s in span))
    np.add.at(one, tuple((vals - low).T), cnt / total)
    axes = list(range(len(shape)))
    pmf = np.fft.irfftn(np.fft.rfftn(one, shape, axes) ** total, shape, axes)
    where = np.nonzero(pmf > _TINY)
    probs = pmf[where]
    atoms = np.column_stack(where).astype(float) + total * low
    return atoms, probs / probs.sum()


EXACT_ATOMS = 50_000  # distinct sums up to which `resample_sum_atoms` convolves
_EXACT_WORK = 4_000_000  # ... and (atoms × units) per convolution step
_ATOM_FLOOR = (
    1e-16  # a sum below this probability after a step is left out (≤ N·atoms·1e-16 in all)
)


def resample_sum_atoms(
    units: npt.ArrayLike, counts: npt.ArrayLike, max_atoms: int = EXACT_ATOMS
) -> tuple[np.ndarray, np.ndarray] | None:
    """`resample_sum_pmf` for sums of many columns (a label pattern's six positives and six
    knowns): the exact distribution of the column sums of a resample of sum(counts) units,
    kept sparse — only the sums that can occur, not a dense grid, which at 12 columns would be
    astronomically large. Each vector of sums is one mixed-radix integer (identical and
    constant columns merged first), and the N-fold convolution is N steps of "add one
    resampled unit": every reachable sum plus every unit, equal sums merged (np.unique).
    Probabilities below 1e-16 after a step are dropped and the rest renormalised (≤ N · atoms ·
    1e-16 of probability in all). Returns (atoms × d sums, probabilities), or None when the
    distinct sums exceed `max_atoms` (or a step would cost too much): then sample. No seed."""
    vals, cnt, total = _units_kept(units, counts)
    if total == 0:
        return np.zeros((1, vals.shape[1])), np.ones(1)
    cols, col_of = np.unique(vals, axis=1, return_inverse=True)
    low = cols.min(axis=0)
    radix = [total * int(s) + 1 for s in cols.max(axis=0) - low]
    if int(np.prod([float(r) for r in radix])) >= 2**62:
        return None
    mult = np.cumprod([1] + radix[:-1]).astype(np.int64)
    unit_codes = (cols - low) @ mult
    q = cnt / total
    codes: np.ndarray = np.zeros(1, dtype=np.int64)
    probs: np.ndarray = np.ones(1)
    for _ in range(total):
        if len(codes) * len(unit_codes) > _EXACT_WORK:
            return None
        summed = (codes[:, None] + unit_codes[None, :]).ravel()
        codes, where = np.unique(summed, return_inverse=True)
        probs = np.bincount(where.ravel(), weights=np.outer(probs, q).ravel())
        kept = probs > _ATOM_FLOOR
        codes, probs = codes[kept], probs[kept]
        if len(codes) > max_atoms:
            return None
    digits = (codes[:, None] // mult[None, :]) % np.asarray(radix, dtype=np.int64)[None, :]
    sums = digits + total * low[None, :]
    return sums[:, np.asarray(col_of).ravel()].astype(float), probs / probs.sum()


def weighted_quantiles(
    values: npt.ArrayLike, weights: npt.ArrayLike, qs: Sequence[float]
) -> np.ndarray:
    """Quantiles of a discrete distribution (atoms `values` of probability `weights`, non-finite
    atoms left out and the rest renormalised): for each q the smallest value v with
    P(X ≤ v) ≥ q — the inverse of the distribution function, the limit of
    `np.quantile(draws, q, method="inverted_cdf")` over ever more draws. NaN when no atom is
    finite."""
    vals = np.asarray(values, dtype=float).ravel()
    w = np.asarray(weights, dtype=float).ravel()
    ok = np.isfinite(vals) & (w > 0)
    vals, w = vals[ok], w[ok]
    if not len(vals):
        return np.full(len(qs), np.nan)
    order = np.argsort(vals, kind="stable")
    vals, cum = vals[order], np.cumsum(w[order])
    cum /= cum[-1]
    # 1e-12: round-off in the cumulative sum must not move a q that equals an atom's F(v)
    idx = np.searchsorted(cum, np.asarray(qs, dtype=float) - 1e-12, side="left")
    return vals[np.minimum(idx, len(vals) - 1)]


def interval_tails(level: float = LEVEL) -> tuple[float, float]:
    """The two quantiles a `level` percentile interval reads: (0.025, 0.975) at 0.95 — rounded,
    so that 0.025 is not 0.025000000000000022, which would move the inverse distribution
    function's rank ⌈q·n⌉ (and an exact interval's atom) by one."""
    tail = round((1 - level) / 2, 12)
    return tail, 1 - tail


def inverted_cdf_intervals(
    values: np.ndarray, level: float = LEVEL
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals of every column of sampled replicates (draws × columns) on the
    inverse distribution function (`weighted_quantiles` with equal weights), non-finite
    replicates left out: the sampled counterpart of an exact interval."""
    vals = np.asarray(values, dtype=float)
    qs = interval_tails(level)
    low = np.full(vals.shape[1], np.nan)
    high = np.full(vals.shape[1], np.nan)
    for j in range(vals.shape[1]):
        col = vals[:, j]
        col = col[np.isfinite(col)]
        if len(col):
            low[j], high[j] = np.quantile(col, qs, method="inverted_cdf")
    return low, high


MC_TOLERANCE = 0.005  # an end's Monte-Carlo error allowed, as a share (0.5 point of 100)
MC_MAX_DRAWS = 800_000  # ... drawn for at most this many replicates


def mc_error(values: npt.ArrayLike, q: float) -> float:
    """Monte-Carlo error of the q-quantile of these bootstrap replicates: the larger distance
    from the quantile to the ends of its 95% order-statistic band (the replicates at ranks
    qB ± 1.96·√(Bq(1 − q)), between which the quantile of ever more draws lies with ~95%
    probability). 0 when the band holds one value (an atom); NaN when no replicate is finite.
    Two seeds' ends then differ by at most about twice this."""
    arr = np.asarray(values, dtype=float).ravel()
    arr = arr[np.isfinite(arr)]
    if not len(arr):
        return float("nan")
    b = len(arr)
    h = 1.96 * np.sqrt(b * q * (1 - q))
    k = min(b - 1, max(0, int(np.ceil(q * b)) - 1))
    lo, hi = max(0, int(np.floor(k - h)) - 1), min(b - 1, int(np.ceil(k + h)) + 1)
    part = np.partition(arr, sorted({lo, k, hi}))
    return float(max(part[k] - part[lo], part[hi] - part[k]))


def draw_until_stable(
    draw: Callable[[int, int], np.ndarray],
    draws: int,
    qs: Sequence[float],
    tolerance: float,
    cap: int = MC_MAX_DRAWS,
) -> np.ndarray:
    """Bootstrap replicates (draws × columns), more of them until every column's quantiles
    `qs` have a Monte-Carlo error (`mc_error`) within `tolerance`, or `cap` replicates:
    `draw(batch, size)` returns `size` fresh replicates (batch 0, 1, … so a caller can seed
    or share the first), and the total doubles each round. Adaptive, so a cell needs as many
    draws as its own distribution asks (issue 29: ±1 point between seeds in every cell)."""
    parts = [np.atleast_2d(np.asarray(draw(0, draws), dtype=float).T).T]
    total, batch = draws, 1
    while total < cap:
        values = np.concatenate(parts) if len(parts) > 1 else parts[0]
        worst = max(
            (mc_error(values[:, j], q) for j in range(values.shape[1]) for q in qs),
            default=0.0,
        )
        if not worst > tolerance:  # NaN (nothing finite) counts as stable
            return values
        more = min(total, cap - total)
        parts.append(np.atleast_2d(np.asarray(draw(batch, more), dtype=float).T).T)
        total += more
        batch += 1
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


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
    # k = 0 and k = n give exactly 0 and 1 (centre − half leaves rounding dust like 5.6e-17)
    low = np.where(n_arr > 0, np.where(k_arr <= 0, 0.0, np.clip(centre - half, 0.0, 1.0)), np.nan)
    high = np.where(
        n_arr > 0, np.where(k_arr >= n_arr, 1.0, np.clip(centre + half, 0.0, 1.0)), np.nan
    )
    return low, high


def kish_n(n_per_stratum: npt.ArrayLike) -> float:
    """Kish's effective sample size of an unweighted mean of stratum shares (each stratum of
    n_t items weighs 1/T): (Σ w)² / Σ w² over items = T² / Σ 1/n_t; N when all n_t are equal."""
    n = np.asarray(n_per_stratum, dtype=float)
    n = n[n > 0]
    return float(len(n) ** 2 / np.sum(1.0 / n)) if len(n) else 0.0


def wilson_percent(
    k: npt.ArrayLike, n: npt.ArrayLike, level: float = LEVEL
) -> tuple[np.ndarray, np.ndarray]:
    """`wilson` in percent (the unit every metrics table uses)."""
    low, high = wilson(k, n, level)
    return low * 100, high * 100


def resample_counts(rng: np.random.Generator, counts: npt.ArrayLike, draws: int) -> np.ndarray:
    """`draws` resamples of sum(counts) units, unit k holding counts[k] of them (draws × units).

    Resampling items with replacement where items of one kind are interchangeable (identical
    label patterns, or one cluster each: counts of 1) is a multinomial draw over the kinds.
    Drawn as a chain of conditional binomials, each vectorised over the draws: the same
    distribution as rng.multinomial, ~20× faster than calling it with many categories."""
    counts = np.asarray(counts)
    total = int(counts.sum())
    out = np.zeros((draws, len(counts)))
    if total == 0:
        return out
    left = np.full(draws, total, dtype=np.int64)
    mass_left = float(total)
    for k, c in enumerate(counts[:-1]):
        if left.max() == 0:
            break
        p = min(1.0, float(c) / mass_left) if mass_left > 0 else 0.0
        x = rng.binomial(left, p)
        out[:, k] = x
        left -= x
        mass_left -= float(c)
    out[:, len(counts) - 1] = left
    return out


def resample(rng: np.random.Generator, counts: npt.ArrayLike, draws: int) -> np.ndarray:
    """`resample_counts`, drawn item by item where there are few items per unit (≤ 4: clusters,
    or the many distinct label patterns of a small cell) — B × N integers and one bincount
    beat a chain of one binomial pass per unit there (3–7× at 20,000 draws) — and as the
    chain otherwise. The same distribution either way (a multinomial over the units)."""
    counts = np.asarray(counts, dtype=np.int64)
    total, m = int(counts.sum()), len(counts)
    if total == 0 or total > 4 * m:
        return resample_counts(rng, counts, draws)
    owner = np.repeat(np.arange(m), counts)[rng.integers(0, total, (draws, total))]
    flat = (owner + (np.arange(draws) * m)[:, None]).ravel()
    return np.bincount(flat, minlength=draws * m).reshape(draws, m).astype(float)


def mid_quantiles(values: npt.ArrayLike, qs: Sequence[float]) -> np.ndarray:
    """Quantiles of bootstrap replicates read on the mid-distribution function (Parzen 2004):
    each distinct value v at F(v) − P(v)/2, linear in between. Where the replicates are all
    distinct this is the usual linear percentile (up to the (k − ½)/B vs (k − 1)/(B − 1)
    plotting position); where a statistic over few items takes few values (atoms: F1 of 10
    items), a cut-off that falls near an atom's edge moves the quantile by a share of the gap,
    not by the whole gap — the issue-29 cell whose lower end jumped from 15.1 to 0.0 between
    seeds. NaN when no replicate is finite."""
    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr)]
    if not len(arr):
        return np.full(len(qs), np.nan)
    if len(arr) > _SELECT_FROM:  # two atoms per quantile, found in O(n) (no sort)
        ranks = [min(len(arr) - 1, max(0, int(float(q) * len(arr)))) for q in qs]
        part = np.partition(arr, sorted(set(ranks)))
        return np.array([_mid_quantile(part, float(q), k) for q, k in zip(qs, ranks)])
    atoms, counts = np.unique(arr, return_counts=True)
    if len(atoms) == 1:
        return np.full(len(qs), atoms[0])
    mid = (np.cumsum(counts) - counts / 2) / len(arr)
    return np.interp(np.asarray(qs, dtype=float), mid, atoms)


_SELECT_FROM = 4096  # from this many replicates, selection beats np.unique's sort


def _mid_quantile(part: np.ndarray, q: float, k: int) -> float:
    """`mid_quantiles` at one q without sorting (issue 29: small cells draw up to 200,000
    replicates and sorting them was most of a bootstrap's time). `part` is the replicates
    partitioned at rank k = ⌊qn⌋: the atom v there, its mid-point (#<v + #=v/2)/n, and the
    neighbouring atom on q's side; q lies between their mid-points (#<v ≤ k < #≤v), so
    interpolating there equals np.interp over all atoms. Beyond the first or last mid-point,
    the end atom (as np.interp clips)."""
    arr = part
    n = len(arr)
    v = float(part[k])
    below = arr < v
    lt = int(np.count_nonzero(below))
    eq = int(np.count_nonzero(arr == v))
    mid_v = (lt + eq / 2) / n
    if q == mid_v:
        return v
    if q < mid_v:
        if not lt:
            return v
        u = float(arr[below].max())
        eq_u = int(np.count_nonzero(arr == u))
        mid_u = (lt - eq_u / 2) / n
        return u + (q - mid_u) * (v - u) / (mid_v - mid_u)
    above = arr > v
    if lt + eq == n:
        return v
    w = float(arr[above].min())
    eq_w = int(np.count_nonzero(arr == w))
    mid_w = (lt + eq + eq_w / 2) / n
    return v + (q - mid_v) * (w - v) / (mid_w - mid_v)


def percentile_interval(values: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates (`mid_quantiles`), ignoring non-finite ones
    (a replicate whose statistic is undefined, e.g. no item of a kind drawn); NaN when none is
    finite."""
    tail = (1 - level) / 2
    low, high = mid_quantiles(values, (tail, 1 - tail))
    return float(low), float(high)


def percentile_intervals(values: np.ndarray, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """`percentile_interval` of every column of `values` (draws × columns), as two arrays."""
    vals = np.asarray(values, dtype=float)
    low = np.full(vals.shape[1], np.nan)
    high = np.full(vals.shape[1], np.nan)
    for j in range(vals.shape[1]):
        low[j], high[j] = percentile_interval(vals[:, j], level)
    return low, high


def cluster_sums(
    values: npt.ArrayLike, clusters: npt.ArrayLike | None
) -> tuple[np.ndarray, np.ndarray]:
    """(units × k sums, counts) for `bootstrap_sums`: without clusters each distinct row of
    `values` (items × k) is a unit counted as often as it occurs (an item bootstrap); with
    clusters (one id per item; None/NaN = an item on its own) each cluster is one unit of
    count 1 holding its items' sums (a cluster bootstrap)."""
    vals = np.asarray(values, dtype=float)
    if vals.ndim == 1:
        vals = vals[:, None]
    if clusters is None:
        if not len(vals):
            return vals.reshape(0, vals.shape[1]), np.zeros(0, dtype=np.int64)
        units, counts = np.unique(vals, axis=0, return_counts=True)
        return units, counts.astype(np.int64)
    ids = _cluster_ids(clusters, len(vals))
    n_units = int(ids.max()) + 1 if len(ids) else 0
    sums = np.zeros((n_units, vals.shape[1]))
    np.add.at(sums, ids, vals)
    return sums, np.ones(n_units, dtype=np.int64)


def _cluster_ids(clusters: npt.ArrayLike, n: int) -> np.ndarray:
    """Dense cluster numbers 0..G-1; a missing id (None, NaN, '') makes its item a cluster."""
    raw = list(np.asarray(clusters, dtype=object).ravel())
    if len(raw) != n:
        raise ValueError("one cluster id per item is needed")
    numbers: dict[object, int] = {}
    out = np.empty(n, dtype=np.int64)
    for i, c in enumerate(raw):
        missing = c is None or c == "" or (isinstance(c, float) and np.isnan(c))
        key: object = ("__item__", i) if missing else c
        out[i] = numbers.setdefault(key, len(numbers))
    return out


def item_clusters(
    clusters: npt.ArrayLike | None, item_ids: npt.ArrayLike | None
) -> np.ndarray | None:
    """The clusters of a bootstrap over a run's answers when an item may hold several (a run
    asked K times, `run --epochs K`: issue 29): an item's answers are one cluster, an item with
    a source cluster (`clusters`, e.g. its group or essay) stays in it. None — every answer its
    own unit — when no item repeats and no answer has a cluster."""
    ids = None if item_ids is None else np.asarray(item_ids, dtype=object)
    repeats = ids is not None and len(set(ids.tolist())) < len(ids)
    if clusters is None and not repeats:
        return None
    if clusters is None:
        clusters = np.full(len(ids) if ids is not None else 0, None, dtype=object)
    out = np.asarray(clusters, dtype=object).copy()
    if not repeats or ids is None:
        return out
    for i, c in enumerate(out):
        if c is None or c == "" or (isinstance(c, float) and np.isnan(c)):
            out[i] = ("item", ids[i])
    return out


def n_items(item_ids: npt.ArrayLike | None, n: int) -> int:
    """Distinct items among n answers (n when the answers carry no item id)."""
    return n if item_ids is None else len(set(np.asarray(item_ids, dtype=object).tolist()))


def n_clusters(clusters: npt.ArrayLike | None, n: int) -> int:
    """How many independent units `cluster_sums` sees (items when there are no clusters)."""
    if clusters is None:
        return n
    ids = _cluster_ids(clusters, n)
    return int(ids.max()) + 1 if len(ids) else 0


def bootstrap_sums(
    sums: np.ndarray,
    counts: npt.ArrayLike,
    statistic: Callable[[np.ndarray], np.ndarray],
    draws: int,
    seed: int = 0,
    level: float = LEVEL,
) -> tuple[float, float]:
    """Percentile bootstrap interval of `statistic` (a function of column sums, vectorised
    over rows: draws × k → draws) when units (items, or clusters) are resampled with
    replacement; `sums`/`counts` as `cluster_sums` gives them. Same seed, same interval."""
    return bootstrap_sums_columns(sums, counts, statistic, draws, seed, level)[0]


def bootstrap_sums_columns(
    sums: np.ndarray,
    counts: npt.ArrayLike,
    statistic: Callable[[np.ndarray], np.ndarray],
    draws: int,
    seed: int = 0,
    level: float = LEVEL,
) -> list[tuple[float, float]]:
    """`bootstrap_sums` for a statistic giving several values per draw (draws × m): one
    interval per value, all from the same draws (one resampling serves every column)."""
    if draws <= 0 or not len(sums):  # no interval; as many NaN pairs as the statistic has
        k = np.shape(sums)[1] if np.ndim(sums) == 2 else 1
        with np.errstate(divide="ignore", invalid="ignore"):
            m = np.atleast_2d(np.asarray(statistic(np.zeros((1, k))))).shape[-1]
        return [(float("nan"), float("nan"))] * m
    rng = np.random.default_rng(seed)
    weights = resample_counts(rng, counts, draws)
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.asarray(statistic(weights @ np.asarray(sums, dtype=float)))
    if values.ndim == 1:
        values = values[:, None]
    return [percentile_interval(values[:, j], level) for j in range(values.shape[1])]


def cluster_se_mean(y: npt.ArrayLike, clusters: npt.ArrayLike) -> float:
    """Cluster-robust standard error of the mean of `y` (Liang–Zeger, with the small-sample
    factor G/(G−1)·(N−1)/(N−K), K = 1): what statsmodels' OLS of y on a constant reports with
    cov_type='cluster'. A cluster id that is missing makes its item a cluster of its own."""
    arr = np.asarray(y, dtype=float)
    n = len(arr)
    if n < 2:
        return float("nan")
    ids = _cluster_ids(clusters, n)
    g = int(ids.max()) + 1
    if g < 2:
        return float("nan")
    scores = np.bincount(ids, weights=arr - arr.mean(), minlength=g)
    return float(np.sqrt(g / (g - 1) * np.sum(scores**2)) / n)


def cluster_wilson(
    y: npt.ArrayLike, clusters: npt.ArrayLike, level: float = LEVEL
) -> tuple[float, float]:
    """Interval for the share of 0/1 outcomes `y` when items share clusters: a Wilson interval
    on the effective sample size n / deff, deff = (cluster-robust SE / the SE it gives when
    every item is its own cluster)², so deff = 1 without shared clusters; floored at 1
    (never narrower than the unclustered interval). At p = 0 or 1 there is no spread to
    measure deff from: the plain Wilson interval. Stays in [0, 1], unlike p ± z·SE."""
    arr = np.asarray(y, dtype=float)
    n = len(arr)
    if n == 0:
        return float("nan"), float("nan")
    p = float(arr.mean())
    deff = 1.0
    if 0.0 < p < 1.0 and n > 1:
        se = cluster_se_mean(arr, clusters)
        plain = float(np.var(arr, ddof=1)) / n  # the same SE with every item its own cluster
        if np.isfinite(se) and plain > 0:
            deff = max(1.0, se**2 / plain)
    n_eff = n / deff
    low, high = wilson(p * n_eff, n_eff, level)
    return float(low), float(high)
