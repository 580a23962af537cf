"""`python -m core compare`: a paired comparison of two runs over the items both answered.

Generic over the result record (core/engine/results.py): the metric `correct` (accuracy) for
every benchmark, each named label of a multi-label judge (the registry's `label_letters()`) as
a rate, and, for a benchmark with control items (`has_controls`), each label's F1 with
`is_error` as the truth. Per metric × category ('all' first, then items.primary_category):

- n: pairs where both runs have a value; baseline, candidate (proportions 0–1), diff = cand − base.
- ci_low, ci_high: paired bootstrap 95% percentile interval of diff: pairs resampled with
  replacement (the same pairs for both runs), `DRAWS` draws seeded with `SEED` per category.
  A metric's diff and F1 diff depend on a pair only through its (baseline, candidate, truth)
  pattern, so a draw is a multinomial over the ≤ 18 pattern counts (`pattern_bootstrap`): the
  distribution of resampling pairs, at a cost independent of the number of pairs.
- b, c: discordant pairs of a binary metric (b: 1 in baseline and 0 in candidate; c: the
  reverse); p_value: McNemar's exact test = two-sided binomial test of b out of b + c at 1/2.
- p_holm: Holm's step-down adjustment across every cell of the table that has a p-value.
- mdd_80: the smallest |diff| McNemar's test would detect with 80% power at α = 0.05
  (two-sided) for this n, from the observed discordant rate ψ = (b + c) / n (Connor 1987's
  normal approximation n = (z_α √ψ + z_β √(ψ − δ²))² / δ², solved for δ).

Pairs are (item_id) when each run answered one variant, else (item_id, variant). A result with
status 'failed' is "not answered" and leaves the pair out.
"""

from __future__ import annotations

import argparse
import collections
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from core.registry import get as get_benchmark
from core.services.export import render_report
from core.stats import (
    LEVEL,
    draws_for,
    interval_tails,
    percentile_intervals,
    resample_counts,
    resample_sum_pmf,
    weighted_quantiles,
)
from core.store import Store, runs_without_judging

DRAWS = 2000
SEED = 20240601
ALPHA = 0.05
POWER = 0.80
FORMATS = ("table", "csv", "json")
COLUMNS = [
    "metric",
    "category",
    "n",
    "baseline",
    "candidate",
    "diff",
    "ci_low",
    "ci_high",
    "b",
    "c",
    "p_value",
    "p_holm",
    "mdd_80",
]
FLIPPED_COLUMNS = ["item_id", "variant", "category", "metric", "baseline", "candidate"]


class CompareError(ValueError):
    """A comparison that cannot be made (unknown run, other benchmark, no shared items)."""


@dataclass
class Pairs:
    """The paired items of two runs: one row per pair, a `<metric>_base` / `<metric>_cand`
    column per binary metric (1.0 / 0.0 / NaN when missing)."""

    baseline: str
    candidate: str
    benchmark: str
    judgings: tuple[str, str]
    metrics: list[str]
    frame: pd.DataFrame
    f1_labels: list[str] = field(default_factory=list)


def _sql(labels: Sequence[str]) -> str:
    """One run's results as 1.0 / 0.0 / NULL columns: `correct` and each label, read from the
    labels JSON by DuckDB (parsing 25,000 JSON objects in Python cost ~1 s of `compare`)."""
    cols = "".join(
        f", CASE json_extract_string(v.labels, '$.\"{name}\"') WHEN 'true' THEN 1.0 "
        f"WHEN 'false' THEN 0.0 END AS {_label_column(name)}"
        for name in labels
    )
    return f"""
SELECT v.run_id, v.item_id, v.variant, v.epoch, v.correct::INT::DOUBLE AS correct{cols},
       i.primary_category AS category, i.is_error
FROM results v
JOIN runs ru ON ru.run_id = v.run_id
LEFT JOIN items i ON i.item_set = ru.item_set AND i.item_id = v.item_id
JOIN (SELECT run_id, coalesce(?, judging) AS judging FROM current_judgings
      WHERE run_id IN (?, ?)) j ON j.run_id = v.run_id AND j.judging = v.judging
WHERE v.status <> 'failed'
"""  # a run asked K times (`run --epochs K`): every epoch, averaged per item (`_per_item`)


def _label_column(name: str) -> str:
    """A label's column in `_sql` (quoted: a registry label name is any string)."""
    return '"label:' + name.replace('"', '""') + '"'


def _both_runs(
    store: Store, runs: tuple[str, str], judging: str | None, labels: Sequence[str]
) -> list[tuple[pd.DataFrame, str]]:
    """(results, judging name) of each run, read in one connection and one statement."""
    with store.connect() as con:
        names = dict(
            con.execute(
                "SELECT run_id, judging FROM current_judgings WHERE run_id IN (?, ?)", list(runs)
            ).fetchall()
        )
        frame = con.execute(_sql(labels), [judging, *runs]).df()
    frame = frame.rename(columns={f"label:{n}": n for n in labels})
    return [
        (
            frame[frame["run_id"] == run].drop(columns="run_id").reset_index(drop=True),
            str(judging or names.get(run) or "default"),
        )
        for run in runs
    ]


def load_pairs(store: Store, baseline: str, candidate: str, judging: str | None = None) -> Pairs:
    """Both runs' records on the items both answered; refuses (CompareError) runs that are
    unknown, of different benchmarks, lack `judging`, or share no answered item — and a run
    compared with itself (both sides would read the same judging: every difference 0)."""
    if baseline == candidate:
        raise CompareError(
            f"--baseline and --candidate are the same run {baseline!r}: every difference "
            "would be 0 by construction; compare it with another run"
        )
    runs = dict(
        store.rows(
            "SELECT run_id, benchmark FROM runs WHERE run_id IN (?, ?)", [baseline, candidate]
        )
    )
    for run in (baseline, candidate):
        if run not in runs:
            raise CompareError(f"unknown run {run!r} (see `python -m core runs`)")
    if runs[baseline] != runs[candidate]:
        raise CompareError(
            f"runs of different benchmarks: {baseline} is {runs[baseline]}, "
            f"{candidate} is {runs[candidate]}"
        )
    if judging is not None:
        missing = runs_without_judging(store, [baseline, candidate], judging)
        if missing:
            raise CompareError(
                f"run(s) {', '.join(missing)} have no judging {judging!r} "
                "(see `python -m core rescore`)"
            )
    bench = get_benchmark(runs[baseline])
    labels = list(bench.label_letters())
    metrics = ["correct", *labels]
    (base, base_judging), (cand, cand_judging) = _both_runs(
        store, (baseline, candidate), judging, labels
    )
    by_variant = base["variant"].nunique() > 1 or cand["variant"].nunique() > 1
    keys = ["item_id", "variant"] if by_variant else ["item_id"]
    frames = [_per_item(rows, keys, metrics) for rows in (base, cand)]
    merged = frames[0].merge(
        frames[1].drop(columns=["category", "is_error"]),
        on=keys,
        suffixes=("_base", "_cand"),
        validate="one_to_one",
    )
    if merged.empty:
        raise CompareError(f"runs {baseline} and {candidate} share no answered items")
    if not by_variant:
        merged["variant"] = ""
    merged["category"] = merged["category"].fillna("(none)").astype(str)
    merged = merged.sort_values(["item_id", "variant"], ignore_index=True)
    f1_labels = labels if bench.has_controls else []
    return Pairs(
        baseline, candidate, bench.name, (base_judging, cand_judging), metrics, merged, f1_labels
    )


def _per_item(rows: pd.DataFrame, keys: list[str], metrics: list[str]) -> pd.DataFrame:
    """One row per pair unit: each metric's mean over the unit's epochs (1.0 / 0.0 for a run
    asked once; k/K for a run asked K times), NaN where no epoch has a value."""
    out = rows[[*keys, "category", "is_error", *metrics]].copy()
    for name in metrics:
        out[name] = out[name].astype(float)
    if "epoch" not in rows or rows.empty or int(rows.groupby(keys).size().max()) <= 1:
        return out
    first = out.groupby(keys, sort=False)[["category", "is_error"]].first()
    means = out.groupby(keys, sort=False)[metrics].mean()  # NaN-skipping: epochs with a value
    return first.join(means).reset_index()


# --- statistics (pure functions; tests check each against an independent computation) ---


def mcnemar_exact(b: int, c: int) -> float:
    """McNemar's exact p-value: two-sided binomial test of b successes in b + c at 1/2."""
    if b + c == 0:
        return 1.0
    from scipy.stats import binom

    # at 1/2 the distribution is symmetric: binomtest's two-sided p-value is twice the
    # smaller tail (capped at 1), without its search (a tenth of `compare` at 42 cells)
    return float(min(1.0, 2 * binom.cdf(min(b, c), b + c, 0.5)))


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (NaN stays NaN and does not count)."""
    p = np.asarray(p_values, dtype=float)
    out = np.full_like(p, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = len(valid)
    if m == 0:
        return out
    order = valid[np.argsort(p[valid], kind="stable")]
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out[order] = adjusted
    return out


def min_detectable_diff(n: int, discordant_rate: float) -> float:
    """Smallest |diff| McNemar's test detects with POWER at ALPHA (two-sided) for n pairs and a
    discordant rate ψ: δ solving √n·δ = z_α √ψ + z_β √(ψ − δ²) (Connor 1987), i.e.
    δ = √ψ (√n z_α + z_β √(n − z_α² + z_β²)) / (n + z_β²). NaN when ψ = 0 or n is too small."""
    from scipy.stats import norm

    za = float(norm.ppf(1 - ALPHA / 2))
    zb = float(norm.ppf(POWER))
    inner = n - za**2 + zb**2
    if n <= 0 or discordant_rate <= 0 or inner < 0:
        return math.nan
    return math.sqrt(discordant_rate) * (math.sqrt(n) * za + zb * math.sqrt(inner)) / (n + zb**2)


def _f1(tp: Any, fp: Any, fn: Any) -> Any:
    with np.errstate(invalid="ignore", divide="ignore"):
        return 2 * tp / (2 * tp + fp + fn)


_PATTERNS = 18  # (baseline, candidate) in {0, 1, missing}² × truth in {0, 1}


def _pattern_codes(x: np.ndarray, y: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Each pair's pattern of one metric: 6·baseline + 2·candidate + truth, missing = 2."""
    xb = np.where(np.isnan(x), 2, x).astype(np.int64)
    yb = np.where(np.isnan(y), 2, y).astype(np.int64)
    return xb * 6 + yb * 2 + truth.astype(np.int64)


def _pattern_sums() -> np.ndarray:
    """Per pattern (18 rows): diff, ok, then candidate's and baseline's TP, FP, FN."""
    out = np.zeros((_PATTERNS, 8))
    for code in range(_PATTERNS):
        xb, yb, t = code // 6, (code // 2) % 3, code % 2
        if xb == 2 or yb == 2:
            continue
        out[code, :2] = (yb - xb, 1)
        for k, pred in ((2, yb), (5, xb)):
            out[code, k : k + 3] = (pred * t, pred * (1 - t), (1 - pred) * t)
    return out


PATTERN_SUMS = _pattern_sums()


def pattern_bootstrap(
    x: np.ndarray, y: np.ndarray, truth: np.ndarray, draws: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap draws of one metric's paired mean difference and F1 difference (candidate −
    baseline; `truth` = is_error). Both depend on a pair only through its pattern (baseline,
    candidate, truth): resampling the n pairs with replacement is a multinomial draw over the
    ≤ 18 pattern counts (core.stats.resample_counts) — the same distribution as drawing pair
    indices, at a cost independent of n (25,000 pairs: indices were 50 M numbers a metric)."""
    counts = np.bincount(_pattern_codes(x, y, truth), minlength=_PATTERNS)
    s = resample_counts(rng, counts, draws) @ PATTERN_SUMS
    with np.errstate(invalid="ignore", divide="ignore"):
        return s[:, 0] / s[:, 1], _f1(s[:, 2], s[:, 3], s[:, 4]) - _f1(s[:, 5], s[:, 6], s[:, 7])


def percentile_ci(stats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 95% percentile interval per column (draws with an undefined statistic left out),
    read on the mid-distribution function (core.stats.percentile_intervals: stable between
    seeds where few items give the difference few values)."""
    if stats.size == 0 or np.isnan(stats).all():
        nan = np.full(stats.shape[1], np.nan)
        return nan, nan
    return percentile_intervals(stats, 0.95)


def f1_score(pred: np.ndarray, truth: np.ndarray) -> float:
    ok = ~np.isnan(pred)
    p, t = pred[ok], truth[ok]
    return float(_f1((p * t).sum(), (p * (1 - t)).sum(), ((1 - p) * t).sum()))


def clustered_mcnemar(x: np.ndarray, y: np.ndarray) -> float:
    """Two-sided p-value of a McNemar-type test on per-item means (runs asked K times): the
    statistic (Σ dᵢ)² / Σ dᵢ², dᵢ = yᵢ − xᵢ the difference of item i's means over its epochs,
    χ² with 1 df under "no difference" — Durkalski et al.'s (2003) clustered McNemar test with
    the item as the cluster. With one answer per item (dᵢ ∈ {−1, 0, 1}) it is McNemar's
    asymptotic test (b − c)² / (b + c) without continuity correction."""
    from scipy.stats import chi2

    d = np.asarray(y, dtype=float) - np.asarray(x, dtype=float)
    d = d[~np.isnan(d)]
    denom = float((d**2).sum())
    if denom == 0:
        return 1.0
    return float(chi2.sf(float(d.sum()) ** 2 / denom, 1))


def _is_binary(*values: np.ndarray) -> bool:
    return all(bool(np.isin(v, (0.0, 1.0)).all()) for v in values)


def _binary_cell(metric: str, category: str, x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """n, the two means, diff, b / c and the test of one metric in one category. Values are
    0/1 (one answer per item: exact McNemar) or per-item means over epochs (b, c: items whose
    mean is higher in the baseline / in the candidate; `clustered_mcnemar`)."""
    ok = ~(np.isnan(x) | np.isnan(y))
    n = int(ok.sum())
    xs, ys = x[ok], y[ok]
    b = int((xs > ys).sum())
    c = int((ys > xs).sum())
    p = (
        (mcnemar_exact(b, c) if _is_binary(xs, ys) else clustered_mcnemar(xs, ys))
        if n
        else math.nan
    )
    return {
        "metric": metric,
        "category": category,
        "n": n,
        "baseline": float(xs.mean()) if n else math.nan,
        "candidate": float(ys.mean()) if n else math.nan,
        "diff": float((ys - xs).mean()) if n else math.nan,
        "b": b,
        "c": c,
        "p_value": p,
        "mdd_80": min_detectable_diff(n, (b + c) / n) if n else math.nan,
    }


def _unit_draws(rows: np.ndarray, draws: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap draws (draws × k) of the column sums of `rows` (units × k) when the units are
    resampled with replacement: identical units merged, a multinomial over the distinct ones
    (core.stats.resample_counts) — an item bootstrap at a cost set by the distinct rows."""
    if not len(rows):
        return np.full((draws, rows.shape[1]), np.nan)
    units, counts = np.unique(rows, axis=0, return_counts=True)
    return resample_counts(rng, counts, draws) @ units


def mean_diff_draws(
    x: np.ndarray, y: np.ndarray, truth: np.ndarray, draws: int, rng: np.random.Generator
) -> np.ndarray:
    """Bootstrap draws of the paired mean difference (candidate − baseline) over items. 0/1
    values: `pattern_bootstrap` (the pairs' ≤ 18 patterns); per-item means over epochs: the
    items resampled with their K answers (a bootstrap clustered by item)."""
    ok = ~(np.isnan(x) | np.isnan(y))
    if _is_binary(x[ok], y[ok]):
        return pattern_bootstrap(x, y, truth, draws, rng)[0]
    rows = np.column_stack([y[ok] - x[ok], np.ones(int(ok.sum()))])
    s = _unit_draws(rows, draws, rng)
    with np.errstate(invalid="ignore", divide="ignore"):
        return s[:, 0] / s[:, 1]


EXACT_JOINT = 500_000  # (erroneous × control) sum atoms up to which a detection diff is exact


@dataclass(frozen=True)
class Spread:
    """The bootstrap distribution of a difference: sampled `values` (weights None), or the
    exact atoms with their probabilities (`weights`)."""

    values: np.ndarray
    weights: np.ndarray | None = None

    def interval(self, level: float = LEVEL) -> tuple[float, float]:
        """95% percentile interval: exact atoms read on the inverse distribution function (the
        limit of ever more draws, no seed); sampled draws by `percentile_ci`."""
        if self.weights is None:
            low, high = percentile_ci(self.values[:, None])
            return float(low[0]), float(high[0])
        low, high = weighted_quantiles(self.values, self.weights, interval_tails(level))
        return float(low), float(high)


def _exact_sums(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The exact distribution of `rows`' column sums when the units (0/1 answers: one epoch)
    are resampled with replacement (core.stats.resample_sum_pmf); None for per-item means
    over epochs or a grid too large (then sampled)."""
    if not len(rows) or not np.isin(rows, (0.0, 1.0)).all():
        return None
    units, counts = np.unique(rows, axis=0, return_counts=True)
    return resample_sum_pmf(units.astype(np.int64), counts)


def _exact_joint(
    e_rows: np.ndarray, c_rows: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray] | None:
    """(erroneous sums, control sums or None, probabilities) over every pair of the two sides'
    exact atoms (independent: resampled separately), flattened; None when either side is not
    exact or the pairs exceed EXACT_JOINT. Few items give an F1 difference few values, whose
    sampled percentile ends moved up to 1.7 points between seeds at 15 pairs (issue 29)."""
    if c_rows is None:
        e = _exact_sums(e_rows)
        return None if e is None else (e[0], None, e[1])
    n_e = len(e_rows)
    if (n_e + 1) * (len(c_rows) + 1) > EXACT_JOINT:  # fewer atoms than that: never exact
        return None
    c = _exact_sums(c_rows)
    e = None if c is None else _exact_sums(e_rows)
    if c is None or e is None or len(e[1]) * len(c[1]) > EXACT_JOINT:
        return None
    ei, ci = np.divmod(np.arange(len(e[1]) * len(c[1])), len(c[1]))
    return e[0][ei], c[0][ci], e[1][ei] * c[1][ci]


def detection_cell(
    x: np.ndarray,
    y: np.ndarray,
    truth: np.ndarray,
    in_group: np.ndarray,
    whole: bool,
    draws: int,
    rng: np.random.Generator,
) -> tuple[str, float, float, Spread, int]:
    """One label's detection score in one category, as the judged benchmark's own `metrics`
    defines it (issue 29, point 2), for both runs: (kind, baseline, candidate, the bootstrap
    distribution of the difference: exact for 0/1 answers where the sums' grid is small, else
    drawn; n).

    - `f1`: TP and FN from the category's erroneous items; FP from the control items — their
      count for the whole table (`whole`), their rate × the category's erroneous items for a
      category (each category scored as if paired 1:1 with controls). The category's erroneous
      items and the controls are resampled separately, as `metrics` does.
    - `recall`: no control item in the comparison (no precision without controls).
    - `fpr`: a category of control items only: the false-positive rate (1 − specificity),
      not an F1 that is 0 by construction.
    Values may be per-item means over epochs (each unit is then an item with its K answers)."""
    ok = ~(np.isnan(x) | np.isnan(y))
    err = ok & (truth == 1) & in_group
    ctrl_all = ok & (truth == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        if not err.any():
            ctrl = ctrl_all & in_group
            rows = np.column_stack([y[ctrl], x[ctrl]])
            point = rows.sum(axis=0)
            n_c = int(ctrl.sum())
            exact = _exact_sums(rows)
            if exact is not None:
                spread = Spread((exact[0][:, 0] - exact[0][:, 1]) / n_c, exact[1])
            else:
                s = _unit_draws(rows, draws, rng)
                spread = Spread((s[:, 0] - s[:, 1]) / n_c)
            return "fpr", point[1] / n_c, point[0] / n_c, spread, n_c
        n_e = int(err.sum())
        e_rows = np.column_stack([y[err], x[err]])
        ep = e_rows.sum(axis=0)
        if not ctrl_all.any():
            joint = _exact_joint(e_rows, None)
            ev = joint[0] if joint is not None else _unit_draws(e_rows, draws, rng)
            spread = Spread((ev[:, 0] - ev[:, 1]) / n_e, None if joint is None else joint[2])
            return "recall", float(ep[1] / n_e), float(ep[0] / n_e), spread, n_e
        c_rows = np.column_stack([y[ctrl_all], x[ctrl_all]])
        cp, n_c = c_rows.sum(axis=0), int(ctrl_all.sum())

        def f1s(ev: np.ndarray, cv: np.ndarray) -> tuple[Any, Any]:
            """(baseline F1, candidate F1) from the sums (TP cand, TP base) and (FP cand, FP
            base): FN = the category's erroneous items − TP."""
            fp_c = cv[..., 0] if whole else cv[..., 0] / n_c * n_e
            fp_b = cv[..., 1] if whole else cv[..., 1] / n_c * n_e
            return (
                _f1(ev[..., 1], fp_b, n_e - ev[..., 1]),
                _f1(ev[..., 0], fp_c, n_e - ev[..., 0]),
            )

        fb, fc = f1s(ep, cp)
        joint = _exact_joint(e_rows, c_rows)
        if joint is not None and joint[1] is not None:
            db, dc = f1s(joint[0], joint[1])
            spread = Spread(dc - db, joint[2])
        else:
            db, dc = f1s(_unit_draws(e_rows, draws, rng), _unit_draws(c_rows, draws, rng))
            spread = Spread(dc - db)
    return "f1", float(fb), float(fc), spread, n_e


def compare_table(pairs: Pairs, draws: int = DRAWS, seed: int = SEED) -> pd.DataFrame:
    """One row per metric × category (COLUMNS), 'all' first, Holm across the table. One set of
    bootstrap draws per category serves all its metrics (the same items for both runs); the
    detection scores (`detection_cell`) draw their own, seeded per category too."""
    frame = pairs.frame
    groups: list[tuple[str, pd.DataFrame]] = [("all", frame)]
    groups += [(str(k), g) for k, g in frame.groupby("category", sort=True)]
    truth_all = frame["is_error"].map(lambda v: float(bool(v)) if v == v else 0.0).to_numpy()
    xa = frame[[f"{m}_base" for m in pairs.metrics]].to_numpy(float)
    ya = frame[[f"{m}_cand" for m in pairs.metrics]].to_numpy(float)
    rows: list[dict[str, Any]] = []
    for category, group in groups:
        x = group[[f"{m}_base" for m in pairs.metrics]].to_numpy(float)
        y = group[[f"{m}_cand" for m in pairs.metrics]].to_numpy(float)
        truth = group["is_error"].map(lambda v: float(bool(v)) if v == v else 0.0).to_numpy()
        rng = np.random.default_rng(seed)  # per category: its rows do not depend on the others
        g_draws = draws_for(len(group), draws)  # more where few items (issue 29)
        means = np.column_stack(
            [mean_diff_draws(x[:, j], y[:, j], truth, g_draws, rng) for j in range(x.shape[1])]
        )
        lows, highs = percentile_ci(means)
        for j, metric in enumerate(pairs.metrics):
            cell = _binary_cell(metric, category, x[:, j], y[:, j])
            rows.append({**cell, "ci_low": float(lows[j]), "ci_high": float(highs[j])})
        if not pairs.f1_labels:
            continue
        in_group = (frame["category"] == category).to_numpy() | (category == "all")
        f1_rng = np.random.default_rng([seed, 1])
        for label in pairs.f1_labels:
            j = pairs.metrics.index(label)
            kind, fb, fc, spread, n = detection_cell(
                xa[:, j], ya[:, j], truth_all, in_group, category == "all", g_draws, f1_rng
            )
            low, high = spread.interval()
            rows.append(
                {
                    "metric": f"{label}_{kind}",
                    "category": category,
                    "n": n,
                    "baseline": fb,
                    "candidate": fc,
                    "diff": fc - fb,
                    "ci_low": low,
                    "ci_high": high,
                }
            )
    table = pd.DataFrame(rows).reindex(columns=COLUMNS)
    table["b"] = table["b"].astype("Int64")
    table["c"] = table["c"].astype("Int64")
    table["p_holm"] = holm(table["p_value"].to_numpy(float))
    return table


def flipped_items(pairs: Pairs) -> pd.DataFrame:
    """Pairs whose binary metric differs between the runs: (item_id, variant, category, metric,
    baseline, candidate), by item then metric order."""
    frame = pairs.frame
    parts = []
    for order, metric in enumerate(pairs.metrics):
        x, y = frame[f"{metric}_base"], frame[f"{metric}_cand"]
        hit = frame[x.notna() & y.notna() & (x != y)]
        part = hit[["item_id", "variant", "category"]].copy()
        part["metric"] = metric
        binary = x.isin((0.0, 1.0)).all() and y.isin((0.0, 1.0)).all()  # else per-item means
        part["baseline"] = hit[f"{metric}_base"].astype(bool if binary else float)
        part["candidate"] = hit[f"{metric}_cand"].astype(bool if binary else float)
        part["_order"] = order
        parts.append(part)
    if not parts:
        return pd.DataFrame(columns=FLIPPED_COLUMNS)
    out = pd.concat(parts, ignore_index=True).sort_values(["item_id", "variant", "_order"])
    return out.drop(columns="_order").reset_index(drop=True)


# --- the Compare page's data ---


def eval_runs(store: Store) -> pd.DataFrame:
    """Runs that can be compared (not playground exchanges), newest first, with a label."""
    frame = store.df(
        """SELECT run_id, benchmark, item_set, model, setting FROM runs
           WHERE coalesce(kind, 'eval') = 'eval' ORDER BY created_at DESC, run_id"""
    )
    frame["label"] = [
        f"{r} · {b} · {m or '?'} · {s or ''}".rstrip(" ·")
        for r, b, m, s in zip(frame["run_id"], frame["benchmark"], frame["model"], frame["setting"])
    ]
    return frame


_VIEW_MEMO: collections.OrderedDict[tuple, dict[str, Any]] = collections.OrderedDict()
_VIEW_MEMO_SIZE = 16


def compare_view(store: Store, baseline: str, candidate: str) -> dict[str, Any]:
    """What the Compare page shows: the table, the flipped items, both judgings, and the
    refusal (`error`) when the runs cannot be compared.

    Kept in memory per store version (`Store.data_version`: any write by any process changes
    it), as a results page's data keeps its counts: a second session opening the same
    comparison on unchanged data costs one version read, not the 50,000-row pass again."""
    key = (store.location, store.as_of, store.data_version(), baseline, candidate)
    if key in _VIEW_MEMO:
        _VIEW_MEMO.move_to_end(key)
        return _VIEW_MEMO[key]
    try:
        pairs = load_pairs(store, baseline, candidate)
    except CompareError as exc:
        return {"error": str(exc)}
    view = {
        "error": None,
        "benchmark": pairs.benchmark,
        "judgings": pairs.judgings,
        "pairs": len(pairs.frame),
        "table": compare_table(pairs),
        "flipped": flipped_items(pairs),
    }
    _VIEW_MEMO[key] = view
    while len(_VIEW_MEMO) > _VIEW_MEMO_SIZE:
        _VIEW_MEMO.popitem(last=False)
    return view


# --- CLI ---


def configure(
    parser: argparse.ArgumentParser,
    words: tuple[str, ...],  # noqa: ARG001 - core.cli calls each command's configure(parser, words)
) -> None:
    parser.add_argument("--baseline", required=True, metavar="RUN", help="the reference run")
    parser.add_argument("--candidate", required=True, metavar="RUN", help="the run compared")
    parser.add_argument(
        "--judging",
        default=None,
        metavar="NAME",
        help="compare this judging of both runs (must exist for both); default: each run's "
        "latest finished judging",
    )
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format")
    parser.add_argument(
        "--flipped",
        action="store_true",
        help="print the items whose binary metric differs between the runs instead",
    )


def main(args: argparse.Namespace) -> int:
    store = Store.open(args.db, create=False)
    try:
        pairs = load_pairs(store, args.baseline, args.candidate, args.judging)
    except CompareError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    header: dict[str, Any] = {
        "benchmark": pairs.benchmark,
        "baseline": f"{pairs.baseline} (judging {pairs.judgings[0]})",
        "candidate": f"{pairs.candidate} (judging {pairs.judgings[1]})",
        "pairs": len(pairs.frame),
    }
    if args.flipped:
        frame = flipped_items(pairs)
    else:
        frame = compare_table(pairs)
        header["bootstrap"] = f"{DRAWS} paired draws, seed {SEED}"
        header["mdd_80"] = "McNemar, alpha 0.05 two-sided, power 0.8, observed discordant rate"
    sys.stdout.write(render_report(frame, args.format, header))
    return 0
